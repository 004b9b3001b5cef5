//! Builds the provider for one run from the task's provider spec and the settings.
use std::sync::Arc;

use pocketpilot_model::keychain::{self, KeychainError};
use pocketpilot_model::{OpenAiConfig, OpenAiProvider, Provider, ProviderSpec, ScriptedProvider};

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

/// The provider a task's stored spec names (`scripted:FILE`, or absent for the configured
/// model); an unknown spec is refused with what to write instead.
pub fn build(
    spec: Option<&str>,
    settings: &ProviderSettings,
) -> Result<Arc<dyn Provider>, ProviderSetupError> {
    let spec =
        ProviderSpec::from_stored(spec).map_err(|e| ProviderSetupError::Invalid(e.to_string()))?;
    build_spec(&spec, settings)
}

/// The provider of a parsed spec: the script's, or the configured model's.
pub fn build_spec(
    spec: &ProviderSpec,
    settings: &ProviderSettings,
) -> Result<Arc<dyn Provider>, ProviderSetupError> {
    match spec {
        ProviderSpec::Scripted(path) => {
            let p = ScriptedProvider::from_file(path)
                .map_err(|e| ProviderSetupError::Invalid(e.to_string()))?;
            Ok(Arc::new(p))
        }
        ProviderSpec::Configured => openai(settings),
    }
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
