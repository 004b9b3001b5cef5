//! The change feed: what the window is told so that it re-reads part of its state instead
//! of polling ([`Change`], in protocol). Three sources, merged per subscriber:
//! - task state changes, as the recorder commits them (`Recorder::changes`);
//! - announcements by the entry points that change something else: the inbox (`say`,
//!   `withdraw`), triggers, settings;
//! - what another process sharing the data directory (the CLI, `serve`) committed, as the
//!   process's one store watcher (`watch`) sees it: it pushes `Refresh`. This process's
//!   own commits never wake it, so a busy run here costs the window no re-read.
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::sync::watch;

pub use pocketpilot_protocol::Change;

use crate::engine::recorder::TaskChange;
use crate::event::EventKind;
use crate::store::{tasks, Store};

/// Announcements of this process's changes that are not task state changes.
#[derive(Clone)]
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
    /// `None` once the watcher is gone (the runtime is closing).
    foreign: Option<watch::Receiver<u64>>,
    ready: VecDeque<Change>,
}

impl Changes {
    /// Follows every change the window shows; `foreign` wakes on other processes' commits.
    pub fn follow(
        store: Arc<Store>,
        tasks: broadcast::Receiver<TaskChange>,
        foreign: watch::Receiver<u64>,
        feed: &Feed,
    ) -> Self {
        Changes {
            store,
            tasks,
            own: feed.tx.subscribe(),
            foreign: Some(foreign),
            ready: VecDeque::new(),
        }
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
                still = async {
                    match self.foreign.as_mut() {
                        Some(f) => f.changed().await.is_ok(),
                        None => std::future::pending().await,
                    }
                } => {
                    if still {
                        self.ready.push_back(Change::Refresh);
                    } else {
                        self.foreign = None;
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
}
