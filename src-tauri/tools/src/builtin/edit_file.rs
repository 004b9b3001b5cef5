//! `edit_file` (fs:write): exact-match replacements in an existing text file. Each edit's
//! `old_text` must occur exactly once in the text as the previous edits left it; edits
//! apply in order and the file is written only if all of them apply.
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{
    check_content, content_sha256, current_text, diff_cap, guard_and_sandbox, parse_args, put_text,
    unified_diff,
};
use crate::tool::{Effect, Tool, ToolContext, ToolError, ToolOutput};

pub const MAX_EDITS: usize = 100;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    edits: Vec<Edit>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Edit {
    old_text: String,
    new_text: String,
}

pub struct EditFile;

impl EditFile {
    fn args(args: &Value) -> Result<Args, ToolError> {
        let args: Args = parse_args(args)?;
        if args.edits.is_empty() || args.edits.len() > MAX_EDITS {
            return Err(ToolError::InvalidArguments(format!(
                "`edits` needs between 1 and {MAX_EDITS} entries"
            )));
        }
        for (i, edit) in args.edits.iter().enumerate() {
            if edit.old_text.is_empty() {
                return Err(ToolError::InvalidArguments(format!(
                    "edit {}: old_text is empty",
                    i + 1
                )));
            }
            check_content("old_text", &edit.old_text)?;
            check_content("new_text", &edit.new_text)?;
        }
        Ok(args)
    }

    /// The edited text and the diff, computed without touching the disk.
    fn plan(args: &Args, ctx: &ToolContext) -> Result<Planned, ToolError> {
        let (guard, sandbox) = guard_and_sandbox(ctx)?;
        let path = guard.resolve_file(&args.path)?;
        guard.check_writable(&args.path, &path)?;
        let rel = guard.relative(&path);
        let Some(old) = current_text(&sandbox, &path, &rel, diff_cap())? else {
            return Err(ToolError::Failed(format!("{rel} does not exist")));
        };
        let new = apply_edits(&old, &args.edits, &rel)?;
        let diff = unified_diff(&rel, Some(&old), &new);
        let base_sha256 = content_sha256(old.as_bytes(), old.len() as u64);
        Ok(Planned {
            sandbox,
            path,
            rel,
            new,
            diff,
            base_sha256,
        })
    }
}

struct Planned {
    sandbox: crate::sandbox::Sandbox,
    path: std::path::PathBuf,
    rel: String,
    new: String,
    diff: String,
    base_sha256: String,
}

fn apply_edits(text: &str, edits: &[Edit], rel: &str) -> Result<String, ToolError> {
    let mut text = text.to_string();
    for (i, edit) in edits.iter().enumerate() {
        let n = i + 1;
        let mut found = text.match_indices(&edit.old_text);
        let Some((at, _)) = found.next() else {
            return Err(ToolError::Failed(format!(
                "edit {n}: old_text was not found in {rel}; nothing was changed"
            )));
        };
        if found.next().is_some() {
            let count = text.matches(&edit.old_text).count();
            return Err(ToolError::Failed(format!(
                "edit {n}: old_text occurs {count} times in {rel}; include more context so it \
                 matches exactly once; nothing was changed"
            )));
        }
        text.replace_range(at..at + edit.old_text.len(), &edit.new_text);
    }
    Ok(text)
}

#[async_trait]
impl Tool for EditFile {
    fn name(&self) -> &'static str {
        "edit_file"
    }

    fn description(&self) -> &'static str {
        "Edit an existing text file by exact replacement. Each edit replaces old_text, which \
         must occur exactly once (after the previous edits), with new_text. Edits apply in \
         order; if any fails, the file is left unchanged."
    }

    fn brief(&self) -> &'static str {
        "Edit a file: replace each old_text (found exactly once) with new_text."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path relative to the workspace root."},
                "edits": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_EDITS,
                    "items": {
                        "type": "object",
                        "properties": {
                            "old_text": {"type": "string", "description": "Exact text to replace, including whitespace."},
                            "new_text": {"type": "string", "description": "Replacement text."}
                        },
                        "required": ["old_text", "new_text"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["path", "edits"],
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
        let planned = Self::plan(&args, ctx)?;
        Ok(Effect::Diff {
            path: planned.rel,
            diff: planned.diff,
            base_sha256: Some(planned.base_sha256),
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args = Self::args(&args)?;
        let planned = Self::plan(&args, ctx)?;
        // Exactly the approved diff's result, through the editor when it takes writes.
        put_text(
            ctx,
            &planned.sandbox,
            &planned.path,
            &planned.rel,
            &planned.new,
        )
        .await?;
        Ok(ToolOutput {
            text: format!(
                "edited {} ({} edits applied)",
                planned.rel,
                args.edits.len()
            ),
            changed: vec![planned.rel],
        })
    }
}

#[cfg(test)]
#[path = "edit_file_tests.rs"]
mod tests;
