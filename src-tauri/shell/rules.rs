//! The "Instructions in effect" screen's commands (issue 18): the workspace's instruction
//! files, memories and skills. Each: one call into core (`rules_api`), its error mapped.
use pocketpilot_core::ops;
use pocketpilot_protocol::{HooksFileInfo, InstructionText, Memory, MemoryScope, RulesInEffect};
use tauri::{AppHandle, State};

use super::wire::CommandError;
use super::{call, AppState};

type Result<T> = std::result::Result<T, CommandError>;

/// What a workspace's runs are given; with `session`, the instruction files of the
/// directories its agent worked in.
#[tauri::command]
#[specta::specta]
pub async fn rules_in_effect(
    state: State<'_, AppState>,
    workspace: String,
    session: Option<i64>,
) -> Result<RulesInEffect> {
    call(&state, move |rt| {
        rt.call(ops::GetRulesInEffect {
            workspace: workspace.to_string(),
            session,
        })
    })
    .await
}

/// One instruction file in effect, to read in the window; any other path is refused.
#[tauri::command]
#[specta::specta]
pub async fn instruction_text(
    state: State<'_, AppState>,
    workspace: String,
    session: Option<i64>,
    path: String,
) -> Result<InstructionText> {
    call(&state, move |rt| {
        rt.call(ops::GetInstructionText {
            workspace: workspace.to_string(),
            session,
            rel: path.to_string(),
        })
    })
    .await
}

/// Opens one instruction file in effect in the desktop's default app.
#[tauri::command]
#[specta::specta]
pub async fn open_instruction(
    app: AppHandle,
    state: State<'_, AppState>,
    workspace: String,
    session: Option<i64>,
    path: String,
) -> Result<()> {
    let file = call(&state, move |rt| {
        rt.call(ops::InstructionFile {
            workspace: workspace.to_string(),
            session,
            rel: path.to_string(),
        })
    })
    .await?;
    super::open_in_desktop(&app, &file)
}

#[tauri::command]
#[specta::specta]
pub async fn add_memory(
    state: State<'_, AppState>,
    scope: MemoryScope,
    workspace: Option<String>,
    text: String,
) -> Result<Memory> {
    call(&state, move |rt| {
        rt.call(ops::AddMemory {
            scope,
            workspace: workspace.as_deref().map(|s| s.to_string()),
            text: text.to_string(),
        })
    })
    .await
}

#[tauri::command]
#[specta::specta]
pub async fn edit_memory(state: State<'_, AppState>, id: i64, text: String) -> Result<Memory> {
    call(&state, move |rt| {
        rt.call(ops::EditMemory {
            id,
            text: text.to_string(),
        })
    })
    .await
}

#[tauri::command]
#[specta::specta]
pub async fn delete_memory(state: State<'_, AppState>, id: i64) -> Result<()> {
    call(&state, move |rt| rt.call(ops::DeleteMemory { id })).await
}

/// Switches a skill (by its folder) on or off for every run from now on.
#[tauri::command]
#[specta::specta]
pub async fn set_skill_enabled(
    state: State<'_, AppState>,
    dir: String,
    enabled: bool,
) -> Result<()> {
    call(&state, move |rt| {
        rt.call(ops::SetSkillEnabled {
            dir: dir.to_string(),
            enabled,
        })
    })
    .await
}

/// Whether memories the agent proposes are kept without asking.
#[tauri::command]
#[specta::specta]
pub async fn set_memory_auto_accept(state: State<'_, AppState>, on: bool) -> Result<()> {
    call(&state, move |rt| rt.call(ops::SetMemoryAutoAccept { on })).await
}

/// Consents to the workspace's hooks file with exactly the content shown (`hash`).
#[tauri::command]
#[specta::specta]
pub async fn consent_hooks(
    state: State<'_, AppState>,
    workspace: String,
    hash: String,
) -> Result<HooksFileInfo> {
    call(&state, move |rt| {
        rt.call(ops::ConsentHooks {
            workspace: workspace.to_string(),
            hash: Some(hash.to_string()),
        })
    })
    .await
}

#[tauri::command]
#[specta::specta]
pub async fn revoke_hooks(state: State<'_, AppState>, workspace: String) -> Result<()> {
    call(&state, move |rt| {
        rt.call(ops::RevokeHooks {
            workspace: workspace.to_string(),
        })
    })
    .await
}
