//! The events of a run: what the agent and the worker emit, what the recorder persists and
//! what subscribers see. `assistant_delta` and `stream_reset` are live only (sequence 0);
//! everything else is persisted with a gapless per-task sequence.
use crate::chat::{ToolCall, Usage};
use crate::effect::{Budget, Decision, DecisionSource, Effect, PauseReason, Raise};
use crate::error::{ErrorKind, McpProblemKind, ToolErrorKind};
use crate::status::{Boundary, SubmissionMode};
use serde::{Deserialize, Serialize};

crate::wire_enum! {
    /// What an event is, without its payload: the `type` column of `task_events` and the
    /// `type` tag on the wire.
    pub enum EventKind {
        AssistantDelta = "assistant_delta",
        StreamReset = "stream_reset",
        TaskCreated = "task_created",
        TaskStarted = "task_started",
        ModelTurnStarted = "model_turn_started",
        ModelTurnCompleted = "model_turn_completed",
        ToolCallStarted = "tool_call_started",
        ToolCallCompleted = "tool_call_completed",
        ToolCallFailed = "tool_call_failed",
        ToolCallRepaired = "tool_call_repaired",
        AllowedByRule = "allowed_by_rule",
        ApprovalRequired = "approval_required",
        ApprovalResolved = "approval_resolved",
        InputPlaced = "input_placed",
        McpProblem = "mcp_problem",
        ContextCompacted = "context_compacted",
        AgentCompleted = "agent_completed",
        TaskCompleted = "task_completed",
        TaskFailed = "task_failed",
        TaskCancelled = "task_cancelled",
        BudgetExceeded = "budget_exceeded",
        RunPaused = "run_paused",
        RunContinued = "run_continued",
        HookRan = "hook_ran",
        PlanProposed = "plan_proposed",
        PlanStepDone = "plan_step_done",
    }
}

impl EventKind {
    /// After one of these a task never changes again. The live stream closes only on one
    /// of these — never on `agent_completed`.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            EventKind::TaskCompleted
                | EventKind::TaskFailed
                | EventKind::TaskCancelled
                | EventKind::BudgetExceeded
        )
    }

    /// Live only: sent to subscribers, never persisted (sequence 0).
    pub fn is_live_only(self) -> bool {
        matches!(self, EventKind::AssistantDelta | EventKind::StreamReset)
    }

    /// Whether the task's status (or what the sessions list shows of it) changes with it.
    pub fn changes_state(self) -> bool {
        self.is_terminal()
            || matches!(
                self,
                EventKind::TaskCreated
                    | EventKind::TaskStarted
                    | EventKind::ApprovalRequired
                    | EventKind::ApprovalResolved
                    | EventKind::RunPaused
                    | EventKind::RunContinued
            )
    }
}

/// The terminal kinds, for the window's generated constants.
pub const TERMINAL_EVENTS: [EventKind; 4] = [
    EventKind::TaskCompleted,
    EventKind::TaskFailed,
    EventKind::TaskCancelled,
    EventKind::BudgetExceeded,
];

/// One event of a run. On the wire and in the store it is `{"type": kind, "payload": {…}}`
/// (the store keeps the two in their own columns).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", content = "payload", rename_all = "snake_case")]
pub enum RuntimeEvent {
    AssistantDelta {
        text: String,
    },
    /// The text streamed so far is void; a subscriber replaces its bubble with `text`.
    StreamReset {
        text: String,
    },
    TaskCreated {
        session_id: i64,
        goal: String,
        trigger: crate::task::RunSource,
        follow_up_of: Option<i64>,
    },
    TaskStarted {
        provider: String,
        resumed: bool,
    },
    ModelTurnStarted {
        step: u32,
    },
    ModelTurnCompleted {
        step: u32,
        text: String,
        tool_calls: Vec<ToolCall>,
        finish_reason: Option<String>,
        usage: Option<Usage>,
        /// Prompt tokens the server answered from its cache, when it says (issue 19).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cached_prompt_tokens: Option<u64>,
        /// The provider's label (`openai:<model>`), what prices are looked up by.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// What the turn cost in dollars at the prices set when it was recorded (filled
        /// in by the recorder; `None` without a price for the model or without usage).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
    ToolCallStarted {
        step: u32,
        call_id: String,
        name: String,
        arguments: String,
        capability: Option<String>,
        replay_safe: bool,
        decision: Decision,
        decision_source: DecisionSource,
    },
    ToolCallCompleted {
        call_id: String,
        name: String,
        output: String,
        changed: Vec<String>,
    },
    ToolCallFailed {
        call_id: String,
        name: String,
        error: String,
        kind: ToolErrorKind,
    },
    /// A call the model wrote as text in its answer, made a proper call of the turn
    /// before it runs (small local models often write calls instead of making them). It
    /// goes through the policy like any call; this says what was read and what was fixed.
    ToolCallRepaired {
        call_id: String,
        /// The offered tool it calls.
        tool: String,
        /// The text the call was read from, exactly as the model wrote it.
        original: String,
        fixes: Vec<TextCallFix>,
    },
    /// A command about to run without asking: the command rules that cover each of its
    /// parts. Recorded just before its `tool_call_started`.
    AllowedByRule {
        call_id: String,
        command: String,
        rules: Vec<crate::command_rules::RuleUse>,
    },
    ApprovalRequired {
        #[serde(default)]
        approval_id: Option<i64>,
        step: u32,
        call_id: String,
        name: String,
        arguments: serde_json::Value,
        capability: Option<String>,
        effect: Effect,
        reason: String,
        /// For a command: how it will be confined, the line the approval shows
        /// ("sandboxed: writes in the workspace only, no network" or "NOT sandboxed: …").
        /// Absent in events recorded before issue 14 and for calls that start no process.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sandbox: Option<String>,
        /// For a command: the part the command rules did not cover, and the rules
        /// approving it may keep.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        command: Option<crate::command_rules::CommandAsk>,
    },
    ApprovalResolved {
        approval_id: i64,
        call_id: String,
        approved: bool,
        session_grant: bool,
        #[serde(default)]
        edited_arguments: Option<serde_json::Value>,
        note: Option<String>,
        by: String,
    },
    /// An inbox item entered the transcript: a steer joining this run at `post_tools`, or
    /// an item that starts this run at `final`.
    InputPlaced {
        submission_id: i64,
        mode: SubmissionMode,
        boundary: Boundary,
        text: String,
    },
    /// An MCP server could not start, was refused, or died during the run.
    McpProblem {
        server: String,
        kind: McpProblemKind,
        message: String,
    },
    /// The model's view was compacted to fit its context window (issue 13). When it
    /// carries a summary, the compaction entry that stands for the `summarised` entries
    /// is written in the same transaction as this event.
    ContextCompacted {
        cause: CompactionCause,
        tokens_before: u32,
        tokens_after: u32,
        window: u32,
        window_source: WindowOrigin,
        /// Entries whose tool output was cut to head and tail in this request.
        elided: Vec<i64>,
        /// Entries the summary now stands for (the originals stay in the store).
        summarised: Vec<i64>,
        /// Person instructions replaced by a marker: the last resort, shown.
        instructions_elided: Vec<i64>,
        /// The summary written (or the fixed fallback marker when `fallback`).
        summary: Option<String>,
        fallback: bool,
        /// Where the summary sits in the view: the position of the first entry it replaces.
        placed_at: i64,
    },
    AgentCompleted {
        final_answer: String,
    },
    TaskCompleted {
        final_answer: String,
    },
    TaskFailed {
        error: String,
        kind: ErrorKind,
        /// A plain sentence for a person (`ErrorKind::plain_sentence`); `error` is the
        /// detail. Absent in events recorded before it existed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
    },
    TaskCancelled {
        reason: String,
    },
    BudgetExceeded {
        budget: Budget,
        reason: String,
    },
    /// The run stopped for the person with its context intact (issue 19): a budget ran
    /// out (`budget`), or the repetition guard tripped (`repeated`). Nothing runs and no
    /// budget is spent until someone continues or stops it.
    RunPaused {
        reason: PauseReason,
        #[serde(default)]
        budget: Option<Budget>,
        message: String,
        #[serde(default)]
        repeated: Option<Repeated>,
        /// When the pause lifts by itself (a stamp, UTC): a run parked by the daily cap
        /// for unattended runs continues when the cap resets. `None`: only a person
        /// continues it.
        #[serde(default)]
        resumes_at: Option<String>,
    },
    /// A hook ran (or, once per run, the workspace's hooks were not run for want of the
    /// person's consent): what it was given, how it ended and what it said.
    HookRan {
        hook_event: HookEvent,
        scope: HookScope,
        /// The command as configured (for `not_consented`: the hooks file).
        command: String,
        /// The call it ran for (`PreToolUse`, `PostToolUse`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        outcome: HookOutcome,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        /// Its stderr (exit 2 or an error), its `reason`, or why it did not run.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// What it added for the model (`additionalContext`, a `Stop` hook's reason to
        /// go on). For a session, prompt or stop hook it becomes a message of the
        /// conversation, recorded with this event; for a tool hook it joins the result.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context: Option<String>,
        duration_ms: u64,
    },
    /// A person continued a paused task, adding `raise` to its budgets.
    RunContinued {
        raise: Raise,
        by: String,
        #[serde(default)]
        steer: Option<String>,
    },
    /// A run in plan mode ended with a plan, now waiting for the person (the recorder
    /// stores it and fills in `plan_id`).
    PlanProposed {
        #[serde(default)]
        plan_id: Option<i64>,
        plan: crate::plan::PlanContent,
        source: crate::plan::PlanSource,
    },
    /// The run carrying out an approved plan marked a step (1-based) done.
    PlanStepDone {
        plan_id: i64,
        step: u32,
    },
}

/// What the repetition guard saw repeated: the call (or the model's turn) and its result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Repeated {
    /// The tool's name; `None` when the model's whole turn repeated.
    pub name: Option<String>,
    pub arguments: String,
    pub result: String,
    pub times: u32,
}

impl RuntimeEvent {
    pub fn kind(&self) -> EventKind {
        match self {
            RuntimeEvent::AssistantDelta { .. } => EventKind::AssistantDelta,
            RuntimeEvent::StreamReset { .. } => EventKind::StreamReset,
            RuntimeEvent::TaskCreated { .. } => EventKind::TaskCreated,
            RuntimeEvent::TaskStarted { .. } => EventKind::TaskStarted,
            RuntimeEvent::ModelTurnStarted { .. } => EventKind::ModelTurnStarted,
            RuntimeEvent::ModelTurnCompleted { .. } => EventKind::ModelTurnCompleted,
            RuntimeEvent::ToolCallStarted { .. } => EventKind::ToolCallStarted,
            RuntimeEvent::ToolCallCompleted { .. } => EventKind::ToolCallCompleted,
            RuntimeEvent::ToolCallFailed { .. } => EventKind::ToolCallFailed,
            RuntimeEvent::ToolCallRepaired { .. } => EventKind::ToolCallRepaired,
            RuntimeEvent::AllowedByRule { .. } => EventKind::AllowedByRule,
            RuntimeEvent::ApprovalRequired { .. } => EventKind::ApprovalRequired,
            RuntimeEvent::ApprovalResolved { .. } => EventKind::ApprovalResolved,
            RuntimeEvent::InputPlaced { .. } => EventKind::InputPlaced,
            RuntimeEvent::McpProblem { .. } => EventKind::McpProblem,
            RuntimeEvent::ContextCompacted { .. } => EventKind::ContextCompacted,
            RuntimeEvent::AgentCompleted { .. } => EventKind::AgentCompleted,
            RuntimeEvent::TaskCompleted { .. } => EventKind::TaskCompleted,
            RuntimeEvent::TaskFailed { .. } => EventKind::TaskFailed,
            RuntimeEvent::TaskCancelled { .. } => EventKind::TaskCancelled,
            RuntimeEvent::BudgetExceeded { .. } => EventKind::BudgetExceeded,
            RuntimeEvent::RunPaused { .. } => EventKind::RunPaused,
            RuntimeEvent::RunContinued { .. } => EventKind::RunContinued,
            RuntimeEvent::HookRan { .. } => EventKind::HookRan,
            RuntimeEvent::PlanProposed { .. } => EventKind::PlanProposed,
            RuntimeEvent::PlanStepDone { .. } => EventKind::PlanStepDone,
        }
    }

    pub fn is_live_only(&self) -> bool {
        self.kind().is_live_only()
    }

    /// The payload as persisted: the event without its `type` tag.
    pub fn payload(&self) -> Result<serde_json::Value, serde_json::Error> {
        let mut v = serde_json::to_value(self)?;
        Ok(v.get_mut("payload")
            .map(serde_json::Value::take)
            .unwrap_or(serde_json::Value::Null))
    }

    /// The event back from its stored kind and payload.
    pub fn from_parts(
        kind: EventKind,
        payload: serde_json::Value,
    ) -> Result<Self, serde_json::Error> {
        serde_json::from_value(serde_json::json!({ "type": kind.as_str(), "payload": payload }))
    }
}

crate::wire_enum! {
    /// Where a call written as text was found, and what was changed to make it a call.
    pub enum TextCallFix {
        /// Read from a `<tool_call>…</tool_call>` tag (Hermes, Qwen).
        ToolCallTag = "tool_call_tag",
        /// Read after `<|python_tag|>` (Llama 3.x).
        PythonTag = "python_tag",
        /// The whole answer was the call's JSON object.
        WholeAnswerJson = "whole_answer_json",
        /// Read from a fenced code block.
        FencedBlock = "fenced_block",
        /// The tool's name differed in case, `-`/`_` or a prefix such as `functions.`.
        NameNormalised = "name_normalised",
        /// The arguments were a JSON string holding the JSON object.
        ArgumentsUnquoted = "arguments_unquoted",
        /// `parameters` stood for `arguments`.
        ParametersKey = "parameters_key",
        /// No arguments were written: the call has none.
        ArgumentsMissing = "arguments_missing",
    }
}

crate::wire_enum! {
    /// Why the view was compacted.
    pub enum CompactionCause {
        /// The next request would not have fit.
        BeforeRequest = "before_request",
        /// The server refused a request for length: compacted harder before the retry.
        Overflow = "overflow",
        /// The person asked (`pocketpilot session compact`, "Compact now").
        Manual = "manual",
    }
}

crate::wire_enum! {
    /// Where a context window figure came from.
    pub enum WindowOrigin {
        /// The server said (llama.cpp `/props`, `/models`, Ollama `/api/show`).
        Discovered = "discovered",
        /// The person's setting, or a scripted model's declaration.
        Setting = "setting",
        /// A well-known hosted model's published window.
        Known = "known",
        /// Nobody said: a conservative default.
        Assumed = "assumed",
    }
}

crate::wire_enum! {
    /// When a hook runs: Claude Code's event names, so its hook files work unchanged.
    pub enum HookEvent {
        /// A session's first run starts.
        SessionStart = "SessionStart",
        /// A run starts on a person's goal (or message), before the model sees it.
        UserPromptSubmit = "UserPromptSubmit",
        /// A tool call is about to be decided: the hook may deny it or add context.
        PreToolUse = "PreToolUse",
        /// A tool call finished: the hook may add to what the model reads of it.
        PostToolUse = "PostToolUse",
        /// The model's view is about to be sent compacted.
        PreCompact = "PreCompact",
        /// The agent is about to finish: the hook may ask it to go on (once in a row).
        Stop = "Stop",
    }
}

crate::wire_enum! {
    /// Whose hooks file a hook comes from.
    pub enum HookScope {
        /// The workspace's `.pocketpilot/hooks.json`: runs only with the person's consent
        /// to that exact file.
        Workspace = "workspace",
        /// The person's own `$XDG_CONFIG_HOME/pocketpilot/hooks.json`.
        Person = "person",
    }
}

crate::wire_enum! {
    /// How a hook ended.
    pub enum HookOutcome {
        /// Exit 0: go on (with any context it added).
        Ok = "ok",
        /// Exit 2, or a reply that blocks or denies: what it was asked about does not
        /// happen (for `Stop`: the agent goes on).
        Blocked = "blocked",
        /// Any other exit code, a reply that is not JSON, or it could not start: shown,
        /// not blocking.
        Error = "error",
        /// Killed at its timeout (with every process it started): not blocking.
        TimedOut = "timed_out",
        /// The workspace's hooks file is not consented to as it is now: none of it ran.
        NotConsented = "not_consented",
    }
}
