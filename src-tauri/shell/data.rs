//! Settings → Data: the store's backups, "Back up now", the retention, and "Restore…".
//! Each is one call into core (`core::api::data`). The window cannot replace the store it
//! has open: a restore is scheduled, and the app restarts to put it back before it opens
//! the store again.
use pocketpilot_core::ops;
use pocketpilot_store::backup::{BackupFile, BackupSettings};
use serde::Serialize;
use specta::Type;
use tauri::{AppHandle, State};

use super::wire::CommandError;
use super::{call, AppState};

type Result<T> = std::result::Result<T, CommandError>;

/// What the Data section shows.
#[derive(Debug, Clone, Serialize, Type)]
pub struct DataView {
    /// Newest first.
    pub backups: Vec<BackupFile>,
    pub settings: BackupSettings,
    /// Where they are kept.
    pub dir: String,
    /// A backup scheduled to be put back at the next start.
    pub pending_restore: Option<String>,
}

fn view(
    rt: &std::sync::Arc<pocketpilot_core::Runtime>,
) -> std::result::Result<DataView, pocketpilot_core::RuntimeError> {
    Ok(DataView {
        backups: rt.call(ops::ListBackups {})?,
        settings: rt.call(ops::GetBackupSettings {})?,
        dir: rt
            .call(ops::DataDir {})
            .join(pocketpilot_store::backup::BACKUPS_DIR)
            .display()
            .to_string(),
        pending_restore: rt.call(ops::PendingRestore {}),
    })
}

#[tauri::command]
#[specta::specta]
pub async fn data_view(state: State<'_, AppState>) -> Result<DataView> {
    call(&state, view).await
}

/// Copies the store now (beside running work); answers the section as it is after.
#[tauri::command]
#[specta::specta]
pub async fn backup_now(state: State<'_, AppState>) -> Result<DataView> {
    call(&state, |rt| {
        rt.call(ops::BackupNow {})?;
        view(rt)
    })
    .await
}

#[tauri::command]
#[specta::specta]
pub async fn set_backup_settings(
    state: State<'_, AppState>,
    settings: BackupSettings,
) -> Result<DataView> {
    call(&state, move |rt| {
        rt.call(ops::SetBackupSettings { settings })?;
        view(rt)
    })
    .await
}

/// Schedules `name` to be put back and restarts the app, which puts it back before it
/// opens the store (the store it replaces is kept).
#[tauri::command]
#[specta::specta]
pub async fn restore_backup(
    app: AppHandle,
    state: State<'_, AppState>,
    name: String,
) -> Result<BackupFile> {
    let chosen = call(&state, move |rt| {
        rt.call(ops::ScheduleRestore {
            name: name.to_string(),
        })
    })
    .await?;
    app.request_restart();
    Ok(chosen)
}
