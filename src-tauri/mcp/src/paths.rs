//! Path arguments of MCP calls go through the `WorkspaceGuard` before the server sees them.
//!
//! Which strings are paths:
//! - every string under a **path-like key** (and every string in an array under one): a key
//!   whose last word (camelCase, snake_case or kebab-case) is one of [`PATH_WORDS`], e.g.
//!   `path`, `paths`, `source`, `destination`, `file`, `directory`, `sourcePath`,
//!   `output_file`;
//! - under any other key, every piece of a string between control characters (newlines,
//!   tabs, NUL, …), trimmed of whitespace, that **could name a path**: an absolute path
//!   (leading `//…` collapsed to `/…`; `/…` whose first component exists on this machine, or
//!   which lies lexically inside the workspace), a `~` path, a `file://` URI (percent-decoded
//!   before the check), or a relative path (one with a `/`, one starting with `.`, or one
//!   naming an existing entry of the workspace, the servers' cwd).
//!
//! A string under a path-like key with surrounding whitespace or control characters is
//! ambiguous (a server may trim it, or stop at a NUL) and is refused, not guessed at.
//!
//! Each is resolved like the built-in tools do (symlinks, `..`, the app's own dirs); a path
//! that does not exist yet must have its nearest existing parent inside. Anything outside is
//! refused with `ToolError::PathRejected` and the call never reaches the server.
//!
//! **Relative** strings under path-like keys are rewritten to the absolute path the guard
//! resolved, so that a server which resolves relative paths its own way (server-filesystem
//! resolves them against *its* allowed directories, not the workspace) acts on exactly the
//! file that was checked. Servers whose `path` arguments are not local files (e.g.
//! repository paths) can keep them verbatim with `McpServerConfig::keep_relative_paths`;
//! they are still checked. Other strings are never rewritten.
//!
//! Limit: the server acts on the path after the check, with its own file access; a symlink
//! swapped in between is out of PocketPilot's reach (the built-in tools close that gap with
//! their sandbox; an MCP server would need to be confined by its own configuration, e.g.
//! server-filesystem's allowed directories).
use std::path::{Path, PathBuf};

use pocketpilot_tools::{GuardError, ToolError, WorkspaceGuard};
use serde_json::Value;

/// Last words of a key that make its string values paths.
pub const PATH_WORDS: &[&str] = &[
    "path",
    "paths",
    "pathname",
    "file",
    "files",
    "filename",
    "filepath",
    "dir",
    "dirs",
    "directory",
    "directories",
    "folder",
    "folders",
    "source",
    "sources",
    "destination",
    "dest",
    "cwd",
];

/// Whether a key names a path: its last word (split at `_`, `-`, `.` and lowercase→uppercase).
pub fn is_path_key(key: &str) -> bool {
    let mut last = String::new();
    let mut prev_lower = false;
    for c in key.chars() {
        if matches!(c, '_' | '-' | '.' | ' ') {
            if !last.is_empty() {
                last.clear();
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower {
            last.clear();
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        last.extend(c.to_lowercase());
    }
    // A trailing separator leaves `last` empty; look at the key without it.
    if last.is_empty() {
        let trimmed = key.trim_end_matches(['_', '-', '.', ' ']);
        return !trimmed.is_empty() && trimmed != key && is_path_key(trimmed);
    }
    PATH_WORDS.contains(&last.as_str())
}

/// Checks every path in `args` and returns the arguments to send (relative path-key values
/// rewritten to absolute unless `keep_relative`).
pub fn guard_arguments(
    args: &Value,
    guard: &WorkspaceGuard,
    keep_relative: bool,
) -> Result<Value, ToolError> {
    let mut out = args.clone();
    let mut walker = Walker {
        guard,
        keep_relative,
    };
    walker.value(&mut out, "", false)?;
    Ok(out)
}

struct Walker<'a> {
    guard: &'a WorkspaceGuard,
    keep_relative: bool,
}

impl Walker<'_> {
    fn value(&mut self, v: &mut Value, pointer: &str, path_key: bool) -> Result<(), ToolError> {
        match v {
            Value::Object(map) => {
                for (key, child) in map.iter_mut() {
                    let child_pointer = format!("{pointer}/{key}");
                    self.value(child, &child_pointer, is_path_key(key))?;
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter_mut().enumerate() {
                    let child_pointer = format!("{pointer}/{i}");
                    self.value(child, &child_pointer, path_key)?;
                }
            }
            Value::String(s) => {
                if path_key {
                    if let Some(new) = self.path_key_string(s, pointer)? {
                        *s = new;
                    }
                } else {
                    self.loose_string(s, pointer)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// A string under a path-like key: always a path (a `file://` URI is checked as one
    /// and sent unchanged).
    fn path_key_string(&self, s: &str, pointer: &str) -> Result<Option<String>, ToolError> {
        if s.trim() != s || s.chars().any(char::is_control) {
            return Err(reject(
                pointer,
                "a path with surrounding whitespace or control characters is ambiguous",
            ));
        }
        if let Some(path) = file_uri_path(s) {
            let path = path.map_err(|m| reject(pointer, &m))?;
            check(self.guard, &path).map_err(|e| reject_guard(pointer, e))?;
            return Ok(None);
        }
        let resolved = check(self.guard, s).map_err(|e| reject_guard(pointer, e))?;
        if Path::new(s).is_absolute() || self.keep_relative {
            return Ok(None);
        }
        Ok(Some(resolved.to_string_lossy().into_owned()))
    }

    /// A string under any other key: each piece between control characters is checked
    /// when it could name a path; never rewritten.
    fn loose_string(&self, s: &str, pointer: &str) -> Result<(), ToolError> {
        for piece in s.split(|c: char| c.is_control()) {
            self.loose_piece(piece.trim(), pointer)?;
        }
        Ok(())
    }

    fn loose_piece(&self, s: &str, pointer: &str) -> Result<(), ToolError> {
        if s.is_empty() {
            return Ok(());
        }
        if let Some(path) = file_uri_path(s) {
            let path = path.map_err(|m| reject(pointer, &m))?;
            check(self.guard, &path).map_err(|e| reject_guard(pointer, e))?;
            return Ok(());
        }
        if s == "~" || s.starts_with("~/") {
            return Err(reject_guard(pointer, GuardError::HomeRelative));
        }
        if s.starts_with('/') {
            // `//etc/passwd` is `/etc/passwd` to the kernel.
            let collapsed = format!("/{}", s.trim_start_matches('/'));
            if looks_absolute(&collapsed, self.guard.root()) {
                check(self.guard, &collapsed).map_err(|e| reject_guard(pointer, e))?;
            }
            return Ok(());
        }
        if looks_relative(s, self.guard.root()) {
            check_relative(self.guard, s).map_err(|e| reject_guard(pointer, e))?;
        }
        Ok(())
    }
}

/// A relative string a server would resolve against its cwd (the workspace): one with a
/// `/`, one starting with `.`, or one naming an existing entry there.
fn looks_relative(s: &str, root: &Path) -> bool {
    if s.len() > MAX_LOOSE_PATH_BYTES {
        return false;
    }
    s.contains('/') || s.starts_with('.') || std::fs::symlink_metadata(root.join(s)).is_ok()
}

/// Longest string under a non-path key still taken for a relative path (PATH_MAX).
const MAX_LOOSE_PATH_BYTES: usize = 4096;

/// Like [`check`], but a text that resolves inside and merely is not a usable path
/// (`a.txt/x`, `dir/`) passes: only a way out is refused.
fn check_relative(guard: &WorkspaceGuard, raw: &str) -> Result<(), GuardError> {
    match check(guard, raw) {
        Ok(_)
        | Err(GuardError::NotADirectory { .. })
        | Err(GuardError::NotRegularFile { .. })
        | Err(GuardError::IsRoot { .. }) => Ok(()),
        Err(other) => Err(other),
    }
}

/// `/…` whose first component exists (`/etc/x`, `/tmp/new`, `/`), or that lies lexically in
/// the workspace. `/help` or `/* comment */` are text.
fn looks_absolute(s: &str, root: &Path) -> bool {
    if !s.starts_with('/') || s.starts_with("/*") {
        return false;
    }
    if Path::new(s).starts_with(root) {
        return true;
    }
    let first = s.trim_start_matches('/').split('/').next().unwrap_or("");
    if first.is_empty() {
        return true; // "/" itself
    }
    std::fs::symlink_metadata(Path::new("/").join(first)).is_ok()
}

/// `Some(path)` for a `file:` URI (`file:///p`, `file://localhost/p`), percent-decoded.
fn file_uri_path(s: &str) -> Option<Result<String, String>> {
    let lower = s.get(..5)?.to_ascii_lowercase();
    if lower != "file:" {
        return None;
    }
    let rest = &s[5..];
    let rest = match rest.strip_prefix("//") {
        Some(after) => match after.find('/') {
            Some(0) => after,
            Some(i) if after[..i].eq_ignore_ascii_case("localhost") => &after[i..],
            Some(_) => return Some(Err(format!("`{s}` names another host"))),
            None => return Some(Err(format!("`{s}` has no path"))),
        },
        None => rest,
    };
    let rest = rest.split(['?', '#']).next().unwrap_or("");
    Some(percent_decode(rest).ok_or_else(|| format!("`{s}` is not a valid file URI")))
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The real path `raw` names inside the workspace, existing or not (a missing one must
/// have its nearest existing parent inside).
fn check(guard: &WorkspaceGuard, raw: &str) -> Result<PathBuf, GuardError> {
    match guard.resolve_existing(raw) {
        Ok(path) => Ok(path),
        Err(GuardError::NotFound { .. }) => {
            let trimmed = raw.trim_end_matches('/');
            guard.resolve_for_write(if trimmed.is_empty() { raw } else { trimmed })
        }
        Err(other) => Err(other),
    }
}

fn reject(pointer: &str, message: &str) -> ToolError {
    ToolError::PathRejected(format!(
        "argument `{}`: {message}",
        display_pointer(pointer)
    ))
}

fn reject_guard(pointer: &str, err: GuardError) -> ToolError {
    match ToolError::from(err) {
        ToolError::PathRejected(m) => reject(pointer, &m),
        // An I/O error while checking is still a refusal: the server must not get a path
        // the guard could not vouch for.
        other => reject(pointer, &other.to_string()),
    }
}

fn display_pointer(pointer: &str) -> &str {
    pointer.strip_prefix('/').unwrap_or(pointer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn setup() -> (tempfile::TempDir, PathBuf, WorkspaceGuard) {
        let outer = tempfile::tempdir().unwrap();
        let ws = outer.path().join("ws");
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::fs::write(ws.join("a.txt"), "a").unwrap();
        std::fs::write(outer.path().join("secret.txt"), "s").unwrap();
        std::os::unix::fs::symlink(outer.path().join("secret.txt"), ws.join("leak")).unwrap();
        let guard = WorkspaceGuard::new(&ws, &[]).unwrap();
        let ws = guard.root().to_path_buf();
        (outer, ws, guard)
    }

    #[test]
    fn path_keys() {
        for key in [
            "path",
            "paths",
            "source",
            "destination",
            "file",
            "directory",
            "sourcePath",
            "output_file",
            "target-dir",
            "FILE_PATH",
            "cwd",
        ] {
            assert!(is_path_key(key), "{key}");
        }
        for key in [
            "message",
            "profile",
            "content",
            "pathological",
            "url",
            "query",
            "filer",
        ] {
            assert!(!is_path_key(key), "{key}");
        }
    }

    #[test]
    fn relative_paths_are_checked_and_made_absolute() {
        let (_t, ws, guard) = setup();
        let args = json!({"path": "a.txt", "paths": ["sub", "new/file.txt"], "head": 3});
        let out = guard_arguments(&args, &guard, false).unwrap();
        assert_eq!(out["path"], json!(ws.join("a.txt").to_string_lossy()));
        assert_eq!(out["paths"][0], json!(ws.join("sub").to_string_lossy()));
        assert_eq!(
            out["paths"][1],
            json!(ws.join("new/file.txt").to_string_lossy())
        );
        assert_eq!(out["head"], json!(3));
        let kept = guard_arguments(&args, &guard, true).unwrap();
        assert_eq!(kept, args);
    }

    #[test]
    fn escapes_are_rejected() {
        let (t, ws, guard) = setup();
        let outside = t.path().join("secret.txt").to_string_lossy().into_owned();
        let cases = vec![
            json!({"path": outside}),
            json!({"path": "../secret.txt"}),
            json!({"path": "leak"}),
            json!({"path": "~/x"}),
            json!({"paths": ["a.txt", "/etc/passwd"]}),
            json!({"source": "a.txt", "destination": "/tmp/stolen.txt"}),
            json!({"edits": [{"file": "../../x"}]}),
            json!({"message": "/etc/passwd"}),
            json!({"anything": {"nested": "/etc"}}),
            json!({"uri": "file:///etc/passwd"}),
            json!({"uri": format!("file://{}/%2e%2e/secret.txt", ws.display())}),
            json!({"note": "~/.ssh/id_rsa"}),
            json!({"path": "new/../../x"}),
        ];
        for args in cases {
            let err = guard_arguments(&args, &guard, false).unwrap_err();
            assert_eq!(err.kind().as_str(), "path_rejected", "{args} -> {err}");
        }
    }

    #[test]
    fn text_that_is_not_a_path_passes() {
        let (_t, ws, guard) = setup();
        let inside = ws.join("a.txt").to_string_lossy().into_owned();
        let args = json!({
            "message": "/help me",
            "content": "/* a comment */\nint x;",
            "comment": "// note",
            "text": "hello /etc/passwd",
            "abs_inside": inside,
            "uri": format!("file://{inside}"),
            "n": 1
        });
        assert_eq!(guard_arguments(&args, &guard, false).unwrap(), args);
    }

    /// Under keys not named like paths: relative strings, `//abs`, newlines, leading
    /// spaces, tabs and NULs around a path are normalised and checked, never skipped.
    #[test]
    fn strings_under_any_key_are_normalised_then_checked() {
        let (t, _ws, guard) = setup();
        let outside = t.path().join("secret.txt").to_string_lossy().into_owned();
        let cases = vec![
            json!({"q": "../secret.txt"}),
            json!({"q": "./../secret.txt"}),
            json!({"q": "sub/../../secret.txt"}),
            json!({"q": "leak"}),
            json!({"q": format!("/{outside}")}),
            json!({"q": format!("///{outside}")}),
            json!({"q": format!("{outside}\n")}),
            json!({"q": format!("\n{outside}")}),
            json!({"q": format!("first line\n{outside}\nlast")}),
            json!({"q": format!("   {outside}")}),
            json!({"q": format!("\t{outside} ")}),
            json!({"q": format!("{outside}\u{0}.txt")}),
            json!({"q": format!("\r\n  //{outside}")}),
            json!({"q": " ~/.ssh/id_rsa"}),
            json!({"q": " ../secret.txt\n"}),
            json!({"deep": [{"x": {"y": "../secret.txt"}}]}),
            json!({"path": " a.txt"}),
            json!({"path": "a.txt\n"}),
            json!({"path": "a.txt\u{0}"}),
        ];
        for args in cases {
            let err = guard_arguments(&args, &guard, false).unwrap_err();
            assert_eq!(err.kind().as_str(), "path_rejected", "{args} -> {err}");
        }
        // Relative text that stays inside (or is no path) goes through unchanged.
        let args = json!({
            "q": "a.txt",
            "r": "sub/new.txt",
            "s": "and/or",
            "t": "hello",
            "u": ".hidden",
            "v": "line one\n  ./configure\n\tsub\n",
            "w": "a.txt/not-a-dir",
        });
        assert_eq!(guard_arguments(&args, &guard, true).unwrap(), args);
    }
}
