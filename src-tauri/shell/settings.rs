//! The settings screen's commands: provider, API key (write-only), limits, workspace
//! policy. Each: one call into core (`settings_api`), its error mapped.
use pocketpilot_core::ops;
use pocketpilot_protocol::{
    EnvOverride, LimitsForm, McpSecret, MoneyBudgetsForm, MoneySettings, PriceForm, PriceRow,
    ProviderForm, SessionTitles, Setup,
};
use tauri::State;

use super::wire::{CommandError, PolicyRules};
use super::{call, AppState};

type Result<T> = std::result::Result<T, CommandError>;

/// Whether a model is configured; the window leads to the settings screen when not.
#[tauri::command]
#[specta::specta]
pub async fn setup_status(state: State<'_, AppState>) -> Result<Setup> {
    call(&state, |rt| rt.call(ops::GetSetupStatus {})).await
}

/// The provider as stored (the environment's overrides are `setting_overrides`).
#[tauri::command]
#[specta::specta]
pub async fn provider_settings(state: State<'_, AppState>) -> Result<ProviderForm> {
    call(&state, |rt| rt.call(ops::GetProviderForm {})).await
}

/// Saves the form's fields over what is stored; what the form does not show is kept.
#[tauri::command]
#[specta::specta]
pub async fn set_provider_settings(
    state: State<'_, AppState>,
    settings: ProviderForm,
) -> Result<()> {
    call(&state, move |rt| {
        rt.call(ops::SaveProviderForm { form: settings })
    })
    .await
}

/// The fields an environment variable overrides in this app, shown next to them.
#[tauri::command]
#[specta::specta]
pub async fn setting_overrides(state: State<'_, AppState>) -> Result<Vec<EnvOverride>> {
    call(&state, |rt| rt.call(ops::SettingOverrides {})).await
}

/// Files the key in the OS keychain under the provider's name. Nothing reads it back.
#[tauri::command]
#[specta::specta]
pub async fn set_api_key(state: State<'_, AppState>, key: String) -> Result<()> {
    call(&state, move |rt| {
        rt.call(ops::SetApiKey {
            key: key.to_string(),
        })
    })
    .await
}

/// Removes the provider's key; false when there was none.
#[tauri::command]
#[specta::specta]
pub async fn delete_api_key(state: State<'_, AppState>) -> Result<bool> {
    call(&state, |rt| rt.call(ops::DeleteApiKey {})).await
}

/// Whether a key is stored for the provider: a yes or no, never the key.
#[tauri::command]
#[specta::specta]
pub async fn api_key_stored(state: State<'_, AppState>) -> Result<bool> {
    call(&state, |rt| rt.call(ops::ApiKeyStored {})).await
}

/// Asks the configured model for a one-word reply.
#[tauri::command]
#[specta::specta]
pub async fn test_connection(state: State<'_, AppState>) -> Result<String> {
    Ok(state.runtime().await?.call(ops::TestConnection {}).await?)
}

/// The models the server at `base_url` lists, for the model picker.
#[tauri::command]
#[specta::specta]
pub async fn list_models(state: State<'_, AppState>, base_url: String) -> Result<Vec<String>> {
    Ok(state
        .runtime()
        .await?
        .call(ops::ListModels {
            base_url: base_url.to_string(),
        })
        .await?)
}

/// The secret variables the MCP servers declare, each with whether one is stored.
#[tauri::command]
#[specta::specta]
pub async fn mcp_secrets(state: State<'_, AppState>) -> Result<Vec<McpSecret>> {
    call(&state, |rt| rt.call(ops::ListMcpSecrets {})).await
}

/// Files an MCP server's secret in the OS keychain. Nothing reads it back.
#[tauri::command]
#[specta::specta]
pub async fn set_mcp_secret(
    state: State<'_, AppState>,
    server: String,
    variable: String,
    value: String,
) -> Result<()> {
    call(&state, move |rt| {
        rt.call(ops::SetMcpSecret {
            server: server.to_string(),
            var: variable.to_string(),
            value: value.to_string(),
        })
    })
    .await
}

/// The limits as stored (the environment's overrides are `setting_overrides`).
#[tauri::command]
#[specta::specta]
pub async fn limits(state: State<'_, AppState>) -> Result<LimitsForm> {
    call(&state, |rt| rt.call(ops::GetLimitsForm {})).await
}

#[tauri::command]
#[specta::specta]
pub async fn set_limits(state: State<'_, AppState>, limits: LimitsForm) -> Result<()> {
    call(&state, move |rt| {
        rt.call(ops::SaveLimitsForm { form: limits })
    })
    .await
}

/// Whether new sessions are named by the model after their first answer.
#[tauri::command]
#[specta::specta]
pub async fn session_titles(state: State<'_, AppState>) -> Result<SessionTitles> {
    call(&state, |rt| rt.call(ops::GetSessionTitles {})).await
}

#[tauri::command]
#[specta::specta]
pub async fn set_session_titles(state: State<'_, AppState>, titles: SessionTitles) -> Result<()> {
    call(&state, move |rt| rt.call(ops::SetSessionTitles { titles })).await
}

/// Prices, money budgets as stored, and today's spend against the budgets runs use.
#[tauri::command]
#[specta::specta]
pub async fn money_settings(state: State<'_, AppState>) -> Result<MoneySettings> {
    call(&state, |rt| rt.call(ops::GetMoneySettings {})).await
}

/// Sets one model's prices from the text typed (the runtime checks it).
#[tauri::command]
#[specta::specta]
pub async fn set_price(state: State<'_, AppState>, price: PriceForm) -> Result<PriceRow> {
    call(&state, move |rt| rt.call(ops::SetPrice { form: price })).await
}

/// Removes a model's prices; false when it had none.
#[tauri::command]
#[specta::specta]
pub async fn delete_price(state: State<'_, AppState>, model: String) -> Result<bool> {
    call(&state, move |rt| {
        rt.call(ops::DeletePrice {
            model: model.to_string(),
        })
    })
    .await
}

/// Saves the money budgets from the text typed (blank: none; the runtime checks it).
#[tauri::command]
#[specta::specta]
pub async fn set_money_budgets(
    state: State<'_, AppState>,
    budgets: MoneyBudgetsForm,
) -> Result<()> {
    call(&state, move |rt| {
        rt.call(ops::SetMoneyBudgets { form: budgets })
    })
    .await
}

/// The rules of a workspace (its canonical path, as sessions carry it).
#[tauri::command]
#[specta::specta]
pub async fn policy_rules(state: State<'_, AppState>, workspace: String) -> Result<PolicyRules> {
    call(&state, move |rt| {
        rt.call(ops::GetPolicyRules {
            workspace: workspace.to_string(),
        })
        .map(Into::into)
    })
    .await
}

#[tauri::command]
#[specta::specta]
pub async fn set_policy_rules(
    state: State<'_, AppState>,
    workspace: String,
    rules: PolicyRules,
) -> Result<()> {
    call(&state, move |rt| {
        rt.call(ops::SetPolicyRules {
            workspace: workspace.to_string(),
            rules: rules.into(),
        })
    })
    .await
}

/// Model servers already running on this computer (Ollama, LM Studio, llama.cpp, vLLM on
/// their default ports), for the first-run welcome.
#[tauri::command]
#[specta::specta]
pub async fn local_servers() -> Result<Vec<pocketpilot_core::api::local_servers::FoundServer>> {
    Ok(pocketpilot_core::api::local_servers::find_local_servers().await)
}
