//! The wire of PocketPilot: every type that crosses a boundary (runtime ↔ store, runtime ↔
//! window, runtime ↔ CLI), defined once. Consumers match these enums; nobody outside this
//! crate matches an event kind, a status or an error kind by its string.
//!
//! Layout:
//! - `event`: `RuntimeEvent`, tagged, a typed payload per kind, and `EventKind`.
//! - `status`: submissions, approvals and the tool journal: kinds, modes, statuses.
//! - `task`: the task status and its state machine.
//! - `wire`: `wire_enum!`, the enums whose values are names, and their parse error.
//! - `capability`: `Capability`, what a call needs leave for and a grant or rule names.
//! - `effect`: `Effect` (what a call would do), the policy's `Decision` and its source,
//!   the budgets.
//! - `error`: `ErrorKind` with `is_usage` / `is_retryable`, tool and MCP problem kinds.
//! - `changes`: the change journal's nodes, change sets, lists and undo reports.
//! - `chat`: the tool call and usage figures that events carry.
//! - `settings`: the records the settings screen edits, and the environment's overrides.
//! - `feed`: the change feed that tells the window what to re-read.
//! - `context`: the context meter, compactions and resets, per-request token figures.
//! - `entry`: the kinds of transcript entries (the runtime's, and the ones a write names).
//! - `local`: the built-in model's models, server state, download progress and settings.
//! - `command_rules`: command rules (`cargo test *`), which one allowed a call, what an
//!   approval offers to keep.
//! - `plan`: plan mode's plans, their status and where they came from.
//! - `rules`: the workspace's instructions, memories and skills as the window shows them.
#![deny(clippy::print_stdout, clippy::print_stderr)]
#[macro_use]
pub mod wire;
pub mod capability;
pub mod changes;
pub mod chat;
pub mod command_rules;
pub mod context;
pub mod effect;
pub mod entry;
pub mod error;
pub mod event;
pub mod feed;
pub mod local;
pub mod plan;
pub mod rules;
pub mod settings;
pub mod status;
pub mod task;
pub mod visible;

pub use capability::{BadCapability, Capability};
pub use chat::{ToolCall, Usage};
pub use command_rules::{
    CallExplanation, CommandAsk, CommandRule, CommandRuleKind, CommandRuleOrigin, CommandRuleScope,
    KeepRules, RuleOutcome, RuleUse,
};
pub use context::{
    CompactReport, CompactionInfo, ContextMarks, ContextReset, ContextTurn, ContextUse,
};
pub use effect::{Budget, Decision, DecisionSource, Effect, PauseReason, Raise};
pub use entry::EntryKind;
pub use error::{ErrorKind, McpProblemKind, ToolErrorKind};
pub use event::{
    CompactionCause, EventKind, HookEvent, HookOutcome, HookScope, Repeated, RuntimeEvent,
    TextCallFix, WindowOrigin, TERMINAL_EVENTS,
};
pub use feed::Change;
pub use local::{LocalModelForm, LocalServerStatus, ModelOrigin, ModelRow, PullProgressEvent};
pub use plan::{Plan, PlanContent, PlanSource, PlanStatus};
pub use rules::{
    HookInfo, HooksFileInfo, InstructionFile, InstructionText, Memory, MemoryScope, RulesInEffect,
    SkillInfo, SkillSource,
};
pub use settings::{
    BuiltinModel, EnvOverride, LimitsForm, McpSecret, MoneyBudgetsForm, MoneySettings,
    NewMcpServer, PriceForm, PriceRow, ProviderForm, SessionTitles, SettingField, Setup,
    SpendToday,
};
pub use status::{
    ApprovalStatus, Boundary, SessionMode, SubmissionKind, SubmissionMode, SubmissionStatus,
    ToolCallStatus,
};
pub use task::{RunSource, TaskStatus};
pub use visible::{has_hidden, visible};
pub use wire::{UnknownName, WireName};
