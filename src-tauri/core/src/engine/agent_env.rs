//! The environment of what the agent starts (commands, MCP servers, hooks): the one the
//! person launched PocketPilot with, less what the app set for its own window.
use std::ffi::OsString;
use std::sync::OnceLock;

/// Variables this process set for itself (the window's WebKit and GTK settings), kept out
/// of what the agent starts: a command or MCP server gets the environment the person
/// launched PocketPilot with, not a GTK without GL or a WebKit without JIT.
static APP_ONLY_ENV: OnceLock<Vec<OsString>> = OnceLock::new();

/// Names the variables the app set for itself (see [`APP_ONLY_ENV`]); once, at start.
pub fn keep_from_agents(names: Vec<OsString>) {
    let _ = APP_ONLY_ENV.set(names);
}

/// The environment for what the agent starts; `None`: this process's, unchanged.
pub fn agent_env() -> Option<Vec<(OsString, OsString)>> {
    let hidden = APP_ONLY_ENV.get().filter(|h| !h.is_empty())?;
    Some(
        std::env::vars_os()
            .filter(|(name, _)| !hidden.contains(name))
            .collect(),
    )
}
