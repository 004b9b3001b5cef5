//! The scripted provider: deterministic model turns read from a JSON file.
//!
//! It is a fake at the model boundary and says so: its label is `scripted:<file>`.
//! The turn it plays is chosen by the number of assistant messages already in the
//! conversation, so it needs no state of its own: a resumed run, a new worker or a
//! successor run in the same session continue the script where the transcript stands.
//!
//! ```json
//! { "repeat_last": false,
//!   "turns": [
//!     { "text": "Let me look.", "chunk_size": 4, "delay_ms": 50, "chunk_delay_ms": 5,
//!       "tool_calls": [ { "name": "read_file", "arguments": { "path": "a.txt" } } ] },
//!     { "chunks": ["Done", "."], "usage": { "prompt_tokens": 10, "completion_tokens": 2 } },
//!     { "error": { "kind": "server", "message": "boom" } },
//!     { "error": { "kind": "context_overflow", "message": "too long", "requested": 5000, "window": 4096 } }
//!   ] }
//! ```
//! A file that is a bare array is a list of turns.
use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use serde::Deserialize;

use crate::chat::{Message, ModelResponse, Role, ToolCall, ToolSpec, Usage};
use crate::provider::{Provider, ProviderError, StreamEvent, TurnStream};

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum ScriptFile {
    Full(Box<Script>),
    Turns(Vec<Turn>),
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Script {
    #[serde(default)]
    pub repeat_last: bool,
    pub turns: Vec<Turn>,
    /// The context window the scripted model declares (issue 13), so the runtime's
    /// budget and compaction can be exercised deterministically with a tiny window.
    #[serde(default)]
    pub context_window: Option<u32>,
    /// With a declared window: what a request without tools (the runtime's summary
    /// request when it compacts) is answered with; none declared, such a request fails.
    #[serde(default)]
    pub summary: Option<Turn>,
    /// Appends each request's messages to this file as one JSON line, so a test can show
    /// what the model was sent (e.g. that a continued run kept its context).
    #[serde(default)]
    pub requests_log: Option<PathBuf>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub chunks: Option<Vec<String>>,
    #[serde(default)]
    pub chunk_size: Option<usize>,
    #[serde(default)]
    pub delay_ms: u64,
    #[serde(default)]
    pub chunk_delay_ms: u64,
    #[serde(default)]
    pub tool_calls: Vec<ScriptedCall>,
    #[serde(default)]
    pub error: Option<ScriptedError>,
    #[serde(default)]
    pub usage: Option<ScriptedUsage>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    #[serde(default)]
    pub id: Option<String>,
    pub name: String,
    /// A JSON value, or a string taken verbatim as the raw argument text (to script
    /// malformed arguments).
    #[serde(default)]
    pub arguments: serde_json::Value,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedError {
    #[serde(default)]
    pub kind: ScriptedErrorKind,
    pub message: String,
    /// For `"kind": "context_overflow"`: the sizes the server would report.
    #[serde(default)]
    pub requested: Option<u32>,
    #[serde(default)]
    pub window: Option<u32>,
}

/// Which failure a scripted turn plays: the provider errors a real server gives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptedErrorKind {
    Auth,
    RateLimited,
    Connect,
    Timeout,
    Stream,
    Request,
    ContextOverflow,
    /// A 500; also what a kind the script names but this list lacks plays.
    #[default]
    #[serde(other)]
    Server,
}

#[derive(Debug, Clone, Copy, Deserialize)]
pub struct ScriptedUsage {
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
    /// Prompt tokens served from the cache, as a server that reports them would.
    #[serde(default)]
    pub cached_prompt_tokens: Option<u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    #[error("cannot read the script {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the script {path} is not valid: {source}")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("the script {0} has no turns")]
    Empty(PathBuf),
}

/// The model name a scripted provider reports.
pub const SCRIPTED_MODEL: &str = "scripted";

#[derive(Debug, Clone)]
pub struct ScriptedProvider {
    label: String,
    script: Script,
}

impl ScriptedProvider {
    pub fn from_file(path: &Path) -> Result<Self, ScriptError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read {
            path: path.to_owned(),
            source,
        })?;
        let file: ScriptFile =
            serde_json::from_str(&text).map_err(|source| ScriptError::Parse {
                path: path.to_owned(),
                source,
            })?;
        let script = match file {
            ScriptFile::Full(s) => *s,
            ScriptFile::Turns(turns) => Script {
                repeat_last: false,
                turns,
                ..Script::default()
            },
        };
        if script.turns.is_empty() {
            return Err(ScriptError::Empty(path.to_owned()));
        }
        Ok(Self {
            label: format!("scripted:{}", path.display()),
            script,
        })
    }

    pub fn from_script(label: impl Into<String>, script: Script) -> Self {
        Self {
            label: format!("scripted:{}", label.into()),
            script,
        }
    }

    /// A request without tools to a script that declares a window is a summary request:
    /// it plays `summary`, or fails when there is none. Other scripts keep playing by
    /// turn, so their meaning does not change.
    fn summary_turn(&self, tools: &[ToolSpec]) -> Option<Result<(usize, Turn), ProviderError>> {
        if !tools.is_empty() || self.script.context_window.is_none() {
            return None;
        }
        Some(match &self.script.summary {
            Some(t) => Ok((usize::MAX / 2, t.clone())),
            None => Err(ProviderError::Scripted(
                "the script declares no summary turn".into(),
            )),
        })
    }

    fn log_request(&self, messages: &[Message]) -> Result<(), ProviderError> {
        let Some(path) = &self.script.requests_log else {
            return Ok(());
        };
        use std::io::Write;
        let line = serde_json::json!({ "messages": messages }).to_string();
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| writeln!(f, "{line}"))
            .map_err(|e| ProviderError::Scripted(format!("cannot log to {}: {e}", path.display())))
    }

    fn turn_for(&self, messages: &[Message]) -> Result<(usize, Turn), ProviderError> {
        self.log_request(messages)?;
        let played = messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count();
        // A compaction summarises earlier turns away, so counting the assistant messages
        // would play a turn again; the ids this script gives its calls (`call_s{turn}_{n}`)
        // still say which turn came last, since the last turn is always kept.
        let by_ids = messages
            .iter()
            .flat_map(|m| {
                m.tool_calls
                    .iter()
                    .map(|c| c.id.as_str())
                    .chain(m.tool_call_id.as_deref())
            })
            .filter_map(turn_of_call_id)
            .max()
            .unwrap_or(0);
        let index = played.max(by_ids);
        let turn = match self.script.turns.get(index) {
            Some(t) => t.clone(),
            None if self.script.repeat_last => {
                self.script.turns.last().cloned().unwrap_or_default()
            }
            None => {
                return Err(ProviderError::Scripted(format!(
                    "the script has {} turns and turn {} was asked for",
                    self.script.turns.len(),
                    index + 1
                )))
            }
        };
        Ok((index, turn))
    }
}

/// The turn (counted from 1) a call id this script made names: `call_s3_1` → 3.
fn turn_of_call_id(id: &str) -> Option<usize> {
    let (turn, _) = id.strip_prefix("call_s")?.split_once('_')?;
    turn.parse().ok()
}

fn scripted_error(e: &ScriptedError) -> ProviderError {
    let message = e.message.clone();
    match e.kind {
        ScriptedErrorKind::Auth => ProviderError::Auth {
            status: 401,
            message,
        },
        ScriptedErrorKind::RateLimited => ProviderError::RateLimited {
            message,
            retry_after: None,
        },
        ScriptedErrorKind::Connect => ProviderError::Connect(message),
        ScriptedErrorKind::Timeout => ProviderError::Timeout(message),
        ScriptedErrorKind::Stream => ProviderError::Stream(message),
        ScriptedErrorKind::Request => ProviderError::Request {
            status: 400,
            message,
        },
        ScriptedErrorKind::ContextOverflow => ProviderError::ContextOverflow {
            requested: e.requested,
            window: e.window,
            message,
        },
        ScriptedErrorKind::Server => ProviderError::Server {
            status: 500,
            message,
        },
    }
}

impl Turn {
    fn chunks(&self) -> Vec<String> {
        if let Some(chunks) = &self.chunks {
            return chunks.clone();
        }
        let text = self.text.clone().unwrap_or_default();
        let size = self.chunk_size.unwrap_or(8).max(1);
        let chars: Vec<char> = text.chars().collect();
        chars.chunks(size).map(|c| c.iter().collect()).collect()
    }

    fn response(&self, index: usize, messages: &[Message]) -> ModelResponse {
        let text: String = self.chunks().concat();
        let tool_calls: Vec<ToolCall> = self
            .tool_calls
            .iter()
            .enumerate()
            .map(|(i, c)| ToolCall {
                id: c
                    .id
                    .clone()
                    .unwrap_or_else(|| format!("call_s{}_{}", index + 1, i + 1)),
                name: c.name.clone(),
                arguments: match &c.arguments {
                    serde_json::Value::String(raw) => raw.clone(),
                    serde_json::Value::Null => "{}".into(),
                    v => v.to_string(),
                },
            })
            .collect();
        let usage = match self.usage {
            Some(u) => Usage {
                prompt_tokens: u.prompt_tokens,
                completion_tokens: u.completion_tokens,
                total_tokens: u.prompt_tokens + u.completion_tokens,
            },
            None => {
                // Roughly four characters a token, so budgets can be exercised without a
                // real tokenizer.
                let prompt: usize = messages
                    .iter()
                    .map(|m| m.content.as_deref().map_or(0, str::len))
                    .sum();
                let prompt_tokens = (prompt / 4) as u64 + 1;
                let completion_tokens = (text.len() / 4) as u64 + 1;
                Usage {
                    prompt_tokens,
                    completion_tokens,
                    total_tokens: prompt_tokens + completion_tokens,
                }
            }
        };
        let finish_reason = Some(
            if tool_calls.is_empty() {
                "stop"
            } else {
                "tool_calls"
            }
            .into(),
        );
        ModelResponse {
            text,
            tool_calls,
            finish_reason,
            usage: Some(usage),
            cached_prompt_tokens: self.usage.and_then(|u| u.cached_prompt_tokens),
        }
    }
}

#[async_trait]
impl Provider for ScriptedProvider {
    fn label(&self) -> String {
        self.label.clone()
    }

    /// One name for every script: what calibrates the estimator is a server's count, and
    /// a script has none (see [`Provider::server`]).
    fn model(&self) -> String {
        SCRIPTED_MODEL.into()
    }

    /// The window the script declares (`"context_window"`), if any.
    fn window(&self) -> Option<u32> {
        self.script.context_window
    }

    fn stream(&self, messages: Vec<Message>, tools: Vec<ToolSpec>) -> TurnStream {
        let chosen = self
            .summary_turn(&tools)
            .unwrap_or_else(|| self.turn_for(&messages));
        let (index, turn) = match chosen {
            Ok(t) => t,
            Err(e) => return futures::stream::once(async move { Err(e) }).boxed(),
        };
        let stream = async_stream(index, turn, messages);
        stream.boxed()
    }

    async fn complete(
        &self,
        messages: Vec<Message>,
        tools: Vec<ToolSpec>,
    ) -> Result<ModelResponse, ProviderError> {
        let (index, turn) = self
            .summary_turn(&tools)
            .unwrap_or_else(|| self.turn_for(&messages))?;
        tokio::time::sleep(Duration::from_millis(turn.delay_ms)).await;
        if let Some(e) = &turn.error {
            return Err(scripted_error(e));
        }
        Ok(turn.response(index, &messages))
    }
}

fn async_stream(
    index: usize,
    turn: Turn,
    messages: Vec<Message>,
) -> impl futures::Stream<Item = Result<StreamEvent, ProviderError>> + Send + 'static {
    enum Step {
        First,
        Chunk(usize),
        Finished,
    }
    let chunks = turn.chunks();
    futures::stream::unfold(Step::First, move |step| {
        let turn = turn.clone();
        let chunks = chunks.clone();
        let messages = messages.clone();
        async move {
            match step {
                Step::First => {
                    tokio::time::sleep(Duration::from_millis(turn.delay_ms)).await;
                    if let Some(e) = &turn.error {
                        return Some((Err(scripted_error(e)), Step::Finished));
                    }
                    if chunks.is_empty() {
                        let done = StreamEvent::Done(turn.response(index, &messages));
                        return Some((Ok(done), Step::Finished));
                    }
                    Some((Ok(StreamEvent::Delta(chunks[0].clone())), Step::Chunk(1)))
                }
                Step::Chunk(i) if i < chunks.len() => {
                    if turn.chunk_delay_ms > 0 {
                        tokio::time::sleep(Duration::from_millis(turn.chunk_delay_ms)).await;
                    }
                    Some((
                        Ok(StreamEvent::Delta(chunks[i].clone())),
                        Step::Chunk(i + 1),
                    ))
                }
                Step::Chunk(_) => {
                    let done = StreamEvent::Done(turn.response(index, &messages));
                    Some((Ok(done), Step::Finished))
                }
                Step::Finished => None,
            }
        }
    })
}

#[cfg(test)]
#[path = "scripted_tests.rs"]
mod tests;
