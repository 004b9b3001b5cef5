//! Settings that shape a run: where the data lives, limits, the provider. Stored in the
//! `settings` table; environment variables override them for headless use.
use std::path::PathBuf;

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
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_steps: 12,
            max_task_seconds: 300,
            max_task_tokens: Some(200_000),
            delta_window_ms: 30,
        }
    }
}

fn env_num(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

impl Limits {
    pub fn load(store: &Store) -> Result<Self, StoreError> {
        let mut l: Limits = store
            .read(|c| settings::get(c, LIMITS_KEY))?
            .unwrap_or_default();
        if let Some(v) = env_num("POCKETPILOT_MAX_AGENT_STEPS") {
            l.max_steps = v.clamp(1, 10_000) as u32;
        }
        if let Some(v) = env_num("POCKETPILOT_MAX_TASK_SECONDS") {
            l.max_task_seconds = v.max(1);
        }
        if let Some(v) = env_num("POCKETPILOT_MAX_TASK_TOKENS") {
            l.max_task_tokens = Some(v);
        }
        if let Some(v) = env_num("POCKETPILOT_DELTA_WINDOW_MS") {
            l.delta_window_ms = v.min(1_000);
        }
        Ok(l)
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
        }
    }
}

impl ProviderSettings {
    /// Stored settings with the environment's overrides applied.
    pub fn load(store: &Store) -> Result<Self, StoreError> {
        let mut p: ProviderSettings = store
            .read(|c| settings::get(c, PROVIDER_KEY))?
            .unwrap_or_default();
        if let Some(v) = std::env::var("POCKETPILOT_BASE_URL")
            .ok()
            .filter(|v| !v.is_empty())
        {
            p.base_url = Some(v);
        }
        if let Some(v) = std::env::var("POCKETPILOT_MODEL")
            .ok()
            .filter(|v| !v.is_empty())
        {
            p.model = Some(v);
        }
        if let Ok(v) = std::env::var("POCKETPILOT_LLM_STREAM") {
            p.stream = !matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "false" | "0" | "no" | "off"
            );
        }
        Ok(p)
    }

    pub fn save(&self, store: &Store) -> Result<(), StoreError> {
        store.write(|c| settings::set(c, PROVIDER_KEY, self))
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
