//! The settings screen's commands: provider, API key (write-only), limits, workspace
//! policy. Each: take the state, call the runtime (or the keychain), convert to the wire.
use pocketpilot_model::keychain;
use pocketpilot_protocol::ErrorKind;
use tauri::State;

use super::wire::{CommandError, Limits, PolicyRules, ProviderForm, Setup};
use super::AppState;

type Result<T> = std::result::Result<T, CommandError>;

/// Whether a model is configured; the window leads to the settings screen when not.
#[tauri::command]
#[specta::specta]
pub fn setup_status(state: State<'_, AppState>) -> Result<Setup> {
    Ok(Setup::of(&state.runtime.provider_settings()?))
}

#[tauri::command]
#[specta::specta]
pub fn provider_settings(state: State<'_, AppState>) -> Result<ProviderForm> {
    Ok(state.runtime.provider_settings()?.into())
}

/// Saves the form's fields; what the form does not show (extra headers) is kept.
#[tauri::command]
#[specta::specta]
pub fn set_provider_settings(state: State<'_, AppState>, settings: ProviderForm) -> Result<()> {
    let stored = state.runtime.provider_settings()?;
    Ok(state
        .runtime
        .set_provider_settings(&settings.apply_to(stored))?)
}

/// Files the key in the OS keychain under the provider's name. Nothing reads it back.
#[tauri::command]
#[specta::specta]
pub fn set_api_key(state: State<'_, AppState>, key: String) -> Result<()> {
    let key = key.trim();
    if key.is_empty() {
        return Err(CommandError::new(
            ErrorKind::InvalidArguments,
            "the API key is empty",
        ));
    }
    Ok(keychain::set_key(
        &state.runtime.provider_settings()?.name,
        key,
    )?)
}

/// Removes the provider's key; false when there was none.
#[tauri::command]
#[specta::specta]
pub fn delete_api_key(state: State<'_, AppState>) -> Result<bool> {
    Ok(keychain::delete_key(
        &state.runtime.provider_settings()?.name,
    )?)
}

/// Whether a key is stored for the provider: a yes or no, never the key.
#[tauri::command]
#[specta::specta]
pub fn api_key_stored(state: State<'_, AppState>) -> Result<bool> {
    Ok(keychain::get_key(&state.runtime.provider_settings()?.name)?.is_some())
}

/// Asks the configured model for a one-word reply.
#[tauri::command]
#[specta::specta]
pub async fn test_connection(state: State<'_, AppState>) -> Result<String> {
    Ok(state.runtime.test_connection().await?)
}

#[tauri::command]
#[specta::specta]
pub fn limits(state: State<'_, AppState>) -> Result<Limits> {
    Ok(state.runtime.limits()?.into())
}

#[tauri::command]
#[specta::specta]
pub fn set_limits(state: State<'_, AppState>, limits: Limits) -> Result<()> {
    Ok(state.runtime.set_limits(&limits.into())?)
}

/// The rules of a workspace (its canonical path, as sessions carry it).
#[tauri::command]
#[specta::specta]
pub fn policy_rules(state: State<'_, AppState>, workspace: String) -> Result<PolicyRules> {
    Ok(state.runtime.policy_rules(&workspace)?.into())
}

#[tauri::command]
#[specta::specta]
pub fn set_policy_rules(
    state: State<'_, AppState>,
    workspace: String,
    rules: PolicyRules,
) -> Result<()> {
    Ok(state.runtime.set_policy_rules(&workspace, &rules.into())?)
}
