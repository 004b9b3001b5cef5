use pocketpilot_protocol::EntryKind;
use rusqlite::{params, Connection, Row};
use serde::Serialize;

use super::{now, row::At, Result};

/// One immutable item of a session's transcript: one of the runtime's kinds, or a
/// display-only kind a write named, which the model never sees.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Entry {
    pub id: i64,
    pub session_id: i64,
    pub task_id: Option<i64>,
    #[cfg_attr(feature = "specta", specta(type = String))]
    pub kind: EntryKind,
    pub content: serde_json::Value,
    pub created_at: String,
}

fn from_row(r: &Row<'_>) -> rusqlite::Result<Entry> {
    let at = At::new("entries", r, 0)?;
    Ok(Entry {
        id: at.id,
        session_id: r.get(1)?,
        task_id: r.get(2)?,
        kind: EntryKind::of(&r.get::<_, String>(3)?),
        content: at.json(4, "content")?,
        created_at: r.get(5)?,
    })
}

pub fn append(
    c: &Connection,
    session_id: i64,
    task_id: Option<i64>,
    kind: &EntryKind,
    content: &serde_json::Value,
) -> Result<i64> {
    c.execute(
        "INSERT INTO entries (session_id, task_id, kind, content, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![session_id, task_id, kind.as_str(), content.to_string(), now()],
    )?;
    Ok(c.last_insert_rowid())
}

pub fn list(c: &Connection, session_id: i64) -> Result<Vec<Entry>> {
    let mut stmt = c.prepare_cached(
        "SELECT id, session_id, task_id, kind, content, created_at FROM entries
         WHERE session_id = ?1 ORDER BY id",
    )?;
    let rows = stmt.query_map([session_id], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The entries the model sees: from the newest `reset` on.
pub fn since_head(c: &Connection, session_id: i64) -> Result<Vec<Entry>> {
    let mut stmt = c.prepare_cached(
        "SELECT id, session_id, task_id, kind, content, created_at FROM entries
         WHERE session_id = ?1 AND id >= COALESCE(
            (SELECT MAX(id) FROM entries WHERE session_id = ?1 AND kind = 'reset'), 0)
         ORDER BY id",
    )?;
    let rows = stmt.query_map([session_id], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The entries of a session's tasks from `first_task` on, in order: what the window shows
/// for its newest tasks. Looked up per task (`entries_task`), so the cost follows the
/// tasks shown, not the length of the session.
pub fn of_tasks_from(c: &Connection, session_id: i64, first_task: i64) -> Result<Vec<Entry>> {
    let mut stmt = c.prepare_cached(
        "SELECT id, session_id, task_id, kind, content, created_at FROM entries
         WHERE task_id IN (SELECT id FROM tasks WHERE session_id = ?1 AND id >= ?2)
         ORDER BY id",
    )?;
    let rows = stmt.query_map(params![session_id, first_task], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
