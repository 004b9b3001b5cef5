//! A paused task: the run stopped for the person with its context intact,
//! because a budget ran out or the repetition guard tripped. Nothing runs and no budget
//! is spent while it waits. Continuing adds what the person raised (and, optionally, a
//! steer) and runs on from the same context; stopping ends it `budget_exceeded` (a budget)
//! or `cancelled` (repetition).

use crate::config::Limits;
use crate::event::RuntimeEvent;
use crate::store::{self, entries, tasks, StoreError};
use crate::task::TaskStatus;
use pocketpilot_protocol::{Budget, EntryKind, PauseReason, Raise};

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

/// What the window offers for a paused task: why, in plain words with the figures, and
/// the raise it proposes (one more budget's worth left after it).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct PauseOffer {
    pub task_id: i64,
    pub reason: PauseReason,
    /// The budget that ran out; `None` for the repetition guard.
    pub budget: Option<Budget>,
    /// A sentence for a person: what ran out and how much was used.
    pub sentence: String,
    /// How much of that budget the task used, in its unit (steps, seconds, tokens, dollars).
    pub used: f64,
    /// That budget for this task, with what people raised already; `None` when unknown.
    pub limit: Option<f64>,
    /// The raise proposed: enough for the budget again.
    pub raise: Raise,
}

/// The offer for `task` (paused) under the run limits `limits`. A raise of the budget
/// again, on top of any overrun, leaves the run a whole budget to go on with.
pub fn offer(task: &store::Task, limits: &Limits) -> Option<PauseOffer> {
    let pause = task.pause.as_ref()?;
    let mut offer = PauseOffer {
        task_id: task.id,
        reason: pause.reason,
        budget: pause.budget,
        sentence: plain(&pause.message),
        used: 0.0,
        limit: None,
        raise: Raise::default(),
    };
    let Some(budget) = pause.budget.filter(|_| pause.reason == PauseReason::Budget) else {
        return Some(offer);
    };
    let again = |base: u64, used: u64, limit: u64| {
        u32::try_from(base.saturating_add(used.saturating_sub(limit))).unwrap_or(u32::MAX)
    };
    match budget {
        Budget::Steps => {
            let used = u64::try_from(task.step_count).unwrap_or(0);
            let limit = u64::from(limits.max_steps.saturating_add(task.extra.steps));
            offer.raise.steps = again(limits.max_steps.into(), used, limit).max(1);
            offer.sentence =
                format!("The agent used all {used} of its {limit} steps without finishing.");
            (offer.used, offer.limit) = (used as f64, Some(limit as f64));
        }
        Budget::Seconds => {
            let used = u64::try_from(task.active_ms / 1000).unwrap_or(0);
            let limit = limits
                .max_task_seconds
                .saturating_add(task.extra.seconds.into());
            offer.raise.seconds = again(limits.max_task_seconds, used, limit).max(1);
            offer.sentence = format!(
                "The task worked for {used} seconds, its whole time budget of {limit} seconds."
            );
            (offer.used, offer.limit) = (used as f64, Some(limit as f64));
        }
        Budget::Tokens => {
            let used = u64::try_from(task.prompt_tokens + task.completion_tokens).unwrap_or(0);
            let base = limits.max_task_tokens.unwrap_or(used.max(1));
            let limit = base.saturating_add(task.extra.tokens.into());
            offer.raise.tokens = again(base, used, limit).max(1);
            offer.sentence =
                format!("The task used {used} tokens, over its budget of {limit} tokens.");
            (offer.used, offer.limit) = (used as f64, Some(limit as f64));
        }
        Budget::Usd => {
            // Which money budget ran out is in the sentence; the raise is the person's
            // own budget again (the task's, else the day's, else the unattended cap).
            let base = limits
                .max_task_usd
                .or(limits.max_day_usd)
                .or(limits.max_trigger_day_usd)
                .filter(|d| *d > 0.0)
                .unwrap_or(1.0);
            offer.raise.usd = base;
        }
    }
    Some(offer)
}

/// A stored pause message as a sentence: capitalised, closed with a full stop.
fn plain(message: &str) -> String {
    let m = message.trim();
    let mut chars = m.chars();
    let Some(first) = chars.next() else {
        return String::new();
    };
    let mut s: String = first.to_uppercase().chain(chars).collect();
    if !s.ends_with('.') {
        s.push('.');
    }
    s
}
