//! The built-in model: when no provider is configured, a run asks a GGUF model on this
//! computer through a `llama-server` this process owns (`pocketpilot-local`). A provider
//! the person configured always wins; the built-in model never replaces it.
//!
//! The model is the one chosen in `<data>/models/` (`pocketpilot models use`), else the
//! default model shipped beside the app or fetched by `scripts/setup.sh`, registered in
//! place on first use. The server's window (`-c`) is sized from the model's training
//! context, the memory this machine has free and a cap the person sets; the run then
//! reads it back from the server's `/props` like any llama.cpp server's.
use std::path::{Path, PathBuf};
use std::time::Duration;

use pocketpilot_local::binary::{self, ServerBinary};
use pocketpilot_local::gguf::GgufFacts;
use pocketpilot_local::models::{Manifest, ModelError, ModelStore};
use pocketpilot_local::server::{BusyGuard, LocalServer, ServerOptions, ServerState};
use pocketpilot_local::{machine, server::ServerError};
use serde::{Deserialize, Serialize};

use crate::config::ProviderSettings;
use crate::store::{settings, Store, StoreError};

pub const LOCAL_KEY: &str = "local_model";
/// The name the shipped default model is registered under.
pub const DEFAULT_MODEL_NAME: &str = "smollm2-135m-instruct";
const DEFAULT_DISPLAY_NAME: &str = "SmolLM2 135M Instruct";
const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// The provider name runs with the built-in model carry (labels, prices, the header).
pub const LOCAL_PROVIDER_NAME: &str = "local";
/// A ChatML template that describes tools: SmolLM2's own template ignores `tools`, so
/// llama.cpp would silently drop them. From llama.cpp's `models/templates` (Qwen2.5).
const CHATML_TOOLS_TEMPLATE: &str = include_str!("../../../local/templates/chatml-tools.jinja");
/// What the server needs beside the weights and the window's cache (compute buffers,
/// the process itself).
const SERVER_OVERHEAD: u64 = 384 << 20;
/// No smaller window is worth starting: the system text and tools alone take ~1k tokens.
const MIN_CONTEXT: u32 = 2048;

/// The person's settings for the built-in model (Settings → Models).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LocalSettings {
    /// Off: a run without a configured provider fails with "no model" instead.
    pub enabled: bool,
    /// Minutes without a request after which the server stops (its memory given back).
    pub idle_minutes: u64,
    /// The largest window the server is started with, whatever the model could take.
    pub max_context: u32,
    /// Threads for generation; `None`: every core.
    pub threads: Option<u32>,
}

impl Default for LocalSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            idle_minutes: 10,
            max_context: 8192,
            threads: None,
        }
    }
}

impl LocalSettings {
    pub fn load(store: &Store) -> Result<Self, StoreError> {
        Ok(store
            .read(|c| settings::get(c, LOCAL_KEY))?
            .unwrap_or_default())
    }

    pub fn save(&self, store: &Store) -> Result<(), StoreError> {
        store.write(|c| settings::set(c, LOCAL_KEY, self))
    }

    /// The idle stop, with `POCKETPILOT_LOCAL_IDLE_SECONDS` over the setting.
    pub fn idle(&self) -> Duration {
        match std::env::var("POCKETPILOT_LOCAL_IDLE_SECONDS")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
        {
            Some(secs) => Duration::from_secs(secs.max(1)),
            None => Duration::from_secs(self.idle_minutes.max(1) * 60),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LocalModelError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error("the built-in model could not start: {0}")]
    Server(#[from] ServerError),
    #[error(
        "the built-in model {model} needs at least {needed_mib} MiB of memory for a \
         {MIN_CONTEXT}-token window; this computer has {available_mib} MiB available"
    )]
    NoMemory {
        model: String,
        needed_mib: u64,
        available_mib: u64,
    },
    #[error("could not write the built-in model's chat template: {0}")]
    Template(std::io::Error),
}

/// What the built-in model would run, found without starting anything.
#[derive(Debug, Clone)]
pub struct LocalPlan {
    pub model: Manifest,
    pub binary: ServerBinary,
}

/// Where the default model may be, in order: beside the app (the packages), where
/// `scripts/setup.sh` fetched it.
fn default_model_candidates() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        out.push(dir.join("models").join(DEFAULT_MODEL_FILE));
        // The packages' resources: /usr/bin/pocketpilot → /usr/lib/pocketpilot/models.
        if let Some(prefix) = dir.parent() {
            out.push(
                prefix
                    .join("lib/pocketpilot/models")
                    .join(DEFAULT_MODEL_FILE),
            );
        }
    }
    out.push(binary::peers_dir().join("models").join(DEFAULT_MODEL_FILE));
    out
}

/// The shipped default model's file, when this computer has it (nothing registered).
pub fn default_model_file() -> Option<PathBuf> {
    default_model_candidates().into_iter().find(|p| p.is_file())
}

/// The model runs would use: the person's choice, else the shipped default (registered
/// in place, never copied). `None` when this computer has none.
pub fn chosen_model(data_dir: &Path) -> Result<Option<Manifest>, LocalModelError> {
    let models = ModelStore::new(data_dir);
    if let Some(m) = models.chosen()? {
        return Ok(Some(m));
    }
    for candidate in default_model_candidates() {
        if candidate.is_file() {
            return Ok(Some(
                models.register_bundled(&candidate, DEFAULT_MODEL_NAME)?,
            ));
        }
    }
    Ok(None)
}

/// `POCKETPILOT_LOCAL_MODEL=off` turns the built-in model off for this process (the test
/// command sets it, so that a test meets the built-in model only where it asks for it).
pub const SWITCH_VAR: &str = "POCKETPILOT_LOCAL_MODEL";

fn switched_off() -> bool {
    std::env::var(SWITCH_VAR).is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "off" | "0" | "false" | "no"
        )
    })
}

/// The built-in model, when this computer has both a model and the server to run it and
/// neither the setting nor the environment turned it off.
pub fn plan(data_dir: &Path, store: &Store) -> Result<Option<LocalPlan>, LocalModelError> {
    plan_with(data_dir, &LocalSettings::load(store)?)
}

fn plan_with(data_dir: &Path, local: &LocalSettings) -> Result<Option<LocalPlan>, LocalModelError> {
    if switched_off() || !local.enabled {
        return Ok(None);
    }
    let Some(binary) = binary::find() else {
        return Ok(None);
    };
    Ok(chosen_model(data_dir)?.map(|model| LocalPlan { model, binary }))
}

/// The window to start the server with: the model's training context, what the memory
/// free now can hold beside the weights, and the person's cap, whichever is least,
/// rounded down to 256 tokens.
pub fn choose_context(
    facts: &GgufFacts,
    model_bytes: u64,
    available: u64,
    cap: u32,
) -> Option<u32> {
    let trained = facts.training_context.unwrap_or(4096);
    // Unknown shapes: assume a 7B-class cache (0.5 MiB a token), so a guess errs small.
    let per_token = facts.kv_bytes_per_token().unwrap_or(512 << 10).max(1);
    let room = available.saturating_sub(model_bytes.saturating_add(SERVER_OVERHEAD));
    let by_memory = u32::try_from(room / per_token).unwrap_or(u32::MAX);
    let ctx = trained.min(cap.max(MIN_CONTEXT)).min(by_memory) / 256 * 256;
    (ctx >= MIN_CONTEXT).then_some(ctx)
}

/// The built-in model as the welcome screen shows it; `None` when there is none (a lookup
/// that fails is logged and shows as none).
pub fn builtin_summary(
    data_dir: &Path,
    store: &Store,
) -> Option<pocketpilot_protocol::BuiltinModel> {
    let plan = match plan(data_dir, store) {
        Ok(p) => p?,
        Err(e) => {
            tracing::warn!(error = %e, "the built-in model could not be looked up");
            return None;
        }
    };
    let m = &plan.model;
    Some(pocketpilot_protocol::BuiltinModel {
        name: m.name.clone(),
        display_name: display_name(m),
        size_mib: u32::try_from(m.size >> 20).unwrap_or(u32::MAX),
        parameters: m.facts.parameters.map(short_count),
        training_context: m.facts.training_context,
    })
}

/// 134_515_008 → "135M"; 7_241_732_096 → "7.2B".
pub fn short_count(n: u64) -> String {
    match n {
        n if n >= 1_000_000_000 => format!("{:.1}B", n as f64 / 1e9),
        n if n >= 1_000_000 => format!("{}M", (n as f64 / 1e6).round()),
        n => format!("{}K", (n as f64 / 1e3).round()),
    }
}

/// A display name for the header and the welcome screen ("SmolLM2 135M").
pub fn display_name(m: &Manifest) -> String {
    // The shipped file's `general.name` is a training run's tag ("Smollm2 135M 8k Lc100K
    // Mix1 Ep2"), not a name a person knows it by.
    if m.name == DEFAULT_MODEL_NAME {
        return DEFAULT_DISPLAY_NAME.into();
    }
    m.facts.name.clone().unwrap_or_else(|| m.name.clone())
}

/// A run's provider settings for the built-in model, with the server started and
/// healthy, and a guard that keeps the server from its idle stop while the run lasts.
/// `None` when this computer has no built-in model.
pub async fn endpoint(
    data_dir: &Path,
    store: &Store,
) -> Result<Option<(ProviderSettings, BusyGuard)>, LocalModelError> {
    let local = LocalSettings::load(store)?;
    let Some(plan) = plan_with(data_dir, &local)? else {
        return Ok(None);
    };
    let opts = server_options(data_dir, &plan, &local)?;
    let server = LocalServer::global();
    let guard = server.busy();
    let ep = server.ensure(&opts).await?;
    let settings = ProviderSettings {
        name: LOCAL_PROVIDER_NAME.into(),
        base_url: Some(ep.base_url),
        model: Some(ep.model),
        api_key_override: Some(ep.api_key),
        ..ProviderSettings::default()
    };
    Ok(Some((settings, guard)))
}

fn server_options(
    data_dir: &Path,
    plan: &LocalPlan,
    local: &LocalSettings,
) -> Result<ServerOptions, LocalModelError> {
    let m = &plan.model;
    let available = machine::memory_available();
    let context =
        choose_context(&m.facts, m.size, available, local.max_context).ok_or_else(|| {
            LocalModelError::NoMemory {
                model: display_name(m),
                needed_mib: (m.size
                    + SERVER_OVERHEAD
                    + m.facts.kv_bytes_per_token().unwrap_or(512 << 10) * u64::from(MIN_CONTEXT))
                    >> 20,
                available_mib: available >> 20,
            }
        })?;
    let template = if m.facts.chatml && !m.facts.template_mentions_tools {
        Some(write_template(data_dir)?)
    } else {
        None
    };
    Ok(ServerOptions {
        binary: plan.binary.path.clone(),
        model_path: m.file.clone(),
        model_name: m.name.clone(),
        context,
        template,
        threads: local.threads,
        log_dir: crate::logging::log_dir(data_dir),
        idle: local.idle(),
        state_file: Some(data_dir.join("llama-server.state")),
    })
}

/// The tools template, written once into the data dir (the server reads a file).
fn write_template(data_dir: &Path) -> Result<PathBuf, LocalModelError> {
    let path = data_dir.join("chatml-tools.jinja");
    let current = std::fs::read_to_string(&path).ok();
    if current.as_deref() != Some(CHATML_TOOLS_TEMPLATE) {
        let tmp = path.with_extension("jinja.tmp");
        std::fs::write(&tmp, CHATML_TOOLS_TEMPLATE).map_err(LocalModelError::Template)?;
        std::fs::rename(&tmp, &path).map_err(LocalModelError::Template)?;
    }
    Ok(path)
}

/// The server's state for Settings and `doctor`.
pub fn server_state() -> ServerState {
    LocalServer::global().state()
}

/// Stops this process's built-in server, if it started one (at quit).
pub fn shutdown() {
    LocalServer::global().stop_blocking();
}

/// What `pocketpilot doctor` says of the built-in model: the server binary in use (and
/// whether it runs on this CPU), the model, the settings that turn it off. Reads only.
pub fn doctor_lines(data_dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    if switched_off() {
        out.push(format!("built-in model: off ({SWITCH_VAR}=off)"));
    }
    match binary::find() {
        Some(b) => {
            let origin = match b.origin {
                binary::BinaryOrigin::NextToApp => "next to the app",
                binary::BinaryOrigin::Environment => "from POCKETPILOT_LLAMA_SERVER",
                binary::BinaryOrigin::SetupScript => "where scripts/setup.sh built it",
            };
            let runs = match binary::version(&b.path) {
                Ok(v) => format!("runs ({v})"),
                Err(e) => format!("does NOT run: {e}"),
            };
            out.push(format!(
                "built-in model server: {} ({origin}): {runs}",
                b.path.display()
            ));
        }
        None => out.push(
            "built-in model server: not found (next to the app, POCKETPILOT_LLAMA_SERVER, or \
             scripts/setup.sh)"
                .into(),
        ),
    }
    let models = ModelStore::new(data_dir);
    match models.chosen() {
        Ok(Some(m)) => out.push(format!(
            "built-in model: {} ({} MiB, {}): {}",
            m.name,
            m.size >> 20,
            m.facts
                .quantization
                .as_deref()
                .unwrap_or("unknown quantisation"),
            m.file.display()
        )),
        Ok(None) => match default_model_file() {
            Some(f) => out.push(format!("built-in model: the default, {}", f.display())),
            None => out.push(
                "built-in model: none (`pocketpilot models import FILE.gguf` or scripts/setup.sh)"
                    .into(),
            ),
        },
        Err(e) => out.push(format!(
            "built-in model: the models folder cannot be read: {e}"
        )),
    }
    out.push(format!(
        "built-in model server now: {}",
        describe_state(&server_state())
    ));
    out
}

/// One line for a person.
pub fn describe_state(state: &ServerState) -> String {
    match state {
        ServerState::Stopped => "stopped (it starts when a run needs it)".into(),
        ServerState::Starting { model } => format!("starting {model}"),
        ServerState::Ready {
            model,
            port,
            rss_bytes,
            context,
            ..
        } => format!(
            "ready: {model} on 127.0.0.1:{port}, {} MiB, window {context} tokens",
            rss_bytes >> 20
        ),
        ServerState::Crashed { model, reason, .. } => format!("{model} crashed: {reason}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn smollm2() -> GgufFacts {
        GgufFacts {
            architecture: "llama".into(),
            name: None,
            parameters: Some(134_515_008),
            quantization: Some("Q4_1".into()),
            training_context: Some(8192),
            block_count: Some(30),
            embedding_length: Some(576),
            head_count: Some(9),
            head_count_kv: Some(3),
            chat_template: true,
            template_mentions_tools: false,
            chatml: true,
        }
    }

    #[test]
    fn the_server_stops_after_ten_idle_minutes_by_default() {
        // The variable shortens it for tests and headless users; unset here.
        if std::env::var_os("POCKETPILOT_LOCAL_IDLE_SECONDS").is_none() {
            assert_eq!(LocalSettings::default().idle(), Duration::from_secs(600));
        }
        assert_eq!(LocalSettings::default().max_context, 8192);
    }

    #[test]
    fn the_window_is_the_least_of_training_memory_and_the_cap() {
        let f = smollm2();
        let gib = 1u64 << 30;
        // Plenty of memory: the training context, or the person's cap below it.
        assert_eq!(choose_context(&f, 98 << 20, 8 * gib, 8192), Some(8192));
        assert_eq!(choose_context(&f, 98 << 20, 8 * gib, 4096), Some(4096));
        // Memory for the weights, the server and ~3,000 tokens of cache: rounded down.
        let per_token = f.kv_bytes_per_token().unwrap();
        let tight = (98 << 20) + SERVER_OVERHEAD + 3000 * per_token;
        assert_eq!(choose_context(&f, 98 << 20, tight, 8192), Some(2816));
        // Not even the smallest useful window: refused.
        assert_eq!(choose_context(&f, 98 << 20, 200 << 20, 8192), None);
    }

    #[test]
    fn counts_read_as_people_write_them() {
        assert_eq!(short_count(134_515_008), "135M");
        assert_eq!(short_count(7_241_732_096), "7.2B");
    }
}
