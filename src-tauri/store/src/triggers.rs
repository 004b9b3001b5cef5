//! Trigger definitions (`webhooks`, `schedules`, `watches`) and their record
//! (`trigger_runs`: every fire and every skip, with its reason).
//!
//! Times are RFC 3339 UTC strings with milliseconds (`…Z`), so they compare as text.
use rusqlite::{params, Connection, OptionalExtension, Row};
use serde::Serialize;

use super::{now, Result, StoreError};

// ---------------------------------------------------------------------------- webhooks

#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Webhook {
    pub id: i64,
    pub name: String,
    pub workspace: String,
    /// SHA-256 hex of the token; the token itself is never stored.
    #[serde(skip)]
    pub token_sha256: String,
    pub provider: Option<String>,
    pub paused: bool,
    pub created_at: String,
    pub last_fired_at: Option<String>,
}

const HOOK_COLUMNS: &str =
    "id, name, workspace, token_sha256, provider, paused, created_at, last_fired_at";

fn hook_from_row(r: &Row<'_>) -> rusqlite::Result<Webhook> {
    Ok(Webhook {
        id: r.get(0)?,
        name: r.get(1)?,
        workspace: r.get(2)?,
        token_sha256: r.get(3)?,
        provider: r.get(4)?,
        paused: r.get(5)?,
        created_at: r.get(6)?,
        last_fired_at: r.get(7)?,
    })
}

pub fn insert_webhook(
    c: &Connection,
    name: &str,
    workspace: &str,
    token_sha256: &str,
    provider: Option<&str>,
) -> Result<i64> {
    c.execute(
        "INSERT INTO webhooks (name, workspace, token_sha256, provider, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![name, workspace, token_sha256, provider, now()],
    )?;
    Ok(c.last_insert_rowid())
}

pub fn webhook_by_name(c: &Connection, name: &str) -> Result<Option<Webhook>> {
    Ok(c.query_row(
        &format!("SELECT {HOOK_COLUMNS} FROM webhooks WHERE name = ?1"),
        [name],
        hook_from_row,
    )
    .optional()?)
}

pub fn webhooks(c: &Connection) -> Result<Vec<Webhook>> {
    let mut stmt = c.prepare(&format!(
        "SELECT {HOOK_COLUMNS} FROM webhooks ORDER BY name"
    ))?;
    let rows = stmt.query_map([], hook_from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub fn set_webhook_paused(c: &Connection, name: &str, paused: bool) -> Result<()> {
    let n = c.execute(
        "UPDATE webhooks SET paused = ?2 WHERE name = ?1",
        params![name, paused],
    )?;
    found(n, "webhook", name)
}

pub fn delete_webhook(c: &Connection, name: &str) -> Result<()> {
    let n = c.execute("DELETE FROM webhooks WHERE name = ?1", [name])?;
    found(n, "webhook", name)
}

pub fn webhook_fired(c: &Connection, id: i64, at: &str) -> Result<()> {
    c.execute(
        "UPDATE webhooks SET last_fired_at = ?2 WHERE id = ?1",
        params![id, at],
    )?;
    Ok(())
}

// --------------------------------------------------------------------------- schedules

#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
// The window shows it with its next fire time, as `Schedule` (a struct name is not on the
// JSON wire).
#[cfg_attr(feature = "specta", serde(rename = "StoredSchedule"))]
pub struct Schedule {
    pub id: i64,
    pub expr: String,
    pub workspace: String,
    pub goal: String,
    pub provider: Option<String>,
    pub catch_up: bool,
    pub paused: bool,
    /// The last tick handled (fired or skipped), as scheduled, not as observed.
    pub last_fired_at: Option<String>,
    pub last_task_id: Option<i64>,
    pub created_at: String,
}

const SCHEDULE_COLUMNS: &str =
    "id, expr, workspace, goal, provider, catch_up, paused, last_fired_at, last_task_id, created_at";

fn schedule_from_row(r: &Row<'_>) -> rusqlite::Result<Schedule> {
    Ok(Schedule {
        id: r.get(0)?,
        expr: r.get(1)?,
        workspace: r.get(2)?,
        goal: r.get(3)?,
        provider: r.get(4)?,
        catch_up: r.get(5)?,
        paused: r.get(6)?,
        last_fired_at: r.get(7)?,
        last_task_id: r.get(8)?,
        created_at: r.get(9)?,
    })
}

pub struct NewSchedule<'a> {
    pub expr: &'a str,
    pub workspace: &'a str,
    pub goal: &'a str,
    pub provider: Option<&'a str>,
    pub catch_up: bool,
    /// When it was created; ticks before it are never caught up.
    pub created_at: &'a str,
}

pub fn insert_schedule(c: &Connection, s: &NewSchedule<'_>) -> Result<i64> {
    c.execute(
        "INSERT INTO schedules (expr, workspace, goal, provider, catch_up, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![s.expr, s.workspace, s.goal, s.provider, s.catch_up, s.created_at],
    )?;
    Ok(c.last_insert_rowid())
}

pub fn schedule(c: &Connection, id: i64) -> Result<Option<Schedule>> {
    Ok(c.query_row(
        &format!("SELECT {SCHEDULE_COLUMNS} FROM schedules WHERE id = ?1"),
        [id],
        schedule_from_row,
    )
    .optional()?)
}

pub fn schedules(c: &Connection) -> Result<Vec<Schedule>> {
    let mut stmt = c.prepare(&format!(
        "SELECT {SCHEDULE_COLUMNS} FROM schedules ORDER BY id"
    ))?;
    let rows = stmt.query_map([], schedule_from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub fn set_schedule_paused(c: &Connection, id: i64, paused: bool) -> Result<()> {
    let n = c.execute(
        "UPDATE schedules SET paused = ?2 WHERE id = ?1",
        params![id, paused],
    )?;
    found(n, "schedule", id)
}

pub fn delete_schedule(c: &Connection, id: i64) -> Result<()> {
    let n = c.execute("DELETE FROM schedules WHERE id = ?1", [id])?;
    found(n, "schedule", id)
}

/// Claims the tick `tick` of a schedule: true if nobody (no other process, no earlier
/// pass) has handled this tick or a later one. Two hosts sharing a data directory thus
/// never both fire the same tick.
pub fn claim_tick(c: &Connection, id: i64, tick: &str) -> Result<bool> {
    let n = c.execute(
        "UPDATE schedules SET last_fired_at = ?2
         WHERE id = ?1 AND (last_fired_at IS NULL OR last_fired_at < ?2)",
        params![id, tick],
    )?;
    Ok(n == 1)
}

pub fn schedule_task(c: &Connection, id: i64, task_id: i64) -> Result<()> {
    c.execute(
        "UPDATE schedules SET last_task_id = ?2 WHERE id = ?1",
        params![id, task_id],
    )?;
    Ok(())
}

// ----------------------------------------------------------------------------- watches

#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Watch {
    pub id: i64,
    /// A path or glob relative to the workspace.
    pub pattern: String,
    pub workspace: String,
    pub goal: String,
    pub provider: Option<String>,
    pub min_interval_secs: i64,
    pub paused: bool,
    pub last_fired_at: Option<String>,
    pub last_task_id: Option<i64>,
    pub created_at: String,
}

const WATCH_COLUMNS: &str = "id, pattern, workspace, goal, provider, min_interval_secs, paused, last_fired_at, last_task_id, created_at";

fn watch_from_row(r: &Row<'_>) -> rusqlite::Result<Watch> {
    Ok(Watch {
        id: r.get(0)?,
        pattern: r.get(1)?,
        workspace: r.get(2)?,
        goal: r.get(3)?,
        provider: r.get(4)?,
        min_interval_secs: r.get(5)?,
        paused: r.get(6)?,
        last_fired_at: r.get(7)?,
        last_task_id: r.get(8)?,
        created_at: r.get(9)?,
    })
}

pub struct NewWatch<'a> {
    pub pattern: &'a str,
    pub workspace: &'a str,
    pub goal: &'a str,
    pub provider: Option<&'a str>,
    pub min_interval_secs: i64,
}

pub fn insert_watch(c: &Connection, w: &NewWatch<'_>) -> Result<i64> {
    c.execute(
        "INSERT INTO watches (pattern, workspace, goal, provider, min_interval_secs, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![w.pattern, w.workspace, w.goal, w.provider, w.min_interval_secs, now()],
    )?;
    Ok(c.last_insert_rowid())
}

pub fn watch(c: &Connection, id: i64) -> Result<Option<Watch>> {
    Ok(c.query_row(
        &format!("SELECT {WATCH_COLUMNS} FROM watches WHERE id = ?1"),
        [id],
        watch_from_row,
    )
    .optional()?)
}

pub fn watches(c: &Connection) -> Result<Vec<Watch>> {
    let mut stmt = c.prepare(&format!("SELECT {WATCH_COLUMNS} FROM watches ORDER BY id"))?;
    let rows = stmt.query_map([], watch_from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub fn set_watch_paused(c: &Connection, id: i64, paused: bool) -> Result<()> {
    let n = c.execute(
        "UPDATE watches SET paused = ?2 WHERE id = ?1",
        params![id, paused],
    )?;
    found(n, "watch", id)
}

pub fn delete_watch(c: &Connection, id: i64) -> Result<()> {
    let n = c.execute("DELETE FROM watches WHERE id = ?1", [id])?;
    found(n, "watch", id)
}

pub fn watch_fired(c: &Connection, id: i64, task_id: i64, at: &str) -> Result<()> {
    c.execute(
        "UPDATE watches SET last_fired_at = ?3, last_task_id = ?2 WHERE id = ?1",
        params![id, task_id, at],
    )?;
    Ok(())
}

/// Paths (workspace-relative) that the agent changed in `workspace` since `since`: the
/// `changed` list of `tool_call_completed` events of the workspace's recent tasks.
pub fn agent_changes_since(c: &Connection, workspace: &str, since: &str) -> Result<Vec<String>> {
    let mut stmt = c.prepare_cached(
        "SELECT e.task_id, e.sequence, e.payload FROM tasks t
           JOIN sessions s ON s.id = t.session_id
           JOIN task_events e ON e.task_id = t.id
         WHERE s.workspace = ?1
           AND (t.finished_at IS NULL OR t.finished_at >= ?2)
           AND e.type = 'tool_call_completed' AND e.at >= ?2",
    )?;
    #[derive(serde::Deserialize)]
    struct Completed {
        changed: Vec<String>,
    }
    let rows = stmt.query_map(params![workspace, since], |r| {
        let at = crate::row::At::new("task_events", r, 0)?;
        at.json::<Completed>(2, "payload")
    })?;
    let mut out = Vec::new();
    for completed in rows {
        out.extend(completed?.changed);
    }
    Ok(out)
}

/// Whether a task in `workspace` has a tool call started but not finished: its write may
/// be on disk before its `tool_call_completed` event is.
pub fn tool_call_in_flight(c: &Connection, workspace: &str) -> Result<bool> {
    Ok(c.query_row(
        "SELECT EXISTS (SELECT 1 FROM tool_calls k
           JOIN tasks t ON t.id = k.task_id
           JOIN sessions s ON s.id = t.session_id
         WHERE s.workspace = ?1 AND k.status IN ('intent', 'running')
           AND t.status IN ('queued', 'running'))",
        [workspace],
        |r| r.get(0),
    )?)
}

// ------------------------------------------------------------------------ trigger runs

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TriggerRun {
    pub id: i64,
    /// `webhook`, `cron` or `watch`.
    pub kind: String,
    pub trigger_id: i64,
    /// `fired` or `skipped`.
    pub outcome: String,
    pub task_id: Option<i64>,
    pub reason: Option<String>,
    pub scheduled_for: Option<String>,
    pub at: String,
}

pub struct NewRun<'a> {
    pub kind: &'a str,
    pub trigger_id: i64,
    pub outcome: &'a str,
    pub task_id: Option<i64>,
    pub reason: Option<&'a str>,
    pub scheduled_for: Option<&'a str>,
}

pub fn record_run(c: &Connection, r: &NewRun<'_>) -> Result<i64> {
    c.execute(
        "INSERT INTO trigger_runs (kind, trigger_id, outcome, task_id, reason, scheduled_for, at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            r.kind,
            r.trigger_id,
            r.outcome,
            r.task_id,
            r.reason,
            r.scheduled_for,
            now()
        ],
    )?;
    Ok(c.last_insert_rowid())
}

pub fn runs(c: &Connection, kind: &str, trigger_id: i64) -> Result<Vec<TriggerRun>> {
    let mut stmt = c.prepare(
        "SELECT id, kind, trigger_id, outcome, task_id, reason, scheduled_for, at
         FROM trigger_runs WHERE kind = ?1 AND trigger_id = ?2 ORDER BY id",
    )?;
    let rows = stmt.query_map(params![kind, trigger_id], |r| {
        Ok(TriggerRun {
            id: r.get(0)?,
            kind: r.get(1)?,
            trigger_id: r.get(2)?,
            outcome: r.get(3)?,
            task_id: r.get(4)?,
            reason: r.get(5)?,
            scheduled_for: r.get(6)?,
            at: r.get(7)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

fn found(n: usize, what: &'static str, id: impl ToString) -> Result<()> {
    if n == 0 {
        Err(StoreError::not_found(what, id))
    } else {
        Ok(())
    }
}
