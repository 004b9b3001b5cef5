use rusqlite::{params, Connection, Row};
use serde::Serialize;

use super::{now, parse_json, Result};

/// A persisted event. Sequences are per task, 1, 2, 3… with no gap: the next one is
/// computed inside the writing transaction, which no other writer can interleave.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StoredEvent {
    pub task_id: i64,
    pub sequence: i64,
    #[serde(rename = "type")]
    pub kind: String,
    pub payload: serde_json::Value,
    pub at: String,
}

fn from_row(r: &Row<'_>) -> rusqlite::Result<StoredEvent> {
    let payload: String = r.get(3)?;
    Ok(StoredEvent {
        task_id: r.get(0)?,
        sequence: r.get(1)?,
        kind: r.get(2)?,
        payload: parse_json(&payload),
        at: r.get(4)?,
    })
}

pub fn append(
    c: &Connection,
    task_id: i64,
    kind: &str,
    payload: &serde_json::Value,
) -> Result<StoredEvent> {
    let sequence: i64 = c.query_row(
        "SELECT COALESCE(MAX(sequence), 0) + 1 FROM task_events WHERE task_id = ?1",
        [task_id],
        |r| r.get(0),
    )?;
    let at = now();
    c.execute(
        "INSERT INTO task_events (task_id, sequence, type, payload, at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![task_id, sequence, kind, payload.to_string(), at],
    )?;
    Ok(StoredEvent {
        task_id,
        sequence,
        kind: kind.to_owned(),
        payload: payload.clone(),
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
