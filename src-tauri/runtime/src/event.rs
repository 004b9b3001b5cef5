//! The events of a run: what the agent and the worker emit, what the recorder persists and
//! what subscribers see. `assistant_delta` and `stream_reset` are live only (sequence 0);
//! everything else is persisted with a gapless per-task sequence.
use pocketpilot_model::{ToolCall, Usage};
use serde::{Deserialize, Serialize};

/// The events after which a task never changes again. The live stream closes only on one
/// of these — never on `agent_completed`.
pub const TERMINAL_EVENTS: [&str; 4] = [
    "task_completed",
    "task_failed",
    "task_cancelled",
    "budget_exceeded",
];

pub fn is_terminal_event(kind: &str) -> bool {
    TERMINAL_EVENTS.contains(&kind)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
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
        trigger: String,
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
    },
    ToolCallStarted {
        step: u32,
        call_id: String,
        name: String,
        arguments: String,
        capability: Option<String>,
        replay_safe: bool,
        decision: String,
        decision_source: String,
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
        kind: String,
    },
    ApprovalRequired {
        #[serde(default)]
        approval_id: Option<i64>,
        step: u32,
        call_id: String,
        name: String,
        arguments: serde_json::Value,
        capability: Option<String>,
        effect: serde_json::Value,
        reason: String,
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
        mode: String,
        boundary: String,
        text: String,
    },
    /// An MCP server could not start, was refused, or died during the run.
    McpProblem {
        server: String,
        kind: String,
        message: String,
    },
    AgentCompleted {
        final_answer: String,
    },
    TaskCompleted {
        final_answer: String,
    },
    TaskFailed {
        error: String,
        kind: String,
    },
    TaskCancelled {
        reason: String,
    },
    BudgetExceeded {
        budget: String,
        reason: String,
    },
}

impl RuntimeEvent {
    pub fn kind(&self) -> &'static str {
        match self {
            RuntimeEvent::AssistantDelta { .. } => "assistant_delta",
            RuntimeEvent::StreamReset { .. } => "stream_reset",
            RuntimeEvent::TaskCreated { .. } => "task_created",
            RuntimeEvent::TaskStarted { .. } => "task_started",
            RuntimeEvent::ModelTurnStarted { .. } => "model_turn_started",
            RuntimeEvent::ModelTurnCompleted { .. } => "model_turn_completed",
            RuntimeEvent::ToolCallStarted { .. } => "tool_call_started",
            RuntimeEvent::ToolCallCompleted { .. } => "tool_call_completed",
            RuntimeEvent::ToolCallFailed { .. } => "tool_call_failed",
            RuntimeEvent::ApprovalRequired { .. } => "approval_required",
            RuntimeEvent::ApprovalResolved { .. } => "approval_resolved",
            RuntimeEvent::InputPlaced { .. } => "input_placed",
            RuntimeEvent::McpProblem { .. } => "mcp_problem",
            RuntimeEvent::AgentCompleted { .. } => "agent_completed",
            RuntimeEvent::TaskCompleted { .. } => "task_completed",
            RuntimeEvent::TaskFailed { .. } => "task_failed",
            RuntimeEvent::TaskCancelled { .. } => "task_cancelled",
            RuntimeEvent::BudgetExceeded { .. } => "budget_exceeded",
        }
    }

    pub fn is_live_only(&self) -> bool {
        matches!(
            self,
            RuntimeEvent::AssistantDelta { .. } | RuntimeEvent::StreamReset { .. }
        )
    }

    /// The payload as persisted: the event without its `type` tag.
    pub fn payload(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).unwrap_or(serde_json::Value::Null);
        if let Some(map) = v.as_object_mut() {
            map.remove("type");
        }
        v
    }
}
