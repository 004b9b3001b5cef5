//! The OpenAI-compatible provider: OpenAI, Ollama, LM Studio, llama.cpp server, vLLM,
//! DeepSeek, OpenRouter, ... anything that serves `POST {base_url}/chat/completions`.
//!
//! Files:
//! - `config`: [`OpenAiConfig`], its defaults, the key kept out of `Debug` and serde.
//! - `wire`: the request body and the lenient shapes of chunks, completions, error bodies.
//! - `http`: the client, one request with retries (429/5xx/connect), status → error.
//! - `retry`: backoff with jitter and `Retry-After`, as pure functions.
//! - `sse`: SSE events over the body (via `eventsource-stream`) with an idle timer.
//! - `assemble`: text and tool calls (by `index`) → one `ModelResponse`.
//! - `turn`: one streamed turn: restarts after a cut, fallback to a whole answer.
//! - `overflow`: "the request does not fit the context window", in each server's words.
//! - `window`: the model's context window and chat template, asked of the server.
//!
//! Promises: `Done` only for a complete answer (a finish reason or `[DONE]` seen); a
//! cut after text was shown yields `Reset` and the turn is asked again (bounded); a
//! stream that fails before its first delta falls back to a non-streamed request; one
//! turn never outlives `request_timeout`; dropping the stream drops the connection
//! (no task is spawned); the API key appears in no message, `Debug` output or log line.
mod assemble;
mod config;
mod count;
mod http;
mod models;
mod overflow;
mod retry;
mod sse;
mod turn;
mod window;
pub use models::list_models;
mod wire;

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use reqwest::header::CONTENT_TYPE;
use reqwest::Response;
use tokio::time::{timeout_at, Instant};

use crate::chat::{Message, ModelResponse, ToolSpec};
use crate::provider::{Provider, ProviderError, TurnStream};

pub use config::{parse_switch, OpenAiConfig, StreamCaps, ToolChoice, TOOL_CHOICE_VAR};
pub use count::{count_prompt, Uncounted};
pub use window::{
    discover_context_window, discover_server_model, ContextWindow, Discovery, ServerModel,
    WindowSource, ASSUMED_CONTEXT_WINDOW,
};

use assemble::{snippet, Assembler};
use http::Http;
use sse::{SseItem, SseStream};
use wire::Completion;

/// A model behind an OpenAI-compatible HTTP API. Cheap to clone; clones share one
/// connection pool.
#[derive(Clone)]
pub struct OpenAiProvider {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    config: OpenAiConfig,
    http: Http,
}

impl std::fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiProvider")
            .field("config", &self.inner.config)
            .finish()
    }
}

impl OpenAiProvider {
    pub fn new(config: OpenAiConfig) -> Result<Self, ProviderError> {
        let http = Http::new(&config)?;
        Ok(Self {
            inner: Arc::new(Inner { config, http }),
        })
    }

    pub fn config(&self) -> &OpenAiConfig {
        &self.inner.config
    }
}

impl Inner {
    fn body(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
        stream: bool,
    ) -> Result<Bytes, ProviderError> {
        wire::request_body(&self.config, messages, tools, stream)
            .map(Bytes::from)
            .map_err(|e| ProviderError::Config(format!("cannot encode the request: {e}")))
    }

    /// One non-streamed request (with retries), read to the end.
    async fn complete(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
        deadline: Instant,
    ) -> Result<ModelResponse, ProviderError> {
        let body = self.body(messages, tools, false)?;
        let response = self.http.send(&body, false, deadline).await?;
        self.read_whole(response, deadline).await
    }

    /// A 2xx response read as one answer: a JSON completion, or (from servers that
    /// stream regardless) an SSE stream taken to its end.
    async fn read_whole(
        &self,
        response: Response,
        deadline: Instant,
    ) -> Result<ModelResponse, ProviderError> {
        if is_event_stream(&response) {
            let caps = self.config.stream_caps;
            let mut events =
                SseStream::from_response(response, self.http.idle_timeout(), caps.max_event_bytes);
            let mut assembler = Assembler::new(caps);
            let mut complete = false;
            loop {
                let item = timeout_at(deadline, events.next())
                    .await
                    .map_err(|_| self.http.turn_timeout())??;
                match item {
                    Some(SseItem::Data(data)) => {
                        assembler.feed(&data)?;
                    }
                    Some(SseItem::Done) => {
                        complete = true;
                        break;
                    }
                    None => break,
                }
            }
            if !complete && !assembler.has_finish_reason() {
                return Err(ProviderError::Stream(
                    "the answer ended before it was complete".into(),
                ));
            }
            return Ok(assembler.finish());
        }
        let cap = self.config.stream_caps.max_body_bytes();
        let bytes = timeout_at(deadline, read_bounded(response, cap))
            .await
            .map_err(|_| self.http.turn_timeout())??;
        let answer = parse_completion(&bytes)?;
        self.config.stream_caps.check(&answer)?;
        Ok(answer)
    }
}

/// A whole answer's body, failing past `cap` bytes (the connection is dropped with it).
async fn read_bounded(mut response: Response, cap: usize) -> Result<Vec<u8>, ProviderError> {
    let mut body = Vec::new();
    loop {
        let chunk = response.chunk().await.map_err(|e| {
            ProviderError::Stream(format!(
                "reading the answer failed: {}",
                http::error_chain(&e)
            ))
        })?;
        let Some(chunk) = chunk else {
            return Ok(body);
        };
        if body.len() + chunk.len() > cap {
            return Err(ProviderError::StreamLimit {
                limit: crate::StreamLimit::EventBytes,
                cap,
            });
        }
        body.extend_from_slice(&chunk);
    }
}

fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"))
}

fn is_json(response: &Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"))
}

pub(crate) fn parse_completion(bytes: &[u8]) -> Result<ModelResponse, ProviderError> {
    let text = String::from_utf8_lossy(bytes);
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
        ProviderError::InvalidResponse(format!(
            "the answer is not JSON ({e}): {}",
            snippet(&text, 200)
        ))
    })?;
    if value.get("error").is_some_and(|e| !e.is_null()) {
        let message = wire::json_error_message(&value).unwrap_or_default();
        if let Some(overflow) = overflow::context_overflow(&text, &message) {
            return Err(overflow);
        }
        return Err(ProviderError::Server {
            status: 200,
            message,
        });
    }
    let completion: Completion = serde_json::from_value(value).map_err(|e| {
        ProviderError::InvalidResponse(format!(
            "the answer has an unexpected shape ({e}): {}",
            snippet(&text, 200)
        ))
    })?;
    let cached_prompt_tokens = completion.usage.and_then(|u| u.cached_tokens());
    let usage = completion.usage.map(Into::into);
    let Some(choice) = completion.choices.into_iter().next() else {
        return Err(ProviderError::InvalidResponse(format!(
            "the answer has no choices: {}",
            snippet(&text, 200)
        )));
    };
    let message = choice.message.unwrap_or_default();
    Ok(ModelResponse {
        text: message.content.unwrap_or_default(),
        tool_calls: message
            .tool_calls
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, c)| c.into_tool_call(i))
            .collect(),
        finish_reason: choice.finish_reason,
        usage,
        cached_prompt_tokens,
    })
}

#[async_trait]
impl Provider for OpenAiProvider {
    fn label(&self) -> String {
        let kind = if self.inner.config.local {
            "local"
        } else {
            "openai"
        };
        format!("{kind}:{}", self.inner.config.model)
    }

    fn model(&self) -> String {
        self.inner.config.model.clone()
    }

    /// The window is the server's to say (its `/props` or `/v1/models`), asked by whoever
    /// needs it once per server: see [`crate::discover_server_model`].
    fn server(&self) -> Option<&OpenAiConfig> {
        Some(&self.inner.config)
    }

    fn stream(&self, messages: Vec<Message>, tools: Vec<ToolSpec>) -> TurnStream {
        let turn = turn::Turn::new(self.inner.clone(), messages, tools);
        futures::stream::unfold(turn, |mut turn| async move {
            let item = turn.next().await?;
            Some((item, turn))
        })
        .boxed()
    }

    async fn complete(
        &self,
        messages: Vec<Message>,
        tools: Vec<ToolSpec>,
    ) -> Result<ModelResponse, ProviderError> {
        let deadline = self.inner.http.deadline();
        self.inner
            .complete(&messages, &tools, deadline)
            .await
            .map_err(|e| self.inner.http.scrub_error(e))
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
