//! Triggers: work that starts without the person at the keyboard.
//!
//! # What it promises
//! - A trigger only **creates** an ordinary task through [`Runtime::submit`] (trigger
//!   `webhook`, `cron` or `watch`) and returns; the worker runs it under the same policy as
//!   any task. A risky step parks the task in `waiting_approval`; nothing is auto-approved
//!   and a trigger never carries grants. Its words never enter a person's run either: a
//!   webhook's steer into a person's working run waits for that run's answer and runs
//!   as the webhook's own run, without the person's session or start grants.
//! - Definitions persist in the store (`webhooks`, `schedules`, `watches`); every fire and
//!   every skip is recorded with its reason in `trigger_runs`.
//! - Webhook tokens are shown once, at creation, and stored only as a SHA-256 digest;
//!   presented tokens are compared in constant time.
//! - The webhook listener binds 127.0.0.1 only.
//! - Cron sleeps until the next fire time (no polling); time comes from an injected
//!   [`Clock`], so tests are deterministic without sleeping.
//! - A file watch never fires for the agent's own writes (the `changed` paths of recent
//!   `tool_call_completed` events in that workspace, and the guard's temp files), nor for
//!   PocketPilot's data directory.
//! - "Pause all" ([`pause_all`]) is a persisted switch: while it is on, webhooks answer
//!   503 and cron ticks and watch changes are recorded as skipped.
//!
//! # Files
//! - `webhook.rs`: hook definitions (create/list/pause/delete) and the axum listener.
//! - `cron.rs`: expressions, the [`Clock`], schedule definitions and the schedule runner.
//! - `watch.rs`: watch definitions and the watch runner (notify + debouncer).
//! - `serve.rs`: [`TriggerHost`] runs all three (desktop tray and `pocketpilot serve`).
//! - `../store/triggers.rs`: the queries.
//!
//! # For the desktop shell
//! Start [`TriggerHost::start`] once; call [`TriggerHost::reload`] after creating, pausing
//! or deleting a definition (a host also picks up changes made by another process, e.g.
//! the CLI, as soon as the store watcher sees the commit); [`TriggerHost::shutdown`] on quit.
//! Create/list/pause/delete: `webhook::{create, list, set_paused, delete}`,
//! `cron::{create, list, set_paused, delete}`, `watch::{create, list, set_paused, delete}`,
//! [`runs`] for the record; [`pause_all`]/[`resume_all`] for the tray.
#![deny(clippy::print_stdout, clippy::print_stderr)]
pub mod cron;
pub mod serve;
pub mod watch;
pub mod webhook;

use std::path::Path;
use std::sync::Arc;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};

use pocketpilot_core::api::service::{NewTask, Runtime, RuntimeError};
use pocketpilot_core::ops;
use pocketpilot_protocol::{ErrorKind, RunSource};
use pocketpilot_store::{triggers, StoreError};

pub use cron::{Clock, CronExpr, ManualClock, SystemClock};
pub use serve::{HostOptions, TriggerHost};

pub const SETTINGS_KEY: &str = "triggers";
pub const DEFAULT_PORT: u16 = 8765;

#[derive(Debug, thiserror::Error)]
pub enum TriggerError {
    #[error("`{0}` is not a valid hook name: use 1–64 letters, digits, `-` or `_`")]
    InvalidName(String),
    #[error("a webhook named `{0}` already exists")]
    Duplicate(String),
    #[error("`{expr}` is not a cron expression: {reason}. Use 5 fields (minute hour day-of-month month day-of-week, UTC) or @hourly, @daily, @weekly")]
    InvalidExpression { expr: String, reason: String },
    #[error("the workspace {0} does not exist or is not a folder")]
    Workspace(String),
    #[error("`{0}` is not inside the workspace: a watch may only name paths inside it")]
    OutsideWorkspace(String),
    #[error("`{pattern}` is not a valid path or glob: {reason}")]
    InvalidPattern { pattern: String, reason: String },
    #[error("the goal is empty: say what the agent should do")]
    EmptyGoal,
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: String,
        source: std::io::Error,
    },
    #[error("cannot watch {path}: {reason}")]
    Watch { path: String, reason: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    #[error("PocketPilot is shutting down")]
    ShuttingDown,
}

impl TriggerError {
    /// A stable kind for the UI and the CLI; nobody matches on message text.
    pub fn kind(&self) -> ErrorKind {
        match self {
            TriggerError::InvalidName(_) => ErrorKind::InvalidName,
            TriggerError::Duplicate(_) => ErrorKind::Duplicate,
            TriggerError::InvalidExpression { .. } => ErrorKind::InvalidExpression,
            TriggerError::Workspace(_) => ErrorKind::Workspace,
            TriggerError::OutsideWorkspace(_) => ErrorKind::OutsideWorkspace,
            TriggerError::InvalidPattern { .. } => ErrorKind::InvalidPattern,
            TriggerError::EmptyGoal => ErrorKind::EmptyGoal,
            TriggerError::Listen { .. } => ErrorKind::Listen,
            TriggerError::Watch { .. } => ErrorKind::Watch,
            TriggerError::Store(e) => pocketpilot_core::api::service::store_kind(e),
            TriggerError::Runtime(e) => e.kind(),
            TriggerError::ShuttingDown => ErrorKind::Io,
        }
    }

    /// A mistake in what the person asked (vs. a failure of the machine).
    pub fn is_usage(&self) -> bool {
        self.kind().is_usage()
    }
}

pub type Result<T, E = TriggerError> = std::result::Result<T, E>;

/// Trigger settings, stored under [`SETTINGS_KEY`]; `POCKETPILOT_WEBHOOK_PORT` overrides
/// the port for headless use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TriggerSettings {
    /// The webhook listener's port on 127.0.0.1.
    pub port: u16,
    /// Sustained requests per minute accepted per hook (token bucket).
    pub webhook_rate_per_minute: u32,
    /// Requests a hook may receive at once before the rate applies.
    pub webhook_burst: u32,
    /// "Pause all triggers" (the tray's switch).
    pub paused: bool,
    /// How long a host waits before restarting a runner that ended on an error. (Named
    /// for what it once was, how often definitions were re-read; a host now re-reads them
    /// when another process commits, and the name stays for stored settings.)
    pub reload_secs: u64,
    /// Quiet time after the last file change before a watch looks at a batch.
    pub watch_debounce_ms: u64,
}

impl Default for TriggerSettings {
    fn default() -> Self {
        Self {
            port: DEFAULT_PORT,
            webhook_rate_per_minute: 60,
            webhook_burst: 10,
            paused: false,
            reload_secs: 5,
            watch_debounce_ms: 500,
        }
    }
}

impl TriggerSettings {
    pub fn load(rt: &Arc<Runtime>) -> Result<Self> {
        let stored = rt.call(ops::GetSetting {
            key: SETTINGS_KEY.into(),
        })?;
        let mut s: TriggerSettings = match stored {
            Some(v) => serde_json::from_value(v).map_err(|e| {
                StoreError::Invalid(format!("setting `{SETTINGS_KEY}` is not valid: {e}"))
            })?,
            None => TriggerSettings::default(),
        };
        if let Some(port) = std::env::var("POCKETPILOT_WEBHOOK_PORT")
            .ok()
            .and_then(|v| v.trim().parse().ok())
        {
            s.port = port;
        }
        Ok(s)
    }

    pub fn save(&self, rt: &Arc<Runtime>) -> Result<()> {
        let value = serde_json::to_value(self)
            .map_err(|e| StoreError::Invalid(format!("trigger settings: {e}")))?;
        Ok(rt.call(ops::SetSetting {
            key: SETTINGS_KEY.into(),
            value,
        })?)
    }
}

/// Pauses every trigger (persisted): webhooks answer 503, ticks and changes are skipped.
pub fn pause_all(rt: &Arc<Runtime>) -> Result<()> {
    set_all_paused(rt, true)
}

pub fn resume_all(rt: &Arc<Runtime>) -> Result<()> {
    set_all_paused(rt, false)
}

pub fn all_paused(rt: &Arc<Runtime>) -> Result<bool> {
    Ok(TriggerSettings::load(rt)?.paused)
}

fn set_all_paused(rt: &Arc<Runtime>, paused: bool) -> Result<()> {
    rt.call(ops::SetSettingField {
        key: SETTINGS_KEY.into(),
        field: "paused".into(),
        value: paused.into(),
    })?;
    tracing::info!(paused, "all triggers");
    Ok(())
}

/// The record of a trigger: every fire and skip, oldest first. `kind` is `webhook`,
/// `cron` or `watch`.
pub fn runs(rt: &Arc<Runtime>, kind: &str, trigger_id: i64) -> Result<Vec<triggers::TriggerRun>> {
    Ok(rt.call(ops::TriggerRuns {
        kind: kind.to_owned(),
        trigger_id,
    })?)
}

/// Runs store work (a submission, a fire and its record) on the blocking pool: a commit
/// waits for its fsync, and the trigger loops and the webhook's handlers share the async
/// workers with running agents' streams.
pub(crate) async fn blocking<T, E>(
    work: impl FnOnce() -> std::result::Result<T, E> + Send + 'static,
) -> std::result::Result<T, E>
where
    T: Send + 'static,
    E: From<TriggerError> + Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(done) => done,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => Err(TriggerError::ShuttingDown.into()),
    }
}

/// What every trigger hands to the task service.
pub(crate) struct Fire<'a> {
    pub kind: RunSource,
    pub trigger_id: i64,
    pub workspace: &'a str,
    pub goal: &'a str,
    pub provider: Option<&'a str>,
    pub session_id: Option<i64>,
    pub follow_up_of: Option<i64>,
    pub scheduled_for: Option<&'a str>,
    pub reason: Option<&'a str>,
}

/// Creates and starts the task, and records the fire. The task's provider is the
/// trigger's, else `POCKETPILOT_PROVIDER`, else the configured model.
pub(crate) fn fire(rt: &std::sync::Arc<Runtime>, f: &Fire<'_>) -> Result<i64> {
    let provider = f
        .provider
        .map(str::to_owned)
        .or_else(pocketpilot_core::config::default_provider_spec);
    let task_id = rt.call(ops::SubmitTask {
        new: NewTask {
            goal: f.goal.to_owned(),
            workspace: f
                .session_id
                .is_none()
                .then(|| Path::new(f.workspace).to_path_buf()),
            session_id: f.session_id,
            follow_up_of: f.follow_up_of,
            trigger: f.kind,
            provider,
            grants: Vec::new(),
            mcp: None,
        },
    })?;
    rt.call(ops::RecordTriggerRun {
        kind: f.kind,
        trigger_id: f.trigger_id,
        outcome: ops::TriggerOutcome::Fired,
        task_id: Some(task_id),
        reason: f.reason.map(str::to_owned),
        scheduled_for: f.scheduled_for.map(str::to_owned),
    })?;
    tracing::info!(
        task_id,
        trigger = f.kind.as_str(),
        trigger_id = f.trigger_id,
        "trigger fired"
    );
    Ok(task_id)
}

/// Records a skipped fire with its reason.
pub(crate) fn skip(
    rt: &Arc<Runtime>,
    kind: RunSource,
    trigger_id: i64,
    scheduled_for: Option<&str>,
    reason: &str,
) -> Result<()> {
    rt.call(ops::RecordTriggerRun {
        kind,
        trigger_id,
        outcome: ops::TriggerOutcome::Skipped,
        task_id: None,
        reason: Some(reason.to_owned()),
        scheduled_for: scheduled_for.map(str::to_owned),
    })?;
    tracing::info!(
        trigger = kind.as_str(),
        trigger_id,
        reason,
        "trigger skipped"
    );
    Ok(())
}

/// The canonical path of an existing workspace folder.
pub(crate) fn canonical_workspace(path: &Path) -> Result<String> {
    let shown = path.display().to_string();
    let real = std::fs::canonicalize(path).map_err(|_| TriggerError::Workspace(shown.clone()))?;
    if !real.is_dir() {
        return Err(TriggerError::Workspace(shown));
    }
    real.to_str()
        .map(str::to_owned)
        .ok_or_else(|| TriggerError::Workspace(format!("{shown} (the path is not valid UTF-8)")))
}

/// Times as stored: RFC 3339 UTC with milliseconds, comparable as text.
pub(crate) fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

pub(crate) fn parse_stamp(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}
