//! Free space on the disk that holds the data directory.
//!
//! A run that would write to a disk that is (nearly) full pauses instead of failing: what
//! it committed stays, and it continues once space is back. Two things make that pause
//! itself recordable, however the disk filled up:
//! - [`Space::check`] reports the disk short while [`FLOOR`] bytes are still free, so a
//!   run normally stops before SQLite or a blob write meets `ENOSPC`;
//! - a reserve file ([`RESERVE_FILE`], [`RESERVE`] bytes, allocated while there is room) is
//!   given back when a run pauses for space, so that the pause (a few pages of WAL) can be
//!   written even when another program took the last byte. It is allocated again when the
//!   run continues.
use std::path::{Path, PathBuf};

/// Below this many free bytes the disk counts as full: a run pauses rather than write.
pub const FLOOR: u64 = 16 << 20;
/// The reserve kept in the data directory, given back to record a pause for space.
pub const RESERVE: u64 = 4 << 20;
pub const RESERVE_FILE: &str = "space-reserve";

/// The disk is short of space: `free` bytes were free for the data directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the disk is full: {} MB free", mb(*.free))]
pub struct DiskFull {
    pub free: u64,
}

/// Whole megabytes (MiB), rounded down, as a person reads a disk's free space.
pub fn mb(bytes: u64) -> u64 {
    bytes >> 20
}

/// Bytes free for an unprivileged writer on the filesystem holding `dir`.
pub fn free(dir: &Path) -> std::io::Result<u64> {
    let st = rustix::fs::statvfs(dir)?;
    Ok(st.f_bavail.saturating_mul(st.f_frsize))
}

/// Whether `e` says the disk (or the quota) ran out of space.
pub fn is_no_space(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
    )
}

/// The free space of one data directory.
#[derive(Debug, Clone)]
pub struct Space {
    dir: PathBuf,
}

impl Space {
    pub fn new(data_dir: &Path) -> Self {
        Self {
            dir: data_dir.to_owned(),
        }
    }

    fn reserve_path(&self) -> PathBuf {
        self.dir.join(RESERVE_FILE)
    }

    /// Free bytes now; a disk that cannot be asked counts as having room (the writes
    /// themselves still report a full disk).
    pub fn free(&self) -> u64 {
        free(&self.dir).unwrap_or(u64::MAX)
    }

    /// `Err` while fewer than [`FLOOR`] bytes are free.
    pub fn check(&self) -> Result<(), DiskFull> {
        let free = self.free();
        if free < FLOOR {
            return Err(DiskFull { free });
        }
        Ok(())
    }

    /// The disk as it is now, for a write that already failed for lack of space.
    pub fn full_now(&self) -> DiskFull {
        DiskFull {
            free: self.free().min(FLOOR.saturating_sub(1)),
        }
    }

    /// Gives the reserve back to the disk (so that a pause can be recorded). Returns
    /// whether there was one.
    pub fn release_reserve(&self) -> bool {
        match std::fs::remove_file(self.reserve_path()) {
            Ok(()) => true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
            Err(e) => {
                tracing::warn!(error = %e, "the space reserve could not be removed");
                false
            }
        }
    }

    /// Allocates the reserve if it is missing and the disk has room for it beyond the
    /// floor. A reserve that cannot be made is logged: runs still pause at the floor.
    pub fn ensure_reserve(&self) {
        let path = self.reserve_path();
        if std::fs::metadata(&path).is_ok_and(|m| m.len() >= RESERVE) {
            return;
        }
        if self.free() < FLOOR.saturating_add(RESERVE) {
            return;
        }
        if let Err(e) = allocate(&path, RESERVE) {
            tracing::warn!(error = %e, "the space reserve could not be allocated");
            let _ = std::fs::remove_file(&path);
        }
    }

    /// Whether a run paused for space may continue: the floor free again, and the room
    /// for the reserve it takes back. `Err`: the disk as it is, and the bytes needed.
    pub fn room_to_continue(&self) -> Result<(), (DiskFull, u64)> {
        let reserve_missing = !std::fs::metadata(self.reserve_path()).is_ok_and(|m| m.len() > 0);
        let needed = if reserve_missing {
            FLOOR.saturating_add(RESERVE)
        } else {
            FLOOR
        };
        let free = self.free();
        if free < needed {
            return Err((DiskFull { free }, needed));
        }
        self.ensure_reserve();
        Ok(())
    }
}

/// A file of `len` bytes whose blocks are really allocated (`fallocate`; written with
/// zeros where the filesystem cannot), synced.
fn allocate(path: &Path, len: u64) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    let fast = rustix::fs::fallocate(&file, rustix::fs::FallocateFlags::empty(), 0, len);
    if fast.is_err() {
        let mut w = std::io::BufWriter::new(&file);
        let zeros = vec![0u8; 64 << 10];
        let mut left = len;
        while left > 0 {
            let n = left.min(zeros.len() as u64) as usize;
            w.write_all(&zeros[..n])?;
            left -= n as u64;
        }
        w.flush()?;
    }
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_is_made_once_and_given_back() {
        let dir = tempfile::tempdir().unwrap();
        let space = Space::new(dir.path());
        space.ensure_reserve();
        let path = dir.path().join(RESERVE_FILE);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), RESERVE);
        assert!(space.release_reserve());
        assert!(!path.exists());
        assert!(!space.release_reserve());
        space.room_to_continue().unwrap();
        assert!(path.exists());
    }

    #[test]
    fn the_sentence_names_the_megabytes() {
        let e = DiskFull { free: 3 << 20 };
        assert_eq!(e.to_string(), "the disk is full: 3 MB free");
    }
}
