//! The server's own count of a request, before it is sent.
//!
//! An estimate of a prompt's tokens is only an estimate: a chat template may drop the tool
//! list (SmolLM2's does), add a default system prompt, or tokenize a pasted document
//! differently from any proxy vocabulary. llama.cpp can say exactly: `POST
//! {root}/apply-template` renders the same body a completion would get through the same
//! template, and `POST {root}/tokenize` tokenizes the result as a completion does (special
//! tokens added and parsed). That is the figure the server checks against its window.
//! Other servers have no such endpoints; there the estimate stands.
use serde_json::{json, Value};

use super::config::OpenAiConfig;
use super::http::client_for;
use super::window::{probe_json, ProbeFailure, PROBE_TIMEOUT};
use super::wire::request_body;
use crate::chat::{Message, ToolSpec};

/// Why a request was not counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Uncounted {
    /// The server does not count (another kind of server, an older llama.cpp): asking
    /// again is no use.
    NotCounted,
    /// The server did not answer in time (busy: two servers on two cores, a long prompt
    /// being processed) or could not be reached. The next request may be counted.
    NoAnswer,
}

impl From<ProbeFailure> for Uncounted {
    fn from(f: ProbeFailure) -> Self {
        match f {
            ProbeFailure::Refused => Uncounted::NotCounted,
            ProbeFailure::NoAnswer => Uncounted::NoAnswer,
        }
    }
}

/// The prompt tokens llama.cpp will count for this request, or why there is no count.
/// Bounded in time like the window probes: a count must never hold a turn up for long.
pub async fn count_prompt(
    config: &OpenAiConfig,
    messages: &[Message],
    tools: &[ToolSpec],
) -> Result<u32, Uncounted> {
    let (client, _) = client_for(config).map_err(|_| Uncounted::NotCounted)?;
    let bound = PROBE_TIMEOUT.min(
        config
            .idle_timeout
            .max(std::time::Duration::from_millis(100)),
    );
    let root = config.server_root();
    let body: Value = request_body(config, messages, tools, false)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or(Uncounted::NotCounted)?;
    let rendered = probe_json(
        &client,
        &format!("{root}/apply-template"),
        Some(&body),
        bound,
    )
    .await?;
    let prompt = rendered
        .get("prompt")
        .and_then(Value::as_str)
        .ok_or(Uncounted::NotCounted)?;
    let tokenize = json!({ "content": prompt, "add_special": true, "parse_special": true });
    let tokens = probe_json(&client, &format!("{root}/tokenize"), Some(&tokenize), bound).await?;
    let n = tokens
        .get("tokens")
        .and_then(Value::as_array)
        .ok_or(Uncounted::NotCounted)?
        .len();
    u32::try_from(n).map_err(|_| Uncounted::NotCounted)
}
