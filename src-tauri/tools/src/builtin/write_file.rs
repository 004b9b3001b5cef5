//! `write_file` (fs:write): creates or replaces a text file, creating missing parent
//! directories inside the workspace. The write is atomic (temporary file + rename).
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{
    check_content, content_sha256, diff_cap, guard_and_sandbox, looks_binary, parse_args, put_text,
    unified_diff,
};
use crate::tool::{Effect, Tool, ToolContext, ToolError, ToolOutput};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    content: String,
}

pub struct WriteFile;

impl WriteFile {
    fn args(args: &Value) -> Result<Args, ToolError> {
        let args: Args = parse_args(args)?;
        check_content("content", &args.content)?;
        Ok(args)
    }
}

#[async_trait]
impl Tool for WriteFile {
    fn name(&self) -> &'static str {
        "write_file"
    }

    fn description(&self) -> &'static str {
        "Create a text file in the workspace, or replace its whole content. Missing parent \
         directories are created. To change part of a file, prefer edit_file."
    }

    fn brief(&self) -> &'static str {
        "Create a text file or replace its whole content."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path relative to the workspace root."},
                "content": {"type": "string", "description": "The complete new content (at most 1 MiB)."}
            },
            "required": ["path", "content"],
            "additionalProperties": false
        })
    }

    fn capability(&self) -> &'static str {
        "fs:write"
    }

    fn kind(&self) -> pocketpilot_model::ToolKind {
        pocketpilot_model::ToolKind::Write
    }

    fn replay_safe(&self) -> bool {
        false
    }

    fn effect(&self, args: &Value, ctx: &ToolContext) -> Result<Effect, ToolError> {
        let args = Self::args(args)?;
        let (guard, sandbox) = guard_and_sandbox(ctx)?;
        let path = guard.resolve_for_write(&args.path)?;
        let rel = guard.relative(&path);
        let head = sandbox.read_if_exists(&path, diff_cap())?;
        let base_sha256 = head.as_ref().map(|h| content_sha256(&h.bytes, h.total_len));
        let diff = match head {
            None => unified_diff(&rel, None, &args.content),
            Some(head) if head.total_len > diff_cap() || looks_binary(&head.bytes) => format!(
                "{rel}: the existing file ({} bytes, binary or too large to diff) will be \
                 replaced by {} bytes of text\n",
                head.total_len,
                args.content.len()
            ),
            Some(head) => {
                let old = String::from_utf8_lossy(&head.bytes);
                unified_diff(&rel, Some(&old), &args.content)
            }
        };
        Ok(Effect::Diff {
            path: rel,
            diff,
            base_sha256,
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args = Self::args(&args)?;
        let (guard, sandbox) = guard_and_sandbox(ctx)?;
        let path = guard.resolve_for_write(&args.path)?;
        let rel = guard.relative(&path);
        let existed = std::fs::symlink_metadata(&path).is_ok();
        put_text(ctx, &sandbox, &path, &rel, &args.content).await?;
        let verb = if existed { "replaced" } else { "created" };
        Ok(ToolOutput {
            text: format!("{verb} {rel} ({} bytes)", args.content.len()),
            changed: vec![rel],
        })
    }
}

#[cfg(test)]
#[path = "write_file_tests.rs"]
mod tests;
