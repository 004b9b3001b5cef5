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
use super::window::{get_json, PROBE_TIMEOUT};
use super::wire::request_body;
use crate::chat::{Message, ToolSpec};

/// The prompt tokens llama.cpp will count for this request, or `None` when the server
/// does not answer (another kind of server, an older llama.cpp, a timeout). Bounded in
/// time like the window probes: a count must never hold a turn up for long.
pub async fn count_prompt(
    config: &OpenAiConfig,
    messages: &[Message],
    tools: &[ToolSpec],
) -> Option<u32> {
    let (client, _) = client_for(config).ok()?;
    let bound = PROBE_TIMEOUT.min(
        config
            .idle_timeout
            .max(std::time::Duration::from_millis(100)),
    );
    let root = config.server_root();
    let body: Value =
        serde_json::from_slice(&request_body(config, messages, tools, false).ok()?).ok()?;
    let rendered = get_json(
        &client,
        &format!("{root}/apply-template"),
        Some(&body),
        bound,
    )
    .await?;
    let prompt = rendered.get("prompt")?.as_str()?;
    let tokenize = json!({ "content": prompt, "add_special": true, "parse_special": true });
    let tokens = get_json(&client, &format!("{root}/tokenize"), Some(&tokenize), bound).await?;
    let n = tokens.get("tokens")?.as_array()?.len();
    u32::try_from(n).ok()
}
