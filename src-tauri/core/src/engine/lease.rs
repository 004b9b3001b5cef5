//! A session's lease as held by this process while it works the session.
//!
//! Invariants:
//! - exactly one process works a session: the lease row names it, and the holder renews it
//!   every third of its TTL;
//! - a holder that finds its lease gone (another process took it over after the TTL, e.g.
//!   while this one was stopped) stops at once: the run's token is cancelled (its command's
//!   process group is killed) and nothing more is recorded for the run — every record of
//!   the run first checks [`SessionLease::check`];
//! - the processes a run starts are recorded under the lease ([`watching`]); whoever takes the
//!   lease kills those left running and waits until they are gone before it works the
//!   session, so a frozen holder's command never overlaps the next holder's.
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pocketpilot_tools::builtin::run_command::{NotRecorded, ProcessWatch, PROCESS_WATCH};
use tokio_util::sync::CancellationToken;

use crate::engine::reaper::{self, Reaped, StillRunning};
use crate::store::processes::{self, RecordedProcess};
use crate::store::{leases, Store, StoreError};

/// How long a session's lease lasts without renewal (`POCKETPILOT_LEASE_TTL_MS` overrides
/// it, for tests that stop a process longer than that); a dead holder is detected at once.
const LEASE_TTL_MS: i64 = 15_000;

pub fn ttl_ms() -> i64 {
    std::env::var("POCKETPILOT_LEASE_TTL_MS")
        .ok()
        .and_then(|v| v.trim().parse::<i64>().ok())
        .filter(|v| *v >= 100)
        .unwrap_or(LEASE_TTL_MS)
}

#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    #[error("this process lost the lease of session {0} to another one; it stopped working it")]
    Lost(i64),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why the processes left running could not be dealt with.
enum Reap {
    Store(StoreError),
    Still(StillRunning),
}

impl From<StoreError> for Reap {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

pub struct SessionLease {
    store: Arc<Store>,
    pub session_id: i64,
    holder: String,
    lost: AtomicBool,
    /// Cancelled when the lease is lost; each run's token is a child of it.
    pub cancel: CancellationToken,
}

impl SessionLease {
    /// Takes the lease, or `None` when another worker (of this process or another) holds
    /// it. Each acquisition is its own holder, `{process}/{uuid}`: a second worker of the
    /// same process must not take over (nor release) the first one's lease.
    pub fn acquire(
        store: &Arc<Store>,
        session_id: i64,
        process: &str,
    ) -> Result<Option<Arc<Self>>, StoreError> {
        let holder = format!("{process}/{}", uuid::Uuid::now_v7());
        let holder = holder.as_str();
        let pid = i64::from(std::process::id());
        let took = store.write(|tx| leases::acquire(tx, session_id, holder, pid, ttl_ms()))?;
        if !took {
            return Ok(None);
        }
        let lease = Arc::new(Self {
            store: store.clone(),
            session_id,
            holder: holder.to_owned(),
            lost: AtomicBool::new(false),
            cancel: CancellationToken::new(),
        });
        match lease.reap_left_running() {
            Ok(()) => Ok(Some(lease)),
            Err(Reap::Store(e)) => {
                lease.release()?;
                Err(e)
            }
            // Working the session beside a process that would not die is what the lease
            // exists to prevent: leave it, to be tried again.
            Err(Reap::Still(e)) => {
                tracing::error!(session_id, error = %e, "the session's previous processes would not die");
                lease.release()?;
                Ok(None)
            }
        }
    }

    /// Kills every process recorded for the session (a previous holder's commands and MCP
    /// servers, frozen or crashed) and waits until each is gone, then forgets them. Within
    /// half a TTL: the lease is not renewed before this returns.
    fn reap_left_running(&self) -> Result<(), Reap> {
        let left = self
            .store
            .read(|c| processes::for_session(c, self.session_id))?;
        if left.is_empty() {
            return Ok(());
        }
        let bound = Duration::from_millis((ttl_ms() / 2).max(1) as u64);
        let mut gone = Vec::new();
        let mut failed = None;
        reaper::off_runtime(|| {
            for p in &left {
                match reaper::reap(p, bound) {
                    Ok(Reaped::NotRunning) => gone.push(p.clone()),
                    Ok(Reaped::Killed { processes }) => {
                        tracing::warn!(
                            session_id = self.session_id,
                            task_id = p.task_id,
                            pid = p.pid,
                            processes,
                            "killed a process the session's previous holder left running"
                        );
                        gone.push(p.clone());
                    }
                    Err(e) => failed = Some(e),
                }
            }
        });
        let (session_id, holder) = (self.session_id, self.holder.clone());
        self.store
            .write(move |tx| processes::forget_all(tx, session_id, &holder, &gone))?;
        match failed {
            Some(e) => Err(Reap::Still(e)),
            None => Ok(()),
        }
    }

    /// Records a process the run started, only while this holder holds the lease (in the
    /// same transaction): after a takeover nothing is recorded, and the caller must kill
    /// what it started.
    pub fn record_process(&self, p: &RecordedProcess) -> Result<(), LeaseError> {
        if self.is_lost() {
            return Err(LeaseError::Lost(self.session_id));
        }
        let (session_id, holder, p) = (self.session_id, self.holder.clone(), p.clone());
        let ours = self
            .store
            .write(move |tx| processes::record(tx, session_id, &holder, &p))?;
        if !ours {
            self.lose();
            return Err(LeaseError::Lost(self.session_id));
        }
        Ok(())
    }

    /// Forgets a process that ended (only while this holder holds the lease).
    pub fn forget_process(&self, pid: i64, started: i64) -> Result<(), StoreError> {
        let (session_id, holder) = (self.session_id, self.holder.clone());
        self.store
            .write(move |tx| processes::forget(tx, session_id, &holder, pid, started))
    }

    /// Who holds the lease, for the recorder's check inside each of the run's writes.
    pub fn holder(&self) -> &str {
        &self.holder
    }

    /// Called when a write found, inside its own transaction, that the lease is someone
    /// else's: the run stops.
    pub fn lost_in_write(&self) -> LeaseError {
        self.lose();
        LeaseError::Lost(self.session_id)
    }

    pub fn is_lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }

    fn lose(&self) {
        if !self.lost.swap(true, Ordering::SeqCst) {
            tracing::warn!(
                session_id = self.session_id,
                "the session's lease was taken over: stopping its run"
            );
        }
        self.cancel.cancel();
    }

    /// Before a record of the run: fails (and stops the run) once the lease is someone
    /// else's. A store error is not a loss: the record that follows reports it.
    pub fn check(&self) -> Result<(), LeaseError> {
        if self.is_lost() {
            return Err(LeaseError::Lost(self.session_id));
        }
        let ours = self
            .store
            .read(|c| leases::is_held_by(c, self.session_id, &self.holder))?;
        if !ours {
            self.lose();
            return Err(LeaseError::Lost(self.session_id));
        }
        Ok(())
    }

    /// Renews the lease every third of its TTL until `stop` is cancelled or it is lost.
    pub fn heartbeat(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let lease = self.clone();
        tokio::spawn(async move {
            let ttl = ttl_ms();
            let every = Duration::from_millis((ttl / 3).max(1) as u64);
            loop {
                tokio::select! {
                    _ = lease.cancel.cancelled() => return,
                    _ = tokio::time::sleep(every) => {}
                }
                let renewed = lease
                    .store
                    .write(|tx| leases::renew(tx, lease.session_id, &lease.holder, ttl));
                match renewed {
                    Ok(true) => {}
                    Ok(false) => return lease.lose(),
                    // A busy or failing disk is not a lost lease: try again next beat.
                    Err(e) => tracing::warn!(error = %e, "the lease could not be renewed"),
                }
            }
        })
    }

    pub fn release(&self) -> Result<(), StoreError> {
        self.store
            .write(|tx| leases::release(tx, self.session_id, &self.holder))
    }
}

/// Records a run's processes under its session's lease.
struct RunWatch {
    lease: Arc<SessionLease>,
    task_id: i64,
    /// Start time of each recorded pid, to forget it by its full name once it ended
    /// (its pid is free for reuse by then).
    live: Mutex<HashMap<u32, i64>>,
}

impl ProcessWatch for RunWatch {
    fn started(&self, pid: u32) -> Result<(), NotRecorded> {
        let Some(p) = reaper::identify(pid, self.task_id) else {
            return Err(NotRecorded(format!(
                "process {pid} could not be identified in /proc"
            )));
        };
        self.lease
            .record_process(&p)
            .map_err(|e| NotRecorded(e.to_string()))?;
        self.live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(pid, p.started);
        Ok(())
    }

    fn ended(&self, pid: u32) {
        let started = self
            .live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&pid);
        if let Some(started) = started {
            if let Err(e) = self.lease.forget_process(i64::from(pid), started) {
                // Left recorded, it is looked at (and found gone) by the next holder.
                tracing::warn!(error = %e, pid, "an ended process could not be forgotten");
            }
        }
    }
}

tokio::task_local! {
    static RUN: Arc<RunWatch>;
}

/// Runs `run` (one task's run, on this tokio task) with every process it starts recorded
/// under `lease`.
pub async fn watching<F: Future>(lease: &Arc<SessionLease>, task_id: i64, run: F) -> F::Output {
    let watch = Arc::new(RunWatch {
        lease: lease.clone(),
        task_id,
        live: Mutex::new(HashMap::new()),
    });
    let tools: Arc<dyn ProcessWatch> = watch.clone();
    RUN.scope(watch, PROCESS_WATCH.scope(tools, run)).await
}

/// Fails once the run on this task lost its session's lease (nothing to check outside a
/// watched run): what it would record next must not be.
pub fn still_held() -> Result<(), LeaseError> {
    match RUN.try_with(|w| w.lease.clone()) {
        Ok(lease) => lease.check(),
        Err(_) => Ok(()),
    }
}
