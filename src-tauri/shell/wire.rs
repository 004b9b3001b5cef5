//! The window's wire: what commands take and return, and what channels carry. The runtime's
//! types stay free of Tauri and specta; these transport types convert from them at the edge
//! and are exported to `ui/src/api/generated/bindings.ts` (see `bindings.rs`).
//!
//! Field names are the Rust ones (snake_case), as the runtime serialises them.
use pocketpilot_core::config;
use pocketpilot_core::inbox;
use pocketpilot_core::recorder;
use pocketpilot_core::service;
use pocketpilot_core::store::{self, approvals, sessions, tasks, triggers as trigger_store};
use pocketpilot_core::{RuntimeError, TaskStatus as RtStatus};
use pocketpilot_mcp::{McpServerConfig, McpTransport};
use pocketpilot_protocol::{
    ApprovalStatus, Effect, ErrorKind, RuntimeEvent, SubmissionKind, SubmissionMode,
    SubmissionStatus,
};
use pocketpilot_triggers as trigger;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use specta::Type;

/// What a command rejects with: a stable kind to branch on and a message to show.
#[derive(Debug, Clone, Serialize, Type)]
pub struct CommandError {
    pub kind: ErrorKind,
    pub message: String,
}

impl CommandError {
    pub fn new(kind: ErrorKind, message: impl std::fmt::Display) -> Self {
        Self {
            kind,
            message: message.to_string(),
        }
    }
}

impl From<RuntimeError> for CommandError {
    fn from(e: RuntimeError) -> Self {
        Self::new(e.kind(), e)
    }
}

impl From<pocketpilot_triggers::TriggerError> for CommandError {
    fn from(e: pocketpilot_triggers::TriggerError) -> Self {
        Self::new(e.kind(), e)
    }
}

impl From<pocketpilot_model::keychain::KeychainError> for CommandError {
    fn from(e: pocketpilot_model::keychain::KeychainError) -> Self {
        // The keychain's errors never carry a key's text (see the keychain module).
        Self::new(ErrorKind::Keychain, e)
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

/// A session's newest tasks with their entries (see `Runtime::session_history`).
#[derive(Debug, Clone, Serialize, Type)]
pub struct SessionHistory {
    /// Oldest first.
    pub tasks: Vec<Task>,
    pub entries: Vec<Entry>,
    /// Whether the session has older tasks than these.
    pub earlier: bool,
}

impl From<service::SessionHistory> for SessionHistory {
    fn from(h: service::SessionHistory) -> Self {
        Self {
            tasks: h.tasks.into_iter().map(Task::from).collect(),
            entries: h.entries.into_iter().map(Entry::from).collect(),
            earlier: h.earlier,
        }
    }
}

/// A persisted event (sequence ≥ 1) or a live-only one (sequence 0).
#[derive(Debug, Clone, Serialize, Type)]
pub struct TaskEvent {
    pub task_id: i64,
    pub sequence: i64,
    #[serde(flatten)]
    pub event: RuntimeEvent,
    pub at: String,
}

impl From<recorder::TaskEvent> for TaskEvent {
    fn from(e: recorder::TaskEvent) -> Self {
        Self {
            task_id: e.task_id,
            sequence: e.sequence,
            event: e.event,
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
    pub effect: Effect,
    pub reason: String,
    pub step: i64,
    pub status: ApprovalStatus,
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
    pub kind: SubmissionKind,
    pub mode: Option<SubmissionMode>,
    pub status: SubmissionStatus,
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

// ---------------------------------------------------------------------------- triggers

impl From<pocketpilot_core::mcp::McpConfigError> for CommandError {
    fn from(e: pocketpilot_core::mcp::McpConfigError) -> Self {
        use pocketpilot_core::mcp::McpConfigError as E;
        let kind = match &e {
            E::Invalid(_) => ErrorKind::InvalidConfig,
            E::NotFound(_) => ErrorKind::NotFound,
            E::Store(_) => ErrorKind::Store,
        };
        Self::new(kind, e)
    }
}

/// The trigger host as the settings screen shows it.
#[derive(Debug, Clone, Serialize, Type)]
pub struct TriggerStatus {
    /// `http://127.0.0.1:PORT` while the webhook listener runs; hooks are under `/hooks/NAME`.
    pub webhook_base: Option<String>,
    /// "Pause all triggers" is on: hooks answer 503, ticks and changes are skipped.
    pub all_paused: bool,
}

/// A webhook; its token is never read back (only its digest is stored).
#[derive(Debug, Clone, Serialize, Type)]
pub struct Webhook {
    pub id: i64,
    pub name: String,
    pub workspace: String,
    pub paused: bool,
    pub created_at: String,
    pub last_fired_at: Option<String>,
}

impl From<trigger_store::Webhook> for Webhook {
    fn from(h: trigger_store::Webhook) -> Self {
        Self {
            id: h.id,
            name: h.name,
            workspace: h.workspace,
            paused: h.paused,
            created_at: h.created_at,
            last_fired_at: h.last_fired_at,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Type)]
pub struct NewWebhook {
    pub name: String,
    pub workspace: String,
}

/// A new hook and its token: shown this once.
#[derive(Debug, Clone, Serialize, Type)]
pub struct CreatedWebhook {
    pub hook: Webhook,
    pub token: String,
}

impl From<trigger::webhook::CreatedHook> for CreatedWebhook {
    fn from(c: trigger::webhook::CreatedHook) -> Self {
        Self {
            hook: c.hook.into(),
            token: c.token,
        }
    }
}

/// A schedule: a 5-field UTC cron expression or `@hourly`/`@daily`/`@weekly`.
#[derive(Debug, Clone, Serialize, Type)]
pub struct Schedule {
    pub id: i64,
    pub expr: String,
    pub workspace: String,
    pub goal: String,
    pub catch_up: bool,
    pub paused: bool,
    pub last_fired_at: Option<String>,
    pub last_task_id: Option<i64>,
    pub created_at: String,
    /// When it fires next (RFC 3339 UTC), for display.
    pub next_fire: Option<String>,
}

impl Schedule {
    /// The schedule as stored, and when it fires next (computed by the caller's clock).
    pub fn of(s: trigger_store::Schedule, next_fire: Option<String>) -> Self {
        Self {
            id: s.id,
            expr: s.expr,
            workspace: s.workspace,
            goal: s.goal,
            catch_up: s.catch_up,
            paused: s.paused,
            last_fired_at: s.last_fired_at,
            last_task_id: s.last_task_id,
            created_at: s.created_at,
            next_fire,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Type)]
pub struct NewSchedule {
    pub expr: String,
    pub workspace: String,
    pub goal: String,
    /// Run the latest missed tick (one) after the app was closed.
    pub catch_up: bool,
}

impl From<NewSchedule> for trigger::cron::NewSchedule {
    fn from(n: NewSchedule) -> Self {
        Self {
            expr: n.expr,
            workspace: n.workspace.into(),
            goal: n.goal,
            provider: None,
            catch_up: n.catch_up,
        }
    }
}

/// A file watch: a path or glob inside its workspace.
#[derive(Debug, Clone, Serialize, Type)]
pub struct Watch {
    pub id: i64,
    pub pattern: String,
    pub workspace: String,
    pub goal: String,
    pub min_interval_secs: i64,
    pub paused: bool,
    pub last_fired_at: Option<String>,
    pub last_task_id: Option<i64>,
    pub created_at: String,
}

impl From<trigger_store::Watch> for Watch {
    fn from(w: trigger_store::Watch) -> Self {
        Self {
            id: w.id,
            pattern: w.pattern,
            workspace: w.workspace,
            goal: w.goal,
            min_interval_secs: w.min_interval_secs,
            paused: w.paused,
            last_fired_at: w.last_fired_at,
            last_task_id: w.last_task_id,
            created_at: w.created_at,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Type)]
pub struct NewWatch {
    pub pattern: String,
    pub workspace: String,
    pub goal: String,
    /// At most one task per this many seconds (`None`: the default, 30).
    pub min_interval_secs: Option<i64>,
}

impl From<NewWatch> for trigger::watch::NewWatch {
    fn from(n: NewWatch) -> Self {
        Self {
            pattern: n.pattern,
            workspace: n.workspace.into(),
            goal: n.goal,
            provider: None,
            min_interval_secs: n.min_interval_secs,
        }
    }
}

/// An MCP server: a command (stdio) or a streamable-HTTP URL, for one workspace or all.
#[derive(Debug, Clone, Serialize, Type)]
pub struct McpServer {
    pub name: String,
    /// `None`: every workspace.
    pub workspace: Option<String>,
    pub command: Option<String>,
    pub args: Vec<String>,
    /// Extra (non-secret) environment of a stdio server, `[NAME, value]`.
    pub env: Vec<(String, String)>,
    pub url: Option<String>,
    /// The capability of its tools; `None`: `mcp:execute` (each call asks).
    pub capability: Option<String>,
    pub allow_read_only: bool,
    pub startup_timeout_secs: u64,
    pub call_timeout_secs: u64,
    /// Variables whose values come from the keychain (names only).
    pub secret_env: Vec<String>,
}

impl From<pocketpilot_core::mcp::StoredServer> for McpServer {
    fn from(s: pocketpilot_core::mcp::StoredServer) -> Self {
        let c = s.config;
        let (command, args, env, url) = match c.transport {
            McpTransport::Stdio { command, args, env } => (Some(command), args, env, None),
            McpTransport::Http { url } => (None, Vec::new(), Vec::new(), Some(url)),
        };
        Self {
            name: c.name,
            workspace: s.workspace,
            command,
            args,
            env,
            url,
            capability: c.capability,
            allow_read_only: c.allow_read_only,
            startup_timeout_secs: c.startup_timeout_secs,
            call_timeout_secs: c.call_timeout_secs,
            secret_env: c.secret_env,
        }
    }
}

/// What the settings screen sends to add (or replace, by name and workspace) a server:
/// `url`, or `command` with `args` and `env`.
#[derive(Debug, Clone, Deserialize, Type)]
pub struct NewMcpServer {
    pub name: String,
    /// The canonical workspace (as sessions carry it); `None`: every workspace.
    pub workspace: Option<String>,
    pub command: Option<String>,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub url: Option<String>,
    pub capability: Option<String>,
    pub allow_read_only: bool,
    pub startup_timeout_secs: Option<u64>,
    pub call_timeout_secs: Option<u64>,
}

impl NewMcpServer {
    /// The stored form; the runtime validates it (`mcp::add`).
    pub fn into_stored(self) -> Result<pocketpilot_core::mcp::StoredServer, CommandError> {
        let blank = |v: Option<String>| v.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
        let transport = match (blank(self.url), blank(self.command)) {
            (Some(url), None) => McpTransport::Http { url },
            (None, Some(command)) => McpTransport::Stdio {
                command,
                args: self.args,
                env: self.env,
            },
            (Some(_), Some(_)) => {
                return Err(CommandError::new(
                    ErrorKind::InvalidConfig,
                    "give a command or a URL, not both",
                ))
            }
            (None, None) => {
                return Err(CommandError::new(
                    ErrorKind::InvalidConfig,
                    "give a command (a stdio server) or a URL (a streamable-HTTP server)",
                ))
            }
        };
        let mut config = McpServerConfig::stdio(self.name.trim(), "", Vec::new());
        config.transport = transport;
        config.capability = blank(self.capability);
        config.allow_read_only = self.allow_read_only;
        if let Some(s) = self.startup_timeout_secs {
            config.startup_timeout_secs = s;
        }
        if let Some(s) = self.call_timeout_secs {
            config.call_timeout_secs = s;
        }
        Ok(pocketpilot_core::mcp::StoredServer {
            workspace: blank(self.workspace),
            config,
        })
    }
}
