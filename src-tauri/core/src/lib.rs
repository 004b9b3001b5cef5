//! PocketPilot's core, free of any window toolkit, HTTP server or command-line parser: the
//! desktop shell, the CLI and the triggers are thin layers over it.
//!
//! Layout (one concept per module):
//! - `service`: `Runtime`, the only entry point (create, say, start, cancel, approve,
//!   subscribe, settings, keys, MCP configuration).
//! - `worker`: runs one task; `agent`: the bounded model → tool loop; `orchestrator`: one
//!   tool call (decide → wait → guard → execute → record); `transcript`: entries → model
//!   messages.
//! - `lease`: a session's lease held while working it, and the processes its runs started;
//!   `reaper`: kills the process trees a previous holder left running; `scheduler`: this
//!   process's runs.
//! - `recorder`: persists events with their effects and fans them out live.
//! - `inbox`: what is said to a busy session, and where it enters the transcript;
//!   `admission`: a submission read → decided → written.
//! - `local_model`: the built-in model (a GGUF model on this computer, served by a
//!   `llama-server` this process owns) when no provider is configured; `local_api`: the
//!   window's entry points for it (models, the server's state, its settings).
//! - `provider`: builds a run's provider; `mcp`: a run's MCP servers; `config`: data dir,
//!   limits, provider settings; `secret_env`: what agent commands never inherit.
//! - `autostart`: start at login (XDG autostart entry), keep in the tray; `about`: what
//!   `--version` and the About view show.
//! - `feed`: the change feed the window follows (task states, inbox, approvals, triggers,
//!   and a slow store poll for other processes' commits).
//! - `settings_api`: the settings screen's entry points (stored values, env overrides,
//!   API key, MCP servers).
//! - `changes`: the change journal in a run (prior state kept before an effect, changes
//!   recorded after), undo/redo and change lists, retention (issue 16).
//! - `logging`: JSON-lines logs with `task_id`/`session_id` spans.
//! - `instructions`: the workspace's AGENTS.md, memories and skills as the model reads them
//!   (issue 18); `memory`: the `remember` tool; `rules_api`: their window/CLI entry points.
//! - `cost`: prices, each turn's cost, the money budgets and `usage`; `repetition`: the
//!   repetition guard; `pause`: a paused task continued (raise, steer) or stopped, and a
//!   run parked by the daily cap for unattended runs continued when the cap resets (issue
//!   19); `money_api`: the settings screen's prices, money budgets and today's spend.
//!
//! The store (`pocketpilot-store`) and the wire types (`pocketpilot-protocol`) are their own
//! crates; they are re-exported here as `store`, `event` and `task` for the layers above.
#![deny(clippy::print_stdout, clippy::print_stderr)]
pub mod about;
pub mod admission;
pub mod agent;
pub mod appearance;
pub mod autostart;
pub mod changes;
pub mod config;
pub mod confinement;
pub mod context;
pub mod cost;
pub mod error_kind;
pub mod feed;
pub mod inbox;
pub mod instructions;
pub mod lease;
pub mod local_api;
pub mod local_model;
pub mod logging;
pub mod mcp;
pub mod memory;
pub mod money_api;
pub mod orchestrator;
pub mod pause;
pub mod provider;
pub mod reaper;
pub mod recorder;
pub mod repetition;
pub mod rules_api;
pub mod scheduler;
pub mod secret_env;
pub mod service;
pub mod session_delete;
pub mod settings_api;
mod sink;
pub mod transcript;
pub mod worker;

pub use pocketpilot_protocol::{event, task};
pub use pocketpilot_store as store;

pub use event::{RuntimeEvent, TERMINAL_EVENTS};
pub use service::{ApprovalAnswer, NewTask, Runtime, RuntimeError, SessionHistory};
pub use task::TaskStatus;
