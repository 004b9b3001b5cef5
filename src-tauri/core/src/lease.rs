//! A session's lease as held by this process while it works the session.
//!
//! Invariants:
//! - exactly one process works a session: the lease row names it, and the holder renews it
//!   every third of its TTL;
//! - a holder that finds its lease gone (another process took it over after the TTL, e.g.
//!   while this one was stopped) stops at once: the run's token is cancelled (its command's
//!   process group is killed) and nothing more is recorded for the run — every record of
//!   the run first checks [`SessionLease::check`].
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

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
        Ok(took.then(|| {
            Arc::new(Self {
                store: store.clone(),
                session_id,
                holder: holder.to_owned(),
                lost: AtomicBool::new(false),
                cancel: CancellationToken::new(),
            })
        }))
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
