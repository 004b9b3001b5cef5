//! What a tool call would do, and how the policy decided on it.

/// The exact effect of a call, shown to the person before they approve it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Effect {
    /// Nothing beyond reading.
    None,
    /// A file is created or changed: a unified diff against what is on disk now.
    Diff {
        path: String,
        diff: String,
        /// SHA-256 (hex) of the file the diff was computed against; absent: the file did
        /// not exist. An approved call whose file no longer hashes the same is asked again
        /// with the new diff, never run under the old approval.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        base_sha256: Option<String>,
    },
    Delete {
        path: String,
    },
    Command {
        command: String,
        cwd: String,
    },
    Fetch {
        url: String,
    },
    /// A durable note the agent proposes to remember: kept only once the person accepts.
    Memory {
        scope: crate::rules::MemoryScope,
        text: String,
    },
}

crate::wire_enum! {
    /// The approval decision for one call.
    pub enum Decision {
        Allow = "allow",
        RequireApproval = "require_approval",
        Deny = "deny",
    }
}

crate::wire_enum! {
    /// Which rule made the decision, for the audit.
    pub enum DecisionSource {
        Default = "default",
        WorkspaceRule = "workspace_rule",
        SessionGrant = "session_grant",
        User = "user",
        /// A read-only call found interrupted after a crash, run again.
        Replay = "replay",
        /// A `run_command` whose sandbox the workspace's sandbox settings widened (extra
        /// paths, network, passed-through variables, or no sandbox): recorded so the audit
        /// shows the widening, not only who allowed the call.
        WorkspaceSandbox = "workspace_sandbox",
        /// A command every part of which a command rule covers (`cargo test *`); the
        /// `allowed_by_rule` event before it names the rules.
        CommandRule = "command_rule",
        /// A write to a file an approved plan lists, in the run carrying out that plan.
        Plan = "plan",
    }
}

crate::wire_enum! {
    /// The budgets a task can run out of.
    pub enum Budget {
        Steps = "steps",
        Seconds = "seconds",
        Tokens = "tokens",
        /// Money: the task's own budget, the day's, or the day's cap for triggers.
        Usd = "usd",
    }
}

crate::wire_enum! {
    /// Why a run paused for the person (issue 19).
    pub enum PauseReason {
        /// A budget ran out: continue with more, or stop (`budget_exceeded`).
        Budget = "budget",
        /// The same call got the same result N times in a row, or the model's turns
        /// stopped changing.
        Repetition = "repetition",
        /// The disk holding the data directory is full: continue once space is freed
        /// (nothing to raise), or stop (`cancelled`).
        DiskFull = "disk_full",
    }
}

/// What a person added when continuing a paused task: more of each budget (all optional).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Raise {
    #[serde(default)]
    pub steps: u32,
    #[serde(default)]
    pub seconds: u32,
    #[serde(default)]
    pub tokens: u32,
    /// Dollars.
    #[serde(default)]
    pub usd: f64,
}

impl Raise {
    pub fn is_empty(&self) -> bool {
        self.steps == 0 && self.seconds == 0 && self.tokens == 0 && self.usd <= 0.0
    }
}
