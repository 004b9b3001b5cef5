//! The window for a store that cannot be opened: it is damaged, or a newer build wrote it.
//! Instead of an error on a terminal nobody sees, the app opens its window on a screen that
//! says what is wrong and offers the newest backup this build opens. Nothing writes to the
//! store before the person chooses; putting the backup back keeps the current file (set
//! aside when damaged) and then opens the app as usual, without a restart.
//!
//! `store_problem` is asked by the window at every start, beside its first render: `None`
//! is the usual case. It waits for the store's open, which runs beside the window's start.
use std::path::Path;

use pocketpilot_core::api::data::{self, StoreState};
use pocketpilot_core::store::backup::{BackupFile, Kept, Restored};
use pocketpilot_core::store::StoreError;
use pocketpilot_core::{Runtime, RuntimeError};
use serde::Serialize;
use specta::Type;
use tauri::{AppHandle, State};

use super::opening::{AppState, Opening};
use super::wire::CommandError;

type Result<T> = std::result::Result<T, CommandError>;

/// Why the store was not opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Type)]
#[serde(rename_all = "snake_case")]
pub enum StoreProblemKind {
    /// `quick_check` or the WAL check found damage.
    Damaged,
    /// Its schema is newer than this build reads.
    Newer,
}

/// What the recovery screen shows.
#[derive(Debug, Clone, Serialize, Type)]
pub struct StoreProblem {
    pub kind: StoreProblemKind,
    /// The sentence the CLI prints too.
    pub message: String,
    /// The store's file.
    pub store: String,
    /// The newest backup this build opens (for a newer store: one of this build's schema).
    pub backup: Option<BackupFile>,
    /// The same command on a terminal.
    pub command: Option<String>,
}

/// The problem `e` describes, when it is one a backup can answer (damaged or newer); any
/// other error is not.
pub fn problem_of(e: &RuntimeError, data_dir: &Path) -> Option<StoreProblem> {
    let RuntimeError::Store(store_error) = e else {
        return None;
    };
    let kind = match store_error {
        StoreError::Damaged { .. } => StoreProblemKind::Damaged,
        StoreError::NewerSchema { .. } => StoreProblemKind::Newer,
        _ => return None,
    };
    // The state names the backup that fits; asking it never writes to the store.
    let backup = match data::store_state(data_dir) {
        Ok(StoreState::Damaged { backup, .. } | StoreState::Newer { backup, .. }) => backup,
        Ok(_) => None,
        Err(err) => {
            tracing::warn!(error = %err, "could not look for a backup of the store");
            None
        }
    };
    Some(StoreProblem {
        kind,
        message: store_error.to_string(),
        store: data::store_path(data_dir).display().to_string(),
        command: backup
            .as_ref()
            .map(|b| format!("pocketpilot backup restore {}", b.name)),
        backup,
    })
}

/// Why the window is on the recovery screen, or `None` for the app as usual.
#[tauri::command]
#[specta::specta]
pub async fn store_problem(state: State<'_, AppState>) -> Result<Option<StoreProblem>> {
    Ok(match state.settled().await {
        Some(Opening::Problem(p)) => Some(p),
        Some(Opening::Open | Opening::Pending | Opening::Failed(_)) | None => None,
    })
}

/// What putting a backup back did, for the screen's last word before the app opens.
#[derive(Debug, Clone, Serialize, Type)]
pub struct Recovered {
    pub restored: Restored,
    /// Where the store that was replaced went (a folder, or a backup's file).
    pub kept: Option<String>,
}

/// Puts the backup `name` in place of the store, opens it and starts the app's work (tray,
/// triggers, interrupted runs); the window then reloads into the app. Refused unless the
/// window is on the recovery screen.
#[tauri::command]
#[specta::specta]
pub async fn recover_store(
    app: AppHandle,
    state: State<'_, AppState>,
    name: String,
) -> Result<Recovered> {
    if state.problem().is_none() {
        return Err(CommandError::new(
            pocketpilot_protocol::ErrorKind::NotPending,
            "the store is open: use Settings → Data to restore a backup",
        ));
    }
    let data_dir = state.data_dir().to_owned();
    let opened = tauri::async_runtime::spawn_blocking(move || {
        let restored = data::restore(&data_dir, Path::new(&name))
            .map_err(|e| RuntimeError::Store(StoreError::from(e)))?;
        let runtime = Runtime::open(&data_dir)?;
        Ok::<_, RuntimeError>((restored, runtime))
    })
    .await
    .map_err(|e| {
        CommandError::new(
            pocketpilot_protocol::ErrorKind::Io,
            format!("the restore did not finish: {e}"),
        )
    })?;
    let (restored, runtime) = opened?;
    let kept = match &restored.kept {
        Kept::Backup { file } => Some(file.path.clone()),
        Kept::SetAside { dir } => Some(dir.clone()),
        Kept::Nothing => None,
    };
    state.open(runtime.clone());
    super::start_services(&app, runtime);
    tracing::info!(from = %restored.from, ?kept, "the store was put back from a backup");
    Ok(Recovered { restored, kept })
}
