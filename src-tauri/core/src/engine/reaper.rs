//! The processes a run starts, recorded under the session's lease, and killed by the
//! worker that takes the session over.
//!
//! A worker can be frozen (SIGSTOP, a suspended VM, a debugger) past its lease while its
//! command's processes keep running: they are the sandbox supervisor's tree, not the
//! worker's threads. So every process a run starts — a command's or an MCP stdio server's
//! supervisor, the child subreaper at the root of its tree — is recorded with its start
//! time and boot before the command may run, and the next holder kills those trees and
//! waits until they are gone before it continues.
//!
//! Invariants:
//! - a pid is never signalled on its own: it is opened as a pidfd and its start time (and
//!   the boot) must match the record, so a reused pid is never hit;
//! - the tree below the root is killed before the root: the root is a subreaper, so what
//!   is orphaned meanwhile comes back under it and the next pass finds it;
//! - a record is written and removed only while the run's holder holds the lease, in the
//!   same transaction as that check (`lease::watching`, `store::processes`).
use std::collections::{HashMap, HashSet};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::store::processes::RecordedProcess;

/// Between two looks at a tree being killed: SIGKILL takes effect within microseconds.
const POLL: Duration = Duration::from_millis(2);

/// What `/proc/PID/stat` says of a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    ppid: i32,
    /// Running, sleeping, … `Z` (zombie) and `X` (dead) have exited.
    state: u8,
    /// Clock ticks after boot.
    started: u64,
}

impl Stat {
    fn exited(&self) -> bool {
        matches!(self.state, b'Z' | b'X')
    }
}

/// Parses "pid (comm) state ppid … starttime …": comm may hold spaces and parentheses, so
/// the fields are counted after its last ')'. starttime is field 22.
fn parse_stat(text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(Stat {
        state: *fields.first()?.as_bytes().first()?,
        ppid: fields.get(1)?.parse().ok()?,
        started: fields.get(19)?.parse().ok()?,
    })
}

fn stat(pid: i32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// This boot's id: start times count from boot, so a record of another boot names nothing.
fn boot_id() -> Option<&'static str> {
    static BOOT: OnceLock<Option<String>> = OnceLock::new();
    BOOT.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .ok()
            .map(|s| s.trim().to_owned())
    })
    .as_deref()
}

/// The record of a live process of this boot; `None` when it is gone or unreadable.
pub fn identify(pid: u32, task_id: i64) -> Option<RecordedProcess> {
    let st = stat(i32::try_from(pid).ok()?).filter(|s| !s.exited())?;
    Some(RecordedProcess {
        task_id,
        pid: i64::from(pid),
        started: i64::try_from(st.started).ok()?,
        boot_id: boot_id()?.to_owned(),
    })
}

/// A process pinned by a pidfd: signals reach it, or nothing (never a pid's next owner).
struct Pinned {
    pid: i32,
    fd: Option<OwnedFd>,
}

impl Pinned {
    /// The live process `pid` if it started at `started` ticks after boot.
    fn open(pid: i32, started: u64) -> Option<Self> {
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        let fd = match i32::try_from(raw) {
            // SAFETY: a descriptor pidfd_open just returned, owned by nothing else.
            Ok(raw) if raw >= 0 => Some(unsafe { OwnedFd::from_raw_fd(raw) }),
            // Without pidfds (before Linux 5.3) the start time is checked right before
            // each signal instead.
            _ if std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) => None,
            _ => return None,
        };
        // Read after the pidfd is open: if the pid was reused in between, the pidfd names
        // the old process, which is gone, and signals through it reach nobody.
        let st = stat(pid)?;
        (st.started == started && !st.exited()).then_some(Self { pid, fd })
    }

    fn kill(&self) {
        match &self.fd {
            // SAFETY: a pidfd this value owns; no siginfo; no flags.
            Some(fd) => unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd.as_raw_fd(),
                    libc::SIGKILL,
                    std::ptr::null::<libc::siginfo_t>(),
                    0u32,
                );
            },
            None => {
                // SAFETY: kill with a pid and a signal number.
                unsafe { libc::kill(self.pid, libc::SIGKILL) };
            }
        }
    }

    /// Whether it has exited (a zombie has: nothing of it runs).
    fn exited(&self, started: u64) -> bool {
        let Some(fd) = &self.fd else {
            return stat(self.pid).is_none_or(|s| s.started != started || s.exited());
        };
        let mut pfd = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd on the stack, no wait. A pidfd is readable once it exited.
        let n = unsafe { libc::poll(&mut pfd, 1, 0) };
        n > 0 && pfd.revents != 0
    }
}

/// The live processes below `root`, with their start times, as /proc shows them now.
fn descendants(root: i32) -> Vec<(i32, u64)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut children: HashMap<i32, Vec<(i32, Stat)>> = HashMap::new();
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if let Some(st) = stat(pid) {
            children.entry(st.ppid).or_default().push((pid, st));
        }
    }
    let mut found = Vec::new();
    let mut next = vec![root];
    while let Some(parent) = next.pop() {
        for (pid, st) in children.remove(&parent).unwrap_or_default() {
            next.push(pid);
            if !st.exited() {
                found.push((pid, st.started));
            }
        }
    }
    found
}

/// What a reap found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reaped {
    /// Not running (any more), or the pid now names another process: nothing signalled.
    NotRunning,
    /// The tree was killed and is gone: this many processes were signalled.
    Killed { processes: usize },
}

#[derive(Debug, thiserror::Error)]
#[error("process {pid} (or one it started) still ran {waited_ms} ms after it was killed")]
pub struct StillRunning {
    pub pid: i64,
    pub waited_ms: u128,
}

/// Kills the recorded process and everything below it, and returns once all of it has
/// exited (or fails after `bound`). Blocks its thread.
pub fn reap(p: &RecordedProcess, bound: Duration) -> Result<Reaped, StillRunning> {
    let t0 = Instant::now();
    let (Ok(pid), Ok(started)) = (i32::try_from(p.pid), u64::try_from(p.started)) else {
        return Ok(Reaped::NotRunning);
    };
    if boot_id() != Some(p.boot_id.as_str()) {
        return Ok(Reaped::NotRunning);
    }
    let Some(root) = Pinned::open(pid, started) else {
        return Ok(Reaped::NotRunning);
    };
    let still = || StillRunning {
        pid: p.pid,
        waited_ms: t0.elapsed().as_millis(),
    };
    let mut signalled: HashSet<(i32, u64)> = HashSet::new();
    // Once the root has exited its pid may name another process: stop looking below it.
    while !root.exited(started) {
        let below = descendants(pid);
        if below.is_empty() {
            break;
        }
        for (child, child_started) in below {
            if let Some(c) = Pinned::open(child, child_started) {
                c.kill();
                signalled.insert((child, child_started));
            }
        }
        if t0.elapsed() > bound {
            return Err(still());
        }
        std::thread::sleep(POLL);
    }
    if !root.exited(started) {
        root.kill();
        signalled.insert((pid, started));
    }
    while !root.exited(started) {
        if t0.elapsed() > bound {
            return Err(still());
        }
        std::thread::sleep(POLL);
    }
    Ok(Reaped::Killed {
        processes: signalled.len(),
    })
}

/// Runs a blocking `f`; on a multi-thread tokio worker in `block_in_place`, so the
/// runtime's other tasks move on meanwhile.
pub(crate) fn off_runtime<R>(f: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Child, Command};

    fn sh(script: &str) -> Child {
        Command::new("/bin/sh")
            .arg("-c")
            .arg(script)
            .spawn()
            .unwrap()
    }

    fn alive(pid: u32) -> bool {
        stat(pid as i32).is_some_and(|s| !s.exited())
    }

    #[test]
    fn the_stat_line_is_read_after_the_command_name() {
        let line = "42 (a) b (c)) S 7 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 98765 0";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                ppid: 7,
                state: b'S',
                started: 98765
            })
        );
        assert_eq!(parse_stat("42 (short) S 7"), None);
    }

    #[test]
    fn a_recorded_pid_whose_start_time_differs_is_never_signalled() {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let real = identify(child.id(), 1).unwrap();
        // The same pid, as if recorded for an earlier process that had it: another start
        // time, or another boot.
        let earlier = RecordedProcess {
            started: real.started - 1,
            ..real.clone()
        };
        let other_boot = RecordedProcess {
            boot_id: "another-boot".into(),
            ..real.clone()
        };
        for stale in [&earlier, &other_boot] {
            assert_eq!(
                reap(stale, Duration::from_secs(5)).unwrap(),
                Reaped::NotRunning
            );
        }
        assert!(child.try_wait().unwrap().is_none(), "it was signalled");
        assert!(alive(child.id()));
        // Its own record does reach it.
        assert!(matches!(
            reap(&real, Duration::from_secs(5)).unwrap(),
            Reaped::Killed { .. }
        ));
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL));
    }

    #[test]
    fn a_reaped_tree_is_gone_detached_descendants_included_when_reap_returns() {
        let dir = tempfile::tempdir().unwrap();
        let pids = dir.path().join("pids");
        // A subreaper root like the sandbox's supervisor is not needed to find a tree whose
        // members keep their parents: a shell, a child, and a grandchild in its own session.
        let mut root = sh(&format!(
            "sleep 30 & echo $! >> {p}; setsid sh -c 'sleep 30 & echo $! >> {p}; wait' & wait",
            p = pids.display()
        ));
        let t0 = Instant::now();
        let members = loop {
            let text = std::fs::read_to_string(&pids).unwrap_or_default();
            let found: Vec<u32> = text.lines().filter_map(|l| l.parse().ok()).collect();
            if found.len() == 2 {
                break found;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "the tree never started"
            );
            // sleep: the poll interval of the bounded wait for the tree to start.
            std::thread::sleep(Duration::from_millis(5));
        };
        let rec = identify(root.id(), 1).unwrap();
        let Reaped::Killed { processes } = reap(&rec, Duration::from_secs(10)).unwrap() else {
            panic!("nothing was killed");
        };
        // Both sleepers and the detached shell; the root shell may exit on its own once
        // its children are gone, before it is signalled.
        assert!(processes >= 3, "{processes}");
        for pid in members {
            assert!(!alive(pid), "{pid} outlived the reap");
        }
        assert!(!alive(root.id()));
        let _ = root.wait();
        // Gone: a second reap finds nothing to signal.
        assert_eq!(
            reap(&rec, Duration::from_secs(1)).unwrap(),
            Reaped::NotRunning
        );
    }
}
