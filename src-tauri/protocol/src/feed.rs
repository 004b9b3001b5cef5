//! The change feed: what the window is told so that it re-reads a part of its state, instead
//! of polling. A change names what changed, not its new value: the window reads the value
//! with the command it already has (one source of truth, no second projection to drift).
use serde::{Deserialize, Serialize};

use crate::EventKind;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// A task changed state (created, started, waiting, resolved, ended): the sessions list,
    /// the counts and that session's view.
    Task {
        task_id: i64,
        session_id: Option<i64>,
        /// The event that changed it.
        event: EventKind,
    },
    /// A session's inbox changed: a submission was queued, placed or settled.
    Inbox { session_id: i64 },
    /// An approval was asked for or answered.
    Approvals { task_id: i64 },
    /// A webhook, schedule, watch or the "pause all" switch changed, or the trigger host
    /// started (its webhook address is known).
    Triggers,
    /// A session was deleted with everything in it: the sessions list, and a view that
    /// shows it goes away.
    SessionDeleted { session_id: i64 },
    /// Something changed that this process did not announce (another process sharing the
    /// data directory, e.g. the CLI, or announcements lost to a slow reader): re-read all.
    Refresh,
}
