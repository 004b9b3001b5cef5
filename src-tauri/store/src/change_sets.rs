//! The change journal's rows (issue 16): one change set per tool call that may touch
//! files, per undo and per redo. A call's set is written `pending` (with the index of the
//! prior state) before its effect and `recorded` (with its changes) after; see
//! `pocketpilot-changes` for the blobs they name.
use rusqlite::{params, Connection, OptionalExtension, Row};
use serde::Serialize;

use pocketpilot_protocol::changes::{Change, ChangeSetKind, ChangeSetStatus};

use super::{now, row::At, Result};

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ChangeSet {
    pub id: i64,
    pub session_id: i64,
    pub task_id: i64,
    pub call_id: Option<String>,
    pub kind: ChangeSetKind,
    pub status: ChangeSetStatus,
    pub workspace: String,
    /// JSON of `pocketpilot_changes::Scope`, kept as text here (the store does not
    /// depend on the file side).
    pub scope: String,
    /// The blob holding the pre-state's index while `pending`.
    pub pre_index: Option<String>,
    pub changes: Vec<Change>,
    /// The sets an undo reverts (or the undo a redo reverts).
    pub reverts: Vec<i64>,
    pub undone_by: Option<i64>,
    pub bytes: i64,
    pub created_at: String,
    /// For an undo that is a rewind: the person's message the conversation went back to
    /// (the entries from it on carry this set's id in `rewound_by`).
    pub rewind_to: Option<i64>,
}

const COLUMNS: &str = "id, session_id, task_id, call_id, kind, status, workspace, scope, pre_index, changes, reverts, undone_by, bytes, created_at, rewind_to";

fn from_row(r: &Row<'_>) -> rusqlite::Result<ChangeSet> {
    let at = At::new("change_sets", r, 0)?;
    Ok(ChangeSet {
        id: at.id,
        session_id: r.get(1)?,
        task_id: r.get(2)?,
        call_id: r.get(3)?,
        kind: at.name(4, "kind")?,
        status: at.name(5, "status")?,
        workspace: r.get(6)?,
        scope: r.get(7)?,
        pre_index: r.get(8)?,
        changes: at.json(9, "changes")?,
        reverts: at.json(10, "reverts")?,
        undone_by: r.get(11)?,
        bytes: r.get(12)?,
        created_at: r.get(13)?,
        rewind_to: r.get(14)?,
    })
}

pub struct NewSet<'a> {
    pub session_id: i64,
    pub task_id: i64,
    pub call_id: Option<&'a str>,
    pub kind: ChangeSetKind,
    pub status: ChangeSetStatus,
    pub workspace: &'a str,
    pub scope: &'a str,
    pub pre_index: Option<&'a str>,
    pub changes: &'a [Change],
    pub reverts: &'a [i64],
}

fn json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "[]".into())
}

/// Inserts a set. A call id can come back (the model may reuse one in a later step, and
/// a call cut off by a crash runs again after its set was finished): each run of it keeps
/// its own set, so undo reverts them all, newest first.
pub fn insert(c: &Connection, s: &NewSet<'_>) -> Result<i64> {
    c.execute(
        "INSERT INTO change_sets (session_id, task_id, call_id, kind, status, workspace, scope, pre_index, changes, reverts, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        params![
            s.session_id,
            s.task_id,
            s.call_id,
            s.kind.as_str(),
            s.status.as_str(),
            s.workspace,
            s.scope,
            s.pre_index,
            json(&s.changes),
            json(&s.reverts),
            now()
        ],
    )?;
    Ok(c.last_insert_rowid())
}

/// A pending call set gets its changes (or goes, when there were none).
pub fn record(c: &Connection, id: i64, changes: &[Change], bytes: i64) -> Result<()> {
    if changes.is_empty() {
        c.execute("DELETE FROM change_sets WHERE id = ?1", [id])?;
        return Ok(());
    }
    c.execute(
        "UPDATE change_sets SET status = 'recorded', changes = ?2, bytes = ?3, pre_index = NULL WHERE id = ?1",
        params![id, json(&changes), bytes],
    )?;
    Ok(())
}

pub fn set_status(c: &Connection, id: i64, status: ChangeSetStatus) -> Result<()> {
    c.execute(
        "UPDATE change_sets SET status = ?2 WHERE id = ?1",
        params![id, status.as_str()],
    )?;
    Ok(())
}

/// Makes the undo `id` a rewind to the person's message `entry`.
pub fn set_rewind_to(c: &Connection, id: i64, entry: i64) -> Result<()> {
    c.execute(
        "UPDATE change_sets SET rewind_to = ?2 WHERE id = ?1",
        params![id, entry],
    )?;
    Ok(())
}

/// Undos and redos cut off between their journal entry and their end (a crash), oldest
/// first.
pub fn applying(c: &Connection) -> Result<Vec<ChangeSet>> {
    let mut stmt = c.prepare(&format!(
        "SELECT {COLUMNS} FROM change_sets WHERE status = 'applying' ORDER BY id"
    ))?;
    let rows = stmt.query_map([], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub fn set_changes(c: &Connection, id: i64, changes: &[Change]) -> Result<()> {
    c.execute(
        "UPDATE change_sets SET changes = ?2 WHERE id = ?1",
        params![id, json(&changes)],
    )?;
    Ok(())
}

/// Marks `ids` as undone by `by` (`None`: brought back by a redo).
pub fn set_undone_by(c: &Connection, ids: &[i64], by: Option<i64>) -> Result<()> {
    let mut stmt = c.prepare_cached("UPDATE change_sets SET undone_by = ?2 WHERE id = ?1")?;
    for id in ids {
        stmt.execute(params![id, by])?;
    }
    Ok(())
}

pub fn get(c: &Connection, id: i64) -> Result<Option<ChangeSet>> {
    Ok(c.query_row(
        &format!("SELECT {COLUMNS} FROM change_sets WHERE id = ?1"),
        [id],
        from_row,
    )
    .optional()?)
}

/// The newest set of `call_id` in the task.
pub fn of_call(c: &Connection, task_id: i64, call_id: &str) -> Result<Option<ChangeSet>> {
    Ok(c.query_row(
        &format!("SELECT {COLUMNS} FROM change_sets WHERE task_id = ?1 AND call_id = ?2 AND kind = 'call' ORDER BY id DESC LIMIT 1"),
        params![task_id, call_id],
        from_row,
    )
    .optional()?)
}

/// A task's sets of `kind`, oldest first.
pub fn of_task(c: &Connection, task_id: i64, kind: ChangeSetKind) -> Result<Vec<ChangeSet>> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM change_sets WHERE task_id = ?1 AND kind = ?2 ORDER BY id"
    ))?;
    let rows = stmt.query_map(params![task_id, kind.as_str()], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// A session's sets of `kind` from task `from_task` on, oldest first.
pub fn of_session(
    c: &Connection,
    session_id: i64,
    from_task: i64,
    kind: ChangeSetKind,
) -> Result<Vec<ChangeSet>> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM change_sets WHERE session_id = ?1 AND task_id >= ?2 AND kind = ?3 ORDER BY id"
    ))?;
    let rows = stmt.query_map(params![session_id, from_task, kind.as_str()], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Every set of a session, whatever its kind, oldest first (deleting the session frees the
/// blobs they alone name).
pub fn in_session(c: &Connection, session_id: i64) -> Result<Vec<ChangeSet>> {
    let mut stmt = c.prepare(&format!(
        "SELECT {COLUMNS} FROM change_sets WHERE session_id = ?1 ORDER BY id"
    ))?;
    let rows = stmt.query_map([session_id], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Every set, oldest first (retention walks them).
pub fn all(c: &Connection) -> Result<Vec<ChangeSet>> {
    let mut stmt = c.prepare(&format!("SELECT {COLUMNS} FROM change_sets ORDER BY id"))?;
    let rows = stmt.query_map([], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Sets whose prior state was kept but whose changes were never recorded (a crash).
pub fn pending(c: &Connection) -> Result<Vec<ChangeSet>> {
    let mut stmt = c.prepare(&format!(
        "SELECT {COLUMNS} FROM change_sets WHERE status = 'pending' ORDER BY id"
    ))?;
    let rows = stmt.query_map([], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
