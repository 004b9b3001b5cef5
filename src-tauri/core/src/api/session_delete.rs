//! Deleting a session (issue 20): the session and every row that is its alone go in one
//! write (`store::sessions::delete`), then the kept contents only its change sets named.
//!
//! The rule: a session is deleted only when none of its tasks is open (queued, running,
//! waiting for an approval, paused). Deleting a task that runs would pull its rows out
//! from under the worker, and an approval or a pause is a question put to the person;
//! stopping the task first is one explicit step (`cancel`, `stop`) and loses nothing the
//! person did not choose to lose. The check and the delete are one write, so a run
//! admitted meanwhile either is seen (refused) or finds no session (its admission fails).
//!
//! Triggers aim at workspaces, not sessions: a webhook, schedule or watch keeps working
//! and starts its next run in a new session; one whose last run was in the deleted session
//! only forgets that task. Memories the person kept stay (they belong to a workspace or to
//! everyone), without the task they came from. The session's recorded costs go with it:
//! `usage` and the day's totals count only the sessions that remain.
use std::collections::HashSet;

use pocketpilot_protocol::changes::ChangeSetStatus;
use serde::Serialize;

use crate::api::service::{Result, Runtime, RuntimeError};
use crate::engine::changes::retention;
use crate::store::{change_sets, sessions, tasks};

/// What a delete removed.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DeletedSession {
    pub session: sessions::Session,
    pub tasks: usize,
    /// Kept contents (blobs) removed now; those kept within the last hour wait for the
    /// next retention prune.
    pub blobs: usize,
}

/// What the deleted change sets named: blobs outright, and the indexes of pending sets
/// (whose entries are read once the rows are gone).
#[derive(Default)]
struct Named {
    blobs: HashSet<String>,
    pending_indexes: Vec<String>,
}

impl Runtime {
    /// Deletes a session and everything that belongs only to it; refused with
    /// `SessionActive` while one of its tasks is open (see the module comment).
    pub(crate) fn delete_session(&self, session_id: i64) -> Result<DeletedSession> {
        let (session, deleted_tasks, named) = self.store.write_with(|tx| {
            let session = sessions::get(tx, session_id)?;
            if let Some(open) = tasks::open_for_session(tx, session_id)? {
                return Err(RuntimeError::SessionActive {
                    session_id,
                    task_id: open.id,
                    status: open.status,
                });
            }
            let mut named = Named::default();
            for set in change_sets::in_session(tx, session_id)? {
                retention::names_of(&set, &mut named.blobs);
                if let (ChangeSetStatus::Pending, Some(index)) = (set.status, &set.pre_index) {
                    named.pending_indexes.push(index.clone());
                }
            }
            let n = sessions::delete(tx, session_id)?;
            Ok::<_, RuntimeError>((session, n, named))
        })?;
        self.feed
            .announce(crate::engine::feed::Change::SessionDeleted { session_id });
        // The rows are gone for good; a blob left behind is only disk, and the next prune
        // takes it, so a failure here is logged rather than reported as a failed delete.
        let blobs = match self.sweep_blobs(named) {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!(session_id, error = %e, "kept contents of a deleted session were left for retention");
                0
            }
        };
        tracing::info!(session_id, tasks = deleted_tasks, blobs, "session deleted");
        Ok(DeletedSession {
            session,
            tasks: deleted_tasks,
            blobs,
        })
    }

    fn sweep_blobs(&self, mut named: Named) -> Result<usize, crate::engine::changes::ChangeError> {
        if named.blobs.is_empty() {
            return Ok(0);
        }
        let store = crate::engine::changes::blob_store(self.data_dir())?;
        for index in &named.pending_indexes {
            retention::names_in_index(&store, index, &mut named.blobs);
        }
        retention::sweep(
            &self.store,
            self.data_dir(),
            &named.blobs,
            std::time::SystemTime::now(),
        )
    }
}

crate::api::call::op! {
    /// Deletes a session and everything that belongs only to it; refused with `SessionActive` while
    /// one of its tasks is open (see the module comment).
    #[derive(Debug, Clone)]
    DeleteSession { session_id: i64 } -> Result<DeletedSession>
        = |rt, op| rt.delete_session(op.session_id);
}
