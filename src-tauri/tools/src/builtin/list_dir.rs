//! `list_dir` (fs:list): the entries of one directory, sorted, directories marked with `/`.
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{guard_and_sandbox, parse_args};
use crate::sandbox::EntryKind;
use crate::tool::{Effect, Tool, ToolContext, ToolError, ToolOutput};

/// At most this many entries are listed.
pub const LIST_CAP: usize = 1000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    #[serde(default = "dot")]
    path: String,
}

fn dot() -> String {
    ".".into()
}

pub struct ListDir;

#[async_trait]
impl Tool for ListDir {
    fn name(&self) -> &'static str {
        "list_dir"
    }

    fn description(&self) -> &'static str {
        "List a directory in the workspace (default: the root). Directories end with `/`, \
         symbolic links with `@`; files show their size in bytes."
    }

    fn brief(&self) -> &'static str {
        "List a directory in the workspace."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Directory relative to the workspace root; `.` is the root."}
            },
            "additionalProperties": false
        })
    }

    fn capability(&self) -> &'static str {
        "fs:list"
    }

    fn kind(&self) -> pocketpilot_model::ToolKind {
        pocketpilot_model::ToolKind::Search
    }

    fn replay_safe(&self) -> bool {
        true
    }

    fn effect(&self, args: &Value, _ctx: &ToolContext) -> Result<Effect, ToolError> {
        parse_args::<Args>(args)?;
        Ok(Effect::None)
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(&args)?;
        let (guard, sandbox) = guard_and_sandbox(ctx)?;
        let path = guard.resolve_dir(&args.path)?;
        let mut entries = sandbox.read_dir(&path)?;
        // The app's data dir may sit inside a broad workspace; do not even show it.
        entries.retain(|e| !guard.is_forbidden(&path.join(&e.name)));
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        let total = entries.len();
        let mut lines: Vec<String> = entries
            .iter()
            .take(LIST_CAP)
            .map(|e| {
                let name = e.name.to_string_lossy();
                match e.kind {
                    EntryKind::Dir => format!("{name}/"),
                    EntryKind::Symlink => format!("{name}@"),
                    EntryKind::File => format!("{name}  ({} bytes)", e.size),
                    EntryKind::Other => format!("{name}  (special file)"),
                }
            })
            .collect();
        if lines.is_empty() {
            lines.push(format!("{} is empty", guard.relative(&path)));
        }
        if total > LIST_CAP {
            lines.push(format!("[{} more entries not shown]", total - LIST_CAP));
        }
        Ok(ToolOutput::text(lines.join("\n")))
    }
}

#[cfg(test)]
#[path = "list_dir_tests.rs"]
mod tests;
