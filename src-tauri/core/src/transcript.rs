//! From stored entries to the messages the model sees. The same function serves a fresh
//! run, a run resumed after an approval, and a run resumed after a crash, so all three see
//! exactly the same context.
use pocketpilot_model::{Message, Role, ToolCall};

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
                let call_id = e
                    .content
                    .get("call_id")
                    .and_then(|t| t.as_str())
                    .unwrap_or("");
                out.push(Message::tool_result(
                    call_id,
                    wrap_untrusted("tool result", text),
                ));
            }
            // A reset's hand-off text opens the new context.
            "reset" if !text.is_empty() => out.push(Message::user(text)),
            _ => {}
        }
    }
    close_unanswered_calls(out)
}

/// A call that never got a result (its run was cancelled or ended) is answered with an
/// error when the conversation went on after it: models refuse a call left open.
fn close_unanswered_calls(messages: Vec<Message>) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    let mut open: Vec<String> = Vec::new();
    for m in messages {
        match m.role {
            Role::Tool => {
                if let Some(id) = &m.tool_call_id {
                    open.retain(|o| o != id);
                }
            }
            _ => {
                for id in open.drain(..) {
                    out.push(Message::tool_result(
                        id,
                        wrap_untrusted(
                            "tool result",
                            "This call never ran: its run ended before it was answered.",
                        ),
                    ));
                }
                if m.role == Role::Assistant {
                    open = m.tool_calls.iter().map(|c| c.id.clone()).collect();
                }
            }
        }
        out.push(m);
    }
    out
}
