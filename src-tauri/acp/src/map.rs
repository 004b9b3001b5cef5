//! Runtime events as ACP updates: pure functions of the event (and, for a diff, the file
//! as it is on disk now), so they are tested without a connection.
use std::path::Path;

use agent_client_protocol::v1::schema as acp;
use pocketpilot_protocol::capability::name;
use pocketpilot_protocol::task::TaskStatus;
use pocketpilot_protocol::Effect;

/// Tool output sent to the client is cut to this many characters (the store keeps all).
const OUTPUT_SHOWN: usize = 8_000;

/// The ACP kind of a call, from the capability it needs (`None`: a read-only call).
pub fn tool_kind(capability: Option<&str>) -> acp::ToolKind {
    match capability {
        None => acp::ToolKind::Read,
        Some(c) if c == name::FS_WRITE => acp::ToolKind::Edit,
        Some(c) if c == name::FS_DELETE => acp::ToolKind::Delete,
        Some(c) if c == name::SHELL_EXECUTE => acp::ToolKind::Execute,
        Some(c) if c == name::NET_NETWORK => acp::ToolKind::Fetch,
        Some(_) => acp::ToolKind::Other,
    }
}

/// The title a client shows: the tool and what it acts on.
pub fn title(name: &str, arguments: &serde_json::Value) -> String {
    let subject = ["path", "command", "url", "query", "pattern"]
        .iter()
        .find_map(|k| arguments.get(*k).and_then(|v| v.as_str()));
    match subject {
        Some(s) => format!("{name} {s}"),
        None => name.to_owned(),
    }
}

/// The call's arguments as JSON (the runtime records them as the model's text).
pub fn arguments_value(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|_| serde_json::Value::String(text.to_owned()))
}

/// What a call asking for approval would do, as ACP content: a diff of the whole file
/// for a write or an edit (its text now, and after), the exact command, URL or path
/// otherwise.
pub fn effect_content(
    workspace: &Path,
    effect: &Effect,
    arguments: &serde_json::Value,
) -> Vec<acp::ToolCallContent> {
    match effect {
        Effect::Diff { path, diff, .. } => {
            let full = workspace.join(path);
            let old = std::fs::read_to_string(&full).ok();
            match after_write(old.as_deref(), arguments) {
                Some(new) => vec![acp::ToolCallContent::Diff(
                    acp::Diff::new(full, new).old_text(old),
                )],
                // Not a shape we can replay: the unified diff the person would see.
                None => vec![text_content(diff)],
            }
        }
        Effect::Delete { path } => vec![text_content(&format!("delete {path}"))],
        Effect::Command { command, cwd } => vec![text_content(&format!("$ {command}\n(in {cwd})"))],
        Effect::Fetch { url } => vec![text_content(&format!("fetch {url}"))],
        Effect::Memory { text, .. } => vec![text_content(&format!("remember: {text}"))],
        Effect::None => Vec::new(),
    }
}

/// The file's text after a `write_file` (`content`) or an `edit_file` (`edits` of
/// `old_text` → `new_text`, each replacing its first occurrence, as the tool does).
fn after_write(old: Option<&str>, arguments: &serde_json::Value) -> Option<String> {
    if let Some(content) = arguments.get("content").and_then(|c| c.as_str()) {
        return Some(content.to_owned());
    }
    let edits = arguments.get("edits")?.as_array()?;
    let mut text = old?.to_owned();
    for edit in edits {
        let from = edit.get("old_text")?.as_str()?;
        let to = edit.get("new_text")?.as_str()?;
        if !text.contains(from) {
            return None;
        }
        text = text.replacen(from, to, 1);
    }
    Some(text)
}

pub fn text_content(text: &str) -> acp::ToolCallContent {
    let shown: String = text.chars().take(OUTPUT_SHOWN).collect();
    acp::ToolCallContent::from(acp::ContentBlock::from(shown))
}

/// Why a prompt turn ended, from the run's status. `None`: the run failed (an error to
/// the client, with the runtime's sentence).
pub fn stop_reason(status: TaskStatus) -> Option<acp::StopReason> {
    match status {
        TaskStatus::Completed => Some(acp::StopReason::EndTurn),
        TaskStatus::Cancelled => Some(acp::StopReason::Cancelled),
        // A budget ran out (paused for the person, or stopped): the turn limit's reason.
        TaskStatus::BudgetExceeded | TaskStatus::Paused => Some(acp::StopReason::MaxTurnRequests),
        TaskStatus::Failed
        | TaskStatus::Queued
        | TaskStatus::Running
        | TaskStatus::WaitingApproval => None,
    }
}

/// The permission options offered for an approval, with their ids.
pub const ALLOW_ONCE: &str = "allow_once";
pub const ALLOW_ALWAYS: &str = "allow_always";
pub const REJECT: &str = "reject";

pub fn permission_options(always: &str) -> Vec<acp::PermissionOption> {
    vec![
        acp::PermissionOption::new(
            ALLOW_ONCE,
            "Allow once",
            acp::PermissionOptionKind::AllowOnce,
        ),
        acp::PermissionOption::new(ALLOW_ALWAYS, always, acp::PermissionOptionKind::AllowAlways),
        acp::PermissionOption::new(REJECT, "Reject", acp::PermissionOptionKind::RejectOnce),
    ]
}

#[cfg(test)]
#[path = "map_tests.rs"]
mod tests;
