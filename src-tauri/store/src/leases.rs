//! One worker per session across processes: a lease row per session, renewed while the
//! holder works and taken over once it has expired or its process is gone.
use rusqlite::{params, Connection, OptionalExtension};

use super::Result;

pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Whether a process with this id is alive on this machine.
pub fn pid_alive(pid: i64) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: kill with signal 0 sends nothing; it only checks that the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Takes or renews the lease; false when another live holder has it.
pub fn acquire(
    c: &Connection,
    session_id: i64,
    holder: &str,
    pid: i64,
    ttl_ms: i64,
) -> Result<bool> {
    let now = now_ms();
    let current: Option<(String, i64, i64)> = c
        .query_row(
            "SELECT holder, pid, expires_at FROM session_leases WHERE session_id = ?1",
            [session_id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    if let Some((h, p, expires)) = current {
        if h != holder && expires > now && pid_alive(p) {
            return Ok(false);
        }
    }
    c.execute(
        "INSERT INTO session_leases (session_id, holder, pid, expires_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT(session_id) DO UPDATE SET holder = excluded.holder, pid = excluded.pid, expires_at = excluded.expires_at",
        params![session_id, holder, pid, now + ttl_ms],
    )?;
    Ok(true)
}

/// Extends the lease only while `holder` still has it; false once another process took it
/// over (or it was released): the caller has lost the session and must stop.
pub fn renew(c: &Connection, session_id: i64, holder: &str, ttl_ms: i64) -> Result<bool> {
    let n = c.execute(
        "UPDATE session_leases SET expires_at = ?3 WHERE session_id = ?1 AND holder = ?2",
        params![session_id, holder, now_ms() + ttl_ms],
    )?;
    Ok(n == 1)
}

/// Whether `holder` still has the session's lease row (expired or not: nobody took it).
pub fn is_held_by(c: &Connection, session_id: i64, holder: &str) -> Result<bool> {
    Ok(c.query_row(
        "SELECT count(*) FROM session_leases WHERE session_id = ?1 AND holder = ?2",
        params![session_id, holder],
        |r| r.get::<_, i64>(0),
    )? == 1)
}

pub fn release(c: &Connection, session_id: i64, holder: &str) -> Result<()> {
    c.execute(
        "DELETE FROM session_leases WHERE session_id = ?1 AND holder = ?2",
        params![session_id, holder],
    )?;
    Ok(())
}

/// The live holder of a session's lease, if any.
pub fn holder(c: &Connection, session_id: i64) -> Result<Option<(String, i64)>> {
    let row: Option<(String, i64, i64)> = c
        .query_row(
            "SELECT holder, pid, expires_at FROM session_leases WHERE session_id = ?1",
            [session_id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    Ok(row
        .filter(|(_, pid, expires)| *expires > now_ms() && pid_alive(*pid))
        .map(|(h, pid, _)| (h, pid)))
}
