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
    /// The rewind (its change set) that set this entry aside: still shown and exported,
    /// never sent to the model again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rewound_by: Option<i64>,
}

const COLUMNS: &str = "id, session_id, task_id, kind, content, created_at, rewound_by";

fn from_row(r: &Row<'_>) -> rusqlite::Result<Entry> {
    let at = At::new("entries", r, 0)?;
    Ok(Entry {
        id: at.id,
        session_id: r.get(1)?,
        task_id: r.get(2)?,
        kind: EntryKind::of(&r.get::<_, String>(3)?),
        content: at.json(4, "content")?,
        created_at: r.get(5)?,
        rewound_by: r.get(6)?,
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
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM entries WHERE session_id = ?1 ORDER BY id"
    ))?;
    let rows = stmt.query_map([session_id], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The entries the model sees: from the newest `reset` on, without those a rewind set
/// aside (a rewound reset included).
pub fn since_head(c: &Connection, session_id: i64) -> Result<Vec<Entry>> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM entries
         WHERE session_id = ?1 AND rewound_by IS NULL AND id >= COALESCE(
            (SELECT MAX(id) FROM entries
              WHERE session_id = ?1 AND kind = 'reset' AND rewound_by IS NULL), 0)
         ORDER BY id"
    ))?;
    let rows = stmt.query_map([session_id], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The session's entries committed after entry `after` (rewound ones too, marked): what a
/// run that holds the rest in memory reads to catch up, at the cost of what is new.
pub fn after(c: &Connection, session_id: i64, after: i64) -> Result<Vec<Entry>> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM entries WHERE session_id = ?1 AND id > ?2 ORDER BY id"
    ))?;
    let rows = stmt.query_map(params![session_id, after], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The entries of a session's tasks from `first_task` on, in order: what the window shows
/// for its newest tasks. Looked up per task (`entries_task`), so the cost follows the
/// tasks shown, not the length of the session.
pub fn of_tasks_from(c: &Connection, session_id: i64, first_task: i64) -> Result<Vec<Entry>> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM entries
         WHERE task_id IN (SELECT id FROM tasks WHERE session_id = ?1 AND id >= ?2)
         ORDER BY id"
    ))?;
    let rows = stmt.query_map(params![session_id, first_task], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub fn get(c: &Connection, id: i64) -> Result<Option<Entry>> {
    use rusqlite::OptionalExtension;
    Ok(c.query_row(
        &format!("SELECT {COLUMNS} FROM entries WHERE id = ?1"),
        [id],
        from_row,
    )
    .optional()?)
}

/// Sets aside the session's entries from `from` on that no rewind set aside yet; returns
/// how many.
pub fn rewind(c: &Connection, session_id: i64, from: i64, by: i64) -> Result<usize> {
    Ok(c.execute(
        "UPDATE entries SET rewound_by = ?3
         WHERE session_id = ?1 AND id >= ?2 AND rewound_by IS NULL",
        params![session_id, from, by],
    )?)
}

/// Brings back what the rewind `by` set aside (its redo).
pub fn unrewind(c: &Connection, by: i64) -> Result<usize> {
    Ok(c.execute(
        "UPDATE entries SET rewound_by = NULL WHERE rewound_by = ?1",
        [by],
    )?)
}

/// Sets aside the `system` note the rewind `rewind` left, once a redo brought back what it
/// set aside (the note would tell the model the opposite of what is now true).
pub fn rewind_note(c: &Connection, session_id: i64, rewind: i64, by: i64) -> Result<usize> {
    Ok(c.execute(
        "UPDATE entries SET rewound_by = ?3
         WHERE session_id = ?1 AND kind = 'system' AND rewound_by IS NULL
           AND json_valid(content) AND json_extract(content, '$.change_set') = ?2",
        params![session_id, rewind, by],
    )?)
}
