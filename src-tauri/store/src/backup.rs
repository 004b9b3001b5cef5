//! Copies of the store in `<data>/backups/`, made with SQLite's online backup API, and
//! putting one back.
//!
//! Promises:
//! - a copy is one consistent snapshot: its source connection holds one read transaction
//!   from the first page to the last, so it never restarts and never mixes two states;
//!   under WAL that read transaction never makes a writer wait;
//! - a copy appears under its final name only whole: it is written as `NAME.partial`,
//!   checked (`quick_check`), synced, then renamed; it is a single file (rollback
//!   journal mode), readable by the build of its schema version;
//! - names say what is inside: `store-v{schema}-{UTC time}.db`
//!   (e.g. `store-v11-20261202T101500Z.db`), `-N` added when two fall in one second;
//! - a copy starts only when the disk has room for it (the store's size plus a margin);
//! - [`restore`] runs only while no other process has the store open, keeps the current
//!   store (a copy in `backups/`, or, when it is damaged, the files themselves moved to
//!   `<data>/damaged/<time>/`) and deletes nothing.
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use chrono::{DateTime, NaiveDateTime, Utc};
use rusqlite::backup::{Backup, StepResult};
use rusqlite::{Connection, OpenFlags};
use serde::{Deserialize, Serialize};

use crate::health::{self, Health};

pub const BACKUPS_DIR: &str = "backups";
pub const DAMAGED_DIR: &str = "damaged";
/// The settings row holding [`BackupSettings`].
pub const SETTINGS_KEY: &str = "backups";
/// Pages copied per step; the copy hands the CPU back between steps.
const PAGES_PER_STEP: i32 = 1024;
/// Room kept free beyond the copy itself, so that a backup never fills the disk.
const MARGIN: u64 = 64 << 20;
const TIME_FORMAT: &str = "%Y%m%dT%H%M%SZ";

#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("not enough free space in {dir} for a backup: {} MB needed, {} MB free", .needed >> 20, .free >> 20)]
    NoSpace {
        dir: PathBuf,
        needed: u64,
        free: u64,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("backup of {path}: {source}")]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("{path} is not a usable backup: {detail}")]
    NotUsable { path: PathBuf, detail: String },
    /// Another process has the store open; nothing was changed.
    #[error("the store is in use by another PocketPilot process (the app, `pocketpilot serve` or a run{}): quit it first; nothing was changed", pids_text(.pids))]
    InUse { pids: Vec<i64> },
    #[error("there is no store at {0} to back up")]
    NoStore(PathBuf),
}

fn pids_text(pids: &[i64]) -> String {
    if pids.is_empty() {
        String::new()
    } else {
        let p: Vec<String> = pids.iter().map(i64::to_string).collect();
        format!(", pid {}", p.join(", "))
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BackupError + '_ {
    move |source| BackupError::Io {
        path: path.to_owned(),
        source,
    }
}

fn sql(path: &Path) -> impl FnOnce(rusqlite::Error) -> BackupError + '_ {
    move |source| BackupError::Sqlite {
        path: path.to_owned(),
        source,
    }
}

/// How many copies are kept (the setting `backups`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct BackupSettings {
    /// The newest copy of each of this many days (UTC) that have one. The newest copy of
    /// each schema version is kept besides.
    pub keep_daily: u32,
}

impl Default for BackupSettings {
    fn default() -> Self {
        Self { keep_daily: 7 }
    }
}

/// One copy in `backups/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct BackupFile {
    pub name: String,
    pub path: String,
    pub schema_version: i64,
    /// RFC 3339, UTC.
    pub taken_at: String,
    /// Size in bytes.
    pub bytes: u64,
}

impl BackupFile {
    pub fn path(&self) -> &Path {
        Path::new(&self.path)
    }

    pub fn taken_at_time(&self) -> Option<DateTime<Utc>> {
        DateTime::parse_from_rfc3339(&self.taken_at)
            .ok()
            .map(|t| t.with_timezone(&Utc))
    }
}

/// The backups folder of the store at `db`.
pub fn dir_of(db: &Path) -> PathBuf {
    db.parent()
        .unwrap_or_else(|| Path::new("."))
        .join(BACKUPS_DIR)
}

pub fn file_name(version: i64, at: DateTime<Utc>) -> String {
    format!("store-v{version}-{}.db", at.format(TIME_FORMAT))
}

/// `(schema version, time)` of a backup's file name; `None` for any other file.
pub fn parse_name(name: &str) -> Option<(i64, DateTime<Utc>)> {
    let rest = name.strip_prefix("store-v")?.strip_suffix(".db")?;
    let (version, rest) = rest.split_once('-')?;
    let time = rest.get(..16)?;
    let suffix = rest.get(16..)?;
    if !(suffix.is_empty()
        || suffix
            .strip_prefix('-')
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())))
    {
        return None;
    }
    let at = NaiveDateTime::parse_from_str(time, TIME_FORMAT).ok()?;
    Some((version.parse().ok()?, at.and_utc()))
}

/// The backups in `dir`, newest first. A missing folder has none.
pub fn list(dir: &Path) -> Result<Vec<BackupFile>, BackupError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(dir)(e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io(dir))?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        let Some((version, at)) = parse_name(&name) else {
            continue;
        };
        let bytes = entry.metadata().map(|m| m.len()).unwrap_or(0);
        out.push(BackupFile {
            path: entry.path().display().to_string(),
            name,
            schema_version: version,
            taken_at: at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            bytes,
        });
    }
    // Same second: the `-N` suffix orders them.
    out.sort_by(|a, b| {
        (&b.taken_at, b.name.len(), &b.name).cmp(&(&a.taken_at, a.name.len(), &a.name))
    });
    Ok(out)
}

/// The newest backup whose schema version satisfies `fits`.
pub fn newest(dir: &Path, fits: impl Fn(i64) -> bool) -> Option<BackupFile> {
    list(dir).ok()?.into_iter().find(|b| fits(b.schema_version))
}

/// Bytes free for an unprivileged writer on the filesystem holding `dir`.
pub fn free_space(dir: &Path) -> Result<u64, BackupError> {
    let st = rustix::fs::statvfs(dir).map_err(|e| io(dir)(e.into()))?;
    Ok(st.f_bavail.saturating_mul(st.f_frsize))
}

fn ensure_room(dir: &Path, copy: u64) -> Result<(), BackupError> {
    let needed = copy.saturating_add(MARGIN);
    let free = free_space(dir)?;
    if free < needed {
        return Err(BackupError::NoSpace {
            dir: dir.to_owned(),
            needed,
            free,
        });
    }
    Ok(())
}

fn store_size(db: &Path) -> u64 {
    let len = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    len(db) + len(&health::wal_path(db))
}

/// A private folder (0700), made if missing.
fn private_dir(dir: &Path) -> Result<(), BackupError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io(dir))
}

/// What a step of a copy has done (for progress, and for the tests that write meanwhile).
#[derive(Debug, Clone, Copy)]
pub struct Step {
    pub remaining: i32,
    pub total: i32,
}

/// Copies the store at `db` into `dir` as one consistent snapshot, named with the
/// snapshot's schema version and `now`. `on_step` runs between steps, while the copy's
/// read transaction is open.
pub fn take(
    db: &Path,
    dir: &Path,
    now: DateTime<Utc>,
    mut on_step: impl FnMut(Step),
) -> Result<BackupFile, BackupError> {
    if !db.exists() {
        return Err(BackupError::NoStore(db.to_owned()));
    }
    private_dir(dir)?;
    ensure_room(dir, store_size(db))?;
    let src = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sql(db))?;
    src.busy_timeout(std::time::Duration::from_secs(10))
        .map_err(sql(db))?;
    // One read transaction across every step: the snapshot cannot move under the copy.
    src.execute_batch("BEGIN DEFERRED").map_err(sql(db))?;
    let version: i64 = src
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(sql(db))?;
    let name = free_name(dir, version, now);
    let partial = dir.join(format!("{name}.partial"));
    let copied = copy_pages(&src, &partial, &mut on_step);
    let _ = src.execute_batch("COMMIT");
    drop(src);
    if let Err(e) = copied.and_then(|()| seal(&partial)) {
        let _ = std::fs::remove_file(&partial);
        return Err(e);
    }
    let path = dir.join(&name);
    std::fs::rename(&partial, &path).map_err(io(&path))?;
    sync_dir(dir)?;
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    Ok(BackupFile {
        path: path.display().to_string(),
        name,
        schema_version: version,
        taken_at: now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        bytes,
    })
}

fn free_name(dir: &Path, version: i64, now: DateTime<Utc>) -> String {
    let base = file_name(version, now);
    if !dir.join(&base).exists() {
        return base;
    }
    let stem = base.trim_end_matches(".db");
    (2..)
        .map(|n| format!("{stem}-{n}.db"))
        .find(|n| !dir.join(n).exists())
        .unwrap_or(base)
}

fn copy_pages(
    src: &Connection,
    to: &Path,
    on_step: &mut impl FnMut(Step),
) -> Result<(), BackupError> {
    let mut dst = open_private_db(to)?;
    {
        let backup = Backup::new(src, &mut dst).map_err(sql(to))?;
        loop {
            let r = backup.step(PAGES_PER_STEP).map_err(sql(to))?;
            let p = backup.progress();
            match r {
                StepResult::Done => break,
                StepResult::More => on_step(Step {
                    remaining: p.remaining,
                    total: p.pagecount,
                }),
                // Our source holds its own read transaction and the target is ours alone:
                // a lock here is another process's exclusive lock, waited out briefly.
                StepResult::Busy | StepResult::Locked => {
                    std::thread::sleep(std::time::Duration::from_millis(20))
                }
                _ => std::thread::sleep(std::time::Duration::from_millis(20)),
            }
        }
    }
    // A single self-contained file: no -wal beside a copy.
    dst.pragma_update(None, "journal_mode", "DELETE")
        .map_err(sql(to))?;
    if let Some(detail) = health::quick_check(&dst).map_err(sql(to))? {
        return Err(BackupError::NotUsable {
            path: to.to_owned(),
            detail,
        });
    }
    dst.close().map_err(|(_, e)| sql(to)(e))
}

/// A new database file readable by its owner only.
fn open_private_db(path: &Path) -> Result<Connection, BackupError> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(io(path))?;
    Connection::open(path).map_err(sql(path))
}

fn seal(path: &Path) -> Result<(), BackupError> {
    File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(io(path))
}

fn sync_dir(dir: &Path) -> Result<(), BackupError> {
    File::open(dir).and_then(|f| f.sync_all()).map_err(io(dir))
}

/// Deletes the backups the settings do not keep; returns their names. Kept: the newest
/// of each of the `keep_daily` newest days that have one, and the newest of each schema
/// version (the copy an older build can open).
pub fn prune(dir: &Path, settings: BackupSettings) -> Result<Vec<String>, BackupError> {
    let all = list(dir)?;
    let mut days = Vec::new();
    let mut versions = Vec::new();
    let mut removed = Vec::new();
    for b in &all {
        let day = b.taken_at_time().map(|t| t.date_naive());
        let newest_of_day = !days.contains(&day);
        if newest_of_day {
            days.push(day);
        }
        let newest_of_version = !versions.contains(&b.schema_version);
        if newest_of_version {
            versions.push(b.schema_version);
        }
        let kept_daily = newest_of_day && days.len() <= settings.keep_daily as usize;
        if !(kept_daily || newest_of_version) {
            std::fs::remove_file(b.path()).map_err(io(b.path()))?;
            removed.push(b.name.clone());
        }
    }
    Ok(removed)
}

/// What [`restore`] did with the store it replaced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Kept {
    /// The store was whole: a copy of it is in `backups/`.
    Backup { file: BackupFile },
    /// The store was damaged: its files were moved to this folder, as they were.
    SetAside { dir: String },
    /// There was no store.
    Nothing,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Restored {
    pub from: String,
    pub schema_version: i64,
    pub kept: Kept,
}

/// Checks that `file` is a whole database this build can open; its schema version.
pub fn verify(file: &Path, supported: i64) -> Result<i64, BackupError> {
    let not_usable = |detail: String| BackupError::NotUsable {
        path: file.to_owned(),
        detail,
    };
    if !file.is_file() {
        return Err(not_usable("no such file".into()));
    }
    match health::check(file, supported).map_err(sql(file))? {
        Health::Good { version } => Ok(version),
        Health::Absent => Err(not_usable("it is empty".into())),
        Health::Newer { found } => Err(not_usable(format!(
            "it has schema {found}, newer than this build's {supported}"
        ))),
        Health::Damaged { detail } => Err(not_usable(detail)),
    }
}

/// Puts `file` in place of the store at `db`, while no other process has the store open
/// (`lock` proves it). Keeps the current store, deletes nothing.
pub fn restore(
    db: &Path,
    file: &Path,
    supported: i64,
    lock: &crate::lock::Exclusive,
    now: DateTime<Utc>,
) -> Result<Restored, BackupError> {
    let _ = lock;
    let version = verify(file, supported)?;
    let data = db.parent().unwrap_or_else(|| Path::new("."));
    // Checked once, first: any connection would reset the WAL index that tells a cut-off
    // log, and the answer decides how the current store is kept.
    let current = health::check(db, supported).map_err(sql(db))?;
    if matches!(current, Health::Good { .. } | Health::Newer { .. }) {
        let pids = live_lease_pids(db);
        if !pids.is_empty() {
            return Err(BackupError::InUse { pids });
        }
    }
    let size = std::fs::metadata(file).map_err(io(file))?.len();
    ensure_room(data, size.saturating_add(store_size(db)))?;
    let staged = data.join(format!(
        "{}.restoring",
        db.file_name().and_then(|n| n.to_str()).unwrap_or("store")
    ));
    let _ = std::fs::remove_file(&staged);
    std::fs::copy(file, &staged).map_err(io(&staged))?;
    seal(&staged)?;
    let kept = match keep_current(db, &current, now) {
        Ok(k) => k,
        Err(e) => {
            let _ = std::fs::remove_file(&staged);
            return Err(e);
        }
    };
    std::fs::rename(&staged, db).map_err(io(db))?;
    sync_dir(data)?;
    Ok(Restored {
        from: file.display().to_string(),
        schema_version: version,
        kept,
    })
}

/// Keeps the store about to be replaced: a whole one as a backup (then folded into its
/// main file by SQLite, so no stale `-wal` is left to be replayed onto the restored one),
/// a damaged one by moving its files, as they are, to `damaged/<time>/`.
fn keep_current(db: &Path, current: &Health, now: DateTime<Utc>) -> Result<Kept, BackupError> {
    match current {
        Health::Absent => {
            set_aside_files(db, now)?;
            Ok(Kept::Nothing)
        }
        Health::Good { .. } | Health::Newer { .. } => {
            let file = take(db, &dir_of(db), now, |_| {})?;
            let c = Connection::open(db).map_err(sql(db))?;
            c.pragma_update(None, "journal_mode", "DELETE")
                .map_err(sql(db))?;
            c.close().map_err(|(_, e)| sql(db)(e))?;
            Ok(Kept::Backup { file })
        }
        Health::Damaged { .. } => Ok(Kept::SetAside {
            dir: set_aside_files(db, now)?.display().to_string(),
        }),
    }
}

/// Moves the store's files (main, `-wal`, `-shm`, those that exist) to
/// `<data>/damaged/<time>/`.
pub fn set_aside_files(db: &Path, now: DateTime<Utc>) -> Result<PathBuf, BackupError> {
    let data = db.parent().unwrap_or_else(|| Path::new("."));
    let stamp = now.format(TIME_FORMAT).to_string();
    let mut dir = data.join(DAMAGED_DIR).join(&stamp);
    let mut n = 2;
    while dir.exists() {
        dir = data.join(DAMAGED_DIR).join(format!("{stamp}-{n}"));
        n += 1;
    }
    private_dir(&dir)?;
    for f in [db.to_owned(), health::wal_path(db), health::shm_path(db)] {
        if f.exists() {
            let name = f.file_name().map(PathBuf::from).unwrap_or_default();
            std::fs::rename(&f, dir.join(name)).map_err(io(&f))?;
        }
    }
    sync_dir(&dir)?;
    sync_dir(data)?;
    Ok(dir)
}

/// Processes holding a live session lease in the store at `db` (a build that predates
/// the lock file still records its runs there). An unreadable store has none to tell.
fn live_lease_pids(db: &Path) -> Vec<i64> {
    let Ok(c) = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    ) else {
        return Vec::new();
    };
    let rows: Result<Vec<(i64, i64)>, _> = c
        .prepare("SELECT pid, expires_at FROM session_leases")
        .and_then(|mut s| {
            s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<Vec<_>, _>>()
        });
    let now = crate::leases::now_ms();
    let mut pids: Vec<i64> = rows
        .unwrap_or_default()
        .into_iter()
        .filter(|(pid, expires)| *expires > now && crate::leases::pid_alive(*pid))
        .map(|(pid, _)| pid)
        .collect();
    pids.dedup();
    pids
}

#[cfg(test)]
#[path = "backup_tests.rs"]
mod tests;
