//! The context window's commands (issue 13): the session's meter, its fresh contexts
//! (the transcript's dividers), "Compact now" and "Fresh context". Each: one call into
//! core, its error mapped.
use pocketpilot_core::engine::context::ContextFailure;
use pocketpilot_core::engine::inbox::Admitted;
use pocketpilot_core::ops;
use pocketpilot_core::RuntimeError;
use pocketpilot_protocol::{CompactReport, ContextMarks, ContextUse};
use tauri::State;

use super::wire::CommandError;
use super::{call, AppState};

type Result<T> = std::result::Result<T, CommandError>;

impl From<ContextFailure> for CommandError {
    fn from(e: ContextFailure) -> Self {
        Self::new(e.kind(), e)
    }
}

/// Used / window tokens of the session's next request, and where the window came from.
#[tauri::command]
#[specta::specta]
pub async fn context_use(state: State<'_, AppState>, session_id: i64) -> Result<ContextUse> {
    let used = state
        .runtime()
        .await?
        .call(ops::GetContextUse { session_id })
        .await;
    Ok(used.map_err(RuntimeError::from)?)
}

/// The session's compactions and fresh contexts: the transcript's dividers.
#[tauri::command]
#[specta::specta]
pub async fn context_marks(state: State<'_, AppState>, session_id: i64) -> Result<ContextMarks> {
    call(&state, move |rt| {
        rt.call(ops::GetContextMarks { session_id })
    })
    .await
}

/// Compacts an idle session's context now, with its provider.
#[tauri::command]
#[specta::specta]
pub async fn compact_now(state: State<'_, AppState>, session_id: i64) -> Result<CompactReport> {
    Ok(state
        .runtime()
        .await?
        .call(ops::CompactNow { session_id })
        .await?)
}

/// Starts a new model view for the session (a `reset` submission).
#[tauri::command]
#[specta::specta]
pub async fn fresh_context(state: State<'_, AppState>, session_id: i64) -> Result<Admitted> {
    call(&state, move |rt| rt.call(ops::FreshContext { session_id })).await
}
