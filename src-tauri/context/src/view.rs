//! The model's view of a session: the messages of the next request, each tagged with
//! what it is, so the planner knows what it may cut and what it must keep.
use pocketpilot_model::{Message, ToolCall, ToolKind};
use serde::{Deserialize, Serialize};

/// The runtime's own key for an item (its transcript entry), handed back in the plan so
/// it can tell which entries a summary replaces.
pub type ItemId = u64;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ItemKind {
    /// The agent's rules (the system prompt). Never cut.
    SystemRules,
    /// The workspace's own instructions (AGENTS.md and the like). Never cut.
    WorkspaceInstructions,
    /// Something the person typed: a follow-up, a steer. Kept verbatim; only when the
    /// kept items alone cannot fit are the oldest replaced by a visible marker.
    PersonInstruction,
    /// The current task's goal, as the person typed it. Never cut.
    Goal,
    /// A model turn: text and/or tool calls.
    AssistantTurn,
    /// What a tool answered to one call.
    ToolResult {
        call_id: String,
        name: String,
        /// A short rendering of the call's arguments (`path=src/main.rs`), for markers.
        args_summary: String,
        /// What the tool does, as it declares it: how to see a cut output again.
        #[serde(default)]
        tool_kind: ToolKind,
    },
    /// An earlier compaction's summary of older turns.
    Summary,
}

impl ItemKind {
    /// Whether the planner keeps the item verbatim whatever happens (bar the last
    /// resort for person instructions).
    pub fn is_protected(&self) -> bool {
        matches!(
            self,
            ItemKind::SystemRules
                | ItemKind::WorkspaceInstructions
                | ItemKind::PersonInstruction
                | ItemKind::Goal
        )
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    pub id: ItemId,
    pub kind: ItemKind,
    pub message: Message,
}

impl Item {
    pub fn system_rules(id: ItemId, text: impl Into<String>) -> Self {
        Self {
            id,
            kind: ItemKind::SystemRules,
            message: Message::system(text),
        }
    }
    pub fn workspace_instructions(id: ItemId, text: impl Into<String>) -> Self {
        Self {
            id,
            kind: ItemKind::WorkspaceInstructions,
            message: Message::system(text),
        }
    }
    pub fn person(id: ItemId, text: impl Into<String>) -> Self {
        Self {
            id,
            kind: ItemKind::PersonInstruction,
            message: Message::user(text),
        }
    }
    pub fn goal(id: ItemId, text: impl Into<String>) -> Self {
        Self {
            id,
            kind: ItemKind::Goal,
            message: Message::user(text),
        }
    }
    pub fn assistant(id: ItemId, text: impl Into<String>, calls: Vec<ToolCall>) -> Self {
        Self {
            id,
            kind: ItemKind::AssistantTurn,
            message: Message::assistant(text, calls),
        }
    }
    /// A tool's answer to `call`, from a tool of `tool_kind`; the arguments are summarised
    /// for markers.
    pub fn tool_result(
        id: ItemId,
        call: &ToolCall,
        tool_kind: ToolKind,
        text: impl Into<String>,
    ) -> Self {
        Self {
            id,
            kind: ItemKind::ToolResult {
                call_id: call.id.clone(),
                name: call.name.clone(),
                args_summary: summarize_args(&call.arguments, 80),
                tool_kind,
            },
            message: Message::tool_result(call.id.clone(), text),
        }
    }
    pub fn summary(id: ItemId, text: impl Into<String>) -> Self {
        Self {
            id,
            kind: ItemKind::Summary,
            message: Message::assistant(summary_text(&text.into()), vec![]),
        }
    }

    pub fn text(&self) -> &str {
        self.message.content.as_deref().unwrap_or("")
    }
}

/// How a summary reads in the view: marked as such, so the model does not take it for
/// something it was told.
pub fn summary_text(summary: &str) -> String {
    format!("{SUMMARY_HEADER}\n{summary}")
}

pub(crate) const SUMMARY_HEADER: &str = "[Summary of earlier turns, written to fit the model's context window. The person's own messages are kept verbatim elsewhere.]";

/// `{"path":"src/main.rs","limit":20}` → `path=src/main.rs, limit=20`, at most `max`
/// characters. Text that is not a JSON object is shortened as it is.
pub fn summarize_args(arguments: &str, max: usize) -> String {
    let text = match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(serde_json::Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                serde_json::Value::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            })
            .collect::<Vec<_>>()
            .join(", "),
        _ => arguments.trim().to_owned(),
    };
    shorten(&text, max)
}

/// At most `max` characters of one line of `text`, with `…` when cut.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if one_line.chars().count() <= max {
        return one_line;
    }
    let mut out: String = one_line.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// What to do to see an elided output of `tool` again, by what the tool declares it does.
pub(crate) fn how_to_get_back(kind: ToolKind, tool: &str) -> String {
    match kind {
        ToolKind::Read => "read the file again to see it".into(),
        ToolKind::Write => "read the file to see what it holds now".into(),
        ToolKind::Command => "rerun the command to see it".into(),
        ToolKind::Fetch => "fetch it again to see it".into(),
        ToolKind::Search => "run the search again to see it".into(),
        ToolKind::Other => format!("call {tool} again to see it"),
    }
}

/// `12345` → `12,345`.
pub(crate) fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
