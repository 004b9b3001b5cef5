//! How many tokens the model behind an endpoint can take: its context window.
//!
//! Nothing in the chat-completions protocol says so, so each server is asked in its own
//! way, in this order (the first that answers wins):
//! 1. llama.cpp: `GET {root}/props` → `default_generation_settings.n_ctx` (the window of
//!    one slot, which is what one request gets; `-c 4096 -np 2` gives 2048).
//! 2. `GET {base}/models` → the entry of the configured model: `max_model_len` (vLLM),
//!    `context_length` / `top_provider.context_length` (OpenRouter), `loaded_context_length`
//!    / `max_context_length` (LM Studio), `meta.n_ctx` (newer llama.cpp). llama.cpp's
//!    `meta.n_ctx_train` is deliberately not read: it is what the model was trained with,
//!    not what the server runs.
//! 3. Ollama: `POST {root}/api/show {"model": ...}` → `num_ctx` from its `parameters` when
//!    the Modelfile sets it, else `model_info["<arch>.context_length"]`. Ollama runs with a
//!    smaller `num_ctx` unless told otherwise and silently drops the start of a prompt that
//!    does not fit, so the trained length can overstate the real window there.
//!
//! llama.cpp's `/props` also names the chat template it formats prompts with
//! (`chat_template`): [`discover_server_model`] returns it beside the window, so the
//! runtime knows which tags the model writes its calls in.
//!
//! Then the configured setting ([`OpenAiConfig::context_window`]), then a conservative
//! assumption. Discovery never fails: every probe is bounded in time, and a server that
//! answers none of them (OpenAI itself) just leads to the setting or the assumption.
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::config::OpenAiConfig;
use super::http::client_for;

/// Assumed when nothing better is known. Small enough for most models served locally
/// (a request that fits it fits them), large enough to be useful.
pub const ASSUMED_CONTEXT_WINDOW: u32 = 8192;

/// Bound on each probe (connect, head and body), or the endpoint's idle timeout when
/// shorter. Discovery runs before a turn: a server that does not answer a probe must
/// not hold the run up for long.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Probe bodies are read up to this size (OpenRouter's model list is ~1 MB).
const MAX_PROBE_BODY: usize = 8 * 1024 * 1024;

/// The model's context window and where the figure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextWindow {
    pub tokens: u32,
    pub source: WindowSource,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowSource {
    /// The server said so.
    Discovered(Discovery),
    /// The person's setting (`OpenAiConfig::context_window`), the server did not say.
    Setting,
    /// Nobody said: [`ASSUMED_CONTEXT_WINDOW`].
    Assumed,
}

/// Which question the server answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Discovery {
    /// llama.cpp `GET /props`.
    Props,
    /// An entry of `GET /models`.
    Models,
    /// Ollama `POST /api/show`.
    Ollama,
}

/// What the server says of the model behind an endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerModel {
    pub window: ContextWindow,
    /// The chat template the server formats prompts with (llama.cpp `/props`
    /// `chat_template`); `None` when it does not say, or was not asked because the
    /// person set the window.
    pub chat_template: Option<String>,
    /// Whether the server is llama.cpp (it answered `/props`), which counts a request's
    /// prompt exactly before it is sent (see [`super::count_prompt`]).
    pub counts_prompts: bool,
}

/// The model's window: the setting when one is set, else what the server says, else
/// [`ASSUMED_CONTEXT_WINDOW`].
pub async fn discover_context_window(config: &OpenAiConfig) -> ContextWindow {
    discover_server_model(config).await.window
}

/// The model's window (as [`discover_context_window`]) and the server's chat template.
pub async fn discover_server_model(config: &OpenAiConfig) -> ServerModel {
    // A window the person set wins over what the server says: they may run it with a
    // smaller context than it reports (Ollama's `num_ctx`), and it spares the probes.
    if let Some(tokens) = config.context_window.filter(|n| *n > 0) {
        return ServerModel {
            window: ContextWindow {
                tokens,
                source: WindowSource::Setting,
            },
            chat_template: None,
            counts_prompts: false,
        };
    }
    let (window, chat_template, counts_prompts) = probe(config).await;
    ServerModel {
        window: window.unwrap_or(ContextWindow {
            tokens: ASSUMED_CONTEXT_WINDOW,
            source: WindowSource::Assumed,
        }),
        chat_template,
        counts_prompts,
    }
}

/// The window, from the first probe that answers it, the chat template when `/props`
/// names one, and whether `/props` answered at all (llama.cpp).
async fn probe(config: &OpenAiConfig) -> (Option<ContextWindow>, Option<String>, bool) {
    let client = match client_for(config) {
        Ok((client, _)) => client,
        Err(e) => {
            tracing::debug!("context window discovery skipped: {e}");
            return (None, None, false);
        }
    };
    let bound = PROBE_TIMEOUT.min(config.idle_timeout.max(Duration::from_millis(100)));
    let root = config.server_root();
    let base = config.base_url.trim_end_matches('/');
    let found = |tokens, how| {
        Some(ContextWindow {
            tokens,
            source: WindowSource::Discovered(how),
        })
    };
    let props = get_json(&client, &format!("{root}/props"), None, bound).await;
    let chat_template = props.as_ref().and_then(props_chat_template);
    let llama = props.as_ref().and_then(props_window);
    if let Some(n) = llama {
        return (found(n, Discovery::Props), chat_template, true);
    }
    if let Some(models) = get_json(&client, &format!("{base}/models"), None, bound).await {
        if let Some(n) = models_window(&models, &config.model) {
            return (found(n, Discovery::Models), chat_template, false);
        }
    }
    let show = serde_json::json!({ "model": config.model, "name": config.model });
    if let Some(show) = get_json(&client, &format!("{root}/api/show"), Some(&show), bound).await {
        if let Some(n) = ollama_window(&show) {
            return (found(n, Discovery::Ollama), chat_template, false);
        }
    }
    (None, chat_template, false)
}

/// Why a bounded probe gave no JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProbeFailure {
    /// The server answered, but not with this dialect (an error status, not JSON, too
    /// large): asking again gives the same.
    Refused,
    /// No answer in time, or no connection: a busy or restarting server may answer the
    /// next one.
    NoAnswer,
}

/// One bounded probe: the JSON of a 2xx answer, or `None` (logged at debug: a server
/// that does not speak this dialect is the normal case, not an error).
pub(crate) async fn get_json(
    client: &reqwest::Client,
    url: &str,
    post: Option<&Value>,
    bound: Duration,
) -> Option<Value> {
    probe_json(client, url, post, bound).await.ok()
}

/// [`get_json`], saying why there is no JSON.
pub(crate) async fn probe_json(
    client: &reqwest::Client,
    url: &str,
    post: Option<&Value>,
    bound: Duration,
) -> Result<Value, ProbeFailure> {
    let request = match post {
        Some(body) => client.post(url).json(body),
        None => client.get(url),
    };
    let read = async {
        let mut response = request
            .send()
            .await
            .map_err(|e| (ProbeFailure::NoAnswer, e.to_string()))?;
        if !response.status().is_success() {
            let status = response.status().as_u16();
            return Err((ProbeFailure::Refused, format!("HTTP {status}")));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| (ProbeFailure::NoAnswer, e.to_string()))?
        {
            body.extend_from_slice(&chunk);
            if body.len() > MAX_PROBE_BODY {
                return Err((ProbeFailure::Refused, "the answer is too large".to_owned()));
            }
        }
        serde_json::from_slice::<Value>(&body)
            .map_err(|e| (ProbeFailure::Refused, format!("not JSON: {e}")))
    };
    match tokio::time::timeout(bound, read).await {
        Ok(Ok(json)) => Ok(json),
        Ok(Err((failure, why))) => {
            tracing::debug!(url, "context window probe: {why}");
            Err(failure)
        }
        Err(_) => {
            tracing::debug!(url, "context window probe timed out");
            Err(ProbeFailure::NoAnswer)
        }
    }
}

/// A positive token count, from a JSON number (integer or float) or a numeric string.
fn tokens(v: Option<&Value>) -> Option<u32> {
    let n = match v? {
        Value::Number(n) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 1.0).map(|f| f as u64))?,
        Value::String(s) => s.trim().parse::<u64>().ok()?,
        _ => return None,
    };
    u32::try_from(n).ok().filter(|n| *n > 0)
}

pub(crate) fn props_window(props: &Value) -> Option<u32> {
    tokens(props.pointer("/default_generation_settings/n_ctx"))
        // Builds before default_generation_settings existed had it at the top.
        .or_else(|| tokens(props.get("n_ctx")))
}

/// llama.cpp's chat template, when `/props` names a non-empty one.
pub(crate) fn props_chat_template(props: &Value) -> Option<String> {
    props
        .get("chat_template")
        .and_then(Value::as_str)
        .filter(|t| !t.trim().is_empty())
        .map(str::to_owned)
}

pub(crate) fn models_window(models: &Value, model: &str) -> Option<u32> {
    let entries = models
        .get("data")
        .or_else(|| models.get("models"))
        .and_then(Value::as_array)?;
    let id_of = |e: &Value| {
        e.get("id")
            .or_else(|| e.get("name"))
            .or_else(|| e.get("model"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    // The configured model; a server that lists only one serves that one whatever it
    // is called (llama.cpp and vLLM answer any model name).
    let entry = entries
        .iter()
        .find(|e| id_of(e).as_deref() == Some(model))
        .or_else(|| (entries.len() == 1).then(|| &entries[0]))?;
    tokens(entry.get("max_model_len"))
        .or_else(|| tokens(entry.get("loaded_context_length")))
        .or_else(|| tokens(entry.get("context_length")))
        .or_else(|| tokens(entry.pointer("/top_provider/context_length")))
        .or_else(|| tokens(entry.get("max_context_length")))
        // Newer llama.cpp lists the window it runs with beside the training length (for
        // a proxy that forwards only /v1).
        .or_else(|| tokens(entry.pointer("/meta/n_ctx")))
}

pub(crate) fn ollama_window(show: &Value) -> Option<u32> {
    // The Modelfile's `PARAMETER num_ctx N` is what the server runs with.
    let from_parameters = show
        .get("parameters")
        .and_then(Value::as_str)
        .and_then(|text| {
            text.lines().find_map(|line| {
                let mut words = line.split_whitespace();
                (words.next() == Some("num_ctx"))
                    .then(|| words.next()?.parse::<u32>().ok())
                    .flatten()
            })
        })
        .filter(|n| *n > 0);
    if from_parameters.is_some() {
        return from_parameters;
    }
    let info = show.get("model_info")?.as_object()?;
    let arch = info.get("general.architecture").and_then(Value::as_str);
    if let Some(n) = arch.and_then(|a| tokens(info.get(&format!("{a}.context_length")))) {
        return Some(n);
    }
    info.iter()
        .find(|(k, _)| k.ends_with(".context_length"))
        .and_then(|(_, v)| tokens(Some(v)))
}

#[cfg(test)]
#[path = "window_tests.rs"]
mod tests;
