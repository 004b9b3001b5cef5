//! The statuses and kinds of what the store keeps besides tasks: submissions (the inbox),
//! approvals and the tool journal.

crate::wire_enum! {
    /// What a person (or a trigger) said to a session.
    pub enum SubmissionKind {
        Input = "input",
        Write = "write",
        Reset = "reset",
        Continue = "continue",
    }
}

crate::wire_enum! {
    /// How a queued submission joins: a steer at the next tool round, a follow-up after the
    /// answer, a write at either.
    pub enum SubmissionMode {
        Steer = "steer",
        FollowUp = "followUp",
        Write = "write",
    }
}

crate::wire_enum! {
    /// How many of a session's queued steers (or follow-ups) one boundary takes. A session
    /// has one mode for each; both start `one-at-a-time`.
    #[derive(Default)]
    pub enum SessionMode {
        /// One per boundary: each queued follow-up gets a run of its own.
        #[default]
        OneAtATime = "one-at-a-time",
        /// Every queued one at once.
        All = "all",
    }
}

crate::wire_enum! {
    /// Inputs go queued → placed → done, or unanswered with a reason; writes go queued →
    /// done (they skip `placed`).
    pub enum SubmissionStatus {
        Queued = "queued",
        Placed = "placed",
        Done = "done",
        Unanswered = "unanswered",
    }
}

crate::wire_enum! {
    /// Where queued items enter the transcript.
    pub enum Boundary {
        PostTools = "post_tools",
        Final = "final",
    }
}

crate::wire_enum! {
    /// An approval is pending until a person answers it; it never expires.
    pub enum ApprovalStatus {
        Pending = "pending",
        Approved = "approved",
        Rejected = "rejected",
    }
}

crate::wire_enum! {
    /// The tool journal: `intent` is committed before a call runs, `done` after. A call
    /// found in `intent` or `running` after a crash was interrupted.
    pub enum ToolCallStatus {
        Intent = "intent",
        Running = "running",
        Done = "done",
        Interrupted = "interrupted",
    }
}

impl ToolCallStatus {
    /// Started but not finished: after a crash, its effect may have partly happened.
    pub fn is_open(self) -> bool {
        matches!(self, ToolCallStatus::Intent | ToolCallStatus::Running)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::WireName;

    #[test]
    fn session_modes_keep_the_names_the_database_holds() {
        let names: Vec<&str> = SessionMode::ALL.iter().map(|m| m.as_str()).collect();
        assert_eq!(names, ["one-at-a-time", "all"]);
        for m in SessionMode::ALL {
            assert_eq!(serde_json::to_value(m).unwrap(), m.as_str());
            assert_eq!(m.as_str().parse::<SessionMode>().unwrap(), *m);
        }
        // The schema's column default.
        assert_eq!(SessionMode::default(), SessionMode::OneAtATime);
        let err = "one_at_a_time".parse::<SessionMode>().unwrap_err();
        assert_eq!(err.what, "SessionMode");
    }
}
