//! The one watcher of the store in a process. This process's commits are published by the
//! recorder as they happen; what another process sharing the data directory commits (the
//! CLI beside the app, `serve`) is noticed here, once, and fanned out to everyone who
//! follows the store: the window's feed, event subscriptions, runs waiting for a cancel,
//! the tray.
//!
//! It sleeps until the kernel says the database or its WAL changed (inotify through
//! `notify`), then asks SQLite's `data_version`, which this process's own commits never
//! move: a busy run here wakes nobody. Where file notifications cannot be had, it looks
//! every [`FALLBACK_POLL`] instead, and with them every [`SAFETY_LOOK`] all the same.
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use notify::{RecursiveMode, Watcher};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::store::Store;

/// How often the store is looked at where no file notification can be had.
pub const FALLBACK_POLL: Duration = Duration::from_millis(750);
/// With file notifications, a slow look all the same: a data directory on a filesystem
/// that does not report another machine's or container's writes (NFS, some FUSE mounts)
/// still gets its changes, late. Long, because an idle app should not wake: each look is
/// two or three wakeups of the runtime's timer (bench-results/core-layers.txt).
pub const SAFETY_LOOK: Duration = Duration::from_secs(60);
/// How long to wait before asking again while this process's writer commits.
const BUSY_RETRY: Duration = Duration::from_millis(5);

/// Shared by everyone in the process who follows the store.
pub struct StoreWatch {
    store: Arc<Store>,
    /// Counts the other processes' commits seen; a receiver wakes when it moves.
    tx: watch::Sender<u64>,
    started: OnceLock<()>,
    /// Stops the watcher (and frees its inotify instance) when the runtime goes.
    stop: CancellationToken,
}

impl Drop for StoreWatch {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl StoreWatch {
    pub fn new(store: Arc<Store>) -> Arc<Self> {
        Arc::new(Self {
            store,
            tx: watch::channel(0).0,
            started: OnceLock::new(),
            stop: CancellationToken::new(),
        })
    }

    /// Wakes (`changed()`) whenever another process committed. Starts the watcher on
    /// first use; outside a tokio runtime there is none, and the receiver never wakes.
    pub fn foreign_commits(&self) -> watch::Receiver<u64> {
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            self.started.get_or_init(|| {
                // The mark and the file watch are taken before this returns: a commit made
                // elsewhere from now on is seen, even before the task below first runs.
                let seen = match version(&self.store) {
                    Version::Is(v) => Some(v),
                    Version::Busy | Version::Unreadable => None,
                };
                let (wake_tx, wake) = mpsc::channel::<()>(1);
                let watcher = file_watcher(self.store.path().to_owned(), wake_tx)
                    .map_err(|e| {
                        tracing::info!(error = %e, "no file notifications for the store: looking at it on a timer");
                    })
                    .ok();
                let (store, tx, stop) = (self.store.clone(), self.tx.clone(), self.stop.clone());
                handle.spawn(async move {
                    tokio::select! {
                        _ = stop.cancelled() => {}
                        _ = follow(store, tx, seen, watcher, wake) => {}
                    }
                });
            });
        }
        self.tx.subscribe()
    }
}

/// What the store's version reads as now.
enum Version {
    Is(i64),
    /// This process's writer holds the connection for a commit of its own.
    Busy,
    /// It cannot be read: told as a change, so followers re-read what they show.
    Unreadable,
}

fn version(store: &Store) -> Version {
    match store.foreign_version() {
        None => Version::Busy,
        Some(Ok(v)) => Version::Is(v),
        Some(Err(e)) => {
            tracing::warn!(error = %e, "cannot read the store's data version");
            Version::Unreadable
        }
    }
}

/// After a file event, a commit may not be visible yet: its WAL frames are written (the
/// event) before the WAL index says the commit is done (a shared mapping, which sends no
/// event), with an fsync between, which on a slow disk takes a good part of a second. So
/// an event that shows no new version is looked at again after these pauses (doubling
/// from 2 ms, about 4 s in all), unless another event comes first.
const SETTLE: [Duration; 11] = [
    Duration::from_millis(2),
    Duration::from_millis(4),
    Duration::from_millis(8),
    Duration::from_millis(16),
    Duration::from_millis(32),
    Duration::from_millis(64),
    Duration::from_millis(128),
    Duration::from_millis(256),
    Duration::from_millis(512),
    Duration::from_millis(1024),
    Duration::from_millis(2048),
];

/// Sleeps until the database changes, and counts each change another process made.
async fn follow(
    store: Arc<Store>,
    tx: watch::Sender<u64>,
    mut seen: Option<i64>,
    // Kept for as long as this runs: dropping it ends the notifications.
    watcher: Option<notify::RecommendedWatcher>,
    mut wake: mpsc::Receiver<()>,
) {
    let quiet = if watcher.is_some() {
        SAFETY_LOOK
    } else {
        FALLBACK_POLL
    };
    loop {
        let by_event = tokio::select! {
            w = wake.recv(), if watcher.is_some() => match w {
                Some(()) => true,
                None => return,
            },
            // sleep: the slow look that catches what no event announced (see SAFETY_LOOK).
            _ = tokio::time::sleep(quiet) => false,
        };
        if moved(&store, &tx, &mut seen).await || !by_event {
            continue;
        }
        // Each event starts the pauses over: a burst of writes must not use them up
        // before the commit behind it is visible.
        let mut step = 0;
        while let Some(pause) = SETTLE.get(step) {
            tokio::select! {
                // sleep: see SETTLE — the commit behind an event is not visible at once.
                _ = tokio::time::sleep(*pause) => step += 1,
                w = wake.recv(), if watcher.is_some() => match w {
                    Some(()) => step = 0,
                    None => return,
                },
            }
            if moved(&store, &tx, &mut seen).await {
                break;
            }
        }
    }
}

/// Whether another process committed since `seen`; tells the followers if so. Waits out
/// this process's own commit rather than miss one.
async fn moved(store: &Store, tx: &watch::Sender<u64>, seen: &mut Option<i64>) -> bool {
    let now = loop {
        match version(store) {
            Version::Is(v) => break Some(v),
            Version::Unreadable => break None,
            // sleep: this process's writer is committing; the version is asked again
            // when it is done, so a wake-up is never lost.
            Version::Busy => tokio::time::sleep(BUSY_RETRY).await,
        }
    };
    if now.is_some() && now == *seen {
        return false;
    }
    *seen = now;
    tx.send_modify(|n| *n += 1);
    true
}

/// Watches the database's directory for writes to the database or its WAL.
fn file_watcher(db: PathBuf, wake: mpsc::Sender<()>) -> notify::Result<notify::RecommendedWatcher> {
    let dir = db
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    let name = db.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        let Ok(event) = res else { return };
        let ours = event.paths.iter().any(|p| {
            p.file_name()
                .is_some_and(|f| f.as_encoded_bytes().starts_with(name.as_encoded_bytes()))
        });
        let wrote = matches!(
            event.kind,
            notify::EventKind::Modify(_)
                | notify::EventKind::Create(_)
                | notify::EventKind::Access(notify::event::AccessKind::Close(
                    notify::event::AccessMode::Write
                ))
        );
        if ours && wrote {
            // A full channel already holds a wake-up: one look covers both.
            let _ = wake.try_send(());
        }
    })?;
    watcher.watch(&dir, RecursiveMode::NonRecursive)?;
    Ok(watcher)
}
