//! Builds the provider for one run from the task's provider spec and the settings.
use std::path::Path;
use std::sync::Arc;

use pocketpilot_model::keychain::{self, KeychainError};
use pocketpilot_model::{OpenAiConfig, OpenAiProvider, Provider, ScriptedProvider};

use crate::config::ProviderSettings;

pub const NO_MODEL: &str = "No model is configured. Set one in Settings → Provider, or run \
`pocketpilot provider set --base-url URL --model NAME` (headless: POCKETPILOT_BASE_URL and POCKETPILOT_MODEL); or install the built-in model: `scripts/setup.sh`, or `pocketpilot models import FILE.gguf`";

#[derive(Debug, thiserror::Error)]
pub enum ProviderSetupError {
    #[error("{NO_MODEL}")]
    NoModel,
    #[error("{0}")]
    Invalid(String),
}

/// `spec` is `scripted:FILE` for the scripted provider, or absent for the configured one.
pub fn build(
    spec: Option<&str>,
    settings: &ProviderSettings,
) -> Result<Arc<dyn Provider>, ProviderSetupError> {
    if let Some(path) = spec.and_then(|s| s.strip_prefix("scripted:")) {
        let p = ScriptedProvider::from_file(Path::new(path))
            .map_err(|e| ProviderSetupError::Invalid(e.to_string()))?;
        return Ok(Arc::new(p));
    }
    if let Some(other) = spec.filter(|s| !s.is_empty() && *s != "settings") {
        return Err(ProviderSetupError::Invalid(format!(
            "unknown provider `{other}`: use `scripted:FILE`, or leave it out to use the configured model"
        )));
    }
    let (Some(_base_url), Some(_model)) = (&settings.base_url, &settings.model) else {
        return Err(ProviderSetupError::NoModel);
    };
    openai(settings)
}

fn openai(settings: &ProviderSettings) -> Result<Arc<dyn Provider>, ProviderSetupError> {
    let config = openai_config(settings)?;
    let provider =
        OpenAiProvider::new(config).map_err(|e| ProviderSetupError::Invalid(e.to_string()))?;
    Ok(Arc::new(provider))
}

/// The configured model's client settings (also what the context window is discovered
/// with, issue 13).
pub fn openai_config(settings: &ProviderSettings) -> Result<OpenAiConfig, ProviderSetupError> {
    let (Some(base_url), Some(model)) = (&settings.base_url, &settings.model) else {
        return Err(ProviderSetupError::NoModel);
    };
    // The key comes from the environment or the keychain, never from the store. A local
    // server often needs none, so a keychain that cannot be reached is only a warning.
    let api_key = match settings.api_key_override.clone().map_or_else(
        || keychain::resolve_api_key(&settings.name),
        |k| Ok(Some(k)),
    ) {
        Ok(k) => k,
        Err(KeychainError::Unavailable(reason)) => {
            tracing::warn!(%reason, "the OS keychain is not reachable; going on without an API key");
            None
        }
        Err(e) => return Err(ProviderSetupError::Invalid(e.to_string())),
    };
    let mut config = OpenAiConfig {
        base_url: base_url.clone(),
        model: model.clone(),
        local: settings.api_key_override.is_some(),
        api_key,
        extra_headers: settings.extra_headers.clone(),
        temperature: settings.temperature,
        max_tokens: settings.max_tokens,
        stream: settings.stream,
        stream_caps: settings.stream_caps,
        ..OpenAiConfig::default()
    };
    config.apply_env();
    Ok(config)
}
