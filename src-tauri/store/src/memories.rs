//! Durable memories (issue 18): notes the model is given on every run. Global ones have no
//! workspace; a workspace's are keyed by its canonical path. Kept here, never in the
//! workspace, so nothing the agent writes there can plant one.
use rusqlite::{params, Connection, Row};

use pocketpilot_protocol::{Memory, MemoryScope};

use super::{now, row::At, Result, StoreError};

/// The longest memory kept, in bytes: a note, not a document.
pub const MAX_MEMORY_BYTES: usize = 2000;

const COLUMNS: &str = "id, scope, workspace, text, task_id, created_at, updated_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<Memory> {
    let at = At::new("memories", r, 0)?;
    Ok(Memory {
        id: at.id,
        scope: at.name(1, "scope")?,
        workspace: r.get(2)?,
        text: r.get(3)?,
        task_id: r.get(4)?,
        created_at: r.get(5)?,
        updated_at: r.get(6)?,
    })
}

fn check_text(text: &str) -> Result<&str> {
    let text = text.trim();
    if text.is_empty() {
        return Err(StoreError::Invalid("a memory cannot be empty".into()));
    }
    if text.len() > MAX_MEMORY_BYTES {
        return Err(StoreError::Invalid(format!(
            "a memory is at most {MAX_MEMORY_BYTES} bytes; this one is {}",
            text.len()
        )));
    }
    Ok(text)
}

/// Adds a memory; `workspace` is required for a workspace memory and ignored for a global one.
pub fn add(
    c: &Connection,
    scope: MemoryScope,
    workspace: Option<&str>,
    text: &str,
    task_id: Option<i64>,
) -> Result<Memory> {
    let text = check_text(text)?;
    let workspace =
        match scope {
            MemoryScope::Global => None,
            MemoryScope::Workspace => Some(workspace.ok_or_else(|| {
                StoreError::Invalid("a workspace memory needs its workspace".into())
            })?),
        };
    let at = now();
    c.execute(
        "INSERT INTO memories (scope, workspace, text, task_id, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
        params![scope.as_str(), workspace, text, task_id, at],
    )?;
    get(c, c.last_insert_rowid())
}

pub fn get(c: &Connection, id: i64) -> Result<Memory> {
    c.query_row(
        &format!("SELECT {COLUMNS} FROM memories WHERE id = ?1"),
        [id],
        from_row,
    )
    .map_err(|e| match e {
        rusqlite::Error::QueryReturnedNoRows => StoreError::NotFound {
            what: "memory",
            id: id.to_string(),
        },
        other => other.into(),
    })
}

/// The memories a run in `workspace` is given: the global ones, then the workspace's,
/// oldest first. `None`: every memory of every workspace (the CLI's and window's list).
pub fn for_workspace(c: &Connection, workspace: Option<&str>) -> Result<Vec<Memory>> {
    let mut stmt = match workspace {
        Some(_) => c.prepare(&format!(
            "SELECT {COLUMNS} FROM memories WHERE workspace IS NULL OR workspace = ?1
             ORDER BY workspace IS NOT NULL, id"
        ))?,
        None => c.prepare(&format!(
            "SELECT {COLUMNS} FROM memories ORDER BY workspace IS NOT NULL, workspace, id"
        ))?,
    };
    let rows = match workspace {
        Some(w) => stmt.query_map([w], from_row)?,
        None => stmt.query_map([], from_row)?,
    };
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

pub fn edit(c: &Connection, id: i64, text: &str) -> Result<Memory> {
    let text = check_text(text)?;
    let n = c.execute(
        "UPDATE memories SET text = ?1, updated_at = ?2 WHERE id = ?3",
        params![text, now(), id],
    )?;
    if n == 0 {
        return Err(StoreError::NotFound {
            what: "memory",
            id: id.to_string(),
        });
    }
    get(c, id)
}

pub fn delete(c: &Connection, id: i64) -> Result<()> {
    let n = c.execute("DELETE FROM memories WHERE id = ?1", [id])?;
    if n == 0 {
        return Err(StoreError::NotFound {
            what: "memory",
            id: id.to_string(),
        });
    }
    Ok(())
}
