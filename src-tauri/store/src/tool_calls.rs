use rusqlite::{params, Connection, OptionalExtension, Row};
use serde::Serialize;

use pocketpilot_protocol::ToolCallStatus;

use super::{now, row::At, Result};

/// The tool journal. `intent` is committed before a call runs; `done` (with the output)
/// after. A call found in `intent` or `running` after a crash was interrupted. A call is
/// known by its run (task), step and id: an id the model repeats in a later turn is
/// another call.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ToolCallRecord {
    pub task_id: i64,
    pub call_id: String,
    pub step: i64,
    pub name: String,
    pub arguments: String,
    pub capability: Option<String>,
    pub replay_safe: bool,
    pub status: ToolCallStatus,
    pub output: Option<String>,
    pub is_error: bool,
}

const COLUMNS: &str =
    "task_id, call_id, step, name, arguments, capability, replay_safe, status, output, is_error";

fn from_row(r: &Row<'_>) -> rusqlite::Result<ToolCallRecord> {
    let at = At::new("tool_calls", r, 0)?;
    Ok(ToolCallRecord {
        task_id: at.id,
        call_id: r.get(1)?,
        step: r.get(2)?,
        name: r.get(3)?,
        arguments: r.get(4)?,
        capability: r.get(5)?,
        replay_safe: r.get(6)?,
        status: at.name(7, "status")?,
        output: r.get(8)?,
        is_error: r.get(9)?,
    })
}

pub struct Intent<'a> {
    pub task_id: i64,
    pub call_id: &'a str,
    pub step: u32,
    pub name: &'a str,
    pub arguments: &'a str,
    pub capability: Option<&'a str>,
    pub replay_safe: bool,
}

pub fn intent(c: &Connection, i: &Intent<'_>) -> Result<()> {
    c.execute(
        "INSERT INTO tool_calls (task_id, call_id, step, name, arguments, capability, replay_safe, status, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'intent', ?8)
         ON CONFLICT(task_id, step, call_id) DO UPDATE SET arguments = excluded.arguments, status = 'intent'",
        params![i.task_id, i.call_id, i.step, i.name, i.arguments, i.capability, i.replay_safe, now()],
    )?;
    Ok(())
}

pub fn finish(
    c: &Connection,
    task_id: i64,
    step: i64,
    call_id: &str,
    status: ToolCallStatus,
    output: &str,
    is_error: bool,
) -> Result<()> {
    c.execute(
        "UPDATE tool_calls SET status = ?3, output = ?4, is_error = ?5, finished_at = ?6
         WHERE task_id = ?1 AND call_id = ?2 AND step = ?7",
        params![
            task_id,
            call_id,
            status.as_str(),
            output,
            is_error,
            now(),
            step
        ],
    )?;
    Ok(())
}

pub fn get(
    c: &Connection,
    task_id: i64,
    step: i64,
    call_id: &str,
) -> Result<Option<ToolCallRecord>> {
    Ok(c.query_row(
        &format!(
            "SELECT {COLUMNS} FROM tool_calls WHERE task_id = ?1 AND step = ?2 AND call_id = ?3"
        ),
        params![task_id, step, call_id],
        from_row,
    )
    .optional()?)
}

pub fn list(c: &Connection, task_id: i64) -> Result<Vec<ToolCallRecord>> {
    let mut stmt = c.prepare(&format!(
        "SELECT {COLUMNS} FROM tool_calls WHERE task_id = ?1 ORDER BY step, rowid"
    ))?;
    let rows = stmt.query_map([task_id], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
