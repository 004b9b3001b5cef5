//! Is the store file whole? Asked before anything opens it for writing, and never writing
//! to it: the database file and its `-wal` keep their bytes whatever the answer.
//!
//! Two checks, in this order:
//! 1. **The write-ahead log against its index.** A process that stopped without closing
//!    (a crash, kill -9, a power cut) leaves `-wal` and `-shm`. The `-shm` header (two
//!    identical copies with a checksum) says how many WAL frames were committed
//!    (`mxFrame`). If the `-wal` now holds fewer, committed transactions were cut off
//!    the log (a truncated file, a copy that missed its tail), and worse, what is left of
//!    the log would shadow newer pages already checkpointed into the database. SQLite
//!    cannot see this: the first connection resets `-shm` and replays the valid prefix as
//!    if nothing had happened. So this is read from the files before any connection
//!    exists. Without a trustworthy `-shm` (a clean shutdown removes it; another machine
//!    may not have copied it) a cut-off log is not detectable: the valid prefix is what
//!    the store then holds.
//! 2. **`PRAGMA quick_check`** on a read-only connection: every b-tree page well formed,
//!    cells in order, no page used twice, the free list whole. It finds torn pages and a
//!    zero-filled tail. It does not compare indexes with their tables (`integrity_check`
//!    does, at several times the cost).
use std::path::{Path, PathBuf};

use rusqlite::{Connection, ErrorCode, OpenFlags};

/// What the checks found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// No database yet (no file, or an empty one): a new store is made.
    Absent,
    /// Whole, at this schema version.
    Good { version: i64 },
    /// Written by a newer PocketPilot; not checked further.
    Newer { found: i64 },
    /// Not usable as it is; `detail` says what was found.
    Damaged { detail: String },
}

pub(crate) fn wal_path(db: &Path) -> PathBuf {
    sibling(db, "-wal")
}

pub(crate) fn shm_path(db: &Path) -> PathBuf {
    sibling(db, "-shm")
}

fn sibling(db: &Path, suffix: &str) -> PathBuf {
    let mut s = db.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Checks the store at `db` without writing to it. `supported`: the newest schema version
/// this build knows. Errors are the machine's (permissions, I/O), not the file's.
pub fn check(db: &Path, supported: i64) -> Result<Health, rusqlite::Error> {
    let len = std::fs::metadata(db).map(|m| m.len()).unwrap_or(0);
    let wal_len = std::fs::metadata(wal_path(db))
        .map(|m| m.len())
        .unwrap_or(0);
    if len == 0 && wal_len == 0 {
        return Ok(Health::Absent);
    }
    if let Some(detail) = lost_log(db) {
        return Ok(Health::Damaged { detail });
    }
    // With no log beside it, the file is read as immutable: SQLite then creates no `-wal`
    // or `-shm` beside a file that may be damaged. The answer counts only if nothing
    // changed the file meanwhile (a process that opened it and checkpointed); else the
    // usual read-only connection, which shares the log's index with a live writer.
    let before = FileState::of(db);
    if !before.has_log {
        if let Ok(conn) = Connection::open_with_flags(
            immutable_uri(db),
            OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_URI,
        ) {
            let health = judge(&conn, supported);
            drop(conn);
            if FileState::of(db) == before {
                return health;
            }
        }
    }
    match Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    ) {
        Ok(conn) => judge(&conn, supported),
        Err(e) => damage_or(e),
    }
}

/// The schema version, then `quick_check`, on an open read-only connection.
fn judge(conn: &Connection, supported: i64) -> Result<Health, rusqlite::Error> {
    let version: i64 = match conn.query_row("PRAGMA user_version", [], |r| r.get(0)) {
        Ok(v) => v,
        Err(e) => return damage_or(e),
    };
    if version > supported {
        return Ok(Health::Newer { found: version });
    }
    match quick_check(conn) {
        Ok(None) => Ok(Health::Good { version }),
        Ok(Some(detail)) => Ok(Health::Damaged { detail }),
        Err(e) => damage_or(e),
    }
}

/// What tells whether another process touched the store during a check.
#[derive(PartialEq, Eq)]
struct FileState {
    len: Option<u64>,
    modified: Option<std::time::SystemTime>,
    has_log: bool,
}

impl FileState {
    fn of(db: &Path) -> Self {
        let meta = std::fs::metadata(db).ok();
        Self {
            len: meta.as_ref().map(|m| m.len()),
            modified: meta.and_then(|m| m.modified().ok()),
            has_log: wal_path(db).exists() || shm_path(db).exists(),
        }
    }
}

/// `file:` URI for `db` with `immutable=1`; every byte but the unreserved ones and `/`
/// percent-encoded, so no path can add a parameter.
fn immutable_uri(db: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file:");
    for &b in db.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(char::from(b));
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push_str("?immutable=1");
    uri
}

/// `None` when `quick_check` says "ok", else its first findings.
pub(crate) fn quick_check(conn: &Connection) -> Result<Option<String>, rusqlite::Error> {
    let mut stmt = conn.prepare("PRAGMA quick_check(5)")?;
    let rows: Vec<String> = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<Result<_, _>>()?;
    if rows.len() == 1 && rows[0] == "ok" {
        Ok(None)
    } else {
        Ok(Some(format!("quick_check: {}", rows.join("; "))))
    }
}

/// A corrupt or not-a-database answer is the file's damage; anything else is an error.
fn damage_or(e: rusqlite::Error) -> Result<Health, rusqlite::Error> {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => Ok(Health::Damaged {
            detail: e.to_string(),
        }),
        _ => Err(e),
    }
}

/// The WAL index header (`WalIndexHdr` in SQLite's wal.c): 48 bytes, native byte order,
/// stored twice at the start of `-shm`; then the checkpoint info, `nBackfill` first.
const HDR: usize = 48;
const WAL_HEADER: u64 = 32;
const FRAME_HEADER: u64 = 24;

struct IndexHeader {
    change: u32,
    page_size: u64,
    max_frame: u64,
    backfilled: u64,
}

/// Reads `-shm`'s header when it is whole (both copies equal, checksum right); `None`
/// otherwise: SQLite itself would rebuild the index then, and so cannot be second-guessed.
fn index_header(db: &Path) -> Option<IndexHeader> {
    let bytes = std::fs::read(shm_path(db)).ok()?;
    let (one, two) = (bytes.get(..HDR)?, bytes.get(HDR..2 * HDR)?);
    if one != two {
        return None;
    }
    let u32_at =
        |i: usize| -> Option<u32> { Some(u32::from_ne_bytes(one.get(i..i + 4)?.try_into().ok()?)) };
    let is_init = *one.get(12)?;
    if is_init == 0 {
        return None;
    }
    // The checksum covers the first 40 bytes, read as native-order u32 pairs.
    let (mut s1, mut s2) = (0u32, 0u32);
    for i in (0..40).step_by(8) {
        s1 = s1.wrapping_add(u32_at(i)?).wrapping_add(s2);
        s2 = s2.wrapping_add(u32_at(i + 4)?).wrapping_add(s1);
    }
    if (s1, s2) != (u32_at(40)?, u32_at(44)?) {
        return None;
    }
    let sz = u16::from_ne_bytes(one.get(14..16)?.try_into().ok()?);
    // Page sizes are powers of two up to 65536, stored in 16 bits: 65536 is 1.
    let page_size = u64::from(sz & 0xfe00) + (u64::from(sz & 1) << 16);
    let backfilled = u32::from_ne_bytes(bytes.get(2 * HDR..2 * HDR + 4)?.try_into().ok()?);
    Some(IndexHeader {
        change: u32_at(8)?,
        page_size,
        max_frame: u64::from(u32_at(16)?),
        backfilled: u64::from(backfilled),
    })
}

/// Committed frames the WAL index counts and the WAL no longer holds, as a sentence.
fn lost_log(db: &Path) -> Option<String> {
    let before = index_header(db)?;
    if before.max_frame == 0 || before.page_size == 0 {
        return None;
    }
    let wal_len = std::fs::metadata(wal_path(db))
        .map(|m| m.len())
        .unwrap_or(0);
    let frames = wal_len.saturating_sub(WAL_HEADER) / (FRAME_HEADER + before.page_size);
    if frames >= before.max_frame {
        return None;
    }
    // Nothing left of the log and every frame already in the database: nothing is lost,
    // and nothing old can shadow the newer pages.
    if frames == 0 && before.backfilled >= before.max_frame {
        return None;
    }
    // A live process may have checkpointed and truncated the log between the two reads:
    // it resets the index header before it truncates, so a changed header means that.
    let after = index_header(db)?;
    if after.change != before.change || after.max_frame != before.max_frame {
        return None;
    }
    Some(format!(
        "its write-ahead log was cut short: it holds {frames} of the {} committed frames its index counts ({} already copied into the database)",
        before.max_frame, before.backfilled
    ))
}

#[cfg(test)]
#[path = "health_tests.rs"]
mod tests;
