//! The change feed: what the window is told so that it re-reads part of its state instead
//! of polling ([`Change`], in protocol). Three sources, merged per subscriber:
//! - task state changes, as the recorder commits them (`Recorder::changes`);
//! - announcements by the entry points that change something else: the inbox (`say`,
//!   `withdraw`), triggers, settings;
//! - a slow look at the store (every [`STORE_POLL`]) for what another process sharing the
//!   data directory (the CLI, `serve`) committed: it pushes `Refresh`. It asks the writer
//!   connection's `data_version`, which this process's own commits never move, so a busy
//!   run here costs the window no re-read.
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast::{self, error::RecvError};
use tokio::time::{Interval, MissedTickBehavior};

pub use pocketpilot_protocol::Change;

use crate::event::EventKind;
use crate::recorder::TaskChange;
use crate::store::{tasks, Store};

/// How often a subscriber looks for commits made by another process.
pub const STORE_POLL: Duration = Duration::from_millis(750);

/// Announcements of this process's changes that are not task state changes.
pub struct Feed {
    tx: broadcast::Sender<Change>,
}

impl Default for Feed {
    fn default() -> Self {
        Self {
            tx: broadcast::channel(1024).0,
        }
    }
}

impl Feed {
    pub fn announce(&self, change: Change) {
        // No subscriber (no window) is the common case for the CLI: nothing to tell.
        let _ = self.tx.send(change);
    }
}

/// One subscriber's merged feed; see the module comment.
pub struct Changes {
    store: Arc<Store>,
    tasks: broadcast::Receiver<TaskChange>,
    own: broadcast::Receiver<Change>,
    poll: Interval,
    version: Option<i64>,
    ready: VecDeque<Change>,
}

impl Changes {
    /// Follows every change the window shows. Needs a tokio runtime (its timer).
    pub fn follow(store: Arc<Store>, tasks: broadcast::Receiver<TaskChange>, feed: &Feed) -> Self {
        let mut poll = tokio::time::interval(STORE_POLL);
        poll.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut changes = Changes {
            store,
            tasks,
            own: feed.tx.subscribe(),
            poll,
            version: None,
            ready: VecDeque::new(),
        };
        changes.version = changes.data_version();
        changes
    }
}

impl Changes {
    /// The next change; `None` once the runtime is gone.
    pub async fn next(&mut self) -> Option<Change> {
        loop {
            if let Some(c) = self.ready.pop_front() {
                return Some(c);
            }
            tokio::select! {
                r = self.tasks.recv() => match r {
                    Ok(change) => self.task_changed(change),
                    // Fell behind: what was missed is unknown, so everything is re-read.
                    Err(RecvError::Lagged(_)) => self.ready.push_back(Change::Refresh),
                    Err(RecvError::Closed) => return None,
                },
                r = self.own.recv() => match r {
                    Ok(change) => self.ready.push_back(change),
                    Err(RecvError::Lagged(_)) => self.ready.push_back(Change::Refresh),
                    Err(RecvError::Closed) => return None,
                },
                _ = self.poll.tick() => {
                    let now = self.data_version();
                    if now.is_some() && now != self.version {
                        // The first reading only sets the mark.
                        if self.version.is_some() {
                            self.ready.push_back(Change::Refresh);
                        }
                        self.version = now;
                    }
                }
            }
        }
    }

    fn task_changed(&mut self, change: TaskChange) {
        // The session lets the window refresh only the view that shows it; a task that
        // cannot be read still changes the list.
        let session_id = self
            .store
            .read(|c| tasks::get(c, change.task_id))
            .map(|t| t.session_id)
            .ok();
        if matches!(
            change.kind,
            EventKind::ApprovalRequired | EventKind::ApprovalResolved
        ) {
            self.ready.push_back(Change::Approvals {
                task_id: change.task_id,
            });
        }
        self.ready.push_back(Change::Task {
            task_id: change.task_id,
            session_id,
            event: change.kind,
        });
    }

    /// `None` while this process's writer is committing (the next tick asks again) or
    /// when the version cannot be read.
    fn data_version(&self) -> Option<i64> {
        self.store
            .foreign_version()?
            .map_err(|e| tracing::warn!(error = %e, "cannot read the store's data version"))
            .ok()
    }
}
