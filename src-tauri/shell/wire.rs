//! The window's wire: what commands take and return, and what channels carry. The runtime's
//! types stay free of Tauri and specta; these transport types convert from them at the edge
//! and are exported to `ui/src/api/generated/bindings.ts` (see `bindings.rs`).
//!
//! Field names are the Rust ones (snake_case), as the runtime serialises them.
use pocketpilot_runtime::config;
use pocketpilot_runtime::inbox;
use pocketpilot_runtime::recorder;
use pocketpilot_runtime::service;
use pocketpilot_runtime::store::{self, approvals, sessions, tasks};
use pocketpilot_runtime::{RuntimeError, TaskStatus as RtStatus};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use specta::Type;

/// What a command rejects with: a stable kind to branch on and a message to show.
#[derive(Debug, Clone, Serialize, Type)]
pub struct CommandError {
    pub kind: String,
    pub message: String,
}

impl CommandError {
    pub fn new(kind: &str, message: impl std::fmt::Display) -> Self {
        Self {
            kind: kind.into(),
            message: message.to_string(),
        }
    }
}

impl From<RuntimeError> for CommandError {
    fn from(e: RuntimeError) -> Self {
        Self::new(e.kind(), e)
    }
}

impl From<pocketpilot_runtime::trigger::TriggerError> for CommandError {
    fn from(e: pocketpilot_runtime::trigger::TriggerError) -> Self {
        Self::new(e.kind(), e)
    }
}

impl From<pocketpilot_model::keychain::KeychainError> for CommandError {
    fn from(e: pocketpilot_model::keychain::KeychainError) -> Self {
        // The keychain's errors never carry a key's text (see the keychain module).
        Self::new("keychain", e)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Type)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Queued,
    Running,
    WaitingApproval,
    Completed,
    Failed,
    Cancelled,
    BudgetExceeded,
}

impl From<RtStatus> for TaskStatus {
    fn from(s: RtStatus) -> Self {
        match s {
            RtStatus::Queued => Self::Queued,
            RtStatus::Running => Self::Running,
            RtStatus::WaitingApproval => Self::WaitingApproval,
            RtStatus::Completed => Self::Completed,
            RtStatus::Failed => Self::Failed,
            RtStatus::Cancelled => Self::Cancelled,
            RtStatus::BudgetExceeded => Self::BudgetExceeded,
        }
    }
}

#[derive(Debug, Clone, Serialize, Type)]
pub struct Session {
    pub id: i64,
    pub title: String,
    pub workspace: String,
    pub steering_mode: String,
    pub follow_up_mode: String,
    pub last_failure: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<sessions::Session> for Session {
    fn from(s: sessions::Session) -> Self {
        Self {
            id: s.id,
            title: s.title,
            workspace: s.workspace,
            steering_mode: s.steering_mode,
            follow_up_mode: s.follow_up_mode,
            last_failure: s.last_failure,
            created_at: s.created_at,
            updated_at: s.updated_at,
        }
    }
}

#[derive(Debug, Clone, Serialize, Type)]
pub struct Task {
    pub id: i64,
    pub session_id: i64,
    pub goal: String,
    pub trigger: String,
    pub provider: Option<String>,
    pub follow_up_of: Option<i64>,
    pub status: TaskStatus,
    pub step_count: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub active_ms: i64,
    pub grants: Vec<String>,
    pub final_answer: Option<String>,
    pub error: Option<String>,
    pub created_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
}

impl From<tasks::Task> for Task {
    fn from(t: tasks::Task) -> Self {
        Self {
            id: t.id,
            session_id: t.session_id,
            goal: t.goal,
            trigger: t.trigger,
            provider: t.provider,
            follow_up_of: t.follow_up_of,
            status: t.status.into(),
            step_count: t.step_count,
            prompt_tokens: t.prompt_tokens,
            completion_tokens: t.completion_tokens,
            active_ms: t.active_ms,
            grants: t.grants,
            final_answer: t.final_answer,
            error: t.error,
            created_at: t.created_at,
            started_at: t.started_at,
            finished_at: t.finished_at,
        }
    }
}

/// A transcript entry: `user`, `assistant`, `tool_result`, `system`, `reset`, `app.*`.
#[derive(Debug, Clone, Serialize, Type)]
pub struct Entry {
    pub id: i64,
    pub session_id: i64,
    pub task_id: Option<i64>,
    pub kind: String,
    pub content: Value,
    pub created_at: String,
}

impl From<store::Entry> for Entry {
    fn from(e: store::Entry) -> Self {
        Self {
            id: e.id,
            session_id: e.session_id,
            task_id: e.task_id,
            kind: e.kind,
            content: e.content,
            created_at: e.created_at,
        }
    }
}

/// A persisted event (sequence ≥ 1) or a live-only one (sequence 0).
#[derive(Debug, Clone, Serialize, Type)]
pub struct TaskEvent {
    pub task_id: i64,
    pub sequence: i64,
    #[serde(rename = "type")]
    pub kind: String,
    pub payload: Value,
    pub at: String,
}

impl From<recorder::TaskEvent> for TaskEvent {
    fn from(e: recorder::TaskEvent) -> Self {
        Self {
            task_id: e.task_id,
            sequence: e.sequence,
            kind: e.kind,
            payload: e.payload,
            at: e.at,
        }
    }
}

/// A pending or answered approval. `effect` is the tool's `Effect` (tagged by `kind`).
#[derive(Debug, Clone, Serialize, Type)]
pub struct Approval {
    pub id: i64,
    pub task_id: i64,
    pub call_id: String,
    pub tool: String,
    pub capability: Option<String>,
    pub arguments: Value,
    pub effect: Value,
    pub reason: String,
    pub step: i64,
    pub status: String,
    pub decision_note: Option<String>,
    pub edited_args: Option<Value>,
    pub session_grant: bool,
    pub resolved_by: Option<String>,
    pub created_at: String,
    pub resolved_at: Option<String>,
}

impl From<approvals::Approval> for Approval {
    fn from(a: approvals::Approval) -> Self {
        Self {
            id: a.id,
            task_id: a.task_id,
            call_id: a.call_id,
            tool: a.tool,
            capability: a.capability,
            arguments: a.arguments,
            effect: a.effect,
            reason: a.reason,
            step: a.step,
            status: a.status,
            decision_note: a.decision_note,
            edited_args: a.edited_args,
            session_grant: a.session_grant,
            resolved_by: a.resolved_by,
            created_at: a.created_at,
            resolved_at: a.resolved_at,
        }
    }
}

/// The window's answer to an approval; who answered is set by the shell.
#[derive(Debug, Clone, Deserialize, Type)]
pub struct ApprovalAnswer {
    pub approve: bool,
    pub edited_arguments: Option<Value>,
    pub session_grant: bool,
    pub note: Option<String>,
}

impl From<ApprovalAnswer> for service::ApprovalAnswer {
    fn from(a: ApprovalAnswer) -> Self {
        Self {
            approve: a.approve,
            edited_arguments: a.edited_arguments,
            session_grant: a.session_grant,
            note: a.note,
            by: "window".into(),
        }
    }
}

/// What the window may ask for when it starts a task in a new session. The provider and
/// any capability grants are not the webview's to choose: the provider comes from the
/// app's settings (`POCKETPILOT_PROVIDER` for demos and tests) and grants only from
/// approval answers.
#[derive(Debug, Clone, Deserialize, Type)]
pub struct ChatTask {
    pub goal: String,
    pub workspace: Option<String>,
    pub session_id: Option<i64>,
    pub follow_up_of: Option<i64>,
}

impl From<ChatTask> for service::NewTask {
    fn from(t: ChatTask) -> Self {
        Self {
            goal: t.goal,
            workspace: t.workspace.map(Into::into),
            session_id: t.session_id,
            follow_up_of: t.follow_up_of,
            trigger: "chat".into(),
            provider: config::default_provider_spec(),
            grants: Vec::new(),
            ..Self::default()
        }
    }
}

/// How an input said while the agent is busy waits: for the answer (follow-up), for the
/// next boundary after tools (steer), or not at all (reject).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Type)]
#[serde(rename_all = "camelCase")]
pub enum WhenBusy {
    FollowUp,
    Steer,
    Reject,
}

impl From<WhenBusy> for inbox::WhenBusy {
    fn from(w: WhenBusy) -> Self {
        match w {
            WhenBusy::FollowUp => Self::FollowUp,
            WhenBusy::Steer => Self::Steer,
            WhenBusy::Reject => Self::Reject,
        }
    }
}

/// Something the person says in a session: it starts a run when the session is idle and
/// waits in the session's inbox while it is busy.
#[derive(Debug, Clone, Deserialize, Type)]
pub struct SayInput {
    pub session_id: i64,
    pub text: String,
    pub when_busy: WhenBusy,
    /// Makes a repeated send (a double click, a retry) answer the first submission.
    pub request_id: Option<String>,
}

impl From<SayInput> for inbox::Submit {
    fn from(s: SayInput) -> Self {
        Self {
            session_id: s.session_id,
            say: inbox::Say::Input {
                text: s.text,
                when_busy: s.when_busy.into(),
                reject_if_idle: false,
            },
            request_id: s.request_id,
            provider: config::default_provider_spec(),
            trigger: Some("chat".into()),
            grants: Vec::new(),
            // The session's last run's MCP whitelist.
            mcp: None,
        }
    }
}

/// A submission to a session's inbox. `mode` is `followUp`, `steer` or `write` while
/// queued; `status` is `queued`, `placed`, `done` or `unanswered` (with `reason`).
#[derive(Debug, Clone, Serialize, Type)]
pub struct Submission {
    pub id: i64,
    pub session_id: i64,
    pub kind: String,
    pub mode: Option<String>,
    pub status: String,
    pub reason: Option<String>,
    pub content: Value,
    pub task_id: Option<i64>,
    pub created_at: String,
}

impl From<store::Submission> for Submission {
    fn from(s: store::Submission) -> Self {
        Self {
            id: s.id,
            session_id: s.session_id,
            kind: s.kind,
            mode: s.mode,
            status: s.status,
            reason: s.reason,
            content: s.content,
            task_id: s.task_id,
            created_at: s.created_at,
        }
    }
}

#[derive(Debug, Clone, Serialize, Type)]
pub struct Admitted {
    pub submission: Submission,
    /// The run this submission started (the session was idle).
    pub started: Option<i64>,
    pub deduplicated: bool,
}

impl From<inbox::Admitted> for Admitted {
    fn from(a: inbox::Admitted) -> Self {
        Self {
            submission: a.submission.into(),
            started: a.started,
            deduplicated: a.deduplicated,
        }
    }
}

/// The provider as the settings screen edits it. Extra headers are left out on purpose:
/// they may carry credentials, and the window never reads those back.
#[derive(Debug, Clone, Serialize, Deserialize, Type)]
pub struct ProviderForm {
    /// The keychain account the API key is filed under.
    pub name: String,
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
    pub stream: bool,
}

impl From<config::ProviderSettings> for ProviderForm {
    fn from(p: config::ProviderSettings) -> Self {
        Self {
            name: p.name,
            base_url: p.base_url,
            model: p.model,
            temperature: p.temperature,
            max_tokens: p.max_tokens,
            stream: p.stream,
        }
    }
}

impl ProviderForm {
    /// The stored settings with this form's fields; what the form does not show is kept.
    pub fn apply_to(self, mut p: config::ProviderSettings) -> config::ProviderSettings {
        let blank = |v: Option<String>| v.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
        p.name = self.name.trim().to_owned();
        p.base_url = blank(self.base_url);
        p.model = blank(self.model);
        p.temperature = self.temperature;
        p.max_tokens = self.max_tokens;
        p.stream = self.stream;
        p
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, Type)]
pub struct Limits {
    pub max_steps: u32,
    pub max_task_seconds: u64,
    pub max_task_tokens: Option<u64>,
    pub delta_window_ms: u64,
}

impl From<config::Limits> for Limits {
    fn from(l: config::Limits) -> Self {
        Self {
            max_steps: l.max_steps,
            max_task_seconds: l.max_task_seconds,
            max_task_tokens: l.max_task_tokens,
            delta_window_ms: l.delta_window_ms,
        }
    }
}

impl From<Limits> for config::Limits {
    fn from(l: Limits) -> Self {
        Self {
            max_steps: l.max_steps,
            max_task_seconds: l.max_task_seconds,
            max_task_tokens: l.max_task_tokens,
            delta_window_ms: l.delta_window_ms,
        }
    }
}

/// A workspace's rules: capabilities (`fs:write`), areas (`mcp`) or `*`. Deny beats allow;
/// what neither lists follows the default (read/list allowed, the rest asks).
#[derive(Debug, Clone, Default, Serialize, Deserialize, Type)]
pub struct PolicyRules {
    pub allow: Vec<String>,
    pub deny: Vec<String>,
}

impl From<pocketpilot_tools::PolicyRules> for PolicyRules {
    fn from(r: pocketpilot_tools::PolicyRules) -> Self {
        Self {
            allow: r.allow,
            deny: r.deny,
        }
    }
}

impl From<PolicyRules> for pocketpilot_tools::PolicyRules {
    fn from(r: PolicyRules) -> Self {
        Self {
            allow: r.allow,
            deny: r.deny,
        }
    }
}

/// What the app needs to know at start: whether a model is configured at all (else the
/// window opens the settings screen).
#[derive(Debug, Clone, Serialize, Type)]
pub struct Setup {
    pub provider_configured: bool,
}

impl Setup {
    pub fn of(p: &config::ProviderSettings) -> Self {
        Self {
            provider_configured: config::default_provider_spec().is_some() || p.base_url.is_some(),
        }
    }
}
