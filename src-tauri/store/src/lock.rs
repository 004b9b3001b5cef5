//! Who has the store open: every open [`crate::Store`] holds a shared lock on
//! `<store>.lock` (an advisory `flock`, released by the kernel when the process ends,
//! however it ends). Putting a backup in place takes it exclusively, without waiting: it
//! succeeds only when no app, `serve`, run or other command has the store open, and a
//! store opened meanwhile waits the few moments a restore takes.
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

pub(crate) fn lock_path(db: &Path) -> PathBuf {
    let mut s = db.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

fn open(db: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(lock_path(db))
}

/// Held by an open store for its lifetime.
#[derive(Debug)]
pub(crate) struct Shared(#[allow(dead_code)] File);

impl Shared {
    pub(crate) fn take(db: &Path) -> std::io::Result<Self> {
        let f = open(db)?;
        f.lock_shared()?;
        Ok(Self(f))
    }
}

/// Proof that no other process has the store open, while it lives.
#[derive(Debug)]
pub struct Exclusive(#[allow(dead_code)] File);

impl Exclusive {
    /// `None` when another process has the store open (this one must not either).
    pub fn try_take(db: &Path) -> std::io::Result<Option<Self>> {
        let f = open(db)?;
        match f.try_lock() {
            Ok(()) => Ok(Some(Self(f))),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(e),
        }
    }
}
