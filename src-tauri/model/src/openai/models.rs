//! The models a server offers (`GET {base_url}/models`), for the settings screen's picker.
use std::time::Duration;

use serde_json::Value;

use super::config::OpenAiConfig;
use super::http::{client_for, error_chain};
use crate::provider::ProviderError;

/// How long the picker waits for the list: a person is looking at the form.
const LIST_TIMEOUT: Duration = Duration::from_secs(15);

/// The model ids the server lists, sorted. OpenAI, OpenRouter, Ollama, LM Studio,
/// llama.cpp's server and vLLM all answer `{"data": [{"id": ...}, ...]}`.
pub async fn list_models(config: &OpenAiConfig) -> Result<Vec<String>, ProviderError> {
    let (client, _) = client_for(config)?;
    let url = format!("{}/models", config.base_url.trim_end_matches('/'));
    let response = client
        .get(&url)
        .timeout(LIST_TIMEOUT)
        .send()
        .await
        .map_err(|e| {
            if e.is_timeout() {
                ProviderError::Timeout(format!("{url}: {}", error_chain(&e)))
            } else {
                ProviderError::Connect(format!("{url}: {}", error_chain(&e)))
            }
        })?;
    let status = response.status().as_u16();
    let body = response
        .text()
        .await
        .map_err(|e| ProviderError::Stream(format!("{url}: {}", error_chain(&e))))?;
    if !(200..300).contains(&status) {
        let message: String = body.chars().take(300).collect();
        return Err(match status {
            401 | 403 => ProviderError::Auth { status, message },
            404 => ProviderError::NotFound {
                url,
                model: String::new(),
                message,
            },
            500..=599 => ProviderError::Server { status, message },
            _ => ProviderError::Request { status, message },
        });
    }
    model_ids(&body)
        .ok_or_else(|| ProviderError::InvalidResponse(format!("{url} did not answer a model list")))
}

fn model_ids(body: &str) -> Option<Vec<String>> {
    let v: Value = serde_json::from_str(body).ok()?;
    let data = v.get("data").or_else(|| v.get("models"))?.as_array()?;
    let mut ids: Vec<String> = data
        .iter()
        .filter_map(|m| {
            m.get("id")
                .or_else(|| m.get("name"))?
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    ids.sort();
    ids.dedup();
    Some(ids)
}

#[cfg(test)]
mod tests {
    use super::model_ids;

    #[test]
    fn a_model_list_is_read_from_the_openai_and_ollama_shapes() {
        let openai = r#"{"object":"list","data":[{"id":"b"},{"id":"a"},{"id":"a"}]}"#;
        assert_eq!(model_ids(openai).unwrap(), vec!["a", "b"]);
        let ollama = r#"{"models":[{"name":"llama3:8b"}]}"#;
        assert_eq!(model_ids(ollama).unwrap(), vec!["llama3:8b"]);
        assert!(model_ids("<html>").is_none());
    }
}
