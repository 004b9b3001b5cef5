pub use pocketpilot_protocol::McpProblemKind;
use serde::{Deserialize, Serialize};

/// Why a server could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    #[error("invalid configuration of MCP server `{server}`: {message}")]
    InvalidConfig { server: String, message: String },
    #[error("invalid MCP whitelist entry `{entry}`: {message}")]
    InvalidWhitelist { entry: String, message: String },
    #[error("MCP server `{server}` could not be started: {message}")]
    Spawn { server: String, message: String },
    #[error("MCP server `{server}` did not finish starting within {secs} s")]
    StartupTimeout { server: String, secs: u64 },
    #[error("MCP server `{server}` failed during initialisation: {message}")]
    Initialize { server: String, message: String },
    #[error("MCP server `{server}` could not list its tools: {message}")]
    ListTools { server: String, message: String },
}

impl McpError {
    /// The server the error is about (empty for a whitelist entry naming none).
    pub fn server(&self) -> &str {
        match self {
            McpError::InvalidConfig { server, .. }
            | McpError::Spawn { server, .. }
            | McpError::StartupTimeout { server, .. }
            | McpError::Initialize { server, .. }
            | McpError::ListTools { server, .. } => server,
            McpError::InvalidWhitelist { .. } => "",
        }
    }

    /// A stable name for the UI and the logs.
    pub fn kind(&self) -> McpProblemKind {
        match self {
            McpError::InvalidConfig { .. } => McpProblemKind::InvalidConfig,
            McpError::InvalidWhitelist { .. } => McpProblemKind::InvalidWhitelist,
            McpError::Spawn { .. } => McpProblemKind::Spawn,
            McpError::StartupTimeout { .. } => McpProblemKind::StartupTimeout,
            McpError::Initialize { .. } => McpProblemKind::Initialize,
            McpError::ListTools { .. } => McpProblemKind::ListTools,
        }
    }
}

/// A server (or a whitelist entry) that gives no tools to this run, for the task's events.
/// Never fatal: the run goes on with the other servers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpProblem {
    /// The configured server name (as written in the whitelist when no such server exists).
    pub server: String,
    pub kind: McpProblemKind,
    /// For a person; never contains secret values.
    pub message: String,
}

impl McpProblem {
    pub fn new(
        server: impl Into<String>,
        kind: McpProblemKind,
        message: impl Into<String>,
    ) -> Self {
        Self {
            server: server.into(),
            kind,
            message: message.into(),
        }
    }
}

impl From<McpError> for McpProblem {
    fn from(err: McpError) -> Self {
        McpProblem::new(err.server(), err.kind(), err.to_string())
    }
}
