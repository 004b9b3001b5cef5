use std::ffi::OsString;
use std::path::PathBuf;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

pub use pocketpilot_sandbox::Mode as SandboxMode;
use pocketpilot_sandbox::SandboxPolicy;

/// How `run_command` confines the commands it starts (see the `pocketpilot-sandbox`
/// crate). The workspace is the context's; the deny list is `ToolContext::forbidden`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CommandSandbox {
    /// The call holds the network grant (TCP/UDP allowed).
    pub network: bool,
    /// Readable (and executable) trees beyond the system dirs: toolchains by default.
    pub extra_read: Vec<PathBuf>,
    /// Writable trees beyond the workspace: a widening the person granted.
    pub extra_write: Vec<PathBuf>,
    /// Trees (stores such as pnpm's) where the other links of a hard-linked workspace file
    /// may be for the read tools to read it (`pocketpilot sandbox allow-links`).
    pub link_stores: Vec<PathBuf>,
    /// Secret-looking variables to pass through anyway, by exact name.
    pub env_pass: Vec<String>,
    /// `Off` only when the person chose "no sandbox" explicitly, or the probe found the
    /// kernel cannot confine (then every command asks, see `pocketpilot_core::policy::confinement`).
    pub mode: SandboxMode,
    /// What the workspace's sandbox settings widened, one phrase each ("write /x",
    /// "network", "no sandbox"): shown in the approval and recorded as the decision's
    /// source. Empty for the defaults.
    pub widening: Vec<String>,
}

impl CommandSandbox {
    /// The default for a person's session: no network, the toolchains under `$HOME`
    /// readable (`pocketpilot_sandbox::toolchain_read_paths`).
    pub fn for_this_user() -> Self {
        let extra_read = std::env::var_os("HOME")
            .map(|home| pocketpilot_sandbox::toolchain_read_paths(std::path::Path::new(&home)))
            .unwrap_or_default();
        Self {
            extra_read,
            ..Self::default()
        }
    }
}

/// What a tool needs from the run that calls it.
#[derive(Clone)]
pub struct ToolContext {
    /// The workspace root, canonical.
    pub workspace: PathBuf,
    /// Directories the tools must never touch (the app's data and config).
    pub forbidden: Vec<PathBuf>,
    /// Cancelled when the task is cancelled: a running tool stops at once and kills any
    /// process it started.
    pub cancel: CancellationToken,
    /// The environment `run_command` starts from before it scrubs secrets; `None` means
    /// this process's environment. Carried here so tests and embedders can pass one
    /// without mutating the global environment.
    pub base_env: Option<Vec<(OsString, OsString)>>,
    /// The OS-level confinement of `run_command`.
    pub sandbox: CommandSandbox,
    /// Where `load_skill` finds skills, and which are switched off.
    pub skills: crate::skills::SkillSources,
    /// The editor driving this run, when it offers its file methods and the person lets
    /// them be used (`pocketpilot acp`): reads and approved writes go through it.
    pub editor: Option<std::sync::Arc<dyn crate::editor::EditorFiles>>,
}

impl ToolContext {
    pub fn new(workspace: PathBuf, forbidden: Vec<PathBuf>, cancel: CancellationToken) -> Self {
        Self {
            workspace,
            forbidden,
            cancel,
            base_env: None,
            sandbox: CommandSandbox::for_this_user(),
            skills: crate::skills::SkillSources::for_this_user(),
            editor: None,
        }
    }

    pub fn with_editor(mut self, editor: std::sync::Arc<dyn crate::editor::EditorFiles>) -> Self {
        self.editor = Some(editor);
        self
    }

    /// The editor, when reads go through it.
    pub fn editor_reads(&self) -> Option<&dyn crate::editor::EditorFiles> {
        self.editor.as_deref().filter(|e| e.reads())
    }

    /// The editor, when writes go through it.
    pub fn editor_writes(&self) -> Option<&dyn crate::editor::EditorFiles> {
        self.editor.as_deref().filter(|e| e.writes())
    }

    pub fn with_skills(mut self, skills: crate::skills::SkillSources) -> Self {
        self.skills = skills;
        self
    }

    pub fn with_sandbox(mut self, sandbox: CommandSandbox) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// The sandbox policy of a command started for this context.
    pub fn sandbox_policy(&self) -> SandboxPolicy {
        let s = &self.sandbox;
        SandboxPolicy {
            workspace: self.workspace.clone(),
            extra_read: s.extra_read.clone(),
            extra_write: s.extra_write.clone(),
            deny: self.forbidden.clone(),
            network: s.network,
            mode: s.mode,
            env_pass: s.env_pass.clone(),
            base_env: self.base_env.clone(),
        }
    }

    pub fn with_base_env(mut self, env: Vec<(OsString, OsString)>) -> Self {
        self.base_env = Some(env);
        self
    }
}

pub use pocketpilot_model::ToolKind;
pub use pocketpilot_protocol::Effect;
use pocketpilot_protocol::ToolErrorKind;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// What the model reads.
    pub text: String,
    /// Workspace files this call wrote or deleted (relative to the root).
    #[serde(default)]
    pub changed: Vec<String>,
}

impl ToolOutput {
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            changed: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum ToolError {
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    #[error("path rejected: {0}")]
    PathRejected(String),
    #[error("{0}")]
    Failed(String),
    #[error("timed out after {0} s")]
    TimedOut(u64),
    #[error("cancelled")]
    Cancelled,
}

impl ToolError {
    pub fn kind(&self) -> ToolErrorKind {
        match self {
            ToolError::InvalidArguments(_) => ToolErrorKind::InvalidArguments,
            ToolError::PathRejected(_) => ToolErrorKind::PathRejected,
            ToolError::Failed(_) => ToolErrorKind::Failed,
            ToolError::TimedOut(_) => ToolErrorKind::TimedOut,
            ToolError::Cancelled => ToolErrorKind::Cancelled,
        }
    }
}

#[async_trait]
pub trait Tool: Send + Sync {
    fn name(&self) -> &'static str;
    fn description(&self) -> &'static str;
    /// JSON schema of the arguments, as offered to the model.
    fn parameters(&self) -> serde_json::Value;
    /// `<area>:<verb>`, e.g. `fs:write`. The policy decides on it.
    fn capability(&self) -> &'static str;
    /// What the tool does: how the model is told to see again an output of it that was
    /// cut to fit the context window. A tool that does not say is named in that hint.
    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }
    /// Whether running it twice is harmless (read-only tools). After a crash, a call
    /// with intent and no outcome is re-run only if this is true.
    fn replay_safe(&self) -> bool;
    /// The exact effect the call would have, computed without changing anything.
    fn effect(&self, args: &serde_json::Value, ctx: &ToolContext) -> Result<Effect, ToolError>;
    async fn call(
        &self,
        args: serde_json::Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError>;

    /// For a call served by a process the tool keeps running (an MCP stdio server): how
    /// that process is confined, the line its approval shows. `None`: no process of its
    /// own (the runtime says the line of the commands it starts).
    fn confinement_line(&self) -> Option<String> {
        None
    }

    /// The description offered in a small window: a few words that say what the tool is
    /// for. By default the description's first sentence.
    fn brief(&self) -> &'static str {
        first_sentence(self.description())
    }

    fn spec(&self) -> pocketpilot_model::ToolSpec {
        pocketpilot_model::ToolSpec {
            name: self.name().into(),
            description: self.description().into(),
            parameters: self.parameters(),
        }
    }

    /// The spec offered in a small window (see [`lean_schema`]): every tool definition is
    /// sent with every request, and in 4,096 tokens the full ones took half the room.
    fn lean_spec(&self) -> pocketpilot_model::ToolSpec {
        pocketpilot_model::ToolSpec {
            name: self.name().into(),
            description: self.brief().into(),
            parameters: lean_schema(&self.parameters()),
        }
    }
}

fn first_sentence(text: &str) -> &str {
    match text.find(". ") {
        Some(end) => &text[..=end],
        None => text,
    }
}

/// A tool's schema for a small window: no descriptions of its fields, no bounds, no
/// `additionalProperties`, and no optional numeric knobs (paging, limits, timeouts: the
/// tool's defaults apply, and it still accepts them). A field the schema does not name is
/// still refused by the tool itself, and llama.cpp's grammar from a schema allows only
/// the named fields either way.
pub fn lean_schema(schema: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    const DROPPED: [&str; 10] = [
        "additionalProperties",
        "description",
        "minimum",
        "maximum",
        "minItems",
        "maxItems",
        "examples",
        "default",
        "title",
        "pattern",
    ];
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    let required: Vec<&str> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = serde_json::Map::new();
    for (key, value) in map {
        match key.as_str() {
            k if DROPPED.contains(&k) && !value.is_object() => {}
            "properties" => {
                let Value::Object(props) = value else {
                    out.insert(key.clone(), value.clone());
                    continue;
                };
                let kept: serde_json::Map<String, Value> = props
                    .iter()
                    .filter(|(name, prop)| {
                        let numeric = matches!(
                            prop.get("type").and_then(Value::as_str),
                            Some("integer" | "number")
                        );
                        required.contains(&name.as_str()) || !numeric
                    })
                    .map(|(name, prop)| (name.clone(), lean_schema(prop)))
                    .collect();
                out.insert(key.clone(), Value::Object(kept));
            }
            "items" => {
                out.insert(key.clone(), lean_schema(value));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(out)
}
