//! The processes a session's run started and that may still be alive: each command's and
//! MCP server's sandbox supervisor (the root of its tree). Written and removed only by the
//! session's lease holder, in the same transaction as the check that it still holds it;
//! read by the worker that takes the session over, which kills what is left.
use rusqlite::{params, Connection};

use super::{now, Result};

/// A process as recorded: its pid is only its name together with its start time (clock
/// ticks after boot, `/proc/PID/stat` field 22) and the boot it ran in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedProcess {
    pub task_id: i64,
    pub pid: i64,
    pub started: i64,
    pub boot_id: String,
}

/// The lease-holding condition every write here carries: a holder that lost the session
/// writes nothing.
const HELD: &str = "EXISTS (SELECT 1 FROM session_leases WHERE session_id = ?1 AND holder = ?2)";

/// Records `p` for the session while `holder` holds its lease; false (nothing written)
/// once it does not.
pub fn record(c: &Connection, session_id: i64, holder: &str, p: &RecordedProcess) -> Result<bool> {
    let n = c.execute(
        &format!(
            "INSERT OR REPLACE INTO run_processes (session_id, task_id, pid, started, boot_id, created_at)
             SELECT ?1, ?3, ?4, ?5, ?6, ?7 WHERE {HELD}"
        ),
        params![session_id, holder, p.task_id, p.pid, p.started, p.boot_id, now()],
    )?;
    Ok(n == 1)
}

/// Forgets one process (it ended) while `holder` holds the lease.
pub fn forget(c: &Connection, session_id: i64, holder: &str, pid: i64, started: i64) -> Result<()> {
    c.execute(
        &format!(
            "DELETE FROM run_processes WHERE session_id = ?1 AND pid = ?3 AND started = ?4 AND {HELD}"
        ),
        params![session_id, holder, pid, started],
    )?;
    Ok(())
}

/// Forgets the given processes of the session (killed by the new holder) while `holder`
/// holds the lease.
pub fn forget_all(
    c: &Connection,
    session_id: i64,
    holder: &str,
    gone: &[RecordedProcess],
) -> Result<()> {
    for p in gone {
        forget(c, session_id, holder, p.pid, p.started)?;
    }
    Ok(())
}

pub fn for_session(c: &Connection, session_id: i64) -> Result<Vec<RecordedProcess>> {
    let mut stmt = c.prepare(
        "SELECT task_id, pid, started, boot_id FROM run_processes WHERE session_id = ?1
         ORDER BY created_at, pid",
    )?;
    let rows = stmt.query_map([session_id], |r| {
        Ok(RecordedProcess {
            task_id: r.get(0)?,
            pid: r.get(1)?,
            started: r.get(2)?,
            boot_id: r.get(3)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
