//! From stored entries to the messages the model sees. The same function serves a fresh
//! run, a run resumed after an approval, and a run resumed after a crash, so all three see
//! exactly the same context.
use pocketpilot_model::{Message, ToolCall};

use crate::agent::{system_prompt, wrap_untrusted};
use crate::store::Entry;

/// `entries` are the session's entries since its newest head. Display-only kinds (`app.*`)
/// are skipped; tool results are untrusted data.
pub fn to_messages(workspace: &str, entries: &[Entry]) -> Vec<Message> {
    let mut out = vec![Message::system(system_prompt(workspace))];
    for e in entries {
        let text = e.content.get("text").and_then(|t| t.as_str()).unwrap_or("");
        match e.kind.as_str() {
            "user" => out.push(Message::user(text)),
            "system" => out.push(Message::system(text)),
            "assistant" => {
                let calls: Vec<ToolCall> = e
                    .content
                    .get("tool_calls")
                    .cloned()
                    .and_then(|v| serde_json::from_value(v).ok())
                    .unwrap_or_default();
                out.push(Message::assistant(text, calls));
            }
            "tool_result" => {
                let call_id = e.content.get("call_id").and_then(|t| t.as_str()).unwrap_or("");
                out.push(Message::tool_result(call_id, wrap_untrusted("tool result", text)));
            }
            _ => {}
        }
    }
    out
}
