//! Finding past work: full-text search over every session's transcript (the person's
//! words, the answers, tool output), newest first, each hit naming its session and entry.
use crate::api::service::{Result, Runtime};
use crate::store::search::{self, SearchHit};

impl Runtime {
    /// The newest entries matching what the person typed (every word, the last one also
    /// as a prefix), at most `limit`, only in `workspace` when given.
    pub(crate) fn search(
        &self,
        typed: &str,
        workspace: Option<&str>,
        limit: u32,
    ) -> Result<Vec<SearchHit>> {
        Ok(self
            .store
            .read(|c| search::search(c, typed, workspace, limit))?)
    }
}

crate::api::call::op! {
    /// The newest entries matching what the person typed (every word, the last one also as a
    /// prefix), at most `limit`, only in `workspace` when given.
    #[derive(Debug, Clone)]
    Search { typed: String, workspace: Option<String>, limit: u32 } -> Result<Vec<SearchHit>>
        = |rt, op| rt.search(&op.typed, op.workspace.as_deref(), op.limit);
}
