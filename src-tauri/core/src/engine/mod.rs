//! What runs a task: the scheduler of this process's runs, the worker of one run, the
//! agent's model → tool loop, the orchestrator of one tool call, the session's context
//! and transcript, the inbox and its admission, the recorder of events, leases and the
//! reaper, the change journal in a run, the feed the window follows, a new session's title, and the providers
//! and MCP servers a run uses. It imports `policy` and the crates below, never `api`.
pub mod admission;
pub mod agent;
pub mod agent_env;
pub mod changes;
pub mod context;
pub mod conversation;
pub mod editors;
pub mod feed;
pub mod hooks;
pub mod inbox;
pub mod lease;
pub mod local_model;
pub mod mcp;
pub mod orchestrator;
pub mod plan;
pub mod provider;
pub mod reaper;
pub mod recorder;
pub mod scheduler;
pub(crate) mod sink;
pub mod title;
pub mod transcript;
pub mod watch;
pub mod worker;
