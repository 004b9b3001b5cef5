//! `pocketpilot acp`: PocketPilot as an Agent Client Protocol agent over stdio, so an
//! editor (Zed, JetBrains, Neovim plugins) drives it. The protocol is the maintained
//! `agent-client-protocol` crate (v1); this crate only maps.
//!
//! - `session/new` opens a PocketPilot session on the client's `cwd`; the ACP session id
//!   is the PocketPilot session id, so `pocketpilot session show ID` and the window's
//!   history show the same session.
//! - `session/load` replays the session's turns (`user_message_chunk`,
//!   `agent_message_chunk`) and resumes a run a killed agent left behind.
//! - `session/prompt` is one run (`NewTask` in the session): its streamed text becomes
//!   `agent_message_chunk`s, its tool calls `tool_call` / `tool_call_update`s (kind,
//!   status, a diff for a write or an edit). The request answers when the run ends.
//! - An approval becomes `session/request_permission` (allow once, always allow,
//!   reject). The approval stays pending in the store until someone answers it: the
//!   client, or the window and `pocketpilot approve` while the client has not.
//! - `session/cancel` cancels the session's open run.
//! - When the client offers `fs/read_text_file` / `fs/write_text_file` and the person
//!   allows it (`Options::editor_files`, on by default), `read_file` reads the editor's
//!   buffer and approved writes go to the editor (`files.rs`).
//!
//! Layout: `agent.rs` the handlers and the state, `turn.rs` one prompt's run,
//! `map.rs` the pure mapping of runtime events to ACP updates.
mod agent;
mod files;
mod map;
mod turn;

use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema as acp;

use pocketpilot_core::api::service::Runtime;

pub use agent::serve;

/// Why the agent stopped serving.
#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    #[error("the ACP connection failed: {0}")]
    Connection(String),
}

/// What `pocketpilot acp` is started with.
#[derive(Debug, Clone)]
pub struct Options {
    /// `scripted:FILE` (tests, demos) or `None` for the configured model.
    pub provider: Option<String>,
    /// Use the client's file methods when it offers them (the person's setting).
    pub editor_files: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            provider: None,
            editor_files: true,
        }
    }
}

/// The runtime and options every handler shares.
#[derive(Clone)]
pub(crate) struct Shared {
    pub rt: Arc<Runtime>,
    pub options: Options,
    /// The file methods the client offered in `initialize`.
    pub client_fs: Arc<Mutex<acp::FileSystemCapabilities>>,
}

impl Shared {
    pub fn client_fs(&self) -> acp::FileSystemCapabilities {
        self.client_fs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}
