//! What the machine has to give a model: memory available now, free disk.
//!
//! `POCKETPILOT_MEMORY_AVAILABLE` and `POCKETPILOT_DISK_FREE` (bytes) override the measured
//! figures, so a refusal can be shown on any machine. Code that must not read the
//! environment passes a [`MachineFacts`] instead.
use std::path::Path;

pub const MEMORY_VAR: &str = "POCKETPILOT_MEMORY_AVAILABLE";
pub const DISK_VAR: &str = "POCKETPILOT_DISK_FREE";

/// Bytes of memory available for a new process without swapping (`MemAvailable`).
/// When the system does not say, `u64::MAX`: nothing is refused for want of a figure.
pub fn memory_available() -> u64 {
    if let Some(v) = env_bytes(MEMORY_VAR) {
        return v;
    }
    meminfo_available()
        .or_else(sysconf_available)
        .unwrap_or(u64::MAX)
}

/// Bytes free for an unprivileged writer on the filesystem holding `path` (or, when `path`
/// does not exist yet, its nearest existing ancestor).
pub fn disk_free(path: &Path) -> std::io::Result<u64> {
    if let Some(v) = env_bytes(DISK_VAR) {
        return Ok(v);
    }
    let mut at = path;
    while !at.exists() {
        match at.parent() {
            Some(p) if !p.as_os_str().is_empty() => at = p,
            _ => {
                at = Path::new(".");
                break;
            }
        }
    }
    statvfs_free(at)
}

/// Fixed figures in place of the measured ones; `None` measures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MachineFacts {
    pub memory_available: Option<u64>,
    pub disk_free: Option<u64>,
}

impl MachineFacts {
    pub fn memory_available(&self) -> u64 {
        self.memory_available.unwrap_or_else(memory_available)
    }

    pub fn disk_free(&self, path: &Path) -> std::io::Result<u64> {
        match self.disk_free {
            Some(v) => Ok(v),
            None => disk_free(path),
        }
    }
}

fn env_bytes(var: &str) -> Option<u64> {
    let value = std::env::var(var).ok()?;
    match value.trim().parse() {
        Ok(v) => Some(v),
        Err(_) => {
            tracing::warn!("{var}={value:?} is not a number of bytes; ignored");
            None
        }
    }
}

fn meminfo_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let mut parts = line.split_whitespace().skip(1);
    let value: u64 = parts.next()?.parse().ok()?;
    match parts.next() {
        Some("kB") => value.checked_mul(1024),
        None => Some(value),
        Some(_) => None,
    }
}

fn sysconf_available() -> Option<u64> {
    // SAFETY: sysconf reads system constants; it has no memory-safety preconditions.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_AVPHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let pages = u64::try_from(pages).ok().filter(|p| *p > 0)?;
    let size = u64::try_from(size).ok().filter(|s| *s > 0)?;
    pages.checked_mul(size)
}

fn statvfs_free(path: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: c_path is a NUL-terminated string; stat points to writable memory of the
    // struct's size, which statvfs fills on success.
    let rc = unsafe { libc::statvfs(c_path.as_ptr(), stat.as_mut_ptr()) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: statvfs returned 0, so it initialised the struct.
    let stat = unsafe { stat.assume_init() };
    #[allow(clippy::unnecessary_cast)] // the field widths differ between platforms
    let free = (stat.f_bavail as u64).saturating_mul(stat.f_frsize as u64);
    Ok(free)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_measured_figures_are_plausible() {
        // Skipped when the environment overrides them (it is read, not set, here).
        if std::env::var_os(MEMORY_VAR).is_none() {
            let m = memory_available();
            assert!(m > 1024 * 1024, "{m}");
        }
        if std::env::var_os(DISK_VAR).is_none() {
            let dir = tempfile::tempdir().unwrap();
            let free = disk_free(&dir.path().join("not/yet/made")).unwrap();
            assert!(free > 0);
        }
    }

    #[test]
    fn fixed_facts_win() {
        let facts = MachineFacts {
            memory_available: Some(7),
            disk_free: Some(9),
        };
        assert_eq!(facts.memory_available(), 7);
        assert_eq!(facts.disk_free(Path::new("/nonexistent")).unwrap(), 9);
    }
}
