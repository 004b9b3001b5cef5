//! Command rules as they cross boundaries: a workspace's or a session's rules (`cargo test
//! *`, allow or deny), which rule let a command run without asking, and what a command
//! approval offers to always allow. The matching itself is `pocketpilot-cmdrules`.
use serde::{Deserialize, Serialize};

crate::wire_enum! {
    /// Whether a rule lets commands run without asking or refuses them. Deny always wins.
    pub enum CommandRuleKind {
        Allow = "allow",
        Deny = "deny",
    }
}

crate::wire_enum! {
    /// Where a rule came from.
    pub enum CommandRuleOrigin {
        /// Written by the person (`pocketpilot policy add`, Settings, "Always allow … in
        /// this workspace").
        Person = "person",
        /// "For this session" on a command approval: ends with the session.
        Session = "session",
        /// An approved plan's commands, for its run only.
        Plan = "plan",
    }
}

crate::wire_enum! {
    /// How long a rule made from an approval lasts.
    pub enum CommandRuleScope {
        /// Every session in the workspace, until removed.
        Workspace = "workspace",
        /// The rest of this session.
        Session = "session",
    }
}

/// One stored rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CommandRule {
    pub id: i64,
    /// The canonical workspace path.
    pub workspace: String,
    /// Set for a session's rule; `None` for the workspace's.
    pub session_id: Option<i64>,
    pub kind: CommandRuleKind,
    /// The rule as written and shown (`cargo test *`).
    pub rule: String,
    pub origin: CommandRuleOrigin,
    /// UTC stamp.
    pub created_at: String,
}

/// The rule that let one part of a command run without asking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RuleUse {
    /// The part of the command (`cargo test -p core` of `cargo test -p core && …`).
    pub part: String,
    pub rule_id: i64,
    pub rule: String,
    pub origin: CommandRuleOrigin,
    pub created_at: String,
}

/// Why a command asks under the rules, and what approving it may keep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CommandAsk {
    /// The part no rule covers (`curl x` of `cargo test; curl x`), or the construct that
    /// made it ask (`$(curl x)`).
    pub part: String,
    /// The whole reason as a sentence: "`curl x` has no rule".
    pub reason: String,
    /// The rules "Always allow" would add, one per uncovered part; empty when the command
    /// is not plain enough for a rule to cover it.
    pub suggested: Vec<String>,
}

/// What the person chose to keep when approving a command: rules for the workspace or
/// the session (normally [`CommandAsk::suggested`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct KeepRules {
    pub scope: CommandRuleScope,
    pub rules: Vec<String>,
}

crate::wire_enum! {
    /// What the rules made of a command: the answer of `pocketpilot policy explain`.
    pub enum RuleOutcome {
        /// Every part covered by an allow rule: it ran without asking.
        Allowed = "allowed",
        /// A deny rule refused it.
        Denied = "denied",
        /// Not covered: the person was asked.
        Asked = "asked",
    }
}

/// Why one call was allowed, asked or refused (`pocketpilot policy explain TASK CALL`),
/// from the task's log, and what today's rules would make of its command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CallExplanation {
    pub task_id: i64,
    pub call_id: String,
    pub tool: String,
    /// The command, for a `run_command` call.
    pub command: Option<String>,
    /// What happened to the call when it was made.
    pub outcome: RuleOutcome,
    /// Why, as sentences, in the order they happened ("asked: `curl x` has no rule",
    /// "approved by user").
    pub why: Vec<String>,
    /// The rules that let it run without asking.
    pub rules: Vec<RuleUse>,
    /// What the rules in force now make of the same command.
    pub now: Option<RuleOutcome>,
    pub now_why: Option<String>,
}
