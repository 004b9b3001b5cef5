//! Hooks: the files that configure them, which hooks match an event, whether a
//! workspace's file may run, and what a hook's reply means. Running them is
//! `engine::hooks`.
//!
//! The format is Claude Code's, so its hook files and scripts work unchanged:
//!
//! ```json
//! { "hooks": { "PreToolUse": [
//!     { "matcher": "Bash|run_command",
//!       "hooks": [ { "type": "command", "command": "python3 .pocketpilot/hooks/no_rm.py", "timeout": 30 } ] } ] } }
//! ```
//!
//! - Two files: the workspace's `.pocketpilot/hooks.json` (no tool and no command may
//!   write `.pocketpilot/`) and the person's `$XDG_CONFIG_HOME/pocketpilot/hooks.json`.
//! - A workspace's file runs only while the person has consented to its exact content
//!   (the SHA-256 of its bytes is kept in the store): a cloned repository cannot run code
//!   on its first open, and a changed file asks again. The person's own file needs none.
//! - A matcher is a regular expression matched against the whole tool name; `*`, an
//!   empty or a missing matcher matches every tool. Claude Code's tool names (`Bash`,
//!   `Read`, `Write`, `Edit`, …) match the equivalent PocketPilot tool.
//! - A reply can only take away or add: a denial, a block, context. `allow`/`approve`
//!   never skip an approval or widen a grant.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pocketpilot_protocol::{HookEvent, HookScope};
use serde::Deserialize;
use sha2::Digest;

use crate::store::{settings, Store, StoreError};

/// Claude Code's default: a hook is killed after a minute.
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;
/// A hook may ask for at most this long.
pub const MAX_TIMEOUT_SECS: u64 = 600;
/// The workspace's hooks file, relative to its root.
pub const WORKSPACE_FILE: &str = ".pocketpilot/hooks.json";

/// One configured hook command.
#[derive(Debug, Clone, PartialEq)]
pub struct Hook {
    pub event: HookEvent,
    pub scope: HookScope,
    /// The matcher as written (`None`: every tool).
    pub matcher: Option<String>,
    pub command: String,
    pub timeout_secs: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum HooksError {
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
    #[error("{path} cannot be read: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[derive(Deserialize)]
struct FileShape {
    #[serde(default)]
    hooks: BTreeMap<String, Vec<MatcherShape>>,
}

#[derive(Deserialize)]
struct MatcherShape {
    #[serde(default)]
    matcher: Option<String>,
    #[serde(default)]
    hooks: Vec<CommandShape>,
}

#[derive(Deserialize)]
struct CommandShape {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    timeout: Option<u64>,
}

/// A hooks file read from disk: its hooks, its hash, and what in it could not be used.
#[derive(Debug, Clone, PartialEq)]
pub struct HooksFile {
    pub path: PathBuf,
    pub scope: HookScope,
    /// SHA-256 of the file's bytes, hex: what a consent names.
    pub hash: String,
    pub hooks: Vec<Hook>,
    /// Entries skipped (an unknown event, a hook that is not a command, a bad matcher).
    pub problems: Vec<String>,
}

impl HooksFile {
    /// Reads `path`; `Ok(None)` when there is no such file.
    pub fn read(path: &Path, scope: HookScope) -> Result<Option<Self>, HooksError> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(HooksError::Read {
                    path: path.display().to_string(),
                    source,
                })
            }
        };
        Self::parse(path, scope, &bytes).map(Some)
    }

    pub fn parse(path: &Path, scope: HookScope, bytes: &[u8]) -> Result<Self, HooksError> {
        let shape: FileShape = serde_json::from_slice(bytes).map_err(|e| HooksError::Invalid {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        let mut hooks = Vec::new();
        let mut problems = Vec::new();
        for (name, matchers) in shape.hooks {
            let Some(event) = event_named(&name) else {
                problems.push(format!(
                    "`{name}` is not an event PocketPilot runs hooks for"
                ));
                continue;
            };
            for m in matchers {
                let matcher = m.matcher.filter(|s| !s.is_empty() && s != "*");
                if let Some(bad) = matcher.as_deref().and_then(|m| anchored(m).err()) {
                    problems.push(format!("{name}: the matcher is not a valid pattern: {bad}"));
                    continue;
                }
                for c in m.hooks {
                    if c.kind.as_deref().is_some_and(|k| k != "command") {
                        problems.push(format!("{name}: only `command` hooks run"));
                        continue;
                    }
                    let Some(command) = c.command.filter(|c| !c.trim().is_empty()) else {
                        problems.push(format!("{name}: a hook without a command"));
                        continue;
                    };
                    hooks.push(Hook {
                        event,
                        scope,
                        matcher: matcher.clone(),
                        command,
                        timeout_secs: c
                            .timeout
                            .unwrap_or(DEFAULT_TIMEOUT_SECS)
                            .clamp(1, MAX_TIMEOUT_SECS),
                    });
                }
            }
        }
        Ok(Self {
            path: path.to_owned(),
            scope,
            hash: hash_of(bytes),
            hooks,
            problems,
        })
    }
}

fn event_named(name: &str) -> Option<HookEvent> {
    use pocketpilot_protocol::wire::WireName;
    HookEvent::ALL.iter().copied().find(|e| e.as_str() == name)
}

fn anchored(matcher: &str) -> Result<regex::Regex, regex::Error> {
    regex::Regex::new(&format!("^(?:{matcher})$"))
}

pub fn hash_of(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}

/// Claude Code's name for a PocketPilot tool, so a matcher written for it matches.
pub fn claude_name(tool: &str) -> Option<&'static str> {
    Some(match tool {
        "run_command" => "Bash",
        "read_file" => "Read",
        "write_file" => "Write",
        "edit_file" => "Edit",
        "list_dir" => "LS",
        "search_files" => "Grep",
        "fetch_url" => "WebFetch",
        _ => return None,
    })
}

impl Hook {
    /// Whether this hook runs for `event` (and, for a tool event, the tool `tool`).
    pub fn matches(&self, event: HookEvent, tool: Option<&str>) -> bool {
        if self.event != event {
            return false;
        }
        let (Some(matcher), Some(tool)) = (&self.matcher, tool) else {
            return true;
        };
        let Ok(re) = anchored(matcher) else {
            return false;
        };
        re.is_match(tool) || claude_name(tool).is_some_and(|c| re.is_match(c))
    }
}

/// The store key of a workspace's consent: the hash of the file consented to.
fn consent_key(workspace: &str) -> String {
    format!("hooks_consent:{workspace}")
}

pub fn consented_hash(store: &Store, workspace: &str) -> Result<Option<String>, StoreError> {
    store
        .read(|c| settings::get::<Option<String>>(c, &consent_key(workspace)))
        .map(Option::flatten)
}

pub fn set_consent(store: &Store, workspace: &str, hash: Option<&str>) -> Result<(), StoreError> {
    let key = consent_key(workspace);
    let hash = hash.map(str::to_owned);
    store.write(move |tx| settings::set(tx, &key, &hash))
}

/// The person's hooks file.
pub fn person_file() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("pocketpilot").join("hooks.json"))
}

pub fn workspace_file(workspace: &Path) -> PathBuf {
    workspace.join(WORKSPACE_FILE)
}

/// The hooks of a run in `workspace`: the person's always, the workspace's when consented.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    pub hooks: Vec<Hook>,
    /// The workspace has hooks that do not run: not consented to as they are now.
    pub unconsented: Option<PathBuf>,
    /// Files that could not be read or used, and entries skipped.
    pub problems: Vec<String>,
}

/// `person`: the person's hooks file (`person_file()`, or none in an eval's runtime).
pub fn load(store: &Store, workspace: &Path, person: Option<&Path>) -> Result<Loaded, StoreError> {
    let mut loaded = Loaded::default();
    if let Some(path) = person {
        match HooksFile::read(path, HookScope::Person) {
            Ok(Some(f)) => {
                loaded.problems.extend(f.problems);
                loaded.hooks.extend(f.hooks);
            }
            Ok(None) => {}
            Err(e) => loaded.problems.push(e.to_string()),
        }
    }
    let path = workspace_file(workspace);
    match HooksFile::read(&path, HookScope::Workspace) {
        Ok(Some(f)) if !f.hooks.is_empty() => {
            let consented = consented_hash(store, &workspace.display().to_string())?;
            if consented.as_deref() == Some(f.hash.as_str()) {
                loaded.problems.extend(f.problems);
                loaded.hooks.extend(f.hooks);
            } else {
                loaded.unconsented = Some(path);
            }
        }
        Ok(_) => {}
        Err(e) => loaded.problems.push(e.to_string()),
    }
    Ok(loaded)
}

/// What a hook's exit and output mean (Claude Code's contract).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Reply {
    /// Exit 2, `decision: "block"`, `permissionDecision: "deny"` or `continue: false`:
    /// the reason (stderr, `reason`, `permissionDecisionReason`, `stopReason`).
    pub blocked: Option<String>,
    /// `additionalContext` (or, for `SessionStart` and `UserPromptSubmit`, plain stdout).
    pub context: Option<String>,
    /// `continue: false`: nothing more is to happen (for `Stop`: do not go on).
    pub halt: bool,
    /// `systemMessage`, or the stderr of a hook that failed: shown, not acted on.
    pub note: Option<String>,
    /// The exit code was neither 0 nor 2, or the reply was not what the contract says.
    pub error: bool,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ReplyShape {
    #[serde(rename = "continue", default)]
    keep_going: Option<bool>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    decision: Option<String>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    system_message: Option<String>,
    #[serde(default)]
    hook_specific_output: Option<SpecificShape>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct SpecificShape {
    #[serde(default)]
    permission_decision: Option<String>,
    #[serde(default)]
    permission_decision_reason: Option<String>,
    #[serde(default)]
    additional_context: Option<String>,
}

/// Reads a finished hook: exit 2 blocks with stderr, 0 reads the JSON reply on stdout
/// (or plain text as context where Claude Code takes it), anything else is an error.
pub fn read_reply(event: HookEvent, code: Option<i32>, stdout: &str, stderr: &str) -> Reply {
    let stderr = stderr.trim();
    let text = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    match code {
        Some(0) => {}
        Some(2) => {
            return Reply {
                blocked: Some(text(stderr).unwrap_or_else(|| "blocked by a hook".into())),
                ..Reply::default()
            }
        }
        _ => {
            return Reply {
                error: true,
                note: text(stderr),
                ..Reply::default()
            }
        }
    }
    let out = stdout.trim();
    if !out.starts_with('{') {
        let plain_context = matches!(event, HookEvent::SessionStart | HookEvent::UserPromptSubmit);
        return Reply {
            context: text(out).filter(|_| plain_context),
            ..Reply::default()
        };
    }
    let shape: ReplyShape = match serde_json::from_str(out) {
        Ok(s) => s,
        Err(e) => {
            return Reply {
                error: true,
                note: Some(format!("the hook's reply is not valid JSON: {e}")),
                ..Reply::default()
            }
        }
    };
    let specific = shape.hook_specific_output.unwrap_or_default();
    let mut reply = Reply {
        context: specific.additional_context.filter(|c| !c.trim().is_empty()),
        note: shape.system_message,
        ..Reply::default()
    };
    // "approve" / "allow" / "ask" add nothing: a hook never widens a grant.
    if shape.decision.as_deref() == Some("block") {
        reply.blocked = Some(
            shape
                .reason
                .clone()
                .unwrap_or_else(|| "blocked by a hook".into()),
        );
    }
    if specific.permission_decision.as_deref() == Some("deny") {
        reply.blocked = Some(
            specific
                .permission_decision_reason
                .or(shape.reason)
                .unwrap_or_else(|| "denied by a hook".into()),
        );
    }
    if shape.keep_going == Some(false) {
        reply.halt = true;
        if event != HookEvent::Stop {
            reply.blocked = Some(
                shape
                    .stop_reason
                    .unwrap_or_else(|| "stopped by a hook".into()),
            );
        } else {
            reply.blocked = None;
        }
    }
    reply
}

/// The message the model reads for what a session, prompt or stop hook added: recorded
/// as a conversation entry with the hook's event, and sent the same in this run.
pub fn conversation_text(event: HookEvent, command: &str, context: &str) -> String {
    match event {
        HookEvent::Stop => {
            format!("The Stop hook `{command}` asks you to go on before finishing:\n{context}")
        }
        _ => format!("Context from the {event} hook `{command}`:\n{context}"),
    }
}

/// Whether a hook of `event` writes what it adds into the conversation (the others add
/// to a tool's result).
pub fn adds_message(event: HookEvent) -> bool {
    matches!(
        event,
        HookEvent::SessionStart | HookEvent::UserPromptSubmit | HookEvent::Stop
    )
}

#[cfg(test)]
#[path = "hooks_tests.rs"]
mod tests;
