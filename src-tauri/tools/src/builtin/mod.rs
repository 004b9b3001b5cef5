//! The built-in tools, one file each, and what they share: argument parsing with size
//! limits, binary detection and diffs.
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::guard::WorkspaceGuard;
use crate::sandbox::Sandbox;
use crate::tool::{ToolContext, ToolError};

pub mod delete_path;
pub mod edit_file;
pub mod fetch_url;
pub mod list_dir;
pub mod load_skill;
pub mod read_file;
pub mod run_command;
pub mod search_files;
pub mod write_file;

#[cfg(test)]
pub(crate) mod test_support;

pub use delete_path::DeletePath;
pub use edit_file::EditFile;
pub use fetch_url::FetchUrl;
pub use list_dir::ListDir;
pub use load_skill::LoadSkill;
pub use read_file::ReadFile;
pub use run_command::RunCommand;
pub use search_files::SearchFiles;
pub use write_file::WriteFile;

/// The largest arguments object a tool accepts, serialised.
pub const MAX_ARGS_BYTES: usize = 2 * 1024 * 1024;
/// The largest text a write or an edit may put in a file.
pub const MAX_CONTENT_BYTES: usize = 1024 * 1024;
/// Files larger than this are not diffed for an approval preview.
const MAX_DIFF_INPUT_BYTES: u64 = 1024 * 1024;

/// Deserialises arguments into the tool's typed struct (`deny_unknown_fields`), refusing
/// oversized input first so a huge argument costs nothing further. `null` counts as `{}`
/// because some models send it for tools without required arguments.
pub(crate) fn parse_args<T: DeserializeOwned>(args: &Value) -> Result<T, ToolError> {
    let size = json_size(args);
    if size > MAX_ARGS_BYTES {
        return Err(ToolError::InvalidArguments(format!(
            "the arguments are {size} bytes; at most {MAX_ARGS_BYTES} are accepted"
        )));
    }
    let empty = Value::Object(Default::default());
    let args = if args.is_null() { &empty } else { args };
    T::deserialize(args).map_err(|e| ToolError::InvalidArguments(e.to_string()))
}

fn json_size(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a Value to a sink cannot fail; if it did, treat the size as unknown-large.
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => usize::MAX,
    }
}

pub(crate) fn check_content(label: &str, text: &str) -> Result<(), ToolError> {
    if text.len() > MAX_CONTENT_BYTES {
        return Err(ToolError::InvalidArguments(format!(
            "`{label}` is {} bytes; at most {MAX_CONTENT_BYTES} are accepted",
            text.len()
        )));
    }
    Ok(())
}

/// Same heuristic as git: a NUL byte in the first 8 KiB.
pub(crate) fn looks_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(8192).any(|&b| b == 0)
}

pub(crate) fn guard_and_sandbox(ctx: &ToolContext) -> Result<(WorkspaceGuard, Sandbox), ToolError> {
    let guard = WorkspaceGuard::for_context(ctx)?;
    let sandbox = Sandbox::open(&guard)?;
    Ok((guard, sandbox))
}

/// The current text of a file that is about to be replaced: `None` if it does not exist.
/// Refuses binary and non-UTF-8 files, which the text tools cannot reproduce faithfully.
pub(crate) fn current_text(
    sandbox: &Sandbox,
    path: &std::path::Path,
    rel: &str,
    cap: u64,
) -> Result<Option<String>, ToolError> {
    let Some(head) = sandbox.read_if_exists(path, cap)? else {
        return Ok(None);
    };
    if head.total_len > cap {
        return Err(ToolError::Failed(format!(
            "{rel} is {} bytes; files above {cap} bytes are not edited by these tools",
            head.total_len
        )));
    }
    if looks_binary(&head.bytes) {
        return Err(ToolError::Failed(format!("{rel} is a binary file")));
    }
    String::from_utf8(head.bytes)
        .map(Some)
        .map_err(|_| ToolError::Failed(format!("{rel} is not valid UTF-8 text")))
}

/// What an approval pins a file by: the SHA-256 of the bytes read (at most the diff cap)
/// and, past the cap, the file's length too.
pub(crate) fn content_sha256(bytes: &[u8], total_len: u64) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(bytes);
    if total_len > bytes.len() as u64 {
        h.update(total_len.to_le_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// A unified diff of `old` → `new` as shown in the approval dialog.
pub(crate) fn unified_diff(rel: &str, old: Option<&str>, new: &str) -> String {
    let (old_text, old_header) = match old {
        Some(text) => (text, format!("a/{rel}")),
        None => ("", "/dev/null".to_string()),
    };
    similar::TextDiff::from_lines(old_text, new)
        .unified_diff()
        .context_radius(3)
        .header(&old_header, &format!("b/{rel}"))
        .to_string()
}

/// Puts the approved `text` in the file at `path` (already guarded). With an editor that
/// takes writes, the editor gets it first (its buffer shows it); the disk must then hold
/// it too, so commands and the change journal (which scans the disk around the call, and
/// undo restores) see what was written: an editor that only changed its buffer has the
/// same text written here.
pub(crate) async fn put_text(
    ctx: &ToolContext,
    sandbox: &Sandbox,
    path: &std::path::Path,
    rel: &str,
    text: &str,
) -> Result<(), ToolError> {
    if let Some(editor) = ctx.editor_writes() {
        editor.write_text(path, text).await.map_err(|e| {
            ToolError::Failed(format!(
                "the editor did not take the write of {rel}: {e}; nothing was written"
            ))
        })?;
        let cap = text.len() as u64 + 1;
        if let Ok(Some(head)) = sandbox.read_if_exists(path, cap) {
            if head.total_len == text.len() as u64 && head.bytes == text.as_bytes() {
                return Ok(());
            }
        }
    }
    sandbox.write_atomic(path, text.as_bytes())?;
    Ok(())
}

/// The largest existing file write/edit will read back for a diff or an edit.
pub(crate) const fn diff_cap() -> u64 {
    MAX_DIFF_INPUT_BYTES
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
