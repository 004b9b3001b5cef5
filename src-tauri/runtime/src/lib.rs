//! PocketPilot's runtime, free of any window toolkit: the desktop shell and the CLI are
//! thin layers over it.
//!
//! Layout (one concept per module):
//! - `store`: SQLite, the single source of truth (one file per table).
//! - `task`: the task state machine.
//! - `event`: the events of a run; `recorder`: persists and fans them out live.
//! - `service`: `Runtime`, the only entry (create, start, cancel, approve, subscribe).
//! - `worker`: runs one task; `agent`: the bounded model → tool loop; `transcript`:
//!   entries → model messages.
//! - `provider`: builds a run's provider; `config`: data dir, limits, provider settings.
//! - `cli`: the `pocketpilot` command line; `logging`: JSON-lines logs.
//! - `eval`: the scripted eval suite, its runner and scoring, replay of recorded tasks.
//! - `trigger`: work that starts without the person: webhook, cron, file watch, `serve`.
//! - `autostart`: start at login (XDG autostart entry), keep in the tray; `about`: what
//!   `--version` and the About view show.
pub mod about;
pub mod agent;
pub mod autostart;
pub mod cli;
pub mod config;
pub mod eval;
pub mod event;
pub mod inbox;
pub mod logging;
pub mod mcp;
pub mod provider;
pub mod recorder;
pub mod secret_env;
pub mod service;
pub mod store;
pub mod task;
pub mod transcript;
pub mod trigger;
pub mod worker;

pub use event::{RuntimeEvent, TERMINAL_EVENTS};
pub use service::{ApprovalAnswer, NewTask, Runtime, RuntimeError, SessionHistory};
pub use task::TaskStatus;
