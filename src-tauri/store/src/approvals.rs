use rusqlite::{params, Connection, OptionalExtension, Row};
use serde::Serialize;

use pocketpilot_protocol::{ApprovalStatus, Effect};

use super::{now, row::At, Result, StoreError};

/// An approval: pending until a person answers it. It never expires and is never
/// answered by anyone else.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Approval {
    pub id: i64,
    pub task_id: i64,
    pub call_id: String,
    pub tool: String,
    pub capability: Option<String>,
    pub arguments: serde_json::Value,
    pub effect: Effect,
    pub reason: String,
    pub step: i64,
    pub status: ApprovalStatus,
    pub decision_note: Option<String>,
    pub edited_args: Option<serde_json::Value>,
    pub session_grant: bool,
    pub resolved_by: Option<String>,
    pub created_at: String,
    pub resolved_at: Option<String>,
}

const COLUMNS: &str =
    "id, task_id, call_id, tool, capability, arguments, effect, reason, step, status, \
    decision_note, edited_args, session_grant, resolved_by, created_at, resolved_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<Approval> {
    let at = At::new("approvals", r, 0)?;
    Ok(Approval {
        id: at.id,
        task_id: r.get(1)?,
        call_id: r.get(2)?,
        tool: r.get(3)?,
        capability: r.get(4)?,
        arguments: at.json(5, "arguments")?,
        effect: at.json(6, "effect")?,
        reason: r.get(7)?,
        step: r.get(8)?,
        status: at.name(9, "status")?,
        decision_note: r.get(10)?,
        edited_args: at.opt_json(11, "edited_args")?,
        session_grant: r.get(12)?,
        resolved_by: r.get(13)?,
        created_at: r.get(14)?,
        resolved_at: r.get(15)?,
    })
}

pub struct NewApproval<'a> {
    pub task_id: i64,
    pub call_id: &'a str,
    pub tool: &'a str,
    pub capability: Option<&'a str>,
    pub arguments: &'a serde_json::Value,
    pub effect: &'a Effect,
    pub reason: &'a str,
    pub step: u32,
}

pub fn insert(c: &Connection, a: &NewApproval<'_>) -> Result<i64> {
    c.execute(
        "INSERT INTO approvals (task_id, call_id, tool, capability, arguments, effect, reason, step, status, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'pending', ?9)",
        params![
            a.task_id,
            a.call_id,
            a.tool,
            a.capability,
            a.arguments.to_string(),
            super::json(a.effect),
            a.reason,
            a.step,
            now()
        ],
    )?;
    Ok(c.last_insert_rowid())
}

pub fn get(c: &Connection, id: i64) -> Result<Approval> {
    c.query_row(
        &format!("SELECT {COLUMNS} FROM approvals WHERE id = ?1"),
        [id],
        from_row,
    )
    .optional()?
    .ok_or_else(|| StoreError::not_found("approval", id))
}

pub fn pending(c: &Connection) -> Result<Vec<Approval>> {
    let mut stmt = c.prepare(&format!(
        "SELECT {COLUMNS} FROM approvals WHERE status = 'pending' ORDER BY id"
    ))?;
    let rows = stmt.query_map([], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub struct Resolution<'a> {
    pub approved: bool,
    pub note: Option<&'a str>,
    pub edited_args: Option<&'a serde_json::Value>,
    pub session_grant: bool,
    pub by: &'a str,
}

/// Resolves a pending approval. Answering twice is an error, not a second effect.
pub fn resolve(c: &Connection, id: i64, r: &Resolution<'_>) -> Result<Approval> {
    let current = get(c, id)?;
    if current.status != ApprovalStatus::Pending {
        return Err(StoreError::Invalid(format!(
            "approval {id} was already {}",
            current.status
        )));
    }
    c.execute(
        "UPDATE approvals SET status = ?2, decision_note = ?3, edited_args = ?4, session_grant = ?5,
            resolved_by = ?6, resolved_at = ?7 WHERE id = ?1",
        params![
            id,
            if r.approved {
                ApprovalStatus::Approved
            } else {
                ApprovalStatus::Rejected
            }
            .as_str(),
            r.note,
            r.edited_args.map(|v| v.to_string()),
            r.session_grant,
            r.by,
            now()
        ],
    )?;
    get(c, id)
}

/// The newest approval asked for a call (its run, step and id), whatever its status.
pub fn for_call(
    c: &Connection,
    task_id: i64,
    step: i64,
    call_id: &str,
) -> Result<Option<Approval>> {
    Ok(c
        .query_row(
            &format!("SELECT {COLUMNS} FROM approvals WHERE task_id = ?1 AND step = ?2 AND call_id = ?3 ORDER BY id DESC LIMIT 1"),
            params![task_id, step, call_id],
            from_row,
        )
        .optional()?)
}
