//! Continuing or stopping a paused task.
use crate::api::service::{Result, Runtime, RuntimeError};
use crate::config::Limits;
use crate::event::RuntimeEvent;
use crate::policy::pause::{self, PauseOffer, LIFTED_BY};
use crate::store::{self, tasks};
use crate::task::TaskStatus;
use pocketpilot_protocol::{Budget, PauseReason, Raise};
use std::sync::Arc;

impl Runtime {
    /// What a paused task's card says and proposes: what ran out, how much was used,
    /// and the raise (the budget again).
    pub(crate) fn pause_offer(&self, task_id: i64) -> Result<PauseOffer> {
        let task = self.task(task_id)?;
        let limits = Limits::load(&self.store)?;
        pause::offer(&task, &limits).ok_or(RuntimeError::NotPaused {
            id: task_id,
            status: task.status,
        })
    }

    /// Continues a paused task with `raise` added to its budgets and, if given, `steer`
    /// as the person's message before the model is asked again. An empty raise after a
    /// budget ran out means "the same again": the offer's raise is used.
    pub(crate) fn continue_task(
        self: &Arc<Self>,
        task_id: i64,
        raise: Raise,
        steer: Option<String>,
        by: &str,
    ) -> Result<()> {
        let task = self.task(task_id)?;
        if task.status != TaskStatus::Paused {
            return Err(RuntimeError::NotPaused {
                id: task_id,
                status: task.status,
            });
        }
        if task.pause.as_ref().map(|p| p.reason) == Some(PauseReason::DiskFull) {
            let space = crate::store::space::Space::new(self.data_dir());
            if let Err((full, needed)) = space.room_to_continue() {
                return Err(RuntimeError::StillFull {
                    id: task_id,
                    full,
                    needed,
                });
            }
        }
        let raise = match pause::offer(&task, &Limits::load(&self.store)?) {
            Some(offer) if raise.is_empty() && offer.reason == PauseReason::Budget => offer.raise,
            _ => raise,
        };
        vet(&task, &raise)?;
        self.recorder.record(
            task_id,
            &RuntimeEvent::RunContinued {
                raise,
                by: if by.is_empty() {
                    "user".into()
                } else {
                    by.into()
                },
                steer,
            },
        )?;
        self.drive_in_background(task.session_id);
        Ok(())
    }

    /// Ends a paused task: `budget_exceeded` when a budget paused it (as before there
    /// were pauses), `cancelled` when the repetition guard or a full disk did.
    pub(crate) fn stop_task(&self, task_id: i64) -> Result<TaskStatus> {
        let task = self.task(task_id)?;
        if task.status != TaskStatus::Paused {
            return Err(RuntimeError::NotPaused {
                id: task_id,
                status: task.status,
            });
        }
        let event = match &task.pause {
            Some(p) if p.reason == PauseReason::Budget => RuntimeEvent::BudgetExceeded {
                budget: p.budget.unwrap_or(Budget::Steps),
                reason: p.message.clone(),
            },
            Some(p) if p.reason == PauseReason::DiskFull => RuntimeEvent::TaskCancelled {
                reason: "stopped by the user while the disk was full".into(),
            },
            _ => RuntimeEvent::TaskCancelled {
                reason: "stopped by the user: the agent was repeating itself".into(),
            },
        };
        self.recorder.finish_run(task_id, &event, false)?;
        Ok(self.task(task_id)?.status)
    }

    /// When the soonest pause that lifts by itself lifts (a run the daily cap parked),
    /// if any: the trigger host sleeps until then.
    pub(crate) fn next_lifted_pause(&self) -> Result<Option<chrono::DateTime<chrono::Utc>>> {
        let Some(at) = self.store.read(tasks::next_resume_at)? else {
            return Ok(None);
        };
        match chrono::DateTime::parse_from_rfc3339(&at) {
            Ok(t) => Ok(Some(t.with_timezone(&chrono::Utc))),
            Err(e) => {
                // Only this runtime writes the stamp; one that does not read is left to
                // the person (the run stays parked, with its Continue).
                tracing::warn!(at, error = %e, "a parked run's resume time does not read as a time");
                Ok(None)
            }
        }
    }

    /// Continues every run whose pause lifts by itself by `now`: a run the daily cap for
    /// unattended runs parked goes on once the cap resets (the trigger host asks). A run
    /// the person stopped or continued is no longer parked and is left alone. Returns
    /// the tasks continued.
    pub(crate) fn resume_lifted_pauses(
        self: &Arc<Self>,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Vec<i64>> {
        let stamp = crate::policy::cost::stamp(now);
        let parked = self.store.read(|c| tasks::parked_until(c, &stamp))?;
        let mut resumed = Vec::new();
        for task in parked {
            let task_id = task.id;
            // The person may stop it between the read and this record: the store refuses
            // a terminal task's transition, and the task stays as the person left it.
            let event = RuntimeEvent::RunContinued {
                raise: Raise::default(),
                by: LIFTED_BY.into(),
                steer: None,
            };
            match self.recorder.record(task_id, &event) {
                Ok(_) => {
                    tracing::info!(task_id, "the daily cap reset: the parked run continues");
                    resumed.push(task_id);
                    self.drive_in_background(task.session_id);
                }
                Err(e) => tracing::warn!(task_id, error = %e, "a parked run was not continued"),
            }
        }
        Ok(resumed)
    }

    /// Replaces the clock of day budgets and usage rows (tests inject one).
    pub(crate) fn set_clock(&self, clock: crate::policy::cost::Clock) {
        self.recorder.set_clock(clock);
    }
}

/// Checks a raise: finite, not negative, and more of the budget that ran out.
fn vet(task: &store::Task, raise: &Raise) -> Result<()> {
    if !raise.usd.is_finite() || raise.usd < 0.0 {
        return Err(RuntimeError::InvalidArguments(
            "a raise in dollars must be a number, 0 or more".into(),
        ));
    }
    let Some(pause) = &task.pause else {
        return Ok(());
    };
    let short = match pause.budget {
        Some(Budget::Steps) => raise.steps == 0,
        Some(Budget::Seconds) => raise.seconds == 0,
        Some(Budget::Tokens) => raise.tokens == 0,
        Some(Budget::Usd) => raise.usd <= 0.0,
        None => false,
    };
    match pause.budget {
        Some(budget) if short && pause.reason == PauseReason::Budget => {
            Err(RuntimeError::RaiseNeeded {
                id: task.id,
                budget,
            })
        }
        _ => Ok(()),
    }
}

crate::api::call::op! {
    /// What a paused task's card says and proposes: what ran out, how much was used, and the raise
    /// (the budget again).
    #[derive(Debug, Clone)]
    GetPauseOffer { task_id: i64 } -> Result<PauseOffer>
        = |rt, op| rt.pause_offer(op.task_id);
    /// Continues a paused task with `raise` added to its budgets and, if given, `steer` as the
    /// person's message before the model is asked again. An empty raise after a budget ran out
    /// means "the same again": the offer's raise is used.
    #[derive(Debug, Clone)]
    ContinueTask { task_id: i64, raise: Raise, steer: Option<String>, by: String } -> Result<()>
        = |rt, op| rt.continue_task(op.task_id, op.raise, op.steer, &op.by);
    /// Ends a paused task: `budget_exceeded` when a budget paused it (as before there were pauses),
    /// `cancelled` when the repetition guard or a full disk did.
    #[derive(Debug, Clone)]
    StopTask { task_id: i64 } -> Result<TaskStatus>
        = |rt, op| rt.stop_task(op.task_id);
    /// When the soonest pause that lifts by itself lifts (a run the daily cap parked), if any: the
    /// trigger host sleeps until then.
    #[derive(Debug, Clone)]
    NextLiftedPause {} -> Result<Option<chrono::DateTime<chrono::Utc>>>
        = |rt, op| rt.next_lifted_pause();
    /// Continues every run whose pause lifts by itself by `now`: a run the daily cap for unattended
    /// runs parked goes on once the cap resets (the trigger host asks). A run the person stopped or
    /// continued is no longer parked and is left alone. Returns the tasks continued.
    #[derive(Debug, Clone)]
    ResumeLiftedPauses { now: chrono::DateTime<chrono::Utc> } -> Result<Vec<i64>>
        = |rt, op| rt.resume_lifted_pauses(op.now);
    /// Replaces the clock of day budgets and usage rows (tests inject one).
    SetClock { clock: crate::policy::cost::Clock } -> ()
        = |rt, op| rt.set_clock(op.clock);
}
