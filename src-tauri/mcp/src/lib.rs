//! MCP servers' tools as PocketPilot tools, through the official Rust SDK (`rmcp`).
//!
//! The runtime, per run:
//! 1. [`connect`] with the workspace's [`McpServerConfig`]s and [`ConnectOptions`] (the
//!    task's [`McpWhitelist`], the keychain values of the servers' `secret_env`, the
//!    workspace as the servers' cwd);
//! 2. registers [`McpSession::tools`] (or [`McpSession::register_into`]) beside the
//!    built-ins, and reports [`McpSession::problems`] in the task's events;
//! 3. at the end, [`McpSession::shutdown`].
//!
//! Names: the model calls `mcp__<server>__<tool>`; the identity `mcp:<server>:<tool>`
//! is in the description and the effect (see [`naming`]). Capability per server or tool,
//! default `mcp:execute` (approval). Path arguments pass through the workspace guard (see
//! [`paths`]).
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod config;
pub mod error;
mod host;
pub mod naming;
pub mod paths;
mod stdio;
mod tool;
pub mod whitelist;

pub use config::{
    McpSandbox, McpServerConfig, McpTransport, SecretEnv, DEFAULT_CAPABILITY, READ_ONLY_CAPABILITY,
};
pub use error::{McpError, McpProblem};
pub use host::{connect, connect_tools, ConnectOptions, McpSession};
pub use stdio::MAX_REPLY_BYTES;
pub use tool::MAX_OUTPUT;
pub use whitelist::McpWhitelist;
