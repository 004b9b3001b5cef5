//! `read_file` (fs:read): a text file's contents, capped, optionally a line range.
use std::io::{BufRead, BufReader, Read};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{guard_and_sandbox, looks_binary, parse_args};
use crate::tool::{Effect, Tool, ToolContext, ToolError, ToolOutput};

/// At most this much of a file is returned.
pub const READ_CAP_BYTES: u64 = 256 * 1024;
/// A line-range read scans at most this far into a file.
const MAX_SCAN_BYTES: u64 = 64 * 1024 * 1024;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    /// 1-based first line to return.
    #[serde(default)]
    start_line: Option<usize>,
    #[serde(default)]
    max_lines: Option<usize>,
}

pub struct ReadFile;

#[async_trait]
impl Tool for ReadFile {
    fn name(&self) -> &'static str {
        "read_file"
    }

    fn description(&self) -> &'static str {
        "Read a UTF-8 text file in the workspace. Returns at most 256 KiB; use start_line and \
         max_lines to page through larger files. Binary files are refused."
    }

    fn brief(&self) -> &'static str {
        "Read a text file in the workspace."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path relative to the workspace root."},
                "start_line": {"type": "integer", "minimum": 1, "description": "First line to return (1-based)."},
                "max_lines": {"type": "integer", "minimum": 1, "description": "How many lines to return."}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    fn capability(&self) -> &'static str {
        "fs:read"
    }

    fn kind(&self) -> pocketpilot_model::ToolKind {
        pocketpilot_model::ToolKind::Read
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
        if args.start_line == Some(0) || args.max_lines == Some(0) {
            return Err(ToolError::InvalidArguments(
                "start_line and max_lines start at 1".into(),
            ));
        }
        let (guard, sandbox) = guard_and_sandbox(ctx)?;
        let path = guard.resolve_file(&args.path)?;
        let rel = guard.relative(&path);
        let (file, total_len) = sandbox.open_file(&path)?;
        // The guard and the sandbox passed on the disk's file; an editor that offers
        // reads gives its buffer's text, saved or not.
        let (file, total_len): (Box<dyn Read + Send>, u64) = match editor_text(ctx, &path).await {
            Some(text) => {
                let len = text.len() as u64;
                (Box::new(std::io::Cursor::new(text.into_bytes())), len)
            }
            None => (Box::new(file), total_len),
        };
        let ranged = args.start_line.is_some() || args.max_lines.is_some();
        let (bytes, truncated) = if ranged {
            let start = args.start_line.unwrap_or(1) - 1;
            let take = args.max_lines.unwrap_or(usize::MAX);
            read_lines(file, start, take).map_err(|e| ToolError::Failed(format!("{rel}: {e}")))?
        } else {
            let mut bytes = Vec::new();
            file.take(READ_CAP_BYTES)
                .read_to_end(&mut bytes)
                .map_err(|e| ToolError::Failed(format!("{rel}: {e}")))?;
            let truncated = total_len > bytes.len() as u64;
            (bytes, truncated)
        };
        if looks_binary(&bytes) {
            return Err(ToolError::Failed(format!(
                "{rel} looks like a binary file ({total_len} bytes); it is not shown"
            )));
        }
        let mut text = match String::from_utf8(bytes) {
            Ok(text) => text,
            // A cut at the cap can split a character: drop the partial tail only.
            Err(e) if truncated && e.utf8_error().error_len().is_none() => {
                let valid = e.utf8_error().valid_up_to();
                let mut bytes = e.into_bytes();
                bytes.truncate(valid);
                String::from_utf8_lossy(&bytes).into_owned()
            }
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        if truncated {
            text.push_str(&format!(
                "\n[truncated: {total_len} bytes in the file, at most {READ_CAP_BYTES} shown; \
                 use start_line and max_lines to read another part]"
            ));
        }
        Ok(ToolOutput::text(text))
    }
}

/// The editor's text of `path`, when reads go through one. An editor that cannot say
/// (the file is not one it can open) leaves the read to the disk.
async fn editor_text(ctx: &ToolContext, path: &std::path::Path) -> Option<String> {
    let editor = ctx.editor_reads()?;
    match editor.read_text(path).await {
        Ok(text) => Some(text),
        Err(e) => {
            tracing::info!(path = %path.display(), error = %e, "the editor could not read it: read from the disk");
            None
        }
    }
}

/// Skips `start` lines, then collects up to `take` lines or `READ_CAP_BYTES`. Scanning
/// stops after `MAX_SCAN_BYTES` so a huge file cannot make one call slow.
fn read_lines(file: impl Read, start: usize, take: usize) -> std::io::Result<(Vec<u8>, bool)> {
    let mut reader = BufReader::new(file.take(MAX_SCAN_BYTES));
    let mut out = Vec::new();
    let mut line = Vec::new();
    let mut index = 0usize;
    let mut taken = 0usize;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            return Ok((out, false));
        }
        if index >= start {
            if taken == take {
                return Ok((out, false));
            }
            if out.len() + line.len() > READ_CAP_BYTES as usize {
                let room = READ_CAP_BYTES as usize - out.len();
                out.extend_from_slice(&line[..room]);
                return Ok((out, true));
            }
            out.extend_from_slice(&line);
            taken += 1;
        } else if looks_binary(&line) {
            // Binary content before the range still makes it a binary file.
            return Ok((line, false));
        }
        index += 1;
    }
}

#[cfg(test)]
#[path = "read_file_tests.rs"]
mod tests;
