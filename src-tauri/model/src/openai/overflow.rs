//! Recognises "the request does not fit the context window" in a server's error body.
//!
//! Servers say it in their own words, and the caller needs to know it is this error (not
//! any other 400) because the cure is different: the history has to be compacted before
//! the turn is asked again, while sending the same request again can never work.
//!
//! Recognised (from recorded bodies and the servers' own sources):
//! - llama.cpp `llama-server`: HTTP 400, `error.type = "exceed_context_size_error"`, with
//!   `n_prompt_tokens` / `n_ctx` beside the message "request (4355 tokens) exceeds the
//!   available context size (4096 tokens), try increasing it".
//! - OpenAI (and Groq, DeepSeek, Azure): `error.code = "context_length_exceeded"`, "This
//!   model's maximum context length is 128000 tokens. However, your messages resulted in
//!   130415 tokens. Please reduce the length of the messages."
//! - vLLM: HTTP 400 `BadRequestError`, "This model's maximum context length is 4096 tokens.
//!   However, you requested 5000 tokens (4000 in the messages, 1000 in the completion)" or
//!   "... However, your request has 5000 input tokens".
//! - Mistral: "Prompt contains 40000 tokens and 0 draft tokens, too large for model with
//!   32768 maximum context length".
//! - Anthropic-style gateways: "prompt is too long: 210000 tokens > 200000 maximum".
use serde_json::Value;

use crate::provider::ProviderError;

/// The overflow error a body describes, if it describes one. `body` is the raw text of the
/// error response (or of an error chunk inside a stream); `message` is the human text
/// already extracted from it, kept as the error's message.
pub(crate) fn context_overflow(body: &str, message: &str) -> Option<ProviderError> {
    let json: Option<Value> = serde_json::from_str(body).ok();
    let error = json
        .as_ref()
        .and_then(|j| j.get("error"))
        .filter(|e| e.is_object());
    let field = |name: &str| {
        error
            .and_then(|e| e.get(name))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let number = |name: &str| {
        error
            .and_then(|e| e.get(name))
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
    };
    // The whole human text: the message may sit in `error.message`, `message` or `detail`.
    let text = if message.is_empty() { body } else { message };
    let lower = text.to_ascii_lowercase();

    let typed = field("type") == "exceed_context_size_error"
        || field("code") == "context_length_exceeded"
        || field("type") == "context_length_exceeded";
    let (requested, window) = numbers(&lower);
    let worded = window.is_some()
        || lower.contains("exceeds the available context size")
        || lower.contains("maximum context length")
        || lower.contains("context length exceeded")
        || lower.contains("context_length_exceeded")
        || lower.contains("prompt is too long");
    if !typed && !worded {
        return None;
    }
    Some(ProviderError::ContextOverflow {
        requested: number("n_prompt_tokens").or(requested),
        window: number("n_ctx").or(window),
        message: message.to_owned(),
    })
}

/// (requested, window) as the known phrasings state them, from lower-cased text.
fn numbers(lower: &str) -> (Option<u32>, Option<u32>) {
    // llama.cpp
    if let Some(window) = after(lower, "exceeds the available context size (") {
        return (after(lower, "request ("), Some(window));
    }
    // OpenAI, vLLM, DeepSeek
    if let Some(window) = after(lower, "maximum context length is ") {
        let requested = after(lower, "resulted in ")
            .or_else(|| after(lower, "you requested "))
            .or_else(|| after(lower, "your request has "))
            .or_else(|| after(lower, "your prompt has "));
        return (requested, Some(window));
    }
    // Mistral
    if lower.contains("maximum context length") {
        if let Some(requested) = after(lower, "prompt contains ") {
            let window = after(lower, "too large for model with ");
            return (Some(requested), window);
        }
    }
    // Anthropic-style: "prompt is too long: 210000 tokens > 200000 maximum"
    if let Some(requested) = after(lower, "prompt is too long: ") {
        return (Some(requested), after(lower, "tokens > "));
    }
    (None, None)
}

/// The whole number that starts right after the first `needle` (digits with optional `,`
/// or `_` separators: "128,000").
fn after(text: &str, needle: &str) -> Option<u32> {
    let start = text.find(needle)? + needle.len();
    let digits: String = text[start..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',' || *c == '_')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
#[path = "overflow_tests.rs"]
mod tests;
