//! The trigger host: the webhook listener, one runner per active schedule and watch, and
//! a supervisor that keeps the runners in step with the stored definitions. The desktop
//! app runs one in the tray; `pocketpilot serve` runs one headless.
//!
//! The supervisor reconciles at start, on [`TriggerHost::reload`], when another process
//! commits to the store (the CLI changing a definition: the process's one store watcher
//! tells), `reload_secs` after a runner ended by itself (restarting it), and when a run
//! the daily cap parked is due to continue. Nothing runs on a timer while all is quiet: an
//! idle app does not wake for its triggers. Reconciling is reading three small tables; the
//! schedules themselves sleep until their next tick.
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::cron::{self, Clock, SystemClock};
use super::{watch, webhook, Result, TriggerSettings};
use pocketpilot_core::api::service::Runtime;
use pocketpilot_core::ops;
use pocketpilot_protocol::{Change, EventKind};
use pocketpilot_store::triggers;

pub struct HostOptions {
    /// The webhook port; `None`: the settings' (`POCKETPILOT_WEBHOOK_PORT`, default 8765).
    /// `Some(0)`: any free port (see [`TriggerHost::webhook_addr`]).
    pub port: Option<u16>,
    /// Listen for webhooks at all.
    pub webhooks: bool,
    pub clock: Arc<dyn Clock>,
    /// Replaces the stored trigger settings (tests; a shell with its own settings screen).
    pub settings: Option<TriggerSettings>,
}

impl Default for HostOptions {
    fn default() -> Self {
        Self {
            port: None,
            webhooks: true,
            clock: Arc::new(SystemClock::default()),
            settings: None,
        }
    }
}

pub struct TriggerHost {
    addr: Option<SocketAddr>,
    cancel: CancellationToken,
    reload: Arc<Notify>,
    handles: Vec<JoinHandle<()>>,
}

impl TriggerHost {
    /// Binds the listener (127.0.0.1 only) and starts the schedules and watches. Returns
    /// once the listener accepts connections and every active watch is in place.
    pub async fn start(rt: Arc<Runtime>, opts: HostOptions) -> Result<Self> {
        let settings = match opts.settings {
            Some(s) => s,
            None => TriggerSettings::load(&rt)?,
        };
        let cancel = CancellationToken::new();
        let reload = Arc::new(Notify::new());
        let mut handles = Vec::new();
        let mut addr = None;
        if opts.webhooks {
            let listener = webhook::bind(opts.port.unwrap_or(settings.port)).await?;
            let local = listener
                .local_addr()
                .map_err(|source| super::TriggerError::Listen {
                    addr: "127.0.0.1".into(),
                    source,
                })?;
            addr = Some(local);
            let (rt2, s2, c2) = (rt.clone(), settings.clone(), cancel.clone());
            handles.push(tokio::spawn(async move {
                if let Err(e) = webhook::serve(listener, rt2, &s2, c2).await {
                    tracing::error!(error = %e, "the webhook listener stopped");
                }
            }));
            tracing::info!(%local, "webhook listener started");
        }
        let mut sup = Supervisor {
            rt,
            clock: opts.clock,
            settings,
            cancel: cancel.clone(),
            schedules: HashMap::new(),
            watches: HashMap::new(),
            runner_ended: Arc::new(Notify::new()),
        };
        // Followed from before the first look: a change committed after it is not missed.
        let follow = Follow {
            changes: sup.rt.call(ops::WatchFeed {}),
        };
        sup.reconcile().await;
        sup.resume_parked().await;
        let (r2, c2) = (reload.clone(), cancel.clone());
        handles.push(tokio::spawn(async move { sup.run(follow, r2, c2).await }));
        Ok(Self {
            addr,
            cancel,
            reload,
            handles,
        })
    }

    /// Where the webhook listener accepts connections (`None` without webhooks).
    pub fn webhook_addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// Re-reads the definitions now (after a create, pause, resume or delete).
    pub fn reload(&self) {
        self.reload.notify_one();
    }

    /// Stops accepting, lets requests in flight finish, stops every runner. Tasks already
    /// created keep running: they belong to the runtime, not to the host.
    pub async fn shutdown(self) {
        self.cancel.cancel();
        for h in self.handles {
            if tokio::time::timeout(Duration::from_secs(10), h)
                .await
                .is_err()
            {
                tracing::warn!("a trigger runner did not stop within 10 s");
            }
        }
        tracing::info!("trigger host stopped");
    }
}

/// What wakes the supervisor besides its own: the runtime's change feed, which carries
/// this process's task changes and a `Refresh` for each commit of another process.
struct Follow {
    changes: pocketpilot_core::engine::feed::Changes,
}

struct Runner<K> {
    key: K,
    cancel: CancellationToken,
    handle: JoinHandle<()>,
}

struct Supervisor {
    rt: Arc<Runtime>,
    clock: Arc<dyn Clock>,
    settings: TriggerSettings,
    cancel: CancellationToken,
    schedules: HashMap<i64, Runner<String>>,
    watches: HashMap<i64, Runner<String>>,
    /// Told when a runner ends without having been stopped (an error).
    runner_ended: Arc<Notify>,
}

impl Supervisor {
    async fn run(mut self, follow: Follow, reload: Arc<Notify>, cancel: CancellationToken) {
        let retry = Duration::from_secs(self.settings.reload_secs.max(1));
        let Follow { mut changes } = follow;
        let mut changes_open = true;
        let mut lift = self.next_lift(false);
        // Set when a runner ended by itself: it is restarted after `retry`, not at once, so
        // a watch whose folder is gone does not spin.
        let mut restart_at: Option<tokio::time::Instant> = None;
        loop {
            let look = tokio::select! {
                _ = cancel.cancelled() => break,
                _ = reload.notified() => true,
                change = changes.next(), if changes_open => match change {
                    // Another process committed (a definition added from the CLI, say), or
                    // this host fell behind the feed: look again.
                    Some(Change::Refresh) => true,
                    // A run here was parked: when it lifts may be sooner than what is awaited.
                    Some(Change::Task { event: EventKind::RunPaused, .. }) => {
                        lift = self.next_lift(false);
                        false
                    }
                    // This process's own definition changes come with `reload()`.
                    Some(_) => false,
                    None => {
                        changes_open = false;
                        false
                    }
                },
                () = self.runner_ended.notified() => {
                    restart_at.get_or_insert_with(|| tokio::time::Instant::now() + retry);
                    false
                }
                // sleep: a runner that ended by itself is restarted after a pause.
                () = watch::sleep_until_opt(restart_at) => true,
                () = clock_until_opt(&self.clock, lift) => true,
            };
            if look {
                restart_at = None;
                self.reconcile().await;
                self.resume_parked().await;
                lift = self.next_lift(true);
            }
        }
        for (_, r) in self.schedules.drain().chain(self.watches.drain()) {
            r.cancel.cancel();
            let _ = tokio::time::timeout(Duration::from_secs(5), r.handle).await;
        }
    }

    /// When the soonest parked run is due to continue, by the host's clock. `just_looked`:
    /// the runs due were just continued, so one still due (its continue failed) is tried
    /// again a second later rather than at once, over and over.
    fn next_lift(&self, just_looked: bool) -> Option<chrono::DateTime<chrono::Utc>> {
        let at = match self.rt.call(ops::NextLiftedPause {}) {
            Ok(at) => at?,
            Err(e) => {
                tracing::error!(error = %e, "cannot read when the parked runs continue");
                return None;
            }
        };
        let floor = self.clock.now() + chrono::Duration::seconds(1);
        Some(if just_looked { at.max(floor) } else { at })
    }

    /// Continues the runs the daily cap for unattended runs parked, once the host's clock
    /// is past the cap's reset (the next UTC day). Checked at each reconcile: an indexed
    /// read of the paused tasks that lift by themselves.
    async fn resume_parked(&self) {
        let (rt, now) = (self.rt.clone(), self.clock.now());
        let resumed = super::blocking(move || {
            rt.call(ops::ResumeLiftedPauses { now })
                .map_err(super::TriggerError::from)
        })
        .await;
        match resumed {
            Ok(tasks) if !tasks.is_empty() => {
                tracing::info!(?tasks, "the daily cap reset: parked runs continue");
            }
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "cannot continue the parked runs"),
        }
    }

    /// Starts runners for active definitions, stops those of paused, deleted or changed
    /// ones, and restarts runners that ended on an error.
    async fn reconcile(&mut self) {
        let defs = self.rt.call(ops::TriggerDefinitions {});
        let (schedules, watches) = match defs {
            Ok(d) => d,
            Err(e) => {
                tracing::error!(error = %e, "cannot read the trigger definitions");
                return;
            }
        };
        self.reconcile_schedules(&schedules);
        self.reconcile_watches(watches).await;
    }

    /// A runner for each schedule that is not paused, restarted when its definition
    /// changed; the others stopped.
    fn reconcile_schedules(&mut self, schedules: &[triggers::Schedule]) {
        let wanted: HashMap<i64, String> = schedules
            .iter()
            .filter(|s| !s.paused)
            .map(|s| {
                (
                    s.id,
                    format!(
                        "{}|{}|{}|{:?}|{}",
                        s.expr, s.workspace, s.goal, s.provider, s.catch_up
                    ),
                )
            })
            .collect();
        retain_wanted(&mut self.schedules, &wanted);
        for (id, key) in wanted {
            if self.schedules.contains_key(&id) {
                continue;
            }
            let cancel = self.cancel.child_token();
            let handle = tokio::spawn(tell_when_ended(
                cron::run(self.rt.clone(), id, self.clock.clone(), cancel.clone()),
                cancel.clone(),
                self.runner_ended.clone(),
            ));
            self.schedules.insert(
                id,
                Runner {
                    key,
                    cancel,
                    handle,
                },
            );
        }
    }

    /// A watcher for each watch that is not paused, restarted when its definition
    /// changed; the others stopped.
    async fn reconcile_watches(&mut self, watches: Vec<triggers::Watch>) {
        let wanted: HashMap<i64, (String, triggers::Watch)> = watches
            .into_iter()
            .filter(|w| !w.paused)
            .map(|w| {
                let key = format!(
                    "{}|{}|{}|{:?}|{}",
                    w.pattern, w.workspace, w.goal, w.provider, w.min_interval_secs
                );
                (w.id, (key, w))
            })
            .collect();
        let keys: HashMap<i64, String> =
            wanted.iter().map(|(id, (k, _))| (*id, k.clone())).collect();
        retain_wanted(&mut self.watches, &keys);
        for (id, (key, w)) in wanted {
            if self.watches.contains_key(&id) {
                continue;
            }
            let cancel = self.cancel.child_token();
            let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
            let handle = tokio::spawn(tell_when_ended(
                watch::run(
                    self.rt.clone(),
                    w,
                    self.settings.clone(),
                    cancel.clone(),
                    Some(ready_tx),
                ),
                cancel.clone(),
                self.runner_ended.clone(),
            ));
            // In place before `start`/`reload` returns, so no change right after is lost.
            let _ = tokio::time::timeout(Duration::from_secs(10), ready_rx).await;
            self.watches.insert(
                id,
                Runner {
                    key,
                    cancel,
                    handle,
                },
            );
        }
    }
}

/// Runs a runner, and tells the supervisor if it ended without being stopped.
async fn tell_when_ended(
    runner: impl std::future::Future<Output = ()>,
    cancel: CancellationToken,
    ended: Arc<Notify>,
) {
    runner.await;
    if !cancel.is_cancelled() {
        ended.notify_one();
    }
}

/// Until the host's clock reaches `at` (never without one).
async fn clock_until_opt(clock: &Arc<dyn Clock>, at: Option<chrono::DateTime<chrono::Utc>>) {
    match at {
        Some(at) => clock.sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn retain_wanted(running: &mut HashMap<i64, Runner<String>>, wanted: &HashMap<i64, String>) {
    running.retain(|id, r| {
        let keep = wanted.get(id) == Some(&r.key) && !r.handle.is_finished();
        if !keep {
            r.cancel.cancel();
        }
        keep
    });
}

/// What `serve` does before it listens: resume the runs a crash or a quit interrupted,
/// unless the person chose to be asked (DESIGN §9); waiting approvals stay waiting.
pub fn on_start(rt: &Arc<Runtime>) {
    match rt.call(ops::ResumeOnStart {}) {
        Ok((sessions, resumed)) if !sessions.is_empty() => {
            tracing::info!(sessions = ?sessions, resumed, "interrupted sessions at start");
        }
        Ok(_) => {}
        Err(e) => tracing::error!(error = %e, "could not resume interrupted sessions"),
    }
}

/// `pocketpilot serve`: the host without a window until Ctrl-C or SIGTERM. The signal
/// handlers are in place before the `listening on …` line is written.
pub async fn serve_until_signal(
    rt: Arc<Runtime>,
    port: Option<u16>,
    status: impl std::io::Write,
) -> Result<()> {
    let stop = stop_signal();
    serve_until(rt, port, status, stop).await
}

/// The headless host until `stop` resolves: resumes interrupted runs ([`on_start`]),
/// starts the host, writes `listening on http://127.0.0.1:PORT` to `status`, and on
/// `stop` shuts down (requests in flight finish; runs keep going until the process ends).
pub async fn serve_until(
    rt: Arc<Runtime>,
    port: Option<u16>,
    mut status: impl std::io::Write,
    stop: impl std::future::Future<Output = ()>,
) -> Result<()> {
    on_start(&rt);
    let host = TriggerHost::start(
        rt.clone(),
        HostOptions {
            port,
            ..HostOptions::default()
        },
    )
    .await?;
    if let Some(addr) = host.webhook_addr() {
        let _ = writeln!(status, "listening on http://{addr}");
        tracing::info!(%addr, "serving");
    }
    let n = |r: Result<usize>| r.unwrap_or(0);
    let _ = writeln!(
        status,
        "{} webhook(s), {} schedule(s), {} watch(es); Ctrl-C to stop",
        n(webhook::list(&rt).map(|v| v.len())),
        n(cron::list(&rt).map(|v| v.iter().filter(|s| !s.paused).count())),
        n(watch::list(&rt).map(|v| v.iter().filter(|w| !w.paused).count())),
    );
    let _ = status.flush();
    stop.await;
    let _ = writeln!(status, "stopping");
    host.shutdown().await;
    let _ = writeln!(status, "stopped");
    Ok(())
}

/// Ctrl-C or SIGTERM, registered now (not at the first poll).
fn stop_signal() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            return Box::pin(async move {
                tokio::select! {
                    _ = term.recv() => tracing::info!("SIGTERM"),
                    _ = int.recv() => tracing::info!("SIGINT"),
                }
            });
        }
    }
    Box::pin(async {
        let _ = tokio::signal::ctrl_c().await;
    })
}
