//! The `llama-server` child the runtime owns: started on demand, health-checked, restarted
//! after a crash, stopped when idle, never orphaned.
//!
//! One [`LocalServer`] per process ([`LocalServer::global`]) supervises at most one server.
//!
//! Promises:
//! - The server listens on 127.0.0.1 only, on a port the supervisor picks, and answers
//!   only requests carrying the random key of its start (`Authorization: Bearer KEY`), so
//!   other local processes cannot use it.
//! - A crash (or `kill -9`) is noticed at once and the server restarted on the SAME port
//!   with the SAME key, so a client that retries its request reaches the new server with
//!   the endpoint it holds. Only when that port cannot be bound again is another one
//!   picked; the state then shows the new port and clients must call
//!   [`LocalServer::ensure`] again for the new endpoint.
//! - More than [`MAX_CRASHES`] crashes within [`CRASH_WINDOW`] end in
//!   [`ServerState::Crashed`], with the reason and the log's last lines; nothing restarts
//!   it until the next `ensure`.
//! - With no [`BusyGuard`] alive for [`ServerOptions::idle`], the server is stopped. Take
//!   the guard before `ensure` and hold it for the whole request, so the idle stop never
//!   races a request that is about to start.
//! - The child dies with its owner, however the owner dies (see `child`); a child left
//!   by an owner that died anyway is killed by the next `ensure`, found through
//!   [`ServerOptions::state_file`].
//!
//! The supervising tasks run on the tokio runtime `ensure` was called on; the owner keeps
//! that runtime alive while it uses the server, and calls [`LocalServer::stop`] (or
//! [`LocalServer::stop_blocking`] once the runtime is gone) at quit.
//!
//! Linux only: it relies on `/proc`, pidfds (Linux 5.3) and `PR_SET_PDEATHSIG`.

mod child;
mod log;
mod procfs;
mod supervise;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use rand::RngCore;
use serde::Serialize;
use tokio::sync::{watch, Notify};
use tokio_util::sync::CancellationToken;

pub(crate) use child::describe_exit;
use child::{Launch, ServerChild};

/// How long a start may take to answer `/health` before it counts as failed.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a stopping server gets between SIGTERM and SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(5);
/// More crashes than this within [`CRASH_WINDOW`] and the server is left crashed.
pub const MAX_CRASHES: usize = 3;
pub const CRASH_WINDOW: Duration = Duration::from_secs(60);
/// How many of the log's last lines a crash reports.
pub const LOG_TAIL_LINES: usize = 20;
/// How often `/health` is asked while the server loads (it has no way to announce it).
const HEALTH_INTERVAL: Duration = Duration::from_millis(100);

#[derive(Debug, Clone, PartialEq)]
pub struct ServerOptions {
    pub binary: PathBuf,
    pub model_path: PathBuf,
    /// The name clients ask for (`-a`): the `model` of requests and of `/v1/models`.
    pub model_name: String,
    /// The context window in tokens (`-c`).
    pub context: u32,
    /// A chat template file; `None` uses the one inside the model.
    pub template: Option<PathBuf>,
    /// CPU threads; `None` uses all the machine has.
    pub threads: Option<u32>,
    /// Where `llama-server.log` is appended (created 0700).
    pub log_dir: PathBuf,
    /// How long the server may sit unused before it is stopped.
    pub idle: Duration,
    /// Where the running child is recorded (pid and start time, with its owner's), so a
    /// child left behind by a PocketPilot that died can be killed by the next one.
    pub state_file: Option<PathBuf>,
}

impl ServerOptions {
    /// Whether the two describe the same server process (idle, logs and the record do not
    /// need a restart).
    fn same_launch(&self, other: &Self) -> bool {
        self.binary == other.binary
            && self.model_path == other.model_path
            && self.model_name == other.model_name
            && self.context == other.context
            && self.template == other.template
            && self.threads == other.threads
    }
}

/// How to reach the running server.
#[derive(Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `http://127.0.0.1:PORT/v1`
    pub base_url: String,
    pub api_key: String,
    pub model: String,
    pub context: u32,
    pub port: u16,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("base_url", &self.base_url)
            .field("api_key", &"<redacted>")
            .field("model", &self.model)
            .field("context", &self.context)
            .field("port", &self.port)
            .finish()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ServerState {
    Stopped,
    Starting {
        model: String,
    },
    Ready {
        model: String,
        port: u16,
        pid: u32,
        rss_bytes: u64,
        context: u32,
    },
    Crashed {
        model: String,
        reason: String,
        log_tail: Vec<String>,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot start {binary}: {source}")]
    Spawn {
        binary: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{binary} does not run: {reason}")]
    VersionFailed {
        binary: PathBuf,
        reason: String,
        /// The signal that ended it (SIGILL: built for instructions this CPU lacks).
        signal: Option<i32>,
        output: Vec<String>,
    },
    #[error("cannot prepare the model server's {what}: {source}")]
    Io {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("the model server crashed: {reason}")]
    Crashed {
        reason: String,
        log_tail: Vec<String>,
    },
    #[error("the model server was stopped before it was ready")]
    Stopped,
    #[error("the model server gave no answer within {0:?}")]
    NoAnswer(Duration),
}

/// Held while a request to the server is in flight; the idle clock starts when the last
/// one is dropped.
#[must_use = "the server counts as busy only while the guard is alive"]
pub struct BusyGuard {
    shared: Arc<Shared>,
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        {
            let mut inner = self.shared.lock();
            inner.busy = inner.busy.saturating_sub(1);
            if inner.busy == 0 {
                inner.last_use = Instant::now();
            }
        }
        self.shared.idle_wake.notify_one();
    }
}

pub struct LocalServer {
    shared: Arc<Shared>,
}

struct Shared {
    inner: Mutex<Inner>,
    state: watch::Sender<ServerState>,
    /// Serialises `ensure`, `stop` and the idle stop, so one start or stop runs at a time.
    ops: tokio::sync::Mutex<()>,
    idle_wake: Notify,
}

struct Inner {
    /// The server being supervised (running, starting or restarting); `None` when
    /// stopped or crashed.
    run: Option<Run>,
    /// The current process, while it is alive or not yet reaped.
    child: Option<ServerChild>,
    busy: usize,
    last_use: Instant,
    crashes: VecDeque<Instant>,
}

struct Run {
    opts: ServerOptions,
    port: u16,
    api_key: String,
    /// Ends the run's supervising and idle tasks; cancelled under the lock by whoever
    /// takes the run away, so the tasks never act on a run that is over.
    cancel: CancellationToken,
}

impl Run {
    fn launch(&self) -> Launch {
        Launch {
            binary: self.opts.binary.clone(),
            model_path: self.opts.model_path.clone(),
            model_name: self.opts.model_name.clone(),
            context: self.opts.context,
            template: self.opts.template.clone(),
            threads: self.opts.threads.unwrap_or_else(child::default_threads),
            port: self.port,
            api_key: self.api_key.clone(),
            log_dir: self.opts.log_dir.clone(),
        }
    }

    fn endpoint(&self) -> Endpoint {
        Endpoint {
            base_url: format!("http://127.0.0.1:{}/v1", self.port),
            api_key: self.api_key.clone(),
            model: self.opts.model_name.clone(),
            context: self.opts.context,
            port: self.port,
        }
    }
}

impl LocalServer {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            shared: Arc::new(Shared {
                inner: Mutex::new(Inner {
                    run: None,
                    child: None,
                    busy: 0,
                    last_use: Instant::now(),
                    crashes: VecDeque::new(),
                }),
                state: watch::Sender::new(ServerState::Stopped),
                ops: tokio::sync::Mutex::new(()),
                idle_wake: Notify::new(),
            }),
        })
    }

    /// The process's one supervisor.
    pub fn global() -> Arc<Self> {
        static GLOBAL: OnceLock<Arc<LocalServer>> = OnceLock::new();
        GLOBAL.get_or_init(Self::new).clone()
    }

    /// Starts the server when it is not running (or runs with other options: then it is
    /// restarted with these), waits until it answers `/health`, and returns how to reach it.
    pub async fn ensure(&self, opts: &ServerOptions) -> Result<Endpoint, ServerError> {
        let shared = &self.shared;
        let ops = shared.ops.lock().await;
        if let Some(state_file) = &opts.state_file {
            if let Some(pid) = procfs::kill_stale_child(state_file) {
                tracing::warn!(pid, "killed a model server left behind by a previous run");
            }
        }
        let keep = {
            let mut inner = shared.lock();
            inner.last_use = Instant::now();
            match &mut inner.run {
                Some(run) if run.opts.same_launch(opts) => {
                    run.opts.idle = opts.idle;
                    run.opts.log_dir.clone_from(&opts.log_dir);
                    run.opts.state_file.clone_from(&opts.state_file);
                    true
                }
                _ => false,
            }
        };
        shared.idle_wake.notify_one();
        if !keep {
            shared.stop_locked().await;
            shared.start_locked(opts).await?;
        }
        // Not under `ops`: a `stop` (at quit) must not wait for a start to finish.
        drop(ops);
        shared.wait_ready(opts).await
    }

    /// Marks the server busy until the guard is dropped.
    pub fn busy(&self) -> BusyGuard {
        self.shared.lock().busy += 1;
        self.shared.idle_wake.notify_one();
        BusyGuard {
            shared: self.shared.clone(),
        }
    }

    /// The current state, with the resident memory read now.
    pub fn state(&self) -> ServerState {
        let mut state = self.shared.state.borrow().clone();
        if let ServerState::Ready { pid, rss_bytes, .. } = &mut state {
            *rss_bytes = procfs::rss_bytes(*pid);
        }
        state
    }

    /// Every change of state (the memory figure is the one at the moment of readiness).
    pub fn subscribe(&self) -> watch::Receiver<ServerState> {
        self.shared.state.subscribe()
    }

    /// The server process's pid while one is running.
    pub fn pid(&self) -> Option<u32> {
        self.shared.lock().child.as_ref().map(ServerChild::pid)
    }

    /// Stops the server: SIGTERM, SIGKILL after [`STOP_GRACE`], reaped.
    pub async fn stop(&self) {
        let _ops = self.shared.ops.lock().await;
        self.shared.stop_locked().await;
    }

    /// [`Self::stop`] for exit paths without a runtime: blocks the thread.
    pub fn stop_blocking(&self) {
        let (run, child) = self.shared.take_run();
        if let Some(child) = child {
            child.terminate_blocking(STOP_GRACE);
        }
        self.shared.finish_stop(run.as_ref());
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn take_run(&self) -> (Option<Run>, Option<ServerChild>) {
        let mut inner = self.lock();
        let run = inner.run.take();
        if let Some(run) = &run {
            run.cancel.cancel();
        }
        (run, inner.child.take())
    }

    fn finish_stop(&self, run: Option<&Run>) {
        if let Some(run) = run {
            if let Some(state_file) = &run.opts.state_file {
                let _ = std::fs::remove_file(state_file);
            }
            log::note(&run.opts.log_dir, "stopped");
        }
        self.state.send_if_modified(|state| {
            let change = *state != ServerState::Stopped;
            *state = ServerState::Stopped;
            change
        });
    }

    async fn stop_locked(&self) {
        let (run, child) = self.take_run();
        if let Some(child) = child {
            child.terminate(STOP_GRACE).await;
        }
        self.finish_stop(run.as_ref());
    }

    /// Starts a new run: a new port, a new key, the first process; leaves the rest to the
    /// supervising task.
    async fn start_locked(self: &Arc<Self>, opts: &ServerOptions) -> Result<(), ServerError> {
        let port = child::free_port().map_err(|source| ServerError::Io {
            what: "port",
            source,
        })?;
        let mut key = [0u8; 32];
        rand::rng().fill_bytes(&mut key);
        let cancel = CancellationToken::new();
        let run = Run {
            opts: opts.clone(),
            port,
            api_key: hex::encode(key),
            cancel: cancel.clone(),
        };
        let launch = run.launch();
        log::open(&opts.log_dir).map_err(|source| ServerError::Io {
            what: "log",
            source,
        })?;
        self.state.send_replace(ServerState::Starting {
            model: opts.model_name.clone(),
        });
        log::note(&opts.log_dir, &format!("starting on port {port}"));
        let first = match child::spawn(&launch).await {
            Ok(first) => first,
            Err(e) => {
                self.state.send_replace(ServerState::Crashed {
                    model: opts.model_name.clone(),
                    reason: e.to_string(),
                    log_tail: log::tail(&opts.log_dir, LOG_TAIL_LINES),
                });
                return Err(e);
            }
        };
        {
            let mut inner = self.lock();
            inner.crashes.clear();
            inner.run = Some(run);
        }
        tokio::spawn(self.clone().supervise(cancel.clone(), launch, first));
        tokio::spawn(self.clone().watch_idle(cancel));
        Ok(())
    }

    /// Waits for the run's start to end, and returns its endpoint when it is ready.
    async fn wait_ready(&self, opts: &ServerOptions) -> Result<Endpoint, ServerError> {
        let mut states = self.state.subscribe();
        // The supervising task bounds the start itself; this bound only guards against a
        // task that is gone with its runtime.
        let waited = STARTUP_TIMEOUT + Duration::from_secs(30);
        let outcome = tokio::time::timeout(
            waited,
            states.wait_for(|s| !matches!(s, ServerState::Starting { .. })),
        )
        .await;
        let state = match outcome {
            Ok(Ok(state)) => state.clone(),
            Ok(Err(_)) => return Err(ServerError::Stopped),
            Err(_) => return Err(ServerError::NoAnswer(waited)),
        };
        match state {
            ServerState::Ready { .. } => {
                // Another `ensure` may have replaced the run meanwhile.
                let inner = self.lock();
                inner
                    .run
                    .as_ref()
                    .filter(|run| run.opts.same_launch(opts))
                    .map(Run::endpoint)
                    .ok_or(ServerError::Stopped)
            }
            ServerState::Crashed {
                reason, log_tail, ..
            } => Err(ServerError::Crashed { reason, log_tail }),
            ServerState::Stopped | ServerState::Starting { .. } => Err(ServerError::Stopped),
        }
    }
}
