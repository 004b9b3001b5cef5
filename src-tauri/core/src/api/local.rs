//! The window's entry points for the built-in model: the models kept on this computer
//! (list, import, download with progress and cancel, use, remove), the server's state as
//! it changes, and the built-in model's settings. Each is a thin call into
//! `pocketpilot_local` or `local_model`, its answer turned into the protocol's types.
use crate::api::service::Runtime;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{LazyLock, Mutex};

use pocketpilot_local::models::{Manifest, ModelError, ModelSource, ModelStore, PullProgress};
use pocketpilot_local::server::{LocalServer, ServerState};
use pocketpilot_protocol::{
    ErrorKind, LocalModelForm, LocalServerStatus, ModelOrigin, ModelRow, PullProgressEvent,
};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::engine::local_model::{self, LocalModelError, LocalSettings};
use crate::error_kind::store_kind;
use crate::store::{Store, StoreError};

/// The idle stop the window accepts: a minute to a day.
const IDLE_MINUTES: std::ops::RangeInclusive<u32> = 1..=1440;
/// The largest-window setting the window accepts: below 2,048 tokens the system text and
/// tools do not fit; above 1M no model this runs on a laptop was trained for.
const MAX_CONTEXT: std::ops::RangeInclusive<u32> = 2048..=1_048_576;
const MIB: f64 = 1024.0 * 1024.0;

#[derive(Debug, thiserror::Error)]
pub enum LocalApiError {
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error(transparent)]
    Local(#[from] LocalModelError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{url} is already being downloaded")]
    AlreadyPulling { url: String },
    #[error("the idle stop must be between {} and {} minutes", IDLE_MINUTES.start(), IDLE_MINUTES.end())]
    IdleMinutes,
    #[error("the largest context must be between {} and {} tokens", MAX_CONTEXT.start(), MAX_CONTEXT.end())]
    MaxContext,
}

impl LocalApiError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            LocalApiError::Model(e) | LocalApiError::Local(LocalModelError::Model(e)) => {
                model_kind(e)
            }
            LocalApiError::Local(LocalModelError::Store(e)) | LocalApiError::Store(e) => {
                store_kind(e)
            }
            LocalApiError::Local(
                LocalModelError::Server(_)
                | LocalModelError::NoMemory { .. }
                | LocalModelError::Template(_),
            ) => ErrorKind::LocalModel,
            LocalApiError::AlreadyPulling { .. } => ErrorKind::Duplicate,
            LocalApiError::IdleMinutes | LocalApiError::MaxContext => ErrorKind::InvalidArguments,
        }
    }
}

fn model_kind(e: &ModelError) -> ErrorKind {
    match e {
        ModelError::NotFound(_) => ErrorKind::NotFound,
        ModelError::InvalidName(_) => ErrorKind::InvalidName,
        ModelError::Exists(_) | ModelError::Busy(_) => ErrorKind::Duplicate,
        ModelError::InvalidSha256(_) | ModelError::NotGguf { .. } | ModelError::Header(_) => {
            ErrorKind::InvalidArguments
        }
        // The file is sound but this computer cannot take it, or it is not what was asked.
        ModelError::TooLarge { .. } | ModelError::Checksum { .. } => ErrorKind::LocalModel,
        ModelError::Http(_) => ErrorKind::ModelConnect,
        ModelError::NoDiskSpace { .. } | ModelError::Io(_) => ErrorKind::Io,
        ModelError::Cancelled => ErrorKind::AlreadyEnded,
    }
}

type Result<T, E = LocalApiError> = std::result::Result<T, E>;

/// Every model kept on this computer, the one runs use marked. The shipped default is
/// registered first, so that it is listed like the others.
pub(crate) fn list(data_dir: &Path) -> Result<Vec<ModelRow>> {
    let in_use = local_model::chosen_model(data_dir)?.map(|m| m.name);
    Ok(ModelStore::new(data_dir)
        .list()?
        .iter()
        .map(|m| row(m, in_use.as_deref() == Some(m.name.as_str())))
        .collect())
}

/// Adds the GGUF file at `path` (a link when it can be, else a copy).
pub(crate) fn import(data_dir: &Path, path: &Path) -> Result<ModelRow> {
    let m = ModelStore::new(data_dir).import(path, None)?;
    in_list(data_dir, m)
}

/// Makes `name` the model runs use while no provider is configured.
pub(crate) fn use_model(data_dir: &Path, name: &str) -> Result<()> {
    Ok(ModelStore::new(data_dir).use_model(name)?)
}

/// Removes a model (a shipped model's file stays where the app installed it).
pub(crate) fn remove(data_dir: &Path, name: &str) -> Result<()> {
    Ok(ModelStore::new(data_dir).remove(name)?)
}

/// The downloads in progress, by URL, with what cancels each.
static PULLS: LazyLock<Mutex<HashMap<String, CancellationToken>>> = LazyLock::new(Default::default);

fn pulls() -> std::sync::MutexGuard<'static, HashMap<String, CancellationToken>> {
    PULLS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Forgets a download when it ends, however it ends.
struct PullEntry(String);

impl Drop for PullEntry {
    fn drop(&mut self) {
        pulls().remove(&self.0);
    }
}

/// Downloads the model at `url`, reporting progress, and answers with it once it is
/// checked and kept; `None` when [`cancel_pull`] stopped it (its part stays, so the same
/// download later resumes). One download of a URL at a time.
pub async fn pull(
    data_dir: &Path,
    url: &str,
    sha256: Option<&str>,
    name: Option<&str>,
    progress: impl Fn(PullProgressEvent) + Send + Sync,
) -> Result<Option<ModelRow>> {
    let cancel = CancellationToken::new();
    let _entry = {
        let mut pulls = pulls();
        if pulls.contains_key(url) {
            return Err(LocalApiError::AlreadyPulling {
                url: url.to_owned(),
            });
        }
        pulls.insert(url.to_owned(), cancel.clone());
        PullEntry(url.to_owned())
    };
    let report = move |p: PullProgress| progress(progress_event(&p));
    match ModelStore::new(data_dir)
        .pull(url, sha256, name, &report, cancel)
        .await
    {
        Ok(m) => Ok(Some(in_list(data_dir, m)?)),
        Err(ModelError::Cancelled) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Stops the download of `url`; false when none was going on.
pub fn cancel_pull(url: &str) -> bool {
    match pulls().get(url) {
        Some(token) => {
            token.cancel();
            true
        }
        None => false,
    }
}

/// The server's state now (its memory read now).
pub fn server_status() -> LocalServerStatus {
    status(&local_model::server_state())
}

/// The server's state as it changes, for the window to be told without asking.
pub struct ServerWatch(watch::Receiver<ServerState>);

/// Follows the built-in model's server from now on.
pub fn watch_server() -> ServerWatch {
    ServerWatch(LocalServer::global().subscribe())
}

impl ServerWatch {
    /// The state now; the next [`Self::changed`] waits for a later one.
    pub fn current(&mut self) -> LocalServerStatus {
        status(&self.0.borrow_and_update())
    }

    /// The next state; `None` once nothing can change it any more.
    pub async fn changed(&mut self) -> Option<LocalServerStatus> {
        self.0.changed().await.ok()?;
        Some(self.current())
    }
}

impl Runtime {
    /// The built-in model's settings as stored.
    pub(crate) fn local_model_form(&self) -> Result<LocalModelForm> {
        form(&self.store)
    }

    /// Saves the built-in model's settings (see [`save_form`]).
    pub(crate) fn save_local_model_form(&self, form: &LocalModelForm) -> Result<()> {
        save_form(&self.store, form)
    }
}

fn form(store: &Store) -> Result<LocalModelForm> {
    let s = LocalSettings::load(store)?;
    Ok(LocalModelForm {
        enabled: s.enabled,
        idle_minutes: u32::try_from(s.idle_minutes).unwrap_or(u32::MAX),
        max_context: s.max_context,
    })
}

/// Saves the form over what is stored (what it does not show, the threads, is kept). The
/// server takes the new figures the next time it starts.
fn save_form(store: &Store, form: &LocalModelForm) -> Result<()> {
    if !IDLE_MINUTES.contains(&form.idle_minutes) {
        return Err(LocalApiError::IdleMinutes);
    }
    if !MAX_CONTEXT.contains(&form.max_context) {
        return Err(LocalApiError::MaxContext);
    }
    let mut s = LocalSettings::load(store)?;
    s.enabled = form.enabled;
    s.idle_minutes = u64::from(form.idle_minutes);
    s.max_context = form.max_context;
    Ok(s.save(store)?)
}

fn in_list(data_dir: &Path, m: Manifest) -> Result<ModelRow> {
    let in_use = local_model::chosen_model(data_dir)?.is_some_and(|c| c.name == m.name);
    Ok(row(&m, in_use))
}

fn row(m: &Manifest, in_use: bool) -> ModelRow {
    ModelRow {
        name: m.name.clone(),
        display_name: local_model::display_name(m),
        size_mib: mib_u32(m.size),
        parameters: m.facts.parameters.map(local_model::short_count),
        quantization: m.facts.quantization.clone(),
        training_context: m.facts.training_context,
        in_use,
        source: match m.source {
            ModelSource::Imported { .. } => ModelOrigin::Imported,
            ModelSource::Pulled { .. } => ModelOrigin::Pulled,
            ModelSource::Bundled { .. } => ModelOrigin::Bundled,
        },
    }
}

fn status(state: &ServerState) -> LocalServerStatus {
    match state {
        ServerState::Stopped => LocalServerStatus::Stopped,
        ServerState::Starting { model } => LocalServerStatus::Starting {
            model: model.clone(),
        },
        ServerState::Ready {
            model,
            port,
            rss_bytes,
            context,
            ..
        } => LocalServerStatus::Ready {
            model: model.clone(),
            port: *port,
            memory_mib: mib_u32(*rss_bytes),
            context: *context,
        },
        ServerState::Crashed {
            model,
            reason,
            log_tail,
        } => LocalServerStatus::Crashed {
            model: model.clone(),
            reason: reason.clone(),
            log_tail: log_tail.clone(),
        },
    }
}

fn mib_u32(bytes: u64) -> u32 {
    u32::try_from(bytes >> 20).unwrap_or(u32::MAX)
}

// Figures for a progress bar: f64 keeps a small file's progress visible.
#[allow(clippy::cast_precision_loss)]
fn progress_event(p: &PullProgress) -> PullProgressEvent {
    PullProgressEvent {
        done_mib: p.done as f64 / MIB,
        total_mib: p.total.map(|t| t as f64 / MIB),
        rate_mib_s: p.bytes_per_sec / MIB,
        eta_secs: p.eta_secs,
    }
}

crate::api::call::op! {
    /// The built-in model's settings as stored.
    #[derive(Debug, Clone)]
    GetLocalModelForm {} -> Result<LocalModelForm>
        = |rt, op| rt.local_model_form();
    /// Saves the built-in model's settings (see [`save_form`]).
    #[derive(Debug, Clone)]
    SaveLocalModelForm { form: LocalModelForm } -> Result<()>
        = |rt, op| rt.save_local_model_form(&op.form);
    /// Every model kept on this computer, the one runs use marked.
    #[derive(Debug, Clone)]
    ListLocalModels {} -> Result<Vec<ModelRow>>
        = |rt, op| list(rt.data_dir());
    /// Adds a GGUF file; refused when it is not GGUF or too large for this computer's
    /// memory.
    #[derive(Debug, Clone)]
    ImportLocalModel { path: std::path::PathBuf } -> Result<ModelRow>
        = |rt, op| import(rt.data_dir(), &op.path);
    /// Makes `name` the model runs use while no provider is configured.
    #[derive(Debug, Clone)]
    UseLocalModel { name: String } -> Result<()>
        = |rt, op| use_model(rt.data_dir(), &op.name);
    /// Removes a kept model.
    #[derive(Debug, Clone)]
    RemoveLocalModel { name: String } -> Result<()>
        = |rt, op| remove(rt.data_dir(), &op.name);
}

#[cfg(test)]
#[path = "local_tests.rs"]
mod tests;
