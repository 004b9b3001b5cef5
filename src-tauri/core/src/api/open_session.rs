//! A session opened before its first run: an editor (ACP `session/new`) names the folder
//! first and prompts later.
use std::path::Path;

use pocketpilot_store::sessions;

use super::service::{canonical_workspace, Result, Runtime};

impl Runtime {
    /// A new, empty session on `workspace` (made canonical; it must be a folder). It shows
    /// in the sessions list like any other and its first run is started with
    /// `NewTask::session_id`.
    pub(crate) fn open_session(&self, workspace: &Path, title: &str) -> Result<sessions::Session> {
        let workspace = canonical_workspace(workspace)?;
        let id = self
            .store
            .write(|c| sessions::insert(c, title, &workspace))?;
        self.session(id)
    }
}

crate::api::call::op! {
    /// A new, empty session on `workspace` (made canonical; it must be a folder). It shows in the
    /// sessions list like any other and its first run is started with `NewTask::session_id`.
    #[derive(Debug, Clone)]
    OpenSession { workspace: std::path::PathBuf, title: String } -> Result<sessions::Session>
        = |rt, op| rt.open_session(&op.workspace, &op.title);
}
