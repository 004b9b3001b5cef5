//! The entry points the window, the CLI, the triggers and the evals call: `Runtime` and
//! every `impl Runtime` block live here and nowhere else. Each handler reads or writes the
//! store and hands work to the engine; none of the engine imports this layer.
pub mod call;
pub mod command_rules;
pub mod confinement;
pub mod context;
pub mod cost;
pub mod data;
pub mod export;
pub mod fork;
pub mod hooks;
pub mod local;
pub mod local_servers;
pub mod money;
pub mod open;
pub mod open_session;
pub mod ops;
pub mod pause;
pub mod plan;
pub mod records;
pub mod rewind;
pub mod rules;
pub mod search;
pub mod service;
pub mod session_delete;
pub mod settings;
pub mod triggers;
