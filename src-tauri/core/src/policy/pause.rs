//! A paused task (issue 19): the run stopped for the person with its context intact,
//! because a budget ran out or the repetition guard tripped. Nothing runs and no budget
//! is spent while it waits. Continuing adds what the person raised (and, optionally, a
//! steer) and runs on from the same context; stopping ends it `budget_exceeded` (a budget)
//! or `cancelled` (repetition).

use crate::event::RuntimeEvent;
use crate::store::{self, entries, tasks, StoreError};
use crate::task::TaskStatus;
use pocketpilot_protocol::EntryKind;

/// Who continued a run whose pause lifted by itself (`run_continued`'s `by`).
pub const LIFTED_BY: &str = "daily_cap_reset";

/// What a `run_paused` or `run_continued` event means for the task, in its transaction.
pub(crate) fn apply(
    tx: &rusqlite::Transaction<'_>,
    task: &store::Task,
    event: &RuntimeEvent,
) -> Result<(), StoreError> {
    match event {
        RuntimeEvent::RunPaused {
            reason,
            budget,
            message,
            resumes_at,
            ..
        } => {
            tasks::set_status(tx, task.id, TaskStatus::Paused)?;
            tasks::set_pause(
                tx,
                task.id,
                Some(&tasks::Pause {
                    reason: *reason,
                    budget: *budget,
                    message: message.clone(),
                    resumes_at: resumes_at.clone(),
                }),
            )
        }
        RuntimeEvent::RunContinued { raise, steer, .. } => {
            tasks::set_status(tx, task.id, TaskStatus::Running)?;
            tasks::add_extra(tx, task.id, raise)?;
            tasks::set_pause(tx, task.id, None)?;
            if let Some(text) = steer.as_deref().filter(|t| !t.trim().is_empty()) {
                let content = serde_json::json!({ "text": text });
                entries::append(
                    tx,
                    task.session_id,
                    Some(task.id),
                    &EntryKind::User,
                    &content,
                )?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}
