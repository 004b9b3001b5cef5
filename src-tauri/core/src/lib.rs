//! PocketPilot's core, free of any window toolkit, HTTP server or command-line parser: the
//! desktop shell, the CLI and the triggers are thin layers over it.
//!
//! Layout: three layers, and imports go one way (api → engine → policy → the root's
//! foundation modules and the crates below); `tests/architecture.rs` fails on an import
//! against that direction or on any import circle.
//! - `api`: `Runtime` and its one entry point, `Runtime::call(op)`, with every op (`ops`:
//!   tasks, sessions, approvals, inbox, settings, money, rules, sandbox settings, context,
//!   triggers, the built-in model's screens) declared next to its handler, and every
//!   `impl Runtime` block. `ops::WatchFeed` is the one subscription to its changes.
//! - `engine`: what runs a task — `scheduler` (this process's runs), `worker` (one run),
//!   `agent` (the bounded model → tool loop), `orchestrator` (one tool call: decide → wait
//!   → guard → execute → record), `context` (the session's context and its planner glue),
//!   `transcript` (entries → model messages), `inbox` and `admission` (what is said to a
//!   busy session), `recorder` (events with their effects, fanned out live), `lease` and
//!   `reaper` (a session's lease and the process trees a previous holder left), `hooks`
//!   (running the run's hooks, confined), `changes`
//!   (the change journal in a run), `feed` (what the window follows), `provider`, `mcp`,
//!   `local_model` (the built-in model's server).
//! - `policy`: what a run may do and spend — `confinement` (the OS sandbox of its
//!   commands), `cost`, `pause`, `repetition`, `secret_env`, `hooks` (hooks files, consent,
//!   what a reply means), and the workspace's rules
//!   (`instructions`, `memory`, `rules`).
//! - The root: `config` (data dir, limits, provider settings), `error_kind`, `logging`,
//!   `about`, `appearance`, `autostart`.
//!
//! The store (`pocketpilot-store`) and the wire types (`pocketpilot-protocol`) are their own
//! crates; they are re-exported here as `store`, `event` and `task` for the layers above.
#![deny(clippy::print_stdout, clippy::print_stderr)]
pub mod about;
pub mod api;
pub mod appearance;
pub mod autostart;
pub mod config;
pub mod engine;
pub mod error_kind;
pub mod logging;
pub mod policy;

pub use pocketpilot_protocol::{event, task};
pub use pocketpilot_store as store;

pub use api::ops;
pub use api::service::{ApprovalAnswer, NewTask, Runtime, RuntimeError, SessionHistory};
pub use event::{RuntimeEvent, TERMINAL_EVENTS};
pub use task::TaskStatus;
