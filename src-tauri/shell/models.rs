//! The built-in model's commands: the models kept on this computer (Models screen), the
//! server's state (Settings, the thinking line) and the built-in model's settings. Each:
//! one op (or, for what is the process's and needs no store — downloads, the server's
//! state — one call into core's `local_api`), its error mapped. The server's state is also pushed
//! to the window as the `local-server-status` event whenever it changes.
use std::path::PathBuf;

use pocketpilot_core::api::local::{self as local_api, LocalApiError};
use pocketpilot_core::ops;
use pocketpilot_protocol::{LocalModelForm, LocalServerStatus, ModelRow, PullProgressEvent};
use tauri::ipc::Channel;
use tauri::{AppHandle, Emitter, State};

use super::wire::CommandError;
use super::{call, AppState};

type Result<T> = std::result::Result<T, CommandError>;

/// The event the window follows the server's state by (`ui/src/api/commands.ts`).
pub const SERVER_STATUS_EVENT: &str = "local-server-status";

impl From<LocalApiError> for CommandError {
    fn from(e: LocalApiError) -> Self {
        Self::new(e.kind(), e)
    }
}

/// Every model kept on this computer, the one runs use marked.
#[tauri::command]
#[specta::specta]
pub async fn local_models(state: State<'_, AppState>) -> Result<Vec<ModelRow>> {
    call(&state, |rt| rt.call(ops::ListLocalModels {})).await
}

/// Adds the GGUF file the person picked; refused when it is not GGUF or too large for
/// this computer's memory.
#[tauri::command]
#[specta::specta]
pub async fn import_model(state: State<'_, AppState>, path: String) -> Result<ModelRow> {
    call(&state, move |rt| {
        rt.call(ops::ImportLocalModel {
            path: PathBuf::from(path),
        })
    })
    .await
}

/// Downloads a model, sending its progress on `on_progress`; answers once it is checked
/// and kept, or with null when `cancel_pull` stopped it.
#[tauri::command]
#[specta::specta]
pub async fn pull_model(
    state: State<'_, AppState>,
    url: String,
    sha256: Option<String>,
    name: Option<String>,
    on_progress: Channel<PullProgressEvent>,
) -> Result<Option<ModelRow>> {
    let data_dir = state.data_dir().to_owned();
    let report = move |p: PullProgressEvent| {
        // A window that went away no longer needs the figures; the download goes on.
        let _ = on_progress.send(p);
    };
    Ok(local_api::pull(&data_dir, &url, sha256.as_deref(), name.as_deref(), report).await?)
}

/// Stops the download of `url`; false when none was going on.
#[tauri::command]
#[specta::specta]
pub async fn cancel_pull(url: String) -> Result<bool> {
    Ok(local_api::cancel_pull(&url))
}

/// Makes `name` the model runs use while no provider is configured.
#[tauri::command]
#[specta::specta]
pub async fn use_model(state: State<'_, AppState>, name: String) -> Result<()> {
    call(&state, move |rt| rt.call(ops::UseLocalModel { name })).await
}

/// Removes a kept model.
#[tauri::command]
#[specta::specta]
pub async fn remove_model(state: State<'_, AppState>, name: String) -> Result<()> {
    call(&state, move |rt| rt.call(ops::RemoveLocalModel { name })).await
}

/// The built-in model's server now (stopped, starting, ready, crashed).
#[tauri::command]
#[specta::specta]
pub async fn local_server_status() -> Result<LocalServerStatus> {
    Ok(local_api::server_status())
}

/// The built-in model's settings as stored.
#[tauri::command]
#[specta::specta]
pub async fn local_model_form(state: State<'_, AppState>) -> Result<LocalModelForm> {
    call(&state, |rt| rt.call(ops::GetLocalModelForm {})).await
}

#[tauri::command]
#[specta::specta]
pub async fn save_local_model_form(state: State<'_, AppState>, form: LocalModelForm) -> Result<()> {
    call(&state, move |rt| rt.call(ops::SaveLocalModelForm { form })).await
}

/// Tells the window every change of the server's state, for as long as the app runs.
pub async fn forward_server_status(app: AppHandle) {
    let mut watch = local_api::watch_server();
    while let Some(status) = watch.changed().await {
        if let Err(e) = app.emit(SERVER_STATUS_EVENT, status) {
            tracing::debug!(error = %e, "the server's state did not reach the window");
        }
    }
}
