//! The change review commands (issue 16): what each task changed, its diffs, undo and
//! redo, and the journal's retention settings. Each is one call into core.
use pocketpilot_core::api::fork::{Fork, ForkPlace};
use pocketpilot_core::engine::changes::rewind::RewindReport;
use pocketpilot_core::engine::changes::undo::{Options, Target, TaskChanges};
use pocketpilot_core::ops;
use pocketpilot_protocol::changes::{ChangeList, ChangeSettings, UndoReport};
use tauri::{AppHandle, State};

use super::wire::CommandError;
use super::{call, AppState};

type Result<T> = std::result::Result<T, CommandError>;

/// Per task of a session: how many files it changed and whether that can be undone.
#[tauri::command]
#[specta::specta]
pub async fn session_changes(
    state: State<'_, AppState>,
    session_id: i64,
) -> Result<Vec<TaskChanges>> {
    call(&state, move |rt| {
        rt.call(ops::ChangeSummaries { session_id })
    })
    .await
}

/// A task's changed files with their diffs.
#[tauri::command]
#[specta::specta]
pub async fn task_changes(state: State<'_, AppState>, task_id: i64) -> Result<ChangeList> {
    let target = Target::Task {
        task_id,
        call_id: None,
    };
    call(&state, move |rt| rt.call(ops::GetChangeList { target })).await
}

/// Undoes a task's changes; files changed since refuse it unless `keep_theirs`.
#[tauri::command]
#[specta::specta]
pub async fn undo_task(
    state: State<'_, AppState>,
    task_id: i64,
    keep_theirs: bool,
) -> Result<UndoReport> {
    let target = Target::Task {
        task_id,
        call_id: None,
    };
    let opts = Options::apply(keep_theirs);
    call(&state, move |rt| rt.call(ops::Undo { target, opts })).await
}

/// Undoes what a task did to some of its files only; the same conflict check as a task's
/// undo, and it can be redone.
#[tauri::command]
#[specta::specta]
pub async fn undo_files(
    state: State<'_, AppState>,
    task_id: i64,
    paths: Vec<String>,
    keep_theirs: bool,
) -> Result<UndoReport> {
    let target = Target::Files { task_id, paths };
    let opts = Options::apply(keep_theirs);
    call(&state, move |rt| rt.call(ops::Undo { target, opts })).await
}

/// Opens a file of a task's workspace in the desktop's default app. The runtime resolves
/// it and refuses anything outside that workspace.
#[tauri::command]
#[specta::specta]
pub async fn open_task_file(
    app: AppHandle,
    state: State<'_, AppState>,
    task_id: i64,
    path: String,
) -> Result<()> {
    let real = call(&state, move |rt| {
        rt.call(ops::TaskFile {
            task_id,
            rel: path.to_string(),
        })
    })
    .await?;
    super::open_in_desktop(&app, &real)
}

/// Redoes an undo.
#[tauri::command]
#[specta::specta]
pub async fn redo_undo(state: State<'_, AppState>, undo_id: i64) -> Result<UndoReport> {
    call(&state, move |rt| {
        rt.call(ops::Redo {
            undo_id,
            opts: Options::default(),
        })
    })
    .await
}

/// Rewinds a session to before one of the person's messages: the conversation and the
/// files together; files changed since refuse it unless `keep_theirs`.
#[tauri::command]
#[specta::specta]
pub async fn rewind_session(
    state: State<'_, AppState>,
    session_id: i64,
    to_entry: i64,
    keep_theirs: bool,
) -> Result<RewindReport> {
    let opts = Options::apply(keep_theirs);
    call(&state, move |rt| {
        rt.call(ops::Rewind {
            session_id,
            to_entry,
            opts,
        })
    })
    .await
}

/// A new session from before one of the person's messages. No `place`: the runtime
/// chooses (a git worktree for a workspace in a git work tree, else a copy) and the reply
/// says which.
#[tauri::command]
#[specta::specta]
pub async fn fork_session(
    state: State<'_, AppState>,
    session_id: i64,
    at_entry: i64,
    place: Option<ForkPlace>,
) -> Result<Fork> {
    call(&state, move |rt| {
        rt.call(ops::ForkSession {
            session_id,
            at_entry,
            place,
            path: None,
        })
    })
    .await
}

#[tauri::command]
#[specta::specta]
pub async fn change_settings(state: State<'_, AppState>) -> Result<ChangeSettings> {
    call(&state, |rt| rt.call(ops::GetChangeSettings {})).await
}

#[tauri::command]
#[specta::specta]
pub async fn set_change_settings(
    state: State<'_, AppState>,
    settings: ChangeSettings,
) -> Result<()> {
    call(&state, move |rt| {
        rt.call(ops::SetChangeSettings { settings })
    })
    .await
}
