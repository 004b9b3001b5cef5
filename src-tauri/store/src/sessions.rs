use rusqlite::{params, Connection, OptionalExtension, Row};
use serde::Serialize;

use super::{now, row::At, Result, StoreError};
use pocketpilot_protocol::SessionMode;

#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Session {
    pub id: i64,
    pub title: String,
    pub workspace: String,
    pub steering_mode: SessionMode,
    pub follow_up_mode: SessionMode,
    pub last_failure: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

const COLUMNS: &str =
    "id, title, workspace, steering_mode, follow_up_mode, last_failure, created_at, updated_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<Session> {
    let at = At::new("sessions", r, 0)?;
    Ok(Session {
        id: at.id,
        title: r.get(1)?,
        workspace: r.get(2)?,
        steering_mode: at.name(3, "steering_mode")?,
        follow_up_mode: at.name(4, "follow_up_mode")?,
        last_failure: r.get(5)?,
        created_at: r.get(6)?,
        updated_at: r.get(7)?,
    })
}

pub fn insert(c: &Connection, title: &str, workspace: &str) -> Result<i64> {
    let at = now();
    c.execute(
        "INSERT INTO sessions (title, workspace, created_at, updated_at) VALUES (?1, ?2, ?3, ?3)",
        params![title, workspace, at],
    )?;
    Ok(c.last_insert_rowid())
}

pub fn get(c: &Connection, id: i64) -> Result<Session> {
    c.query_row(
        &format!("SELECT {COLUMNS} FROM sessions WHERE id = ?1"),
        [id],
        from_row,
    )
    .optional()?
    .ok_or_else(|| StoreError::not_found("session", id))
}

pub fn list(c: &Connection) -> Result<Vec<Session>> {
    let mut stmt = c.prepare(&format!(
        "SELECT {COLUMNS} FROM sessions ORDER BY updated_at DESC, id DESC"
    ))?;
    let rows = stmt.query_map([], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub fn touch(c: &Connection, id: i64) -> Result<()> {
    c.prepare_cached("UPDATE sessions SET updated_at = ?2 WHERE id = ?1")?
        .execute(params![id, now()])?;
    Ok(())
}

/// Points a session at another folder (a fork's worktree or copy, made once its id is
/// known).
pub fn set_workspace(c: &Connection, id: i64, workspace: &str) -> Result<()> {
    c.execute(
        "UPDATE sessions SET workspace = ?2 WHERE id = ?1",
        params![id, workspace],
    )?;
    Ok(())
}

/// Renames a session; `NotFound` when there is none.
/// Sets the title only while it is still `expected`: a title the person gave in the
/// meantime is never overwritten. Whether it was set.
pub fn replace_title(c: &Connection, id: i64, expected: &str, title: &str) -> Result<bool> {
    let n = c.execute(
        "UPDATE sessions SET title = ?3 WHERE id = ?1 AND title = ?2",
        params![id, expected, title],
    )?;
    Ok(n == 1)
}

pub fn set_title(c: &Connection, id: i64, title: &str) -> Result<()> {
    let n = c.execute(
        "UPDATE sessions SET title = ?2 WHERE id = ?1",
        params![id, title],
    )?;
    if n == 0 {
        get(c, id)?;
    }
    Ok(())
}

pub fn set_last_failure(c: &Connection, id: i64, failure: Option<&str>) -> Result<()> {
    c.execute(
        "UPDATE sessions SET last_failure = ?2, updated_at = ?3 WHERE id = ?1",
        params![id, failure, now()],
    )?;
    Ok(())
}

pub fn grants(c: &Connection, id: i64) -> Result<Vec<String>> {
    let text: String = c
        .query_row("SELECT grants FROM sessions WHERE id = ?1", [id], |r| {
            r.get(0)
        })
        .optional()?
        .ok_or_else(|| StoreError::not_found("session", id))?;
    serde_json::from_str(&text).map_err(|e| {
        StoreError::from(crate::CorruptRow {
            table: "sessions",
            id: id.to_string(),
            column: "grants",
            detail: e.to_string(),
        })
    })
}

pub fn add_grant(c: &Connection, id: i64, capability: &str) -> Result<()> {
    let mut all = grants(c, id)?;
    if !all.iter().any(|g| g == capability) {
        all.push(capability.to_owned());
    }
    c.execute(
        "UPDATE sessions SET grants = ?2 WHERE id = ?1",
        params![id, super::json(&all)],
    )?;
    Ok(())
}

pub fn set_modes(
    c: &Connection,
    id: i64,
    steering: Option<SessionMode>,
    follow_up: Option<SessionMode>,
) -> Result<()> {
    get(c, id)?;
    c.execute(
        "UPDATE sessions SET steering_mode = COALESCE(?2, steering_mode), follow_up_mode = COALESCE(?3, follow_up_mode) WHERE id = ?1",
        params![
            id,
            steering.map(SessionMode::as_str),
            follow_up.map(SessionMode::as_str)
        ],
    )?;
    Ok(())
}

/// Deletes a session and every row that belongs to it alone, children first (foreign keys
/// are on): its tasks' events, tool calls, approvals, costs, context figures and change
/// sets, its entries, submissions and lease. Rows of others that only point at one of its
/// tasks keep their own data and lose the pointer: a schedule's or watch's last task, a
/// trigger run's task, the task a memory came from, another session's follow-up link.
/// Returns the number of tasks deleted; `NotFound` when there is no such session. Run it
/// inside one write: it is all or nothing.
pub fn delete(c: &Connection, id: i64) -> Result<usize> {
    get(c, id)?;
    const OWN_TASKS: &str = "(SELECT id FROM tasks WHERE session_id = ?1)";
    let statements = [
        format!("UPDATE tasks SET follow_up_of = NULL WHERE session_id != ?1 AND follow_up_of IN {OWN_TASKS}"),
        format!("UPDATE schedules SET last_task_id = NULL WHERE last_task_id IN {OWN_TASKS}"),
        format!("UPDATE watches SET last_task_id = NULL WHERE last_task_id IN {OWN_TASKS}"),
        format!("UPDATE trigger_runs SET task_id = NULL WHERE task_id IN {OWN_TASKS}"),
        format!("UPDATE memories SET task_id = NULL WHERE task_id IN {OWN_TASKS}"),
        "UPDATE change_sets SET undone_by = NULL WHERE session_id != ?1 \
         AND undone_by IN (SELECT id FROM change_sets WHERE session_id = ?1)"
            .to_owned(),
        format!("DELETE FROM change_sets WHERE session_id = ?1 OR task_id IN {OWN_TASKS}"),
        format!("DELETE FROM turn_costs WHERE session_id = ?1 OR task_id IN {OWN_TASKS}"),
        format!("DELETE FROM context_turns WHERE session_id = ?1 OR task_id IN {OWN_TASKS}"),
        format!("DELETE FROM plans WHERE session_id = ?1 OR task_id IN {OWN_TASKS} OR run_task_id IN {OWN_TASKS}"),
        format!("DELETE FROM approvals WHERE task_id IN {OWN_TASKS}"),
        format!("DELETE FROM tool_calls WHERE task_id IN {OWN_TASKS}"),
        format!("DELETE FROM task_events WHERE task_id IN {OWN_TASKS}"),
        format!("DELETE FROM submissions WHERE session_id = ?1 OR task_id IN {OWN_TASKS}"),
        format!("DELETE FROM entries WHERE session_id = ?1 OR task_id IN {OWN_TASKS}"),
        "DELETE FROM run_processes WHERE session_id = ?1".to_owned(),
        "DELETE FROM session_leases WHERE session_id = ?1".to_owned(),
    ];
    for sql in &statements {
        c.execute(sql, [id])?;
    }
    let tasks = c.execute("DELETE FROM tasks WHERE session_id = ?1", [id])?;
    c.execute("DELETE FROM sessions WHERE id = ?1", [id])?;
    Ok(tasks)
}
