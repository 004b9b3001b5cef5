//! What is really the shell's on the wire: the error the commands reject with, the inputs
//! the webview may send (narrower than core's: it never picks a provider, grants or who
//! answered), and the views that join core's records with what only the shell knows (the
//! trigger host's address, a schedule's next fire). Everything else the commands take and
//! return is protocol's, store's or core's own type, exported as is (`specta` feature).
use pocketpilot_core::api::service;
use pocketpilot_core::api::settings::SettingsError;
use pocketpilot_core::config;
use pocketpilot_core::engine::inbox;
use pocketpilot_core::engine::mcp::StoredServer;
use pocketpilot_core::store::triggers as trigger_store;
use pocketpilot_core::RuntimeError;
use pocketpilot_mcp::McpTransport;
use pocketpilot_protocol::{ErrorKind, RunSource};
use pocketpilot_triggers as trigger;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use specta::Type;

/// What a command rejects with: a stable kind to branch on and a message to show.
#[derive(Debug, Clone, Serialize, Type)]
pub struct CommandError {
    pub kind: ErrorKind,
    /// A sentence to show.
    pub message: String,
    /// The underlying error, for a disclosure under the message (a model server's own).
    pub detail: Option<String>,
}

impl CommandError {
    pub fn new(kind: ErrorKind, message: impl std::fmt::Display) -> Self {
        Self {
            kind,
            message: message.to_string(),
            detail: None,
        }
    }
}

impl From<RuntimeError> for CommandError {
    fn from(e: RuntimeError) -> Self {
        Self {
            detail: e.detail(),
            ..Self::new(e.kind(), e)
        }
    }
}

impl From<SettingsError> for CommandError {
    fn from(e: SettingsError) -> Self {
        Self::new(e.kind(), e)
    }
}

impl From<pocketpilot_triggers::TriggerError> for CommandError {
    fn from(e: pocketpilot_triggers::TriggerError) -> Self {
        Self::new(e.kind(), e)
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
    /// Plan mode: the run only reads and ends with a plan for the person.
    #[serde(default)]
    pub plan: bool,
}

impl From<ChatTask> for service::NewTask {
    fn from(t: ChatTask) -> Self {
        Self {
            goal: t.goal,
            workspace: t.workspace.map(Into::into),
            session_id: t.session_id,
            follow_up_of: t.follow_up_of,
            trigger: RunSource::Chat,
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
            trigger: Some(RunSource::Chat),
            grants: Vec::new(),
            // The session's last run's MCP whitelist.
            mcp: None,
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

// ---------------------------------------------------------------------------- triggers

/// The trigger host as the settings screen shows it.
#[derive(Debug, Clone, Serialize, Type)]
pub struct TriggerStatus {
    /// `http://127.0.0.1:PORT` while the webhook listener runs; hooks are under `/hooks/NAME`.
    pub webhook_base: Option<String>,
    /// "Pause all triggers" is on: hooks answer 503, ticks and changes are skipped.
    pub all_paused: bool,
}

#[derive(Debug, Clone, Deserialize, Type)]
pub struct NewWebhook {
    pub name: String,
    pub workspace: String,
}

/// A new hook and its token: shown this once.
#[derive(Debug, Clone, Serialize, Type)]
pub struct CreatedWebhook {
    pub hook: trigger_store::Webhook,
    pub token: String,
}

impl From<trigger::webhook::CreatedHook> for CreatedWebhook {
    fn from(c: trigger::webhook::CreatedHook) -> Self {
        Self {
            hook: c.hook,
            token: c.token,
        }
    }
}

/// A schedule as stored, and when it fires next (RFC 3339 UTC, by the shell's clock), for
/// display.
#[derive(Debug, Clone, Serialize, Type)]
pub struct Schedule {
    #[serde(flatten)]
    pub schedule: trigger_store::Schedule,
    pub next_fire: Option<String>,
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

/// An MCP server as the settings screen lists it: a command (stdio) or a streamable-HTTP
/// URL, for one workspace or all. Secrets are names only.
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

impl From<StoredServer> for McpServer {
    fn from(s: StoredServer) -> Self {
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
