//! Going back to one of the person's messages: rewinding a session, the conversation and
//! the files together (see `engine::changes::rewind`). Forking a new session from there is
//! `api::fork`.
use crate::api::service::{Result, Runtime};
use crate::engine::changes::rewind::{self, RewindReport};
use crate::engine::changes::undo::Options;

impl Runtime {
    /// Rewinds a session to before the person's message `to_entry`.
    pub(crate) fn rewind(
        &self,
        session_id: i64,
        to_entry: i64,
        opts: Options,
    ) -> Result<RewindReport> {
        let report = rewind::rewind(&self.store, self.data_dir(), session_id, to_entry, opts)?;
        if report.files.id.is_some() {
            self.feed.announce(crate::engine::feed::Change::Refresh);
        }
        Ok(report)
    }

    /// Completes undos, redos and rewinds a crash cut off (see `rewind::recover`). Run at
    /// open; a failure is logged and tried again at the next start.
    pub(crate) fn recover_cut_undos(&self) {
        match rewind::recover(&self.store, self.data_dir()) {
            Ok(0) => {}
            Ok(n) => tracing::info!(n, "undos cut off by a crash were completed"),
            Err(e) => {
                tracing::warn!(error = %e, "an undo cut off by a crash could not be completed yet")
            }
        }
    }
}

crate::api::call::op! {
    /// Rewinds a session to before the person's message `to_entry`.
    #[derive(Debug, Clone)]
    Rewind { session_id: i64, to_entry: i64, opts: Options } -> Result<RewindReport>
        = |rt, op| rt.rewind(op.session_id, op.to_entry, op.opts);
}
