//! What the OpenAI-compatible provider needs to know: where, which model, how patient.
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Settings of one OpenAI-compatible endpoint.
///
/// Everything but the API key is plain data that may be stored in settings; the key is
/// skipped by serde and redacted from `Debug` (it comes from the keychain or
/// `POCKETPILOT_API_KEY`, see [`crate::keychain::resolve_api_key`]).
#[derive(Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct OpenAiConfig {
    /// Up to and including the version segment: `https://api.openai.com/v1`,
    /// `http://127.0.0.1:11434/v1`. `/chat/completions` is appended.
    pub base_url: String,
    pub model: String,
    /// A server on this computer that the app started itself (the built-in model):
    /// labelled `local:<model>` instead of `openai:<model>`.
    #[serde(default)]
    pub local: bool,
    #[serde(skip)]
    pub api_key: Option<String>,
    /// Sent with every request (e.g. OpenRouter's `HTTP-Referer`). Values are redacted
    /// from `Debug`: some gateways take their key in a header of their own.
    pub extra_headers: Vec<(String, String)>,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
    /// `false`: `stream()` makes one non-streaming request and yields its text in one delta.
    pub stream: bool,
    /// Time to establish the TCP (and TLS) connection.
    #[serde(with = "millis")]
    pub connect_timeout: Duration,
    /// Longest silence allowed while waiting for the response head or the next bytes of
    /// a stream (SSE comments count as bytes). A silent stream is treated as cut.
    #[serde(with = "millis")]
    pub idle_timeout: Duration,
    /// Bound on one whole turn: every retry, restart and fallback included.
    #[serde(with = "millis")]
    pub request_timeout: Duration,
    /// How many times a request that failed with 429, 5xx or a connect error is sent again.
    pub max_retries: u32,
    /// First backoff delay; doubled for every further retry, with jitter.
    #[serde(with = "millis")]
    pub retry_base_delay: Duration,
    /// How many times a stream cut mid-answer is re-requested from the start.
    pub max_stream_restarts: u32,
    /// The model's context window in tokens, as the person configured it. Used only when
    /// the server does not say (see [`crate::discover_context_window`]).
    pub context_window: Option<u32>,
    /// How much one answer may hold before the turn fails (an endless stream cannot
    /// exhaust memory).
    pub stream_caps: StreamCaps,
    /// The request's `tool_choice`; `None` sends none (the server's default, `auto`). A
    /// choice that forces a call is sent only on a request that answers the person:
    /// after tool results the model must stay free to answer in words, or a run could
    /// never end.
    pub tool_choice: Option<ToolChoice>,
}

/// Whether, and which, tool the model must call (OpenAI's `tool_choice`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// No tool call.
    None,
    /// Some tool call.
    Required,
    /// A call of this tool. llama.cpp's server does not take a named function: it
    /// treats one as `auto`.
    Function(String),
}

impl ToolChoice {
    /// From a setting's text: `auto`, `none`, `required`, or a tool's name.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        Some(match text {
            "" => return None,
            "auto" => ToolChoice::Auto,
            "none" => ToolChoice::None,
            "required" => ToolChoice::Required,
            name => ToolChoice::Function(name.to_owned()),
        })
    }

    /// Whether it makes the model call a tool.
    pub fn forces_a_call(&self) -> bool {
        matches!(self, ToolChoice::Required | ToolChoice::Function(_))
    }
}

/// Environment override of [`OpenAiConfig::tool_choice`] (see [`ToolChoice::parse`]).
pub const TOOL_CHOICE_VAR: &str = "POCKETPILOT_TOOL_CHOICE";

/// Caps on one answer (a turn), streamed or not. Past one the turn fails with
/// [`crate::ProviderError::StreamLimit`] and the connection is closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct StreamCaps {
    /// Bytes of answer text.
    pub max_text_bytes: usize,
    /// Bytes of tool-call arguments, all calls of the turn together.
    pub max_tool_argument_bytes: usize,
    /// Tool calls in one answer.
    pub max_tool_calls: usize,
    /// Bytes of one stream event (one chunk). Legitimate chunks are small; the SSE parser
    /// buffers an unfinished event, and re-reads it as it grows.
    pub max_event_bytes: usize,
}

impl Default for StreamCaps {
    fn default() -> Self {
        Self {
            max_text_bytes: 4 * 1024 * 1024,
            max_tool_argument_bytes: 8 * 1024 * 1024,
            max_tool_calls: 128,
            max_event_bytes: 2 * 1024 * 1024,
        }
    }
}

/// Environment overrides of [`StreamCaps`].
pub const MAX_TEXT_BYTES_VAR: &str = "POCKETPILOT_MAX_TURN_TEXT_BYTES";
pub const MAX_TOOL_ARGUMENT_BYTES_VAR: &str = "POCKETPILOT_MAX_TURN_TOOL_ARGUMENT_BYTES";
pub const MAX_TOOL_CALLS_VAR: &str = "POCKETPILOT_MAX_TURN_TOOL_CALLS";
pub const MAX_EVENT_BYTES_VAR: &str = "POCKETPILOT_MAX_STREAM_EVENT_BYTES";

impl StreamCaps {
    /// A complete non-streamed answer: what the caps let through, with room for JSON
    /// escaping and framing.
    pub fn max_body_bytes(&self) -> usize {
        self.max_text_bytes
            .saturating_add(self.max_tool_argument_bytes)
            .saturating_mul(2)
            .saturating_add(64 * 1024)
    }

    /// A whole (non-streamed) answer within the caps, or the cap it goes over.
    pub fn check(&self, answer: &crate::ModelResponse) -> Result<(), crate::ProviderError> {
        use crate::StreamLimit;
        let over = |limit, cap| Err(crate::ProviderError::StreamLimit { limit, cap });
        if answer.text.len() > self.max_text_bytes {
            return over(StreamLimit::TextBytes, self.max_text_bytes);
        }
        if answer.tool_calls.len() > self.max_tool_calls {
            return over(StreamLimit::ToolCalls, self.max_tool_calls);
        }
        let arguments: usize = answer.tool_calls.iter().map(|c| c.arguments.len()).sum();
        if arguments > self.max_tool_argument_bytes {
            return over(StreamLimit::ToolArgumentBytes, self.max_tool_argument_bytes);
        }
        Ok(())
    }

    /// Applies the `POCKETPILOT_MAX_TURN_*` variables (positive numbers; others ignored).
    pub fn apply_env(&mut self) {
        let num = |name: &str| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok())
                .filter(|n| *n > 0)
        };
        if let Some(n) = num(MAX_TEXT_BYTES_VAR) {
            self.max_text_bytes = n;
        }
        if let Some(n) = num(MAX_TOOL_ARGUMENT_BYTES_VAR) {
            self.max_tool_argument_bytes = n;
        }
        if let Some(n) = num(MAX_TOOL_CALLS_VAR) {
            self.max_tool_calls = n;
        }
        if let Some(n) = num(MAX_EVENT_BYTES_VAR) {
            self.max_event_bytes = n;
        }
    }
}

impl Default for OpenAiConfig {
    fn default() -> Self {
        Self {
            base_url: "https://api.openai.com/v1".into(),
            model: "gpt-4o-mini".into(),
            local: false,
            api_key: None,
            extra_headers: Vec::new(),
            temperature: None,
            max_tokens: None,
            stream: true,
            connect_timeout: Duration::from_secs(10),
            // Local models may think for a while over a long prompt before the first token.
            idle_timeout: Duration::from_secs(120),
            request_timeout: Duration::from_secs(600),
            max_retries: 3,
            retry_base_delay: Duration::from_millis(500),
            max_stream_restarts: 2,
            context_window: None,
            stream_caps: StreamCaps::default(),
            tool_choice: None,
        }
    }
}

impl OpenAiConfig {
    /// `{base_url}/chat/completions`, without a doubled slash.
    pub fn chat_url(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }

    /// Applies `POCKETPILOT_LLM_STREAM` (`false`/`0`/`no`/`off` turn streaming off,
    /// `true`/`1`/`yes`/`on` turn it on; anything else is ignored) and
    /// `POCKETPILOT_CONTEXT_WINDOW` (a number of tokens) and the `POCKETPILOT_MAX_TURN_*`
    /// caps ([`StreamCaps::apply_env`]) and [`TOOL_CHOICE_VAR`].
    pub fn apply_env(&mut self) {
        self.stream_caps.apply_env();
        if let Some(choice) = std::env::var(TOOL_CHOICE_VAR)
            .ok()
            .as_deref()
            .and_then(ToolChoice::parse)
        {
            self.tool_choice = Some(choice);
        }
        if let Some(stream) = std::env::var("POCKETPILOT_LLM_STREAM")
            .ok()
            .as_deref()
            .and_then(parse_switch)
        {
            self.stream = stream;
        }
        if let Some(tokens) = std::env::var("POCKETPILOT_CONTEXT_WINDOW")
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok())
            .filter(|n| *n > 0)
        {
            self.context_window = Some(tokens);
        }
    }

    /// The server's root: the base URL without its trailing `/v1` (llama.cpp's `/props`
    /// and Ollama's `/api/show` live there). A base URL without a version segment is
    /// its own root.
    pub fn server_root(&self) -> String {
        let base = self.base_url.trim_end_matches('/');
        base.strip_suffix("/v1").unwrap_or(base).to_owned()
    }
}

/// Reads an on/off setting the way people write it.
pub fn parse_switch(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .extra_headers
            .iter()
            .map(|(name, _)| (name.as_str(), "<redacted>"))
            .collect();
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field(
                "api_key",
                &self
                    .api_key
                    .as_ref()
                    .map(|_| "<redacted>")
                    .unwrap_or("<none>"),
            )
            .field("extra_headers", &headers)
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .field("stream", &self.stream)
            .field("connect_timeout", &self.connect_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("max_retries", &self.max_retries)
            .field("retry_base_delay", &self.retry_base_delay)
            .field("max_stream_restarts", &self.max_stream_restarts)
            .field("context_window", &self.context_window)
            .field("stream_caps", &self.stream_caps)
            .field("tool_choice", &self.tool_choice)
            .finish()
    }
}

/// Durations as whole milliseconds in settings files.
mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}
