//! Editors attached to sessions in this process (`pocketpilot acp`): a run of such a
//! session reads and writes files through the editor's file methods (see
//! `pocketpilot_tools::editor`). Only this process's runs see them: a run of the same
//! session started by the window uses the workspace as usual.
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use pocketpilot_tools::editor::EditorFiles;

#[derive(Default)]
pub struct Editors {
    by_session: Mutex<HashMap<i64, Arc<dyn EditorFiles>>>,
}

impl Editors {
    fn lock(&self) -> MutexGuard<'_, HashMap<i64, Arc<dyn EditorFiles>>> {
        // Each edit is one call: a panic while holding the lock leaves the map whole.
        self.by_session.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn attach(&self, session_id: i64, editor: Arc<dyn EditorFiles>) {
        self.lock().insert(session_id, editor);
    }

    pub fn detach(&self, session_id: i64) {
        self.lock().remove(&session_id);
    }

    pub fn of(&self, session_id: i64) -> Option<Arc<dyn EditorFiles>> {
        self.lock().get(&session_id).cloned()
    }
}
