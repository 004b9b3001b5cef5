//! `delete_path` (fs:delete): a file or symlink, or a directory tree with
//! `recursive: true`. A symlink is removed itself, never what it points to.
use std::path::Path;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{guard_and_sandbox, parse_args};
use crate::guard::{GuardError, WorkspaceGuard};
use crate::tool::{Effect, Tool, ToolContext, ToolError, ToolOutput};

/// `ToolOutput.changed` lists at most this many removed entries of a tree.
const MAX_CHANGED: usize = 10_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    #[serde(default)]
    recursive: bool,
}

pub struct DeletePath;

impl DeletePath {
    fn target(
        args: &Args,
        guard: &WorkspaceGuard,
    ) -> Result<(std::path::PathBuf, bool), ToolError> {
        let path = guard.resolve_entry(&args.path)?;
        let meta = std::fs::symlink_metadata(&path).map_err(|e| GuardError::io(&path, &e))?;
        let is_dir = meta.is_dir();
        if is_dir && !args.recursive {
            return Err(ToolError::Failed(format!(
                "{} is a directory; pass `recursive: true` to delete it and everything in it",
                guard.relative(&path)
            )));
        }
        if is_dir && guard.contains_forbidden(&path) {
            return Err(GuardError::Forbidden {
                path: guard.relative(&path),
            }
            .into());
        }
        Ok((path, is_dir))
    }
}

#[async_trait]
impl Tool for DeletePath {
    fn name(&self) -> &'static str {
        "delete_path"
    }

    fn description(&self) -> &'static str {
        "Delete a file or symbolic link in the workspace, or a directory and everything in it \
         when recursive is true."
    }

    fn brief(&self) -> &'static str {
        "Delete a file, or a directory with recursive true."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path relative to the workspace root."},
                "recursive": {"type": "boolean", "description": "Required to delete a directory."}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    fn capability(&self) -> &'static str {
        "fs:delete"
    }

    fn kind(&self) -> pocketpilot_model::ToolKind {
        pocketpilot_model::ToolKind::Write
    }

    fn replay_safe(&self) -> bool {
        false
    }

    fn effect(&self, args: &Value, ctx: &ToolContext) -> Result<Effect, ToolError> {
        let args: Args = parse_args(args)?;
        let guard = WorkspaceGuard::for_context(ctx)?;
        let (path, is_dir) = Self::target(&args, &guard)?;
        let mut rel = guard.relative(&path);
        if is_dir {
            rel.push('/');
        }
        Ok(Effect::Delete { path: rel })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(&args)?;
        let (guard, sandbox) = guard_and_sandbox(ctx)?;
        let (path, is_dir) = Self::target(&args, &guard)?;
        let rel = guard.relative(&path);
        let mut changed = vec![rel.clone()];
        if is_dir {
            collect_tree(&guard, &path, &mut changed);
        }
        sandbox.remove(&path, args.recursive)?;
        let what = if is_dir { "directory" } else { "file" };
        Ok(ToolOutput {
            text: format!("deleted {what} {rel}"),
            changed,
        })
    }
}

/// Everything under `dir`, without following links, for `ToolOutput.changed`.
fn collect_tree(guard: &WorkspaceGuard, dir: &Path, out: &mut Vec<String>) {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            if out.len() >= MAX_CHANGED {
                return;
            }
            let path = entry.path();
            if entry.file_type().is_ok_and(|ft| ft.is_dir()) {
                stack.push(path.clone());
            }
            out.push(guard.relative(&path));
        }
    }
}

#[cfg(test)]
#[path = "delete_path_tests.rs"]
mod tests;
