//! How an MCP server is configured: how to reach it, what its tools may do, how long to
//! wait for it. Serialisable, so the runtime can store it per workspace.
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::McpError;

/// Capability of an MCP tool unless the configuration says otherwise: `execute` needs the
/// person's approval under the default policy.
pub const DEFAULT_CAPABILITY: &str = "mcp:execute";
/// Capability of a tool annotated `readOnlyHint: true` when the server's configuration has
/// `allow_read_only`: `read` is allowed by the default policy.
pub const READ_ONLY_CAPABILITY: &str = "mcp:read";
pub const DEFAULT_STARTUP_TIMEOUT_SECS: u64 = 30;
pub const DEFAULT_CALL_TIMEOUT_SECS: u64 = 120;
/// Longest timeout accepted (one hour).
pub const MAX_TIMEOUT_SECS: u64 = 3600;
/// Longest server name: it is part of every tool name offered to the model.
pub const MAX_SERVER_NAME: usize = 32;

/// Verbs the policy knows; a capability with another verb would always be denied.
const KNOWN_VERBS: &[&str] = &[
    "read", "list", "write", "create", "update", "delete", "execute", "network",
];

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum McpTransport {
    /// A child process speaking newline-delimited JSON-RPC on stdin/stdout.
    Stdio {
        command: String,
        #[serde(default)]
        args: Vec<String>,
        /// Extra environment (not secret: it is stored and may be shown).
        #[serde(default)]
        env: Vec<(String, String)>,
    },
    /// A streamable-HTTP endpoint, e.g. `http://127.0.0.1:3001/mcp`.
    Http { url: String },
}

/// One MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerConfig {
    /// `[A-Za-z0-9_-]{1,32}`: the `<server>` in `mcp:<server>:<tool>` and in the
    /// whitelist.
    pub name: String,
    pub transport: McpTransport,
    /// Capability of every tool of this server (`<area>:<verb>`); `None` means
    /// [`DEFAULT_CAPABILITY`] (approval).
    #[serde(default)]
    pub capability: Option<String>,
    /// Capability per tool (by the server's tool name); wins over `capability` and
    /// `allow_read_only`.
    #[serde(default)]
    pub tool_capabilities: BTreeMap<String, String>,
    /// Tools the server annotates `readOnlyHint: true` get [`READ_ONLY_CAPABILITY`]
    /// (allowed without approval by the default policy). Off by default: the annotation
    /// is the server's word, not a guarantee.
    #[serde(default)]
    pub allow_read_only: bool,
    #[serde(default = "default_startup_timeout")]
    pub startup_timeout_secs: u64,
    #[serde(default = "default_call_timeout")]
    pub call_timeout_secs: u64,
    /// Names of environment variables whose values come from the keychain. The values are
    /// passed to [`crate::connect`] in [`SecretEnv`]; they are never stored here nor logged.
    #[serde(default)]
    pub secret_env: Vec<String>,
    /// Relative path arguments are checked by the guard but sent as given instead of as
    /// the absolute workspace path (for servers whose `path` arguments are not local
    /// files). Off by default. See `paths.rs`.
    #[serde(default)]
    pub keep_relative_paths: bool,
    /// How a stdio server is confined (ignored for HTTP servers).
    #[serde(default)]
    pub sandbox: McpSandbox,
}

/// The OS sandbox of a stdio server (see `pocketpilot-sandbox`): it may write only in the
/// workspace, read the system dirs, its own install dir and these extra paths, and has
/// no network unless `network` is set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct McpSandbox {
    /// The server may open TCP/UDP connections.
    pub network: bool,
    /// Extra trees it may read (e.g. `~/.npm` for `npx`-started servers, a data dir).
    pub extra_read: Vec<PathBuf>,
    /// Extra trees it may write.
    pub extra_write: Vec<PathBuf>,
    /// Secret-looking variables of the base environment passed through anyway.
    pub env_pass: Vec<String>,
    /// Runs the server unconfined: only as the person's explicit choice (shown in red).
    pub off: bool,
}

impl McpSandbox {
    /// The line an approval of this server's tools shows: how the server process runs,
    /// under the kernel's `status` ("sandboxed: …", or "NOT sandboxed: <reason>").
    pub fn approval_line(&self, status: &pocketpilot_sandbox::SandboxStatus) -> String {
        if self.off {
            return "NOT sandboxed: this MCP server's configuration turns its sandbox off"
                .to_owned();
        }
        let line = status.line(self.network);
        let mut widened: Vec<String> = Vec::new();
        widened.extend(
            self.extra_read
                .iter()
                .map(|p| format!("read {}", p.display())),
        );
        widened.extend(
            self.extra_write
                .iter()
                .map(|p| format!("write {}", p.display())),
        );
        widened.extend(self.env_pass.iter().map(|n| format!("env {n}")));
        if widened.is_empty() || !status.is_sandboxed() {
            line
        } else {
            format!(
                "{line}; widened by the server's configuration: {}",
                widened.join(", ")
            )
        }
    }
}

fn default_startup_timeout() -> u64 {
    DEFAULT_STARTUP_TIMEOUT_SECS
}

fn default_call_timeout() -> u64 {
    DEFAULT_CALL_TIMEOUT_SECS
}

impl McpServerConfig {
    /// A stdio server with the defaults.
    pub fn stdio(name: impl Into<String>, command: impl Into<String>, args: Vec<String>) -> Self {
        Self::with_transport(
            name,
            McpTransport::Stdio {
                command: command.into(),
                args,
                env: Vec::new(),
            },
        )
    }

    /// A streamable-HTTP server with the defaults.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::with_transport(name, McpTransport::Http { url: url.into() })
    }

    fn with_transport(name: impl Into<String>, transport: McpTransport) -> Self {
        Self {
            name: name.into(),
            transport,
            capability: None,
            tool_capabilities: BTreeMap::new(),
            allow_read_only: false,
            startup_timeout_secs: DEFAULT_STARTUP_TIMEOUT_SECS,
            call_timeout_secs: DEFAULT_CALL_TIMEOUT_SECS,
            secret_env: Vec::new(),
            keep_relative_paths: false,
            sandbox: McpSandbox::default(),
        }
    }

    pub fn startup_timeout(&self) -> Duration {
        Duration::from_secs(self.startup_timeout_secs)
    }

    pub fn call_timeout(&self) -> Duration {
        Duration::from_secs(self.call_timeout_secs)
    }

    /// Everything a stored configuration can get wrong, checked before anything starts.
    pub fn validate(&self) -> Result<(), McpError> {
        let bad = |message: String| McpError::InvalidConfig {
            server: self.name.clone(),
            message,
        };
        validate_server_name(&self.name).map_err(bad)?;
        match &self.transport {
            McpTransport::Stdio { command, env, .. } => {
                if command.trim().is_empty() {
                    return Err(bad("the command is empty".into()));
                }
                for (name, _) in env {
                    validate_env_name(name).map_err(bad)?;
                }
            }
            McpTransport::Http { url } => {
                let lower = url.to_ascii_lowercase();
                if !(lower.starts_with("http://") || lower.starts_with("https://")) {
                    return Err(bad(format!("`{url}` is not an http:// or https:// URL")));
                }
            }
        }
        for name in &self.secret_env {
            validate_env_name(name).map_err(bad)?;
            if matches!(self.transport, McpTransport::Http { .. }) {
                return Err(bad(format!(
                    "secret_env `{name}` only applies to stdio servers (an HTTP server has no environment)"
                )));
            }
        }
        if let Some(capability) = &self.capability {
            validate_capability(capability).map_err(bad)?;
        }
        for capability in self.tool_capabilities.values() {
            validate_capability(capability).map_err(bad)?;
        }
        for (label, secs) in [
            ("startup_timeout_secs", self.startup_timeout_secs),
            ("call_timeout_secs", self.call_timeout_secs),
        ] {
            if secs == 0 || secs > MAX_TIMEOUT_SECS {
                return Err(bad(format!(
                    "{label} must be between 1 and {MAX_TIMEOUT_SECS}"
                )));
            }
        }
        Ok(())
    }

    /// The capability a tool of this server gets, given its `readOnlyHint`.
    pub fn capability_for(&self, tool: &str, read_only_hint: bool) -> String {
        if let Some(capability) = self.tool_capabilities.get(tool) {
            return capability.clone();
        }
        if self.allow_read_only && read_only_hint {
            return READ_ONLY_CAPABILITY.into();
        }
        self.capability
            .clone()
            .unwrap_or_else(|| DEFAULT_CAPABILITY.into())
    }
}

/// `[A-Za-z0-9_-]{1,32}`.
pub fn validate_server_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_SERVER_NAME {
        return Err(format!(
            "the server name must have 1 to {MAX_SERVER_NAME} characters"
        ));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(format!(
            "the server name `{name}` may only contain letters, digits, `_` and `-`"
        ));
    }
    Ok(())
}

fn validate_env_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(format!("`{name}` is not a valid environment variable name"))
    }
}

fn validate_capability(capability: &str) -> Result<(), String> {
    match capability.rsplit_once(':') {
        Some((area, verb))
            if !area.is_empty()
                && KNOWN_VERBS.contains(&verb)
                && area
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':' | '.')) =>
        {
            Ok(())
        }
        _ => Err(format!(
            "capability `{capability}` must be `<area>:<verb>` with a verb among {}",
            KNOWN_VERBS.join(", ")
        )),
    }
}

/// Resolved values of the servers' `secret_env` variables (from the keychain), by variable
/// name. Its `Debug` shows the names only.
#[derive(Clone, Default)]
pub struct SecretEnv {
    values: HashMap<String, String>,
}

impl SecretEnv {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn insert(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.values.insert(name.into(), value.into());
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// Every value, for redacting server output.
    pub(crate) fn values(&self) -> impl Iterator<Item = &str> {
        self.values.values().map(String::as_str)
    }
}

impl From<HashMap<String, String>> for SecretEnv {
    fn from(values: HashMap<String, String>) -> Self {
        Self { values }
    }
}

impl FromIterator<(String, String)> for SecretEnv {
    fn from_iter<I: IntoIterator<Item = (String, String)>>(iter: I) -> Self {
        Self {
            values: iter.into_iter().collect(),
        }
    }
}

impl fmt::Debug for SecretEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&String> = self.values.keys().collect();
        names.sort();
        f.debug_struct("SecretEnv")
            .field("names", &names)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pocketpilot_sandbox::{GitMetadata, SandboxStatus};

    #[test]
    fn the_approval_line_says_how_the_server_is_confined() {
        let confined = SandboxStatus::Sandboxed {
            abi: 7,
            network_blocking: true,
            landlock_tcp: true,
            scoped: true,
            git_metadata: GitMetadata::ReadOnly,
            tree_killed: true,
        };
        let mut s = McpSandbox::default();
        assert_eq!(
            s.approval_line(&confined),
            "sandboxed: writes in the workspace only, no network"
        );
        s.network = true;
        s.extra_write = vec![PathBuf::from("/home/me/.npm")];
        s.env_pass = vec!["GITHUB_TOKEN".into()];
        assert_eq!(
            s.approval_line(&confined),
            "sandboxed: writes in the workspace only, network allowed; widened by the server's configuration: write /home/me/.npm, env GITHUB_TOKEN"
        );
        let kernel = SandboxStatus::NotSandboxed {
            reason: "no Landlock".into(),
        };
        assert_eq!(s.approval_line(&kernel), "NOT sandboxed: no Landlock");
        s.off = true;
        assert!(s.approval_line(&confined).starts_with("NOT sandboxed: "));
    }

    #[test]
    fn json_with_defaults() {
        let config: McpServerConfig = serde_json::from_str(
            r#"{"name":"fs","transport":{"type":"stdio","command":"mcp-server-filesystem","args":["/w"]}}"#,
        )
        .unwrap();
        assert_eq!(config, {
            let mut c = McpServerConfig::stdio("fs", "mcp-server-filesystem", vec!["/w".into()]);
            c.startup_timeout_secs = DEFAULT_STARTUP_TIMEOUT_SECS;
            c
        });
        config.validate().unwrap();
        assert_eq!(config.capability_for("read_text_file", true), "mcp:execute");
        let http: McpServerConfig = serde_json::from_str(
            r#"{"name":"web","transport":{"type":"http","url":"http://127.0.0.1:3001/mcp"},
                "allow_read_only":true,"capability":"mcp:network","call_timeout_secs":5,
                "tool_capabilities":{"danger":"mcp:delete"}}"#,
        )
        .unwrap();
        http.validate().unwrap();
        assert_eq!(http.capability_for("x", true), "mcp:read");
        assert_eq!(http.capability_for("x", false), "mcp:network");
        assert_eq!(http.capability_for("danger", true), "mcp:delete");
        let back: McpServerConfig =
            serde_json::from_str(&serde_json::to_string(&http).unwrap()).unwrap();
        assert_eq!(back, http);
    }

    #[test]
    fn invalid_configs() {
        let base = McpServerConfig::stdio("ok", "cmd", vec![]);
        let mut cases = Vec::new();
        let mut c = base.clone();
        c.name = "has space".into();
        cases.push(c);
        let mut c = base.clone();
        c.name = "x".repeat(33);
        cases.push(c);
        cases.push(McpServerConfig::stdio("ok", " ", vec![]));
        cases.push(McpServerConfig::http("ok", "ftp://x"));
        let mut c = base.clone();
        c.capability = Some("mcp:launch".into());
        cases.push(c);
        let mut c = base.clone();
        c.tool_capabilities.insert("t".into(), "nocolon".into());
        cases.push(c);
        let mut c = base.clone();
        c.call_timeout_secs = 0;
        cases.push(c);
        let mut c = base.clone();
        c.secret_env = vec!["BAD-NAME".into()];
        cases.push(c);
        let mut c = McpServerConfig::http("ok", "https://x/mcp");
        c.secret_env = vec!["TOKEN".into()];
        cases.push(c);
        for c in cases {
            let err = c.validate().unwrap_err();
            assert_eq!(err.kind().as_str(), "invalid_config", "{c:?}");
        }
    }

    #[test]
    fn secret_env_debug_hides_values() {
        let mut s = SecretEnv::new();
        s.insert("API_TOKEN", "very-secret-value");
        let shown = format!("{s:?}");
        assert!(shown.contains("API_TOKEN") && !shown.contains("very-secret-value"));
    }
}
