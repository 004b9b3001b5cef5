//! Issue 14 on the runtime side: how the OS sandbox (`pocketpilot-sandbox`) is applied to
//! a run's commands, what the approval says about it, and what it means for grants.
//!
//! Everything here is a pure function of (the sandbox probe's status, the workspace's
//! sandbox settings, the workspace's policy rules, the run's grants), so the worker, the
//! agent and the service only call it (hooks marked `issue 14` there):
//! - [`command_sandbox`]: the `CommandSandbox` of a run's `run_command` calls. The network
//!   only when the call also holds `net:network` (a workspace rule, a session grant or
//!   `--allow net:network`) or the workspace's sandbox settings turn it on, and never when
//!   a rule denies `net:network`: deny beats allow.
//! - [`approval_line`]: "sandboxed: writes in the workspace only, no network" or
//!   "NOT sandboxed: <reason>", with the workspace's widenings appended.
//! - [`gate`]: unsandboxed, every `shell:execute` call needs its own approval, whatever
//!   the rules and grants say (never silently unsandboxed).
//! - [`Runtime::vet_session_grant`]: unsandboxed, "allow for this session" on a
//!   `shell:execute` approval becomes a one-off approval, with a note saying why.
//! - [`audited_source`]: a call whose sandbox the workspace widened is recorded with
//!   `DecisionSource::WorkspaceSandbox`.
use std::path::PathBuf;

use pocketpilot_protocol::{capability, Decision, DecisionSource};
use pocketpilot_sandbox::SandboxStatus;
use pocketpilot_tools::{decide, CommandSandbox, PolicyRules, SandboxMode, ToolContext};
use serde::{Deserialize, Serialize};

use crate::store;

/// The capability of `run_command`.
pub const SHELL_EXECUTE: &str = capability::name::SHELL_EXECUTE;
/// What a command needs, besides `shell:execute`, to reach the network.
pub const NET_NETWORK: &str = capability::name::NET_NETWORK;

/// How a person widened the sandbox of one workspace (`pocketpilot sandbox …`). The
/// defaults are the sandbox's own: the workspace writable, no network, secrets scrubbed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceSandbox {
    /// Extra trees commands may read (and execute from).
    #[serde(default)]
    pub extra_read: Vec<PathBuf>,
    /// Extra trees commands may write.
    #[serde(default)]
    pub extra_write: Vec<PathBuf>,
    /// Network for every command of the workspace, unless a rule denies `net:network`.
    #[serde(default)]
    pub network: bool,
    /// Secret-looking variables passed through by exact name.
    #[serde(default)]
    pub env_pass: Vec<String>,
    /// "No sandbox": commands run unconfined (shown in red; each one asks).
    #[serde(default)]
    pub no_sandbox: bool,
    /// Stores whose hard links into the workspace the read tools accept (issue 15).
    #[serde(default)]
    pub link_stores: Vec<PathBuf>,
}

impl WorkspaceSandbox {
    /// One phrase per widening, in a stable order; empty for the defaults.
    pub fn widenings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.no_sandbox {
            w.push("no sandbox".to_owned());
        }
        w.extend(
            self.extra_read
                .iter()
                .map(|p| format!("read {}", p.display())),
        );
        w.extend(
            self.extra_write
                .iter()
                .map(|p| format!("write {}", p.display())),
        );
        if self.network {
            w.push("network".to_owned());
        }
        w.extend(self.env_pass.iter().map(|n| format!("env {n}")));
        w
    }
}

/// Prefixes of the variables that hold the model provider's keys and endpoints: never
/// passed to a command, whatever the workspace's settings say.
const PROVIDER_PREFIXES: &[&str] = &[
    "OPENAI_",
    "AZURE_OPENAI_",
    "ANTHROPIC_",
    "GEMINI_",
    "GOOGLE_API_KEY",
    "MISTRAL_",
    "GROQ_",
    "OPENROUTER_",
    "DEEPSEEK_",
    "TOGETHER_",
    "XAI_",
    "COHERE_",
    "LLAMA_API_KEY",
];

/// Why `name` may not be passed through to commands (`pocketpilot sandbox pass-env`), or
/// `None` when it may. PocketPilot's own variables and the provider's keys stay the app's.
pub fn pass_env_refusal(name: &str) -> Option<String> {
    let upper = name.to_ascii_uppercase();
    if upper.starts_with("POCKETPILOT_") {
        return Some(format!(
            "{name} is PocketPilot's own setting and is never passed to commands"
        ));
    }
    if PROVIDER_PREFIXES.iter().any(|p| upper.starts_with(p)) {
        return Some(format!(
            "{name} holds the model provider's key or endpoint and is never passed to commands"
        ));
    }
    if name.is_empty() || name.contains(['=', '\0']) {
        return Some(format!("{name:?} is not a variable name"));
    }
    None
}

/// The settings key of a workspace's sandbox settings (next to `policy:<workspace>`).
pub fn workspace_sandbox_key(workspace: &str) -> String {
    format!("sandbox:{workspace}")
}

/// The sandbox of a run's commands. `base` is the default for this user (toolchains
/// readable); `grants` are the session's and the run's grants together.
pub fn command_sandbox(
    status: &SandboxStatus,
    ws: &WorkspaceSandbox,
    rules: &PolicyRules,
    grants: &[String],
    base: CommandSandbox,
) -> CommandSandbox {
    let (net, _) = decide(Some(NET_NETWORK), rules, grants);
    let network = match net {
        Decision::Deny => false,
        Decision::Allow => true,
        Decision::RequireApproval => ws.network,
    };
    let mut extra_read = base.extra_read;
    extra_read.extend(ws.extra_read.iter().cloned());
    let mut extra_write = base.extra_write;
    extra_write.extend(ws.extra_write.iter().cloned());
    let mut env_pass = base.env_pass;
    // Settings stored before a name was refused still never pass it.
    env_pass.extend(
        ws.env_pass
            .iter()
            .filter(|n| pass_env_refusal(n).is_none())
            .cloned(),
    );
    let mut widening = ws.widenings();
    // The network is a widening of the workspace's only when the settings gave it; a rule
    // or grant of `net:network` is the ordinary way and shows in the line anyway.
    if ws.network && net != Decision::RequireApproval {
        widening.retain(|w| w != "network");
    }
    CommandSandbox {
        network,
        extra_read,
        extra_write,
        link_stores: ws.link_stores.clone(),
        env_pass,
        // Unconfined only when the person said so or the kernel cannot: then `gate`
        // makes every command ask, and the line says "NOT sandboxed".
        mode: if ws.no_sandbox || !status.is_sandboxed() {
            SandboxMode::Off
        } else {
            SandboxMode::Enforce
        },
        widening,
    }
}

/// The line an approval shows for a command run with `sandbox`.
pub fn approval_line(status: &SandboxStatus, sandbox: &CommandSandbox) -> String {
    let line = match (status, sandbox.mode) {
        (SandboxStatus::NotSandboxed { .. }, _) => status.line(sandbox.network),
        (_, SandboxMode::Off) => {
            "NOT sandboxed: the workspace's sandbox is off (pocketpilot sandbox on)".to_owned()
        }
        (_, SandboxMode::Enforce) => status.line(sandbox.network),
    };
    let widened: Vec<&String> = sandbox
        .widening
        .iter()
        .filter(|w| w.as_str() != "no sandbox")
        .collect();
    if widened.is_empty() {
        line
    } else {
        let list: Vec<&str> = widened.iter().map(|s| s.as_str()).collect();
        format!("{line}; widened by the workspace: {}", list.join(", "))
    }
}

/// The approval line of a call, for the calls that start a process.
pub fn call_line(capability: &str, ctx: &ToolContext) -> Option<String> {
    (capability == SHELL_EXECUTE)
        .then(|| approval_line(&pocketpilot_sandbox::probe(), &ctx.sandbox))
}

/// Whether "allow for this session" may stand for `shell:execute` with `sandbox`.
pub fn session_grant_allowed(sandbox: &CommandSandbox) -> bool {
    sandbox.mode == SandboxMode::Enforce
}

/// Unsandboxed, an allowed `shell:execute` call asks anyway. Deny stays deny.
pub fn gate(
    capability: &str,
    decision: Decision,
    source: DecisionSource,
    ctx: &ToolContext,
) -> (Decision, DecisionSource) {
    if capability == SHELL_EXECUTE
        && decision == Decision::Allow
        && !session_grant_allowed(&ctx.sandbox)
    {
        return (Decision::RequireApproval, DecisionSource::Default);
    }
    (decision, source)
}

/// The decision source recorded for an allowed call: `WorkspaceSandbox` when the call
/// starts a process whose sandbox the workspace widened.
pub fn audited_source(
    capability: &str,
    source: DecisionSource,
    ctx: &ToolContext,
) -> DecisionSource {
    if capability == SHELL_EXECUTE && !ctx.sandbox.widening.is_empty() {
        DecisionSource::WorkspaceSandbox
    } else {
        source
    }
}

/// What the approval says when "allow for this session" was refused.
pub const SESSION_GRANT_REFUSED: &str =
    "session grant refused: commands are NOT sandboxed here, so this approves this command only; the next one asks again";

/// [`command_sandbox`] with the workspace's settings and rules read from the store.
pub fn load_command_sandbox(
    store: &store::Store,
    workspace: &str,
    grants: &[String],
) -> std::result::Result<CommandSandbox, store::StoreError> {
    let ws: WorkspaceSandbox = store
        .read(|c| store::settings::get(c, &workspace_sandbox_key(workspace)))?
        .unwrap_or_default();
    let rules: PolicyRules = store
        .read(|c| store::settings::get(c, &crate::config::workspace_rules_key(workspace)))?
        .unwrap_or_default();
    Ok(command_sandbox(
        &pocketpilot_sandbox::probe(),
        &ws,
        &rules,
        grants,
        CommandSandbox::for_this_user(),
    ))
}

/// What the app does first (after dropping secrets from its environment): files it creates
/// from now on are private (umask 077: the database, its WAL and shm, the logs are 0600
/// from their first write, directories 0700), the process is not dumpable (no
/// `/proc/PID/mem`, no ptrace by its commands), the kernel is probed once, and an existing
/// install's data, config and log dirs are tightened. Returns the problems, for the caller
/// to print: none of them stops the app.
pub fn at_start(data_dir: &std::path::Path) -> Vec<String> {
    // SAFETY: umask only sets the process's file mode creation mask.
    unsafe { libc::umask(0o077) };
    let mut problems = Vec::new();
    if let Err(e) = pocketpilot_sandbox::harden_parent() {
        problems.push(format!("cannot make the process non-dumpable: {e}"));
    }
    let status = pocketpilot_sandbox::probe();
    tracing::info!(sandbox = %status.details(), "sandbox at start");
    for dir in private_dirs(data_dir) {
        if !dir.exists() {
            continue;
        }
        if let Err(e) = pocketpilot_sandbox::make_private(&dir) {
            problems.push(format!("cannot make {} private: {e}", dir.display()));
        }
    }
    problems
}

/// The app's own directories: data (with the logs inside it) and config.
pub fn private_dirs(data_dir: &std::path::Path) -> Vec<PathBuf> {
    let mut dirs = vec![data_dir.to_owned(), crate::logging::log_dir(data_dir)];
    dirs.extend(dirs::config_dir().map(|d| d.join("pocketpilot")));
    dirs.dedup();
    dirs
}

#[cfg(test)]
#[path = "confinement_tests.rs"]
mod tests;
