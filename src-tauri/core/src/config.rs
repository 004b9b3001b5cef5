//! Settings that shape a run: where the data lives, limits, the provider. Stored in the
//! `settings` table; environment variables override them for headless use. `load` gives
//! the effective values (runs use them); `stored` the stored ones (the settings screen
//! edits those, so that an override never becomes a stored setting).
use std::path::PathBuf;

use pocketpilot_model::StreamCaps;
use pocketpilot_protocol::{EnvOverride, LimitsForm, ProviderForm, SettingField};
use serde::{Deserialize, Serialize};

use crate::store::{settings, Store, StoreError};

pub const LIMITS_KEY: &str = "limits";
pub const PROVIDER_KEY: &str = "provider";

/// The data directory: `POCKETPILOT_DATA_DIR`, else the platform's app-data dir.
pub fn data_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("POCKETPILOT_DATA_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    dirs::data_dir()
        .unwrap_or_else(|| PathBuf::from("."))
        .join("pocketpilot")
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Limits {
    pub max_steps: u32,
    pub max_task_seconds: u64,
    pub max_task_tokens: Option<u64>,
    pub delta_window_ms: u64,
    /// The repetition guard: this many identical calls with identical results (or
    /// identical turns) in a row pause the run; 0 turns it off (issue 19).
    pub repeat_limit: u32,
    /// Dollars a task may cost (at the prices set); `None`: no money budget.
    pub max_task_usd: Option<f64>,
    /// Dollars all runs of one UTC day may cost.
    pub max_day_usd: Option<f64>,
    /// Dollars the unattended runs (schedules, watches, webhooks) of one UTC day may cost.
    pub max_trigger_day_usd: Option<f64>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_steps: 12,
            max_task_seconds: 300,
            max_task_tokens: Some(200_000),
            delta_window_ms: 30,
            repeat_limit: 3,
            max_task_usd: None,
            max_day_usd: None,
            max_trigger_day_usd: None,
        }
    }
}

fn env_usd(name: &str) -> Option<f64> {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
}

fn env_num(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

const MAX_STEPS_VAR: &str = "POCKETPILOT_MAX_AGENT_STEPS";
const MAX_SECONDS_VAR: &str = "POCKETPILOT_MAX_TASK_SECONDS";
const MAX_TOKENS_VAR: &str = "POCKETPILOT_MAX_TASK_TOKENS";
const DELTA_WINDOW_VAR: &str = "POCKETPILOT_DELTA_WINDOW_MS";
const REPEAT_VAR: &str = "POCKETPILOT_REPEAT_LIMIT";
const TASK_USD_VAR: &str = "POCKETPILOT_MAX_TASK_USD";
const DAY_USD_VAR: &str = "POCKETPILOT_MAX_DAY_USD";
const TRIGGER_DAY_USD_VAR: &str = "POCKETPILOT_MAX_TRIGGER_DAY_USD";
const BASE_URL_VAR: &str = "POCKETPILOT_BASE_URL";
const MODEL_VAR: &str = "POCKETPILOT_MODEL";
const STREAM_VAR: &str = "POCKETPILOT_LLM_STREAM";

fn overridden(field: SettingField, variable: &str, value: impl ToString) -> EnvOverride {
    EnvOverride {
        field,
        variable: variable.to_owned(),
        value: value.to_string(),
    }
}

impl Limits {
    /// The limits a run uses: the stored ones with the environment's overrides applied.
    pub fn load(store: &Store) -> Result<Self, StoreError> {
        let mut l = Self::stored(store)?;
        l.apply_env();
        Ok(l)
    }

    /// The limits as stored, without the environment: what the settings screen edits.
    pub fn stored(store: &Store) -> Result<Self, StoreError> {
        Ok(store
            .read(|c| settings::get(c, LIMITS_KEY))?
            .unwrap_or_default())
    }

    fn apply_env(&mut self) {
        if let Some(v) = env_num(MAX_STEPS_VAR) {
            self.max_steps = v.clamp(1, 10_000) as u32;
        }
        if let Some(v) = env_num(MAX_SECONDS_VAR) {
            self.max_task_seconds = v.max(1);
        }
        if let Some(v) = env_num(MAX_TOKENS_VAR) {
            self.max_task_tokens = Some(v);
        }
        if let Some(v) = env_num(DELTA_WINDOW_VAR) {
            self.delta_window_ms = v.min(1_000);
        }
        if let Some(v) = env_num(REPEAT_VAR) {
            self.repeat_limit = v.min(1_000) as u32;
        }
        if let Some(v) = env_usd(TASK_USD_VAR) {
            self.max_task_usd = Some(v);
        }
        if let Some(v) = env_usd(DAY_USD_VAR) {
            self.max_day_usd = Some(v);
        }
        if let Some(v) = env_usd(TRIGGER_DAY_USD_VAR) {
            self.max_trigger_day_usd = Some(v);
        }
    }

    /// Every money budget is `None` or 0 or more dollars; else what is wrong, naming it.
    pub fn check_money(&self) -> Result<(), String> {
        let budgets = [
            ("the task budget", self.max_task_usd),
            ("the daily budget", self.max_day_usd),
            (
                "the daily cap for unattended runs",
                self.max_trigger_day_usd,
            ),
        ];
        for (what, v) in budgets {
            if let Some(x) = v.filter(|x| !x.is_finite() || *x < 0.0) {
                return Err(format!("{what} must be 0 or more dollars, not {x}"));
            }
        }
        Ok(())
    }

    /// The form's fields over these limits (the fields the form does not show stay).
    pub fn apply_form(&mut self, l: LimitsForm) {
        self.max_steps = l.max_steps;
        self.max_task_seconds = l.max_task_seconds;
        self.max_task_tokens = l.max_task_tokens;
        self.delta_window_ms = l.delta_window_ms;
    }

    /// The fields the environment overrides now, with the values runs see.
    pub fn env_overrides(&self) -> Vec<EnvOverride> {
        let mut effective = self.clone();
        effective.apply_env();
        let mut out = Vec::new();
        if env_num(MAX_STEPS_VAR).is_some() {
            out.push(overridden(
                SettingField::MaxSteps,
                MAX_STEPS_VAR,
                effective.max_steps,
            ));
        }
        if env_num(MAX_SECONDS_VAR).is_some() {
            out.push(overridden(
                SettingField::MaxTaskSeconds,
                MAX_SECONDS_VAR,
                effective.max_task_seconds,
            ));
        }
        if let (Some(_), Some(v)) = (env_num(MAX_TOKENS_VAR), effective.max_task_tokens) {
            out.push(overridden(SettingField::MaxTaskTokens, MAX_TOKENS_VAR, v));
        }
        if env_num(DELTA_WINDOW_VAR).is_some() {
            out.push(overridden(
                SettingField::DeltaWindowMs,
                DELTA_WINDOW_VAR,
                effective.delta_window_ms,
            ));
        }
        let money = [
            (
                SettingField::MaxTaskUsd,
                TASK_USD_VAR,
                effective.max_task_usd,
            ),
            (SettingField::MaxDayUsd, DAY_USD_VAR, effective.max_day_usd),
            (
                SettingField::MaxTriggerDayUsd,
                TRIGGER_DAY_USD_VAR,
                effective.max_trigger_day_usd,
            ),
        ];
        for (field, var, value) in money {
            if let (Some(_), Some(v)) = (env_usd(var), value) {
                out.push(overridden(field, var, v));
            }
        }
        out
    }
}

impl From<Limits> for LimitsForm {
    fn from(l: Limits) -> Self {
        Self {
            max_steps: l.max_steps,
            max_task_seconds: l.max_task_seconds,
            max_task_tokens: l.max_task_tokens,
            delta_window_ms: l.delta_window_ms,
        }
    }
}

impl From<LimitsForm> for Limits {
    fn from(l: LimitsForm) -> Self {
        let mut limits = Self::default();
        limits.apply_form(l);
        limits
    }
}

/// The model provider as configured. The API key is never here: it lives in the OS
/// keychain under `name`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProviderSettings {
    pub name: String,
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub extra_headers: Vec<(String, String)>,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
    pub stream: bool,
    /// Caps on one answer (text, tool-argument bytes, tool calls); the
    /// `POCKETPILOT_MAX_TURN_*` variables override them.
    pub stream_caps: StreamCaps,
    /// The key of a server this process started (the built-in model's per-start key):
    /// never stored, and it wins over the keychain.
    #[serde(skip)]
    pub api_key_override: Option<String>,
}

impl Default for ProviderSettings {
    fn default() -> Self {
        Self {
            name: "default".into(),
            base_url: None,
            model: None,
            extra_headers: Vec::new(),
            temperature: None,
            max_tokens: None,
            stream: true,
            stream_caps: StreamCaps::default(),
            api_key_override: None,
        }
    }
}

fn env_text(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn env_stream() -> Option<bool> {
    std::env::var(STREAM_VAR).ok().map(|v| {
        !matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "false" | "0" | "no" | "off"
        )
    })
}

impl ProviderSettings {
    /// Stored settings with the environment's overrides applied: what a run uses.
    pub fn load(store: &Store) -> Result<Self, StoreError> {
        let mut p = Self::stored(store)?;
        if let Some(v) = env_text(BASE_URL_VAR) {
            p.base_url = Some(v);
        }
        if let Some(v) = env_text(MODEL_VAR) {
            p.model = Some(v);
        }
        if let Some(v) = env_stream() {
            p.stream = v;
        }
        Ok(p)
    }

    /// The settings as stored, without the environment: what the settings screen edits.
    pub fn stored(store: &Store) -> Result<Self, StoreError> {
        Ok(store
            .read(|c| settings::get(c, PROVIDER_KEY))?
            .unwrap_or_default())
    }

    /// The fields the environment overrides now, with the values runs see.
    pub fn env_overrides() -> Vec<EnvOverride> {
        let mut out = Vec::new();
        if let Some(v) = env_text(BASE_URL_VAR) {
            out.push(overridden(SettingField::BaseUrl, BASE_URL_VAR, v));
        }
        if let Some(v) = env_text(MODEL_VAR) {
            out.push(overridden(SettingField::Model, MODEL_VAR, v));
        }
        if let Some(v) = env_stream() {
            out.push(overridden(SettingField::Stream, STREAM_VAR, v));
        }
        out
    }

    /// Whether runs have a model to ask: an endpoint and a model name, once the
    /// environment is applied (or a provider named by `POCKETPILOT_PROVIDER`).
    pub fn is_configured(&self) -> bool {
        default_provider_spec().is_some() || (self.base_url.is_some() && self.model.is_some())
    }

    /// These settings with the form's fields; what the form does not show (extra headers)
    /// is kept. Blank text is no value.
    pub fn with_form(mut self, form: ProviderForm) -> Self {
        let blank = |v: Option<String>| v.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
        self.name = form.name.trim().to_owned();
        self.base_url = blank(form.base_url);
        self.model = blank(form.model);
        self.temperature = form.temperature;
        self.max_tokens = form.max_tokens;
        self.stream = form.stream;
        self
    }

    pub fn save(&self, store: &Store) -> Result<(), StoreError> {
        store.write(|c| settings::set(c, PROVIDER_KEY, self))
    }
}

impl From<ProviderSettings> for ProviderForm {
    fn from(p: ProviderSettings) -> Self {
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

/// The provider for tasks started from the window or a trigger when none is named:
/// `POCKETPILOT_PROVIDER` (e.g. `scripted:FILE` for demos and end-to-end tests), else the
/// configured model.
pub fn default_provider_spec() -> Option<String> {
    std::env::var("POCKETPILOT_PROVIDER")
        .ok()
        .filter(|v| !v.is_empty())
}

pub fn workspace_rules_key(workspace: &str) -> String {
    format!("policy:{workspace}")
}

pub const RESUME_KEY: &str = "resume_on_start";

/// What the app and `serve` do at start with work a crash or a quit interrupted:
/// `auto` resumes it, `ask` leaves it for the person (`pocketpilot resume`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResumeOnStart {
    #[default]
    Auto,
    Ask,
}

pub const INBOX_KEY: &str = "inbox";

/// How much a session's inbox may hold. Its own key (not `Limits`), so that the window's
/// limits form keeps its shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct InboxSettings {
    /// Submissions queued per session; past it a submission is refused (`inbox_full`).
    pub max_queued: u64,
}

impl Default for InboxSettings {
    fn default() -> Self {
        Self { max_queued: 1_000 }
    }
}

impl InboxSettings {
    /// In the caller's connection or transaction (admission reads it with the session),
    /// with `POCKETPILOT_MAX_QUEUED` overriding the stored value.
    pub fn read(c: &rusqlite::Connection) -> Result<Self, StoreError> {
        let mut s: InboxSettings = settings::get(c, INBOX_KEY)?.unwrap_or_default();
        if let Some(v) = env_num("POCKETPILOT_MAX_QUEUED") {
            s.max_queued = v;
        }
        Ok(s)
    }
}
