//! The context budget's records (issue 13): compaction entries (kind `compaction` in
//! `entries`, written with their `context_compacted` event in one transaction) and the
//! per-request figures in `context_turns`.
use pocketpilot_protocol::{ContextReset, EntryKind, WindowOrigin};
use rusqlite::{params, Connection, OptionalExtension, Row};

use super::{entries, now, row::At, Entry, Result};

/// Appends a compaction entry: `content` holds the summary, the entries it replaces and
/// where it sits in the view. The caller's transaction also holds the event.
pub fn append(
    c: &Connection,
    session_id: i64,
    task_id: Option<i64>,
    content: &serde_json::Value,
) -> Result<i64> {
    entries::append(c, session_id, task_id, &EntryKind::Compaction, content)
}

/// A reset entry's content: the hand-off text, if any.
#[derive(serde::Deserialize)]
struct ResetContent {
    #[serde(default)]
    text: Option<String>,
}

/// A session's resets, oldest first, each with the task of the newest entry before it
/// (task ids grow with entries): where the transcript shows it.
pub fn resets(c: &Connection, session_id: i64) -> Result<Vec<ContextReset>> {
    let mut stmt = c.prepare_cached(
        "SELECT r.id, r.content, r.created_at,
            (SELECT e.task_id FROM entries e
              WHERE e.session_id = r.session_id AND e.id < r.id AND e.task_id IS NOT NULL
              ORDER BY e.id DESC LIMIT 1)
         FROM entries r WHERE r.session_id = ?1 AND r.kind = ?2 ORDER BY r.id",
    )?;
    let rows = stmt.query_map(params![session_id, EntryKind::Reset.as_str()], |r| {
        let at = At::new("entries", r, 0)?;
        let content: ResetContent = at.json(1, "content")?;
        Ok(ContextReset {
            entry_id: at.id,
            after_task: r.get(3)?,
            text: content.text,
            created_at: r.get(2)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// A session's compactions, oldest first (all of them, also before its last reset).
pub fn list(c: &Connection, session_id: i64) -> Result<Vec<Entry>> {
    let all = entries::list(c, session_id)?;
    Ok(all
        .into_iter()
        .filter(|e| e.kind == EntryKind::Compaction)
        .collect())
}

pub use pocketpilot_protocol::ContextTurn;

pub struct NewContextTurn {
    pub session_id: i64,
    pub task_id: i64,
    pub window: u32,
    pub window_source: WindowOrigin,
    pub budget: u32,
    pub estimate: u32,
    pub prompt_tokens: Option<u32>,
    pub messages: u32,
}

pub fn record_turn(c: &Connection, t: &NewContextTurn) -> Result<i64> {
    c.execute(
        "INSERT INTO context_turns (session_id, task_id, window, window_source, budget, estimate, prompt_tokens, messages, at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            t.session_id,
            t.task_id,
            t.window,
            t.window_source.as_str(),
            t.budget,
            t.estimate,
            t.prompt_tokens,
            t.messages,
            now()
        ],
    )?;
    Ok(c.last_insert_rowid())
}

const TURN_COLUMNS: &str =
    "id, session_id, task_id, window, window_source, budget, estimate, prompt_tokens, messages, at";

fn turn_from_row(r: &Row<'_>) -> rusqlite::Result<ContextTurn> {
    let at = At::new("context_turns", r, 0)?;
    Ok(ContextTurn {
        id: at.id,
        session_id: r.get(1)?,
        task_id: r.get(2)?,
        window: r.get(3)?,
        window_source: at.name(4, "window_source")?,
        budget: r.get(5)?,
        estimate: r.get(6)?,
        prompt_tokens: r.get(7)?,
        messages: r.get(8)?,
        at: r.get(9)?,
    })
}

/// The newest request of a session: what its context meter shows.
pub fn last_turn(c: &Connection, session_id: i64) -> Result<Option<ContextTurn>> {
    let sql = format!(
        "SELECT {TURN_COLUMNS} FROM context_turns WHERE session_id = ?1 ORDER BY id DESC LIMIT 1"
    );
    Ok(c.query_row(&sql, [session_id], turn_from_row).optional()?)
}

/// A task's requests, in order.
pub fn turns_of_task(c: &Connection, task_id: i64) -> Result<Vec<ContextTurn>> {
    let sql = format!("SELECT {TURN_COLUMNS} FROM context_turns WHERE task_id = ?1 ORDER BY id");
    let mut stmt = c.prepare_cached(&sql)?;
    let rows = stmt.query_map([task_id], turn_from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// A session's requests, in order.
pub fn turns_of_session(c: &Connection, session_id: i64) -> Result<Vec<ContextTurn>> {
    let sql = format!("SELECT {TURN_COLUMNS} FROM context_turns WHERE session_id = ?1 ORDER BY id");
    let mut stmt = c.prepare_cached(&sql)?;
    let rows = stmt.query_map([session_id], turn_from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
