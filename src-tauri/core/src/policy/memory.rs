//! Memory (issue 18): durable notes given to the model on every run, kept in the store.
//!
//! The agent proposes one with `remember` (capability `memory:write`): like any write it
//! needs the person's approval, so the proposal reaches them as an approval of its own kind
//! (`Effect::Memory`) — in the window, the tray and the CLI, surviving restarts — and the
//! memory exists only once they accept it (edited, if they like). Rejected: nothing is kept.
//! The setting [`AUTO_ACCEPT_KEY`] grants `memory:write` to every run instead.
use std::sync::Arc;

use async_trait::async_trait;
use pocketpilot_protocol::{Effect, Memory, MemoryScope};
use pocketpilot_tools::{Tool, ToolContext, ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::store::{memories, settings, Store, StoreError};

/// The capability a proposed memory needs: a write, hence an approval by default.
pub const CAPABILITY: &str = pocketpilot_protocol::capability::name::MEMORY_WRITE;
/// Stored setting: keep proposed memories without asking.
pub const AUTO_ACCEPT_KEY: &str = "memory.auto_accept";

pub fn auto_accept(c: &rusqlite::Connection) -> Result<bool, StoreError> {
    Ok(settings::get(c, AUTO_ACCEPT_KEY)?.unwrap_or(false))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    text: String,
    #[serde(default = "workspace_scope")]
    scope: MemoryScope,
}

fn workspace_scope() -> MemoryScope {
    MemoryScope::Workspace
}

fn parse(args: &Value) -> Result<Args, ToolError> {
    let args: Args = serde_json::from_value(args.clone())
        .map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
    let len = args.text.trim().len();
    if len == 0 || len > memories::MAX_MEMORY_BYTES {
        return Err(ToolError::InvalidArguments(format!(
            "`text` must be 1 to {} bytes",
            memories::MAX_MEMORY_BYTES
        )));
    }
    Ok(args)
}

/// `remember`: proposes a memory; it is written only when the call runs, i.e. after the
/// person accepted it (or the auto-accept setting granted it).
pub struct Remember {
    pub(crate) store: Arc<Store>,
    pub task_id: i64,
}

#[async_trait]
impl Tool for Remember {
    fn name(&self) -> &'static str {
        "remember"
    }

    fn description(&self) -> &'static str {
        "Propose a durable note for later runs; the person decides whether it is kept."
    }

    fn brief(&self) -> &'static str {
        "Propose a note to keep; the person decides."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "scope": {"type": "string", "enum": ["workspace", "global"]}
            },
            "required": ["text"],
            "additionalProperties": false
        })
    }

    fn capability(&self) -> &'static str {
        CAPABILITY
    }

    fn replay_safe(&self) -> bool {
        false
    }

    fn effect(&self, args: &Value, _ctx: &ToolContext) -> Result<Effect, ToolError> {
        let args = parse(args)?;
        Ok(Effect::Memory {
            scope: args.scope,
            text: args.text.trim().to_owned(),
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args = parse(&args)?;
        let workspace = ctx.workspace.display().to_string();
        let task_id = self.task_id;
        let text = args.text;
        let scope = args.scope;
        let kept: Memory = self
            .store
            .write_async(move |tx| memories::add(tx, scope, Some(&workspace), &text, Some(task_id)))
            .await
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        Ok(ToolOutput::text(format!(
            "Kept as memory {} ({}).",
            kept.id, kept.scope
        )))
    }
}
