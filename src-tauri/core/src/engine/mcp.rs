//! MCP servers for runs: their configuration (per workspace, or for every workspace), the
//! secrets they get from the keychain, and connecting a run's whitelisted servers.
//!
//! A task carries a whitelist (`*`, `server`, `server:tool`); by default `*`: every server
//! configured for its workspace. Their tools need approval unless a server says otherwise.
//! A server that fails to start or dies is recorded in the task's events
//! (`mcp_problem`) and never blocks the run.
use pocketpilot_mcp::{McpServerConfig, McpWhitelist, SecretEnv};
use serde::{Deserialize, Serialize};

use crate::store::{settings, Store, StoreError};

const KEY: &str = "mcp_servers";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredServer {
    /// The canonical workspace it belongs to; `None`: every workspace.
    pub workspace: Option<String>,
    pub config: McpServerConfig,
}

#[derive(Debug, thiserror::Error)]
pub enum McpConfigError {
    #[error("{0}")]
    Invalid(String),
    #[error("no MCP server named `{0}`")]
    NotFound(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub fn list(store: &Store) -> Result<Vec<StoredServer>, StoreError> {
    Ok(store.read(|c| settings::get(c, KEY))?.unwrap_or_default())
}

/// Adds (or replaces, by name and workspace) a server.
pub fn add(store: &Store, server: StoredServer) -> Result<(), McpConfigError> {
    server
        .config
        .validate()
        .map_err(|e| McpConfigError::Invalid(e.to_string()))?;
    store.write_with(|tx| {
        let mut all: Vec<StoredServer> = settings::get(tx, KEY)?.unwrap_or_default();
        all.retain(|s| !(s.config.name == server.config.name && s.workspace == server.workspace));
        all.push(server);
        settings::set(tx, KEY, &all)?;
        Ok::<_, McpConfigError>(())
    })
}

pub fn delete(store: &Store, name: &str, workspace: Option<&str>) -> Result<(), McpConfigError> {
    store.write_with(|tx| {
        let mut all: Vec<StoredServer> = settings::get(tx, KEY)?.unwrap_or_default();
        let before = all.len();
        all.retain(|s| !(s.config.name == name && s.workspace.as_deref() == workspace));
        if all.len() == before {
            return Err(McpConfigError::NotFound(name.to_owned()));
        }
        settings::set(tx, KEY, &all)?;
        Ok(())
    })
}

/// The servers a run in `workspace` may use: the workspace's own, then the global ones
/// not shadowed by a workspace server of the same name.
pub fn for_workspace(store: &Store, workspace: &str) -> Result<Vec<McpServerConfig>, StoreError> {
    let all = list(store)?;
    let mut out: Vec<McpServerConfig> = all
        .iter()
        .filter(|s| s.workspace.as_deref() == Some(workspace))
        .map(|s| s.config.clone())
        .collect();
    for s in all.iter().filter(|s| s.workspace.is_none()) {
        if !out.iter().any(|o| o.name == s.config.name) {
            out.push(s.config.clone());
        }
    }
    Ok(out)
}

/// The keychain account a server's secret variable is stored under.
pub fn secret_account(server: &str, var: &str) -> String {
    format!("mcp:{server}:{var}")
}

/// Secrets for the servers, from the keychain. A missing one is left out: the MCP host
/// reports it as a problem for that server only.
pub fn secrets(servers: &[McpServerConfig]) -> SecretEnv {
    let mut env = SecretEnv::new();
    for s in servers {
        for var in &s.secret_env {
            match pocketpilot_model::keychain::get_key(&secret_account(&s.name, var)) {
                Ok(Some(value)) => env.insert(var.clone(), value),
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(server = %s.name, var = %var, error = %e, "cannot read an MCP secret")
                }
            }
        }
    }
    env
}

pub fn whitelist(entries: &[String]) -> Result<McpWhitelist, McpConfigError> {
    McpWhitelist::parse(entries).map_err(|e| McpConfigError::Invalid(e.to_string()))
}
