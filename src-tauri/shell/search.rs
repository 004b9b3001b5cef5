//! Finding past work from the window: one call into core, its error mapped.
use pocketpilot_core::ops;
use pocketpilot_core::store::search::SearchHit;
use tauri::State;

use super::wire::CommandError;
use super::{call, AppState};

/// The newest transcript entries matching what was typed (at most `limit`), only in
/// `workspace` when given.
#[tauri::command]
#[specta::specta]
pub async fn search_entries(
    state: State<'_, AppState>,
    query: String,
    workspace: Option<String>,
    limit: u32,
) -> Result<Vec<SearchHit>, CommandError> {
    call(&state, move |rt| {
        rt.call(ops::Search {
            typed: query.to_string(),
            workspace: workspace.as_deref().map(|s| s.to_string()),
            limit,
        })
    })
    .await
}
