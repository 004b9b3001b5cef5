//! Starting, watching and ending one `llama-server` process.
//!
//! Invariants:
//! - Every server is forked by one dedicated thread that lives as long as the process.
//!   `PR_SET_PDEATHSIG` fires when the *thread* that forked the child exits, not the
//!   process: a child forked on a tokio worker or blocking-pool thread (those exit when
//!   idle) would be killed at a random moment. The spawner thread never exits, so the
//!   signal fires exactly when the process dies, `kill -9` included.
//! - A [`ServerChild`] is a child that has not been reaped, so its pid cannot have been
//!   given to another process: signalling through it is always safe. Reaping consumes it.
//! - The exit is observed through a pidfd (readable once the process has exited, without
//!   reaping it), so it is noticed at once, without polling and without racing a reaper.

use std::ffi::OsString;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::Duration;

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

use super::{log, ServerError};

/// Everything one start of the server needs.
#[derive(Debug, Clone)]
pub(crate) struct Launch {
    pub binary: PathBuf,
    pub model_path: PathBuf,
    pub model_name: String,
    pub context: u32,
    pub template: Option<PathBuf>,
    pub threads: u32,
    pub port: u16,
    pub api_key: String,
    pub log_dir: PathBuf,
}

impl Launch {
    fn command(&self) -> Result<Command, ServerError> {
        let log = log::open(&self.log_dir).map_err(|source| ServerError::Io {
            what: "log",
            source,
        })?;
        let log_err = log.try_clone().map_err(|source| ServerError::Io {
            what: "log",
            source,
        })?;
        let mut command = Command::new(&self.binary);
        command
            .arg("-m")
            .arg(&self.model_path)
            .args(["-a", &self.model_name])
            .args(["--host", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["-c", &self.context.to_string()])
            .args(["-t", &self.threads.to_string()])
            .arg("--jinja");
        if let Some(template) = &self.template {
            command.arg("--chat-template-file").arg(template);
        }
        // llama.cpp reads a default for nearly every option from a `LLAMA_*` variable; a
        // person's shell must not change the server the app manages.
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("LLAMA_") {
                command.env_remove(name);
            }
        }
        // The key goes through the environment, not `--api-key`: a command line is readable
        // by every user of the machine (/proc/PID/cmdline), the environment only by its own.
        command.env(OsString::from("LLAMA_API_KEY"), &self.api_key);
        command
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            // Its own group: a terminal's Ctrl-C goes to the app, which stops the server in
            // order; and a signal to the group reaches anything the server might start.
            .process_group(0);
        let parent = libc::pid_t::try_from(std::process::id()).unwrap_or(0);
        // SAFETY: between fork and exec only async-signal-safe calls are made (prctl,
        // getppid), and nothing is allocated.
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                // The owner may have died between fork and prctl: the signal would then
                // never come, so refuse to run an orphan.
                if libc::getppid() != parent {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
        Ok(command)
    }
}

/// A started, not yet reaped server process.
#[derive(Debug)]
pub(crate) struct ServerChild {
    child: std::process::Child,
    pidfd: OwnedFd,
}

type SpawnJob = Box<dyn FnOnce() + Send>;

fn spawner() -> Result<&'static mpsc::Sender<SpawnJob>, ServerError> {
    static SPAWNER: OnceLock<Result<mpsc::Sender<SpawnJob>, String>> = OnceLock::new();
    let started = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnJob>();
        std::thread::Builder::new()
            .name("llama-server-spawner".into())
            // The sender lives in a static, so `rx` never ends and the thread never exits
            // (see the module's invariants).
            .spawn(move || {
                for job in rx {
                    job();
                }
            })
            .map(|_| tx)
            .map_err(|e| e.to_string())
    });
    started.as_ref().map_err(|why| ServerError::Io {
        what: "spawner thread",
        source: std::io::Error::other(why.clone()),
    })
}

/// Starts the server as described, on the spawner thread.
pub(crate) async fn spawn(launch: &Launch) -> Result<ServerChild, ServerError> {
    let mut command = launch.command()?;
    let binary = launch.binary.clone();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: SpawnJob = Box::new(move || {
        let result = command
            .spawn()
            .and_then(|mut child| match pidfd_open(child.id()) {
                Ok(pidfd) => Ok(ServerChild { child, pidfd }),
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    Err(e)
                }
            });
        let _ = tx.send(result);
    });
    spawner()?.send(job).map_err(|_| ServerError::Io {
        what: "spawner thread",
        source: std::io::Error::other("the spawner thread is gone"),
    })?;
    match rx.await {
        Ok(result) => result.map_err(|source| ServerError::Spawn { binary, source }),
        Err(_) => Err(ServerError::Io {
            what: "spawner thread",
            source: std::io::Error::other("the spawner thread dropped the request"),
        }),
    }
}

fn pidfd_open(pid: u32) -> std::io::Result<OwnedFd> {
    let pid = libc::pid_t::try_from(pid).map_err(std::io::Error::other)?;
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let fd = RawFd::try_from(fd).map_err(std::io::Error::other)?;
    // SAFETY: the descriptor was just returned to us and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Resolves when the process behind `pidfd` has exited (it is not reaped).
pub(crate) async fn exited(pidfd: &OwnedFd) {
    let watched = pidfd.try_clone().and_then(|fd| {
        // SAFETY: `fd` is an owned descriptor moved into the AsyncFd, which keeps it open
        // until it is dropped.
        unsafe { Ok(AsyncFd::register_with_interest(fd, Interest::READABLE)?) }
    });
    match watched {
        Ok(fd) => {
            // Readable means exited; an error means the same for our purpose (nothing to
            // wait for any more).
            let _ = fd.readable().await;
        }
        Err(e) => {
            // No reactor to watch it with: never resolve rather than report an exit that
            // did not happen; the caller's other branches (stop, timeouts) still run.
            tracing::warn!("cannot watch the model server's exit: {e}");
            std::future::pending::<()>().await;
        }
    }
}

/// Whether the process behind `pidfd` exits within `timeout`, blocking the thread.
fn exited_blocking(pidfd: &OwnedFd, timeout: Duration) -> bool {
    let mut poll = libc::pollfd {
        fd: pidfd.as_fd().as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: one valid pollfd, its count, a timeout.
    let ready = unsafe { libc::poll(&mut poll, 1, ms) };
    ready > 0
}

impl ServerChild {
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn pidfd(&self) -> &OwnedFd {
        &self.pidfd
    }

    /// Sends `signal` to the server's process group.
    pub(crate) fn signal(&self, signal: libc::c_int) {
        if let Ok(pid) = libc::pid_t::try_from(self.child.id()) {
            // SAFETY: kill(2) has no memory effects; the child is not reaped, so its pid
            // (and group id, the same) still names it.
            unsafe {
                libc::kill(-pid, signal);
            }
        }
    }

    /// Reaps the child; call once its exit has been observed (or it blocks until it exits).
    pub(crate) fn reap(mut self) -> Option<ExitStatus> {
        self.child.wait().ok()
    }

    /// SIGTERM, then SIGKILL after `grace`; reaps it.
    pub(crate) async fn terminate(self, grace: Duration) -> Option<ExitStatus> {
        self.signal(libc::SIGTERM);
        if tokio::time::timeout(grace, exited(&self.pidfd))
            .await
            .is_err()
        {
            self.signal(libc::SIGKILL);
            exited(&self.pidfd).await;
        }
        self.reap()
    }

    /// [`Self::terminate`] for exit paths without a runtime.
    pub(crate) fn terminate_blocking(self, grace: Duration) -> Option<ExitStatus> {
        self.signal(libc::SIGTERM);
        if !exited_blocking(&self.pidfd, grace) {
            self.signal(libc::SIGKILL);
        }
        self.reap()
    }
}

/// "exited with status 1", "killed by signal 4 (SIGILL)".
pub(crate) fn describe_exit(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exited with status {code}");
    }
    match status.signal() {
        Some(signal) => match signal_name(signal) {
            Some(name) => format!("killed by signal {signal} ({name})"),
            None => format!("killed by signal {signal}"),
        },
        None => "ended for an unknown reason".to_string(),
    }
}

fn signal_name(signal: libc::c_int) -> Option<&'static str> {
    Some(match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGSYS => "SIGSYS",
        _ => return None,
    })
}

/// A free port on 127.0.0.1 at the moment of asking.
pub(crate) fn free_port() -> std::io::Result<u16> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    Ok(listener.local_addr()?.port())
}

/// Whether `port` on 127.0.0.1 can be bound right now (std sets `SO_REUSEADDR`, as the
/// server does, so a predecessor's TIME_WAIT connections do not count).
pub(crate) fn port_is_free(port: u16) -> bool {
    std::net::TcpListener::bind(("127.0.0.1", port)).is_ok()
}

pub(crate) fn default_threads() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exits_are_described_by_code_or_named_signal() {
        let status = Command::new("sh").args(["-c", "exit 3"]).status().unwrap();
        assert_eq!(describe_exit(status), "exited with status 3");
        let status = Command::new("sh")
            .args(["-c", "kill -KILL $$"])
            .status()
            .unwrap();
        assert_eq!(describe_exit(status), "killed by signal 9 (SIGKILL)");
    }

    #[test]
    fn a_taken_port_is_not_free() {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        assert!(!port_is_free(port));
        drop(listener);
        // A child forked meanwhile by another test thread holds a copy of the socket until
        // it execs (close-on-exec), so the port comes free soon rather than at once.
        // Another test thread may be handed the same ephemeral port right after, so the
        // moment it was seen free is the evidence, not a second look.
        let bound = std::time::Instant::now() + Duration::from_secs(10);
        let mut seen_free = port_is_free(port);
        while !seen_free && std::time::Instant::now() < bound {
            std::thread::sleep(Duration::from_millis(10));
            seen_free = port_is_free(port);
        }
        assert!(seen_free);
    }
}
