//! Builds one `ModelResponse` from the chunks of a streamed answer.
//!
//! Tool calls arrive in fragments keyed by `index`: the first fragment of a call carries
//! its `id` and `name` (and may already carry arguments), later ones only argument text.
//! Calls may interleave (parallel tool calls). Argument text is kept raw: it is parsed by
//! the agent once the turn is complete, and text that is not JSON goes back to the model
//! as a tool error.
//!
//! The caps of [`StreamCaps`] are checked as the answer grows: past one, `feed` fails with
//! [`ProviderError::StreamLimit`] and nothing more is kept.
use crate::chat::{ModelResponse, ToolCall, Usage};
use crate::provider::{ProviderError, StreamLimit};

use super::config::StreamCaps;

use super::overflow::context_overflow;
use super::wire::{json_error_message, Chunk};

#[derive(Debug, Default)]
pub(crate) struct Assembler {
    text: String,
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    cached_prompt_tokens: Option<u64>,
    caps: StreamCaps,
    argument_bytes: usize,
}

#[derive(Debug, Default)]
struct PartialCall {
    index: usize,
    id: String,
    name: String,
    arguments: String,
}

impl Assembler {
    pub(crate) fn new(caps: StreamCaps) -> Self {
        Self {
            caps,
            ..Self::default()
        }
    }

    fn over(limit: StreamLimit, cap: usize) -> ProviderError {
        ProviderError::StreamLimit { limit, cap }
    }

    /// Takes one `data:` payload (not `[DONE]`) and returns the text it adds, if any.
    pub(crate) fn feed(&mut self, data: &str) -> Result<Option<String>, ProviderError> {
        let chunk: Chunk<'_> = serde_json::from_str(data).map_err(|e| {
            ProviderError::Stream(format!(
                "a chunk is not valid JSON ({e}): {}",
                snippet(data, 120)
            ))
        })?;
        self.feed_chunk(chunk)
    }

    fn feed_chunk(&mut self, chunk: Chunk<'_>) -> Result<Option<String>, ProviderError> {
        if let Some(error) = &chunk.error {
            let wrapped = serde_json::json!({ "error": error });
            let message = json_error_message(&wrapped).unwrap_or_else(|| error.to_string());
            // An overflow reported inside the stream is still an overflow: restarting the
            // stream (what a `Stream` error leads to) would only meet it again.
            if let Some(overflow) = context_overflow(&wrapped.to_string(), &message) {
                return Err(overflow);
            }
            return Err(ProviderError::Stream(format!(
                "the server reported an error mid-stream: {message}"
            )));
        }
        if let Some(usage) = chunk.usage {
            self.cached_prompt_tokens = usage.cached_tokens();
            self.usage = Some(usage.into());
        }
        let mut added: Option<String> = None;
        for choice in chunk.choices.into_iter().flatten() {
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason.into_owned());
            }
            let Some(delta) = choice.delta else { continue };
            if let Some(content) = delta.content.filter(|c| !c.is_empty()) {
                if self.text.len() + content.len() > self.caps.max_text_bytes {
                    return Err(Self::over(StreamLimit::TextBytes, self.caps.max_text_bytes));
                }
                self.text.push_str(&content);
                match &mut added {
                    Some(text) => text.push_str(&content),
                    None => added = Some(content.into_owned()),
                }
            }
            for call in delta.tool_calls.into_iter().flatten() {
                let index = call.index.unwrap_or(0);
                let id = call.id.filter(|id| !id.is_empty());
                let max_calls = self.caps.max_tool_calls;
                let Some(position) = self.slot(index, id.as_deref()) else {
                    return Err(Self::over(StreamLimit::ToolCalls, max_calls));
                };
                let slot = &mut self.calls[position];
                if let Some(id) = id {
                    if slot.id.is_empty() {
                        slot.id = id.into_owned();
                    }
                }
                if let Some(function) = call.function {
                    // The name comes whole, in the first fragment; some servers repeat it.
                    if let Some(name) = function.name.filter(|n| !n.is_empty()) {
                        if slot.name.is_empty() {
                            slot.name = name.into_owned();
                        }
                    }
                    if let Some(arguments) = function.arguments {
                        let cap = self.caps.max_tool_argument_bytes;
                        if self.argument_bytes + arguments.len() > cap {
                            return Err(Self::over(StreamLimit::ToolArgumentBytes, cap));
                        }
                        self.argument_bytes += arguments.len();
                        slot.arguments.push_str(&arguments);
                    }
                }
            }
        }
        Ok(added)
    }

    /// The call a fragment belongs to. A fragment with a new id under an index already in
    /// use starts a new call (servers that number every call 0). `None`: a new call past
    /// the cap on calls.
    fn slot(&mut self, index: usize, id: Option<&str>) -> Option<usize> {
        let found = self.calls.iter().rposition(|c| c.index == index);
        let position = match (found, id) {
            (Some(p), Some(id)) if !self.calls[p].id.is_empty() && self.calls[p].id != id => None,
            (found, _) => found,
        };
        let position = match position {
            Some(p) => p,
            None if self.calls.len() >= self.caps.max_tool_calls => return None,
            None => {
                self.calls.push(PartialCall {
                    index,
                    ..PartialCall::default()
                });
                self.calls.len() - 1
            }
        };
        Some(position)
    }

    pub(crate) fn has_finish_reason(&self) -> bool {
        self.finish_reason.is_some()
    }

    pub(crate) fn finish(self) -> ModelResponse {
        let tool_calls = self
            .calls
            .into_iter()
            .enumerate()
            .map(|(position, c)| ToolCall {
                id: if c.id.is_empty() {
                    format!("call_{position}")
                } else {
                    c.id
                },
                name: c.name,
                arguments: c.arguments,
            })
            .collect();
        ModelResponse {
            text: self.text,
            tool_calls,
            finish_reason: self.finish_reason,
            usage: self.usage,
            cached_prompt_tokens: self.cached_prompt_tokens,
        }
    }
}

/// At most `max` bytes of `text`, cut on a character boundary.
pub(crate) fn snippet(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
#[path = "assemble_tests.rs"]
mod tests;
