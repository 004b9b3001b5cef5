//! This process's runs: one cancel token per task being worked here. A run's token is a
//! child of its session lease's, so losing the lease cancels the run.
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;

#[derive(Default)]
pub struct RunRegistry {
    runs: Mutex<HashMap<i64, CancellationToken>>,
}

impl RunRegistry {
    fn lock(&self) -> MutexGuard<'_, HashMap<i64, CancellationToken>> {
        // A panic while holding the lock leaves the map whole (each edit is one call).
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The new run's token, or `None` when the task already runs here.
    pub fn register(&self, task_id: i64, parent: &CancellationToken) -> Option<CancellationToken> {
        let mut runs = self.lock();
        if runs.contains_key(&task_id) {
            return None;
        }
        let token = parent.child_token();
        runs.insert(task_id, token.clone());
        Some(token)
    }

    pub fn unregister(&self, task_id: i64) {
        self.lock().remove(&task_id);
    }

    pub fn is_running(&self, task_id: i64) -> bool {
        self.lock().contains_key(&task_id)
    }

    /// Whether a run other than `task_id` is running here.
    pub fn any_other_than(&self, task_id: i64) -> bool {
        self.lock().keys().any(|&id| id != task_id)
    }

    /// Cancels the run if it is here; false otherwise.
    pub fn cancel(&self, task_id: i64) -> bool {
        let token = self.lock().get(&task_id).cloned();
        token.map(|t| t.cancel()).is_some()
    }
}
