//! The person's data: copies of the store in `<data>/backups/` (now, once a day, before a
//! migration), their retention, the store's state, and putting a copy back.
//!
//! The state and the restore are free functions: they are asked exactly when the store
//! cannot be opened (it is damaged, or newer) or must not be (a restore replaces it), so
//! they never need a `Runtime`.
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::api::service::{Result, Runtime, RuntimeError};
use crate::store::backup::{self, BackupError, BackupFile, BackupSettings, Restored};
use crate::store::{health, lock, settings, StoreError, DB_FILE};

/// Names the backup the window asked to put back at the next start (`schedule_restore`).
const PENDING_RESTORE: &str = "restore.pending";
/// How long a start waits for the previous process to let go of the store before it puts
/// a scheduled backup back.
const RESTORE_WAIT: Duration = Duration::from_secs(10);

/// A backup is due this long after the newest one (of any kind).
const DAY: Duration = Duration::from_secs(24 * 60 * 60);
/// The longest the daily check sleeps at once: its timer runs on the monotonic clock,
/// which stops while the machine is suspended, so it looks at the wall clock again at
/// least this often (24 wake-ups a day, nothing done in 23 of them).
const RECHECK: Duration = Duration::from_secs(60 * 60);

impl Runtime {
    fn backups_dir(&self) -> PathBuf {
        backup::dir_of(self.store.path())
    }

    /// Copies the store into `backups/` now (beside the writer: runs go on meanwhile),
    /// then applies the retention.
    pub(crate) fn backup_now(&self) -> Result<BackupFile> {
        let file = backup::take(self.store.path(), &self.backups_dir(), Utc::now(), |_| {})
            .map_err(StoreError::from)?;
        let removed = backup::prune(&self.backups_dir(), self.backup_settings()?)
            .map_err(StoreError::from)?;
        if !removed.is_empty() {
            tracing::info!(?removed, "old backups removed by the retention");
        }
        Ok(file)
    }

    /// The backups, newest first.
    pub(crate) fn backups(&self) -> Result<Vec<BackupFile>> {
        Ok(backup::list(&self.backups_dir()).map_err(StoreError::from)?)
    }

    pub(crate) fn backup_settings(&self) -> Result<BackupSettings> {
        Ok(self
            .store
            .read(|c| settings::get(c, backup::SETTINGS_KEY))?
            .unwrap_or_default())
    }

    /// Saves the retention and applies it at once.
    pub(crate) fn set_backup_settings(&self, s: &BackupSettings) -> Result<BackupSettings> {
        if s.keep_daily == 0 {
            return Err(RuntimeError::InvalidValue(
                "keep at least one daily backup".into(),
            ));
        }
        self.store
            .write(|tx| settings::set(tx, backup::SETTINGS_KEY, s))?;
        backup::prune(&self.backups_dir(), *s).map_err(StoreError::from)?;
        Ok(*s)
    }

    /// The window cannot replace the store it has open: it names the backup to put back
    /// when the app next starts, before anything opens the store (`apply_pending_restore`).
    pub(crate) fn schedule_restore(&self, name: &str) -> Result<BackupFile> {
        let chosen = backup::list(&self.backups_dir())
            .map_err(StoreError::from)?
            .into_iter()
            .find(|b| b.name == name)
            .ok_or_else(|| StoreError::not_found("backup", name))?;
        backup::verify(chosen.path(), crate::store::SCHEMA_VERSION).map_err(StoreError::from)?;
        let marker = self.data_dir().join(PENDING_RESTORE);
        write_private(&marker, &chosen.name).map_err(|source| {
            StoreError::from(BackupError::Io {
                path: marker.clone(),
                source,
            })
        })?;
        Ok(chosen)
    }

    /// The backup scheduled to be put back at the next start, if any.
    pub(crate) fn pending_restore(&self) -> Option<String> {
        pending_name(self.data_dir())
    }

    /// A backup once a day for as long as the process runs (the app, `serve`): sleeps
    /// until the next one is due, counted from the newest backup of any kind. A failed
    /// copy (a full disk) is logged and tried again after [`RECHECK`].
    pub(crate) async fn keep_daily_backups(self: Arc<Self>) {
        loop {
            let newest = backup::list(&self.backups_dir())
                .ok()
                .and_then(|l| l.first().and_then(BackupFile::taken_at_time));
            let wait = next_backup_in(newest, Utc::now());
            if !wait.is_zero() {
                tokio::time::sleep(wait.min(RECHECK)).await;
                continue;
            }
            let rt = self.clone();
            match tokio::task::spawn_blocking(move || rt.backup_now()).await {
                Ok(Ok(file)) => tracing::info!(file = %file.name, "daily backup made"),
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "the daily backup failed");
                    tokio::time::sleep(RECHECK).await;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "the daily backup did not finish");
                    tokio::time::sleep(RECHECK).await;
                }
            }
        }
    }
}

/// How long until the next daily backup is due; zero when it is.
pub fn next_backup_in(newest: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Duration {
    let Some(newest) = newest else {
        return Duration::ZERO;
    };
    let since = (now - newest).to_std().unwrap_or(Duration::ZERO);
    // A backup "from the future" (the clock was set back) counts as made now.
    DAY.saturating_sub(since)
}

/// The store's state, found without writing to it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum StoreState {
    /// No store yet.
    Absent,
    Good {
        schema_version: i64,
    },
    /// Written by a newer build; `backup`: a copy this build opens, if one was kept.
    Newer {
        found: i64,
        supported: i64,
        backup: Option<BackupFile>,
    },
    /// `backup`: the newest backup this build opens.
    Damaged {
        detail: String,
        backup: Option<BackupFile>,
    },
}

pub fn store_path(data_dir: &Path) -> PathBuf {
    data_dir.join(DB_FILE)
}

/// What `doctor` and the damaged-store message report.
pub fn store_state(data_dir: &Path) -> std::result::Result<StoreState, StoreError> {
    let db = store_path(data_dir);
    let supported = crate::store::SCHEMA_VERSION;
    let dir = backup::dir_of(&db);
    Ok(match health::check(&db, supported)? {
        health::Health::Absent => StoreState::Absent,
        health::Health::Good { version } => StoreState::Good {
            schema_version: version,
        },
        health::Health::Newer { found } => StoreState::Newer {
            found,
            supported,
            backup: backup::newest(&dir, |v| v == supported),
        },
        health::Health::Damaged { detail } => StoreState::Damaged {
            detail,
            backup: backup::newest(&dir, |v| v <= supported),
        },
    })
}

/// The backups in the data directory, newest first (the store need not open).
pub fn backups_in(data_dir: &Path) -> std::result::Result<Vec<BackupFile>, BackupError> {
    backup::list(&backup::dir_of(&store_path(data_dir)))
}

/// `file` as given, or, when that does not exist and it is a bare name, the backup of
/// that name.
pub fn resolve_backup(data_dir: &Path, file: &Path) -> PathBuf {
    if file.exists() || file.components().count() != 1 {
        return file.to_owned();
    }
    backup::dir_of(&store_path(data_dir)).join(file)
}

/// Puts a backup in place of the store: refused while any process has the store open;
/// keeps the current store (as a backup, or set aside when damaged); deletes nothing.
pub fn restore(data_dir: &Path, file: &Path) -> std::result::Result<Restored, BackupError> {
    let db = store_path(data_dir);
    let Some(lock) = lock::Exclusive::try_take(&db).map_err(|source| BackupError::Io {
        path: db.clone(),
        source,
    })?
    else {
        return Err(BackupError::InUse { pids: Vec::new() });
    };
    let file = resolve_backup(data_dir, file);
    backup::restore(&db, &file, crate::store::SCHEMA_VERSION, &lock, Utc::now())
}

/// Like everything in the data directory, readable by its owner only.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?
        .write_all(text.as_bytes())
}

fn pending_name(data_dir: &Path) -> Option<String> {
    let name = std::fs::read_to_string(data_dir.join(PENDING_RESTORE)).ok()?;
    let name = name.trim();
    // Only a backup's name, never a path: the marker cannot point outside `backups/`.
    backup::parse_name(name).map(|_| name.to_owned())
}

/// At the app's start, before the store is opened: puts back the backup the window
/// scheduled, once the previous process let go of the store (waiting up to
/// [`RESTORE_WAIT`]). `None` when none was scheduled. The marker is removed whatever the
/// outcome, so that a restore refused (another process keeps the store open) is not
/// retried at every start; the outcome is logged.
pub fn apply_pending_restore(
    data_dir: &Path,
) -> Option<std::result::Result<Restored, BackupError>> {
    let marker = data_dir.join(PENDING_RESTORE);
    if !marker.exists() {
        return None;
    }
    let name = pending_name(data_dir);
    let _ = std::fs::remove_file(&marker);
    let name = name?;
    let file = backup::dir_of(&store_path(data_dir)).join(&name);
    let started = std::time::Instant::now();
    loop {
        match restore(data_dir, &file) {
            Err(BackupError::InUse { .. }) if started.elapsed() < RESTORE_WAIT => {
                // The process that scheduled it (a restart) is still on its way out.
                std::thread::sleep(Duration::from_millis(100));
            }
            outcome => {
                match &outcome {
                    Ok(r) => tracing::info!(from = %r.from, "backup put back at start"),
                    Err(e) => tracing::error!(error = %e, "the scheduled restore failed"),
                }
                return Some(outcome);
            }
        }
    }
}

crate::api::call::op! {
    /// Copies the store into `backups/` now (beside the writer: runs go on meanwhile), then applies
    /// the retention.
    #[derive(Debug, Clone)]
    BackupNow {} -> Result<BackupFile>
        = |rt, op| rt.backup_now();
    /// The backups, newest first.
    #[derive(Debug, Clone)]
    ListBackups {} -> Result<Vec<BackupFile>>
        = |rt, op| rt.backups();
    /// How many daily backups of the store are kept.
    #[derive(Debug, Clone)]
    GetBackupSettings {} -> Result<BackupSettings>
        = |rt, op| rt.backup_settings();
    /// Saves the retention and applies it at once.
    #[derive(Debug, Clone)]
    SetBackupSettings { settings: BackupSettings } -> Result<BackupSettings>
        = |rt, op| rt.set_backup_settings(&op.settings);
    /// The window cannot replace the store it has open: it names the backup to put back when the
    /// app next starts, before anything opens the store (`apply_pending_restore`).
    #[derive(Debug, Clone)]
    ScheduleRestore { name: String } -> Result<BackupFile>
        = |rt, op| rt.schedule_restore(&op.name);
    /// The backup scheduled to be put back at the next start, if any.
    #[derive(Debug, Clone)]
    PendingRestore {} -> Option<String>
        = |rt, op| rt.pending_restore();
    /// A backup once a day for as long as the process runs (the app, `serve`): sleeps until the
    /// next one is due, counted from the newest backup of any kind. A failed copy (a full disk) is
    /// logged and tried again after [`RECHECK`].
    #[derive(Debug, Clone)]
    KeepDailyBackups {} -> crate::api::call::Pending<()>
        = |rt, op| Box::pin(std::sync::Arc::clone(rt).keep_daily_backups());
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn the_next_daily_backup_is_due_a_day_after_the_newest() {
        let t = |h: u32| Utc.with_ymd_and_hms(2026, 12, 2, h, 0, 0).unwrap();
        assert_eq!(next_backup_in(None, t(10)), Duration::ZERO);
        assert_eq!(
            next_backup_in(Some(t(4)), t(10)),
            Duration::from_secs(18 * 3600)
        );
        let yesterday = t(9) - chrono::Duration::days(1);
        assert_eq!(next_backup_in(Some(yesterday), t(10)), Duration::ZERO);
        // The clock went back: not a flood of copies, one a day from now.
        assert_eq!(next_backup_in(Some(t(12)), t(10)), DAY);
    }

    #[test]
    fn a_restore_the_window_schedules_is_put_back_at_the_next_start_only() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path();
        let rt = Runtime::open(data).unwrap();
        let title = |rt: &Runtime| -> Vec<String> {
            rt.sessions()
                .unwrap()
                .into_iter()
                .map(|s| s.title)
                .collect()
        };
        rt.store
            .write(|tx| crate::store::sessions::insert(tx, "before", "/w"))
            .unwrap();
        let copy = rt.backup_now().unwrap();
        rt.store
            .write(|tx| crate::store::sessions::insert(tx, "after", "/w"))
            .unwrap();
        assert!(rt.schedule_restore("store-v1-20000101T000000Z.db").is_err());
        assert_eq!(rt.schedule_restore(&copy.name).unwrap(), copy);
        assert_eq!(rt.pending_restore(), Some(copy.name.clone()));
        drop(rt);
        let done = apply_pending_restore(data)
            .expect("one was scheduled")
            .unwrap();
        assert_eq!(done.from, copy.path);
        assert!(apply_pending_restore(data).is_none(), "once");
        let rt = Runtime::open(data).unwrap();
        assert_eq!(title(&rt), ["before"]);
        assert_eq!(rt.pending_restore(), None);
    }
}
