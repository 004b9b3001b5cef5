//! What `/proc` says about a process, and the record that lets a later PocketPilot clean up
//! after one that was killed before it could stop its server.
//!
//! A pid alone names a process only while it lives: once reaped it may be given to anyone.
//! The pair (pid, start time in clock ticks since boot, field 22 of `/proc/PID/stat`) names
//! one process for the life of the machine, so the record stores pairs and nothing is ever
//! signalled unless its pair still matches.

use std::fs;
use std::io::Write;
use std::path::Path;

/// The start time of `pid` (clock ticks since boot), or `None` when it is gone.
pub(crate) fn start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may itself hold spaces and ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    // `rest` starts at field 3 (state); the start time is field 22.
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// The resident set of `pid` in bytes (`VmRSS`), or 0 when it cannot be read.
pub(crate) fn rss_bytes(pid: u32) -> u64 {
    let Ok(status) = fs::read_to_string(format!("/proc/{pid}/status")) else {
        return 0;
    };
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// One server child and the process that owned it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OwnerRecord {
    pub child_pid: u32,
    pub child_start: u64,
    pub owner_pid: u32,
    pub owner_start: u64,
}

impl OwnerRecord {
    /// The record for a child of this process.
    pub(crate) fn for_child(child_pid: u32) -> Option<Self> {
        let owner_pid = std::process::id();
        Some(Self {
            child_pid,
            child_start: start_time(child_pid)?,
            owner_pid,
            owner_start: start_time(owner_pid)?,
        })
    }

    pub(crate) fn write(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir)?;
        }
        let tmp = path.with_extension("tmp");
        let mut file = fs::File::create(&tmp)?;
        writeln!(
            file,
            "{} {} {} {}",
            self.child_pid, self.child_start, self.owner_pid, self.owner_start
        )?;
        file.sync_all()?;
        fs::rename(&tmp, path)
    }

    pub(crate) fn read(path: &Path) -> Option<Self> {
        let text = fs::read_to_string(path).ok()?;
        let mut fields = text.split_whitespace().map(str::parse::<u64>);
        let mut next = || fields.next()?.ok();
        Some(Self {
            child_pid: u32::try_from(next()?).ok()?,
            child_start: next()?,
            owner_pid: u32::try_from(next()?).ok()?,
            owner_start: next()?,
        })
    }

    fn owner_alive(&self) -> bool {
        start_time(self.owner_pid) == Some(self.owner_start)
    }

    fn child_alive(&self) -> bool {
        start_time(self.child_pid) == Some(self.child_start)
    }
}

/// Kills the server recorded at `path` when its owner is dead and it is still the very
/// process that was recorded; forgets the record once it names nothing alive. Returns the
/// pid it killed.
///
/// The kernel normally kills the child with its owner (`PR_SET_PDEATHSIG`); this catches
/// what that cannot (a child whose owner died between fork and `prctl` and whose check of
/// its parent lost the race, or an owner from a build without the signal).
pub(crate) fn kill_stale_child(path: &Path) -> Option<u32> {
    let record = OwnerRecord::read(path)?;
    let ours = record.owner_pid == std::process::id() && record.owner_alive();
    if ours {
        return None;
    }
    if record.owner_alive() {
        // Another running PocketPilot owns it; it is not ours to stop.
        return None;
    }
    let killed = if record.child_alive() {
        let pid = libc::pid_t::try_from(record.child_pid).ok()?;
        // SAFETY: kill(2) has no memory effects; the start time just matched, so the pid
        // still names the recorded server.
        let sent = unsafe { libc::kill(pid, libc::SIGKILL) } == 0;
        sent.then_some(record.child_pid)
    } else {
        None
    };
    let _ = fs::remove_file(path);
    killed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_time_of_this_process_is_stable_and_a_gone_pid_has_none() {
        let me = std::process::id();
        let first = start_time(me).unwrap();
        assert_eq!(start_time(me), Some(first));
        assert!(rss_bytes(me) > 0);
        // Above the kernel's pid_max limit: never a process.
        assert_eq!(start_time(u32::MAX), None);
        assert_eq!(rss_bytes(u32::MAX), 0);
    }

    #[test]
    fn record_round_trips_and_a_record_of_ourselves_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run/llama-server.owner");
        let record = OwnerRecord::for_child(std::process::id()).unwrap();
        record.write(&path).unwrap();
        assert_eq!(OwnerRecord::read(&path), Some(record));
        assert_eq!(kill_stale_child(&path), None);
        assert!(path.exists());
    }

    #[test]
    fn a_stale_record_of_a_dead_owner_kills_only_the_matching_child() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("llama-server.owner");
        let mut owner = std::process::Command::new("true").spawn().unwrap();
        let owner_pid = owner.id();
        let owner_start = start_time(owner_pid).unwrap();
        owner.wait().unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let child_start = start_time(child.id()).unwrap();

        // A reused pid: the start time does not match, so nothing is killed.
        let wrong = OwnerRecord {
            child_pid: child.id(),
            child_start: child_start + 1,
            owner_pid,
            owner_start,
        };
        wrong.write(&path).unwrap();
        assert_eq!(kill_stale_child(&path), None);
        assert!(!path.exists());
        assert_eq!(child.try_wait().unwrap(), None);

        let right = OwnerRecord {
            child_start,
            ..wrong
        };
        right.write(&path).unwrap();
        assert_eq!(kill_stale_child(&path), Some(child.id()));
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL));
    }
}
