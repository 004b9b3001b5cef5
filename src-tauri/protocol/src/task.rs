//! The task state machine, the only place transitions are decided.
//!
//! ```text
//! queued → running → (waiting_approval → running | paused → running)* → completed | failed | cancelled | budget_exceeded
//! ```
//! `queued`, `waiting_approval` and `paused` may also end directly (cancel, no model
//! configured; a paused task stopped by the person ends `budget_exceeded` or `cancelled`).
//! `paused` is a run that stopped for the person with its context intact: a budget ran out
//! or the agent kept repeating itself (issue 19). A terminal task never changes again.
//! The table as built: `docs/states.md`.

crate::wire_enum! {
    pub enum TaskStatus {
        Queued = "queued",
        Running = "running",
        WaitingApproval = "waiting_approval",
        Completed = "completed",
        Failed = "failed",
        Cancelled = "cancelled",
        BudgetExceeded = "budget_exceeded",
        /// Stopped for the person, resumable: a budget ran out, or the repetition guard
        /// tripped. Continue (with more budget) or stop.
        Paused = "paused",
    }
}

pub const ALL_STATUSES: [TaskStatus; 8] = [
    TaskStatus::Queued,
    TaskStatus::Running,
    TaskStatus::WaitingApproval,
    TaskStatus::Completed,
    TaskStatus::Failed,
    TaskStatus::Cancelled,
    TaskStatus::BudgetExceeded,
    TaskStatus::Paused,
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("task {task_id} cannot go from {from} to {to}")]
pub struct IllegalTransition {
    pub task_id: i64,
    pub from: TaskStatus,
    pub to: TaskStatus,
}

impl TaskStatus {
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed
                | TaskStatus::Failed
                | TaskStatus::Cancelled
                | TaskStatus::BudgetExceeded
        )
    }

    pub fn can_become(self, to: TaskStatus) -> bool {
        use TaskStatus::*;
        match (self, to) {
            (Queued, Running) => true,
            // Fails fast (no model configured) or is cancelled before it ran.
            (Queued, Failed | Cancelled) => true,
            (Running, WaitingApproval) => true,
            (Running, Completed | Failed | Cancelled | BudgetExceeded) => true,
            (WaitingApproval, Running) => true,
            (WaitingApproval, Cancelled | Failed) => true,
            (Running, Paused) => true,
            (Paused, Running) => true,
            (Paused, BudgetExceeded | Cancelled | Failed) => true,
            _ => false,
        }
    }

    /// Whether the task waits for a person (an approval, or a pause to continue or stop).
    pub fn needs_person(self) -> bool {
        matches!(self, TaskStatus::WaitingApproval | TaskStatus::Paused)
    }

    pub fn check(self, task_id: i64, to: TaskStatus) -> Result<(), IllegalTransition> {
        if self.can_become(to) {
            Ok(())
        } else {
            Err(IllegalTransition {
                task_id,
                from: self,
                to,
            })
        }
    }

    /// The CLI's exit code for a task that stopped in this state.
    pub fn exit_code(self) -> u8 {
        match self {
            TaskStatus::Completed => 0,
            TaskStatus::Failed => 1,
            TaskStatus::WaitingApproval => 3,
            TaskStatus::Cancelled => 4,
            TaskStatus::BudgetExceeded => 5,
            TaskStatus::Paused => 9,
            TaskStatus::Queued | TaskStatus::Running => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pair_of_states_is_decided_once() {
        use TaskStatus::*;
        let legal = [
            (Queued, Running),
            (Queued, Failed),
            (Queued, Cancelled),
            (Running, WaitingApproval),
            (Running, Completed),
            (Running, Failed),
            (Running, Cancelled),
            (Running, BudgetExceeded),
            (WaitingApproval, Running),
            (WaitingApproval, Cancelled),
            (WaitingApproval, Failed),
            (Running, Paused),
            (Paused, Running),
            (Paused, BudgetExceeded),
            (Paused, Cancelled),
            (Paused, Failed),
        ];
        for from in ALL_STATUSES {
            for to in ALL_STATUSES {
                let expected = legal.contains(&(from, to));
                assert_eq!(from.can_become(to), expected, "{from} -> {to}");
                assert_eq!(from.check(7, to).is_ok(), expected);
            }
        }
    }

    #[test]
    fn terminal_states_never_change() {
        for from in ALL_STATUSES.into_iter().filter(|s| s.is_terminal()) {
            for to in ALL_STATUSES {
                let err = from.check(1, to).unwrap_err();
                assert!(err.to_string().contains("cannot go from"));
            }
        }
    }

    #[test]
    fn names_round_trip() {
        for s in ALL_STATUSES {
            assert_eq!(s.as_str().parse::<TaskStatus>().unwrap(), s);
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
        assert!("planning".parse::<TaskStatus>().is_err());
    }

    #[test]
    fn run_sources_keep_their_stored_names_and_only_people_may_use_grants() {
        use crate::wire::WireName;
        let names: Vec<&str> = RunSource::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(names, ["chat", "cli", "eval", "webhook", "cron", "watch"]);
        for s in RunSource::ALL {
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
            assert_eq!(s.as_str().parse::<RunSource>().unwrap(), *s);
            assert_eq!(s.is_interactive(), !s.is_trigger());
        }
        let people: Vec<RunSource> = RunSource::ALL
            .iter()
            .copied()
            .filter(RunSource::is_interactive)
            .collect();
        assert_eq!(people, [RunSource::Chat, RunSource::Cli, RunSource::Eval]);
        assert_eq!(RunSource::default(), RunSource::Chat);
        assert!("carrier-pigeon".parse::<RunSource>().is_err());
    }
}

crate::wire_enum! {
    /// Who started a run (a task's `trigger`): a person (the window, the CLI, an eval) or
    /// a trigger. A run a trigger started never uses the grants a person gave
    /// interactively: it follows the workspace policy only. A task's `trigger` column and
    /// its `task_created` event hold these names.
    #[derive(Default)]
    pub enum RunSource {
        /// The window; also a new task that names no source.
        #[default]
        Chat = "chat",
        Cli = "cli",
        Eval = "eval",
        Webhook = "webhook",
        Cron = "cron",
        Watch = "watch",
    }
}

impl RunSource {
    pub fn is_trigger(self) -> bool {
        matches!(
            self,
            RunSource::Webhook | RunSource::Cron | RunSource::Watch
        )
    }

    /// Whether a person started the run (it may use the grants a person gave).
    pub fn is_interactive(&self) -> bool {
        !self.is_trigger()
    }
}
