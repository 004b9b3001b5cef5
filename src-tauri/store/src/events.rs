use pocketpilot_protocol::{EventKind, RuntimeEvent};
use rusqlite::{params, Connection, Row};
use serde::Serialize;

use super::{now, row::At, Result, StoreError};

/// A persisted event. Sequences are per task, 1, 2, 3… with no gap: the next one is
/// computed inside the writing transaction, which no other writer can interleave.
/// On the wire: `{task_id, sequence, at, type, payload}`.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
// The name the window knows it by (a struct name is not on the JSON wire).
#[cfg_attr(feature = "specta", serde(rename = "TaskEvent"))]
pub struct StoredEvent {
    pub task_id: i64,
    /// 0 for live-only events (deltas), which are never persisted.
    pub sequence: i64,
    #[serde(flatten)]
    pub event: RuntimeEvent,
    pub at: String,
}

impl StoredEvent {
    pub fn kind(&self) -> EventKind {
        self.event.kind()
    }

    /// The payload as JSON, for consumers that compare it with data (eval cases).
    pub fn payload(&self) -> serde_json::Value {
        // Serialising a derived, string-keyed enum cannot fail; `Null` would only ever
        // stand for "no payload", which no event has.
        self.event.payload().unwrap_or(serde_json::Value::Null)
    }

    /// An event that is sent to subscribers but never persisted.
    pub fn live(task_id: i64, event: RuntimeEvent) -> Self {
        Self {
            task_id,
            sequence: 0,
            event,
            at: now(),
        }
    }
}

fn from_row(r: &Row<'_>) -> rusqlite::Result<StoredEvent> {
    let at = At::new("task_events", r, 0)?;
    let kind: EventKind = at.name(2, "type")?;
    let payload: serde_json::Value = at.json(3, "payload")?;
    let event = RuntimeEvent::from_parts(kind, payload).map_err(|e| at.invalid(3, "payload", e))?;
    Ok(StoredEvent {
        task_id: at.id,
        sequence: r.get(1)?,
        event,
        at: r.get(4)?,
    })
}

pub fn append(c: &Connection, task_id: i64, event: &RuntimeEvent) -> Result<StoredEvent> {
    if event.is_live_only() {
        return Err(StoreError::Invalid(format!(
            "{} is live only and never persisted",
            event.kind()
        )));
    }
    let payload = event
        .payload()
        .map_err(|e| StoreError::Invalid(format!("event {}: {e}", event.kind())))?;
    // Cached statements: this is the hottest write of all (every persisted event).
    let sequence: i64 = c
        .prepare_cached(
            "SELECT COALESCE(MAX(sequence), 0) + 1 FROM task_events WHERE task_id = ?1",
        )?
        .query_row([task_id], |r| r.get(0))?;
    let at = now();
    c.prepare_cached(
        "INSERT INTO task_events (task_id, sequence, type, payload, at) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![task_id, sequence, event.kind().as_str(), payload.to_string(), at])?;
    Ok(StoredEvent {
        task_id,
        sequence,
        event: event.clone(),
        at,
    })
}

pub fn list_after(c: &Connection, task_id: i64, after: i64) -> Result<Vec<StoredEvent>> {
    let mut stmt = c.prepare_cached(
        "SELECT task_id, sequence, type, payload, at FROM task_events
         WHERE task_id = ?1 AND sequence > ?2 ORDER BY sequence",
    )?;
    let rows = stmt.query_map(params![task_id, after], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The task's latest event of `kind`.
pub fn last_of(c: &Connection, task_id: i64, kind: EventKind) -> Result<Option<StoredEvent>> {
    let mut stmt = c.prepare_cached(
        "SELECT task_id, sequence, type, payload, at FROM task_events
         WHERE task_id = ?1 AND type = ?2 ORDER BY sequence DESC LIMIT 1",
    )?;
    let mut rows = stmt.query_map(params![task_id, kind.as_str()], from_row)?;
    Ok(rows.next().transpose()?)
}

/// The latest event of `kind` among the session's tasks.
pub fn last_in_session(
    c: &Connection,
    session_id: i64,
    kind: EventKind,
) -> Result<Option<StoredEvent>> {
    let mut stmt = c.prepare_cached(
        "SELECT e.task_id, e.sequence, e.type, e.payload, e.at FROM task_events e
         JOIN tasks t ON t.id = e.task_id
         WHERE t.session_id = ?1 AND e.type = ?2
         ORDER BY e.at DESC, e.task_id DESC, e.sequence DESC LIMIT 1",
    )?;
    let mut rows = stmt.query_map(params![session_id, kind.as_str()], from_row)?;
    Ok(rows.next().transpose()?)
}
