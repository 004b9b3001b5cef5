use rusqlite::{params, Connection, OptionalExtension, Row};
use serde::Serialize;

use pocketpilot_protocol::{SubmissionKind, SubmissionMode, SubmissionStatus};

use super::{now, row::At, Result, StoreError};

/// Something a person (or a trigger) said to a session. Inputs go queued → placed → done,
/// or unanswered with a reason; writes go queued → done (they skip `placed`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Submission {
    pub id: i64,
    pub session_id: i64,
    pub kind: SubmissionKind,
    /// Set while queued.
    pub mode: Option<SubmissionMode>,
    pub status: SubmissionStatus,
    pub reason: Option<String>,
    pub request_id: Option<String>,
    pub content: serde_json::Value,
    pub task_id: Option<i64>,
    pub entry_id: Option<i64>,
    pub answer_id: Option<i64>,
    pub created_at: String,
}

const COLUMNS: &str = "id, session_id, kind, mode, status, reason, request_id, content, task_id, entry_id, answer_id, created_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<Submission> {
    let at = At::new("submissions", r, 0)?;
    Ok(Submission {
        id: at.id,
        session_id: r.get(1)?,
        kind: at.name(2, "kind")?,
        mode: at.opt_name(3, "mode")?,
        status: at.name(4, "status")?,
        reason: r.get(5)?,
        request_id: r.get(6)?,
        content: at.json(7, "content")?,
        task_id: r.get(8)?,
        entry_id: r.get(9)?,
        answer_id: r.get(10)?,
        created_at: r.get(11)?,
    })
}

pub struct NewSubmission<'a> {
    pub session_id: i64,
    pub kind: SubmissionKind,
    pub mode: Option<SubmissionMode>,
    pub status: SubmissionStatus,
    pub request_id: Option<&'a str>,
    pub content: &'a serde_json::Value,
}

pub fn insert(c: &Connection, s: &NewSubmission<'_>) -> Result<i64> {
    c.execute(
        "INSERT INTO submissions (session_id, kind, mode, status, request_id, content, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            s.session_id,
            s.kind.as_str(),
            s.mode.map(SubmissionMode::as_str),
            s.status.as_str(),
            s.request_id,
            s.content.to_string(),
            now()
        ],
    )?;
    Ok(c.last_insert_rowid())
}

pub fn get(c: &Connection, id: i64) -> Result<Submission> {
    c.query_row(
        &format!("SELECT {COLUMNS} FROM submissions WHERE id = ?1"),
        [id],
        from_row,
    )
    .optional()?
    .ok_or_else(|| StoreError::not_found("submission", id))
}

pub fn by_request(c: &Connection, session_id: i64, request_id: &str) -> Result<Option<Submission>> {
    Ok(c.query_row(
        &format!("SELECT {COLUMNS} FROM submissions WHERE session_id = ?1 AND request_id = ?2"),
        params![session_id, request_id],
        from_row,
    )
    .optional()?)
}

/// The session's inbox: queued submissions in submission order.
pub fn queued(c: &Connection, session_id: i64) -> Result<Vec<Submission>> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM submissions WHERE session_id = ?1 AND status = 'queued' ORDER BY id"
    ))?;
    let rows = stmt.query_map([session_id], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// What admission needs to know of a session's inbox without reading it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueSummary {
    pub queued: u64,
    /// A reset waits among them.
    pub reset: bool,
}

/// How many submissions wait in the session's inbox, and whether a reset is among them
/// (the `submissions_status` index; bounded by the inbox cap).
pub fn queue_summary(c: &Connection, session_id: i64) -> Result<QueueSummary> {
    let mut stmt = c.prepare_cached(
        "SELECT count(*), COALESCE(MAX(kind = ?2), 0) FROM submissions \
         WHERE session_id = ?1 AND status = 'queued'",
    )?;
    let (queued, reset): (i64, bool) = stmt
        .query_row(params![session_id, SubmissionKind::Reset.as_str()], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
    Ok(QueueSummary {
        queued: queued.max(0) as u64,
        reset,
    })
}

pub fn list(c: &Connection, session_id: i64) -> Result<Vec<Submission>> {
    let mut stmt = c.prepare(&format!(
        "SELECT {COLUMNS} FROM submissions WHERE session_id = ?1 ORDER BY id"
    ))?;
    let rows = stmt.query_map([session_id], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Inputs placed in a run and not yet settled.
pub fn placed_in(c: &Connection, task_id: i64) -> Result<Vec<Submission>> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM submissions WHERE task_id = ?1 AND status = 'placed' ORDER BY id"
    ))?;
    let rows = stmt.query_map([task_id], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub fn place(c: &Connection, id: i64, task_id: i64, entry_id: i64) -> Result<()> {
    c.execute(
        "UPDATE submissions SET status = 'placed', task_id = ?2, entry_id = ?3 WHERE id = ?1",
        params![id, task_id, entry_id],
    )?;
    Ok(())
}

pub fn done(c: &Connection, id: i64, entry_id: Option<i64>, answer_id: Option<i64>) -> Result<()> {
    c.execute(
        "UPDATE submissions SET status = 'done', entry_id = COALESCE(?2, entry_id), answer_id = ?3 WHERE id = ?1",
        params![id, entry_id, answer_id],
    )?;
    Ok(())
}

pub fn unanswered(c: &Connection, id: i64, reason: &str) -> Result<()> {
    c.execute(
        "UPDATE submissions SET status = 'unanswered', reason = ?2 WHERE id = ?1",
        params![id, reason],
    )?;
    Ok(())
}

pub fn set_task(c: &Connection, id: i64, task_id: i64) -> Result<()> {
    c.execute(
        "UPDATE submissions SET task_id = ?2 WHERE id = ?1",
        params![id, task_id],
    )?;
    Ok(())
}
