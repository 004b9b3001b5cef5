//! The store: one SQLite file in WAL mode, the single source of truth.
//!
//! Layout: `lib.rs` opens, migrates and hands out reads and writes; `writer.rs` owns the
//! write connection and commits writes in groups; one file per table holds its queries.
//!
//! Invariants:
//! - every logical step is one write (`Store::write*`): its closure runs inside a SAVEPOINT
//!   of a group transaction taken with `BEGIN IMMEDIATE` (two processes sharing a data
//!   directory serialise on it, waiting up to the busy timeout, instead of failing mid-way);
//!   the closure's writes commit all together or not at all, and an error in one closure
//!   rolls back only that closure's part of its group;
//! - writes that are ready together commit together: one COMMIT, one fsync
//!   (`synchronous=FULL`) for the whole group;
//! - no caller is answered before its group's COMMIT returned, i.e. after the fsync; a
//!   caller whose group failed to commit gets `StoreError::NotCommitted`, and nothing it was
//!   told had committed is lost;
//! - after-commit hooks (`*_then`) run after the COMMIT, in commit order, before the next
//!   group begins: live fan-out built on them never shows a subscriber an uncommitted
//!   event, nor two events out of order;
//! - sequences computed inside a closure (e.g. an event's per-task sequence) see every
//!   write committed or earlier in the same group: they stay gapless;
//! - async callers (`write_async*`) never block their runtime: the writer thread does the
//!   work and the fsync. Synchronous callers block their own thread; on a multi-thread
//!   tokio worker they do so in `block_in_place`, so the runtime's other tasks move on;
//! - reads run on read-only connections in one snapshot: they never wait for a write and
//!   never see part of a group;
//! - migrations are versioned (`PRAGMA user_version`) and applied at open, all pending ones
//!   in one transaction (the store ends at the newest version or stays at its old one),
//!   after a copy of the old store was made in `backups/` (`backup.rs`); a database from
//!   a newer version is refused and left untouched;
//! - at open, before anything writes, the file is checked (`health.rs`: the WAL against
//!   its index, then `PRAGMA quick_check`); a damaged store is refused
//!   (`StoreError::Damaged`) and never written to;
//! - every open store holds a shared lock on `<store>.lock` (`lock.rs`): a restore runs
//!   only while no process has it open;
//! - one file per table holds its queries.
#![deny(clippy::print_stdout, clippy::print_stderr)]
pub mod approvals;
pub mod backup;
pub mod change_sets;
pub mod command_rules;
pub mod compactions;
pub mod costs;
pub mod entries;
pub mod events;
pub mod health;
pub mod leases;
pub mod lock;
pub mod memories;
pub mod plans;
pub mod processes;
mod row;
mod schema;
pub mod search;
pub mod sessions;
pub mod settings;
pub mod space;
pub mod submissions;
pub mod tasks;
pub mod tool_calls;
pub mod triggers;
mod writer;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, Transaction, TransactionBehavior};

pub use writer::WriterStats;
use writer::{Call, Reply, Writer};

pub use approvals::Approval;
pub use change_sets::ChangeSet;
pub use entries::Entry;
pub use events::StoredEvent;
pub use row::CorruptRow;
pub use sessions::Session;
pub use submissions::Submission;
pub use tasks::Task;
pub use tool_calls::ToolCallRecord;

pub const DB_FILE: &str = "pocketpilot.db";
/// The newest schema version this build knows (and migrates to).
pub const SCHEMA_VERSION: i64 = schema::MIGRATIONS.len() as i64;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the data directory {path} is not usable: {source}")]
    DataDir {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The store file is damaged (or is not a database): nothing was written to it.
    /// `backup`: the newest backup this build can open, if there is one.
    #[error("{path} is damaged: {detail}. Nothing was written to it{}", restore_hint(.backup.as_deref()))]
    Damaged {
        path: PathBuf,
        detail: String,
        backup: Option<PathBuf>,
    },
    /// `backup`: a copy made at schema `supported` (before the newer build migrated it).
    #[error("{path} was written by a newer PocketPilot (schema {found}, this build knows up to {supported}); it was left as it is. Update PocketPilot{}", older_hint(.backup.as_deref(), *.supported))]
    NewerSchema {
        path: PathBuf,
        found: i64,
        supported: i64,
        backup: Option<PathBuf>,
    },
    /// A backup (or a restore) could not be made.
    #[error(transparent)]
    Backup(#[from] backup::BackupError),
    /// No copy could be made before an upgrade, so the upgrade did not run either.
    #[error("the store was not upgraded from schema {from} to {to}, and is left as it was: a backup must be made first, and it failed: {source}")]
    NotMigrated {
        from: i64,
        to: i64,
        source: backup::BackupError,
    },
    #[error("no {what} with id {id}")]
    NotFound { what: &'static str, id: String },
    #[error("stored data is invalid: {0}")]
    Invalid(String),
    /// A write of a run whose session's lease another process took over: refused inside
    /// the write's own transaction, so a worker that was frozen past its lease records
    /// nothing on waking.
    #[error("session {session_id} is worked by another process now")]
    LeaseLost { session_id: i64 },
    /// A stored value that does not parse, named by table, row and column.
    #[error(transparent)]
    CorruptRow(#[from] CorruptRow),
    #[error("database error: {0}")]
    Sqlite(rusqlite::Error),
    /// The write's group did not commit (a full disk, an I/O error, the database locked by
    /// another process past the busy timeout): nothing of this write is stored.
    #[error("the write was not committed: {0}")]
    NotCommitted(Arc<rusqlite::Error>),
    /// The write was never answered: its closure panicked.
    #[error("the write was abandoned before it committed (its closure panicked)")]
    Abandoned,
    #[error("could not start the store's writer thread: {0}")]
    WriterThread(std::io::Error),
}

fn restore_hint(backup: Option<&Path>) -> String {
    match backup {
        Some(b) => format!("; the newest backup is {}", b.display()),
        None => "; there is no backup of it".into(),
    }
}

fn older_hint(backup: Option<&Path>, supported: i64) -> String {
    match backup {
        Some(b) => format!(
            ", or restore {} (schema {supported}, which this build opens)",
            b.display()
        ),
        None => String::new(),
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        match e {
            rusqlite::Error::FromSqlConversionFailure(_, _, inner) => {
                match inner.downcast::<CorruptRow>() {
                    Ok(row) => StoreError::CorruptRow(*row),
                    Err(other) => StoreError::Sqlite(rusqlite::Error::FromSqlConversionFailure(
                        0,
                        rusqlite::types::Type::Text,
                        other,
                    )),
                }
            }
            other => StoreError::Sqlite(other),
        }
    }
}

impl StoreError {
    /// Whether the write failed because the disk (or the temporary directory SQLite
    /// spills to) is full.
    pub fn is_disk_full(&self) -> bool {
        let sqlite = match self {
            StoreError::Sqlite(e) => e,
            StoreError::NotCommitted(e) => e.as_ref(),
            StoreError::Backup(backup::BackupError::NoSpace { .. }) => return true,
            _ => return false,
        };
        sqlite.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull)
    }

    pub fn not_found(what: &'static str, id: impl ToString) -> Self {
        StoreError::NotFound {
            what,
            id: id.to_string(),
        }
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// One writer connection (owned by the writer, see `writer.rs`) and a few read-only ones.
/// Reads never wait for a write: under WAL a reader sees the last commit while a write
/// (and its fsync) is in progress, so the window's queries stay fast while a run commits
/// events on a slow disk.
pub struct Store {
    /// Idle readers; a read takes one (or opens one) and puts it back. Declared before the
    /// writer so that they close first: the last connection to close checkpoints the WAL
    /// into the database file, and a read-only one cannot.
    readers: Mutex<Vec<Connection>>,
    writer: Writer,
    path: PathBuf,
    /// Released last: after the writer's closing checkpoint.
    _lock: lock::Shared,
}

/// Readers kept open between reads; more are opened when reads overlap, then dropped.
const IDLE_READERS: usize = 4;

pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

impl Store {
    /// Opens (creating if needed) the database in `data_dir`.
    pub fn open_in_dir(data_dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(data_dir).map_err(|source| StoreError::DataDir {
            path: data_dir.to_owned(),
            source,
        })?;
        // Probe writability up front: SQLite would otherwise fail later with a vaguer error.
        let probe = data_dir.join(".write-probe");
        std::fs::write(&probe, b"ok").map_err(|source| StoreError::DataDir {
            path: data_dir.to_owned(),
            source,
        })?;
        let _ = std::fs::remove_file(&probe);
        Self::open(&data_dir.join(DB_FILE))
    }

    pub fn open(path: &Path) -> Result<Self> {
        Self::open_with(path, schema::MIGRATIONS)
    }

    /// `open` with the migrations a build knows: tests pass an older list (an older
    /// build) or one whose last migration fails halfway.
    fn open_with(path: &Path, migrations: &[&str]) -> Result<Self> {
        let held = lock::Shared::take(path).map_err(|source| StoreError::DataDir {
            path: lock::lock_path(path),
            source,
        })?;
        let supported = migrations.len() as i64;
        let backups = backup::dir_of(path);
        let checked = health::check(path, supported)?;
        match checked {
            health::Health::Absent | health::Health::Good { .. } => {}
            health::Health::Newer { found } => {
                return Err(StoreError::NewerSchema {
                    path: path.to_owned(),
                    found,
                    supported,
                    backup: backup::newest(&backups, |v| v == supported)
                        .map(|b| b.path().to_owned()),
                })
            }
            health::Health::Damaged { detail } => {
                return Err(StoreError::Damaged {
                    path: path.to_owned(),
                    detail,
                    backup: backup::newest(&backups, |v| v <= supported)
                        .map(|b| b.path().to_owned()),
                })
            }
        }
        let damaged = |e: rusqlite::Error| StoreError::Damaged {
            path: path.to_owned(),
            detail: e.to_string(),
            backup: None,
        };
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(damaged)?;
        conn.busy_timeout(Duration::from_secs(10))?;
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(damaged)?;
        if version > supported {
            // Another process migrated it between the check and now.
            return Err(StoreError::NewerSchema {
                path: path.to_owned(),
                found: version,
                supported,
                backup: None,
            });
        }
        if version > 0 && version < supported {
            // Never migrate without a copy the current build can open.
            backup::take(path, &backups, chrono::Utc::now(), |_| {}).map_err(|source| {
                StoreError::NotMigrated {
                    from: version,
                    to: supported,
                    source,
                }
            })?;
        }
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(damaged)?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        let mut conn = conn;
        Self::migrate(&mut conn, version, migrations)?;
        Ok(Self {
            writer: Writer::start(conn)?,
            readers: Mutex::new(Vec::new()),
            path: path.to_owned(),
            _lock: held,
        })
    }

    fn migrate(conn: &mut Connection, from: i64, migrations: &[&str]) -> Result<()> {
        if from as usize >= migrations.len() {
            return Ok(());
        }
        // A migration may rebuild a table (SQLite's documented way to change a CHECK):
        // foreign keys are off while they run (the pragma is a no-op inside a transaction)
        // and checked before they commit.
        conn.pragma_update(None, "foreign_keys", "OFF")?;
        let migrated = Self::apply_migrations(conn, migrations);
        conn.pragma_update(None, "foreign_keys", "ON")?;
        migrated
    }

    /// Every pending migration in one transaction: a failure anywhere leaves the store at
    /// the version it had (the schema version is part of the database header, written by
    /// the same commit).
    fn apply_migrations(conn: &mut Connection, migrations: &[&str]) -> Result<()> {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        // Another process may have migrated between our read and our lock.
        let current: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if current >= 1 {
            schema::repair_edited_migrations(&tx)?;
        }
        for (i, sql) in migrations.iter().enumerate().skip(current.max(0) as usize) {
            tx.execute_batch(sql)?;
            let broken: Option<String> = tx
                .query_row("PRAGMA foreign_key_check", [], |r| r.get(0))
                .optional()?;
            if let Some(table) = broken {
                return Err(StoreError::Invalid(format!(
                    "migration {} left a broken reference in {table}",
                    i + 1
                )));
            }
            tx.pragma_update(None, "user_version", (i + 1) as i64)?;
        }
        tx.commit()?;
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on a read-only connection, in one read transaction: all its statements see
    /// the same committed state (never a write in progress), and it never waits for one.
    pub fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let idle = self.readers.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let conn = match idle {
            Some(c) => c,
            None => self.open_reader()?,
        };
        let out = (|| {
            let snapshot = conn.unchecked_transaction()?;
            let out = f(&snapshot)?;
            snapshot.commit()?;
            Ok(out)
        })();
        let mut idle = self.readers.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < IDLE_READERS {
            idle.push(conn);
        }
        out
    }

    fn open_reader(&self) -> Result<Connection> {
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        // Only a checkpoint or recovery can make a WAL reader wait, and only briefly.
        conn.busy_timeout(Duration::from_secs(10))?;
        Ok(conn)
    }

    /// Runs `f` as one write (see the invariants above) on this thread, together with
    /// the writes queued meanwhile, and returns once it committed.
    pub fn write<T: 'static>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        self.write_with(f)
    }

    /// `write` for callers whose own error type wraps `StoreError`.
    pub fn write_with<T: 'static, E: From<StoreError> + 'static>(
        &self,
        f: impl FnOnce(&Transaction<'_>) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        self.write_then(f, |_| {})
    }

    /// `write_with`, then `then(&value)` after the commit, in commit order (see the
    /// invariants above). `then` must be quick: the next group waits for it.
    pub fn write_then<T: 'static, E: From<StoreError> + 'static>(
        &self,
        f: impl FnOnce(&Transaction<'_>) -> std::result::Result<T, E>,
        then: impl FnOnce(&T) + 'static,
    ) -> std::result::Result<T, E> {
        off_runtime(|| self.writer.run_here(f, then))
    }

    /// A write handed to the writer thread; this thread blocks until its group committed.
    /// Unlike `write`, writes from many threads at once share groups (and fsyncs).
    pub fn write_queued<T, E>(
        &self,
        f: impl FnOnce(&Transaction<'_>) -> std::result::Result<T, E> + Send + 'static,
        then: impl FnOnce(&T) + Send + 'static,
    ) -> std::result::Result<T, E>
    where
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
    {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.writer.submit(Call {
            f,
            then,
            reply: Reply::Blocking(tx),
        });
        off_runtime(|| rx.recv().unwrap_or(Err(E::from(StoreError::Abandoned))))
    }

    /// A write handed to the writer thread, awaited: the runtime is never blocked. The
    /// write is queued when this is called, not when the future is first polled; dropping
    /// the future does not withdraw it.
    pub fn write_async<T, E>(
        &self,
        f: impl FnOnce(&Transaction<'_>) -> std::result::Result<T, E> + Send + 'static,
    ) -> impl Future<Output = std::result::Result<T, E>> + Send + 'static
    where
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
    {
        self.write_async_then(f, |_| {})
    }

    /// `write_async` with an after-commit hook (see `write_then`).
    pub fn write_async_then<T, E>(
        &self,
        f: impl FnOnce(&Transaction<'_>) -> std::result::Result<T, E> + Send + 'static,
        then: impl FnOnce(&T) + Send + 'static,
    ) -> impl Future<Output = std::result::Result<T, E>> + Send + 'static
    where
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.writer.submit(Call {
            f,
            then,
            reply: Reply::Async(tx),
        });
        async move { rx.await.unwrap_or(Err(E::from(StoreError::Abandoned))) }
    }

    /// A number that moves when *another* process commits to this store, and never on this
    /// store's own writes: SQLite's `data_version` of the writer connection (the only one
    /// here that writes). `None` while a group is committing: ask again later.
    pub fn foreign_version(&self) -> Option<Result<i64>> {
        self.writer.data_version()
    }

    /// Groups committed and writes they answered since the store opened.
    pub fn writer_stats(&self) -> WriterStats {
        self.writer.stats()
    }
}

/// Runs a blocking `f`; on a multi-thread tokio worker, in `block_in_place`, so that the
/// worker's other tasks (a stream's timers, the window's reads) move to another thread
/// meanwhile. A current-thread runtime cannot do that: its callers use `write_async`.
fn off_runtime<R>(f: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

pub(crate) fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".into())
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
