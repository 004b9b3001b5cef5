//! `pocketpilot agent-hooks …`: the hooks runs call (Claude Code's format), and the
//! person's consent to a workspace's hooks file. (`pocketpilot hooks` is webhooks.)
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Subcommand;

use pocketpilot_core::api::service::Runtime;
use pocketpilot_core::ops;
use pocketpilot_protocol::{HookScope, HooksFileInfo};

use super::escape::shown;
use super::{print_json, CliError};

#[derive(Subcommand, Debug)]
pub enum AgentHooksCommand {
    /// The hooks files that apply to a workspace, every command they run, and whether the
    /// workspace's file is consented to.
    List {
        #[arg(long)]
        workspace: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Let the workspace's hooks file run as it is now (shows every command first). A
    /// changed file needs consent again.
    Consent {
        #[arg(long)]
        workspace: Option<PathBuf>,
        /// Consent only if the file's hash is still this (what `list` showed).
        #[arg(long)]
        hash: Option<String>,
    },
    /// Stop the workspace's hooks from running.
    Revoke {
        #[arg(long)]
        workspace: Option<PathBuf>,
    },
}

fn workspace(w: Option<PathBuf>) -> Result<String, CliError> {
    let w = w
        .or_else(super::default_workspace)
        .ok_or_else(|| CliError::Usage("give --workspace".into()))?;
    Ok(w.display().to_string())
}

pub fn agent_hooks(rt: &Arc<Runtime>, cmd: AgentHooksCommand) -> Result<ExitCode, CliError> {
    let mut out = std::io::stdout().lock();
    match cmd {
        AgentHooksCommand::List { workspace: w, json } => {
            let files = rt.call(ops::GetHooksInEffect {
                workspace: (workspace(w)?).to_string(),
            })?;
            if json {
                print_json(&files);
                return Ok(ExitCode::SUCCESS);
            }
            if files.is_empty() {
                let _ = writeln!(out, "no hooks files");
            }
            for f in &files {
                print_file(&mut out, f);
            }
        }
        AgentHooksCommand::Consent { workspace: w, hash } => {
            let ws = workspace(w)?;
            let f = rt.call(ops::ConsentHooks {
                workspace: ws.to_string(),
                hash: hash.as_deref().map(|s| s.to_string()),
            })?;
            print_file(&mut out, &f);
            let _ = writeln!(
                out,
                "these commands now run in {} (until the file changes or you revoke it)",
                shown(&ws)
            );
        }
        AgentHooksCommand::Revoke { workspace: w } => {
            let ws = workspace(w)?;
            rt.call(ops::RevokeHooks {
                workspace: ws.to_string(),
            })?;
            let _ = writeln!(out, "the hooks of {} no longer run", shown(&ws));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_file(out: &mut impl Write, f: &HooksFileInfo) {
    let state = match (f.scope, f.runs) {
        (HookScope::Person, _) => "yours: runs",
        (HookScope::Workspace, true) => "the workspace's: consented, runs",
        (HookScope::Workspace, false) => "the workspace's: NOT consented, does not run",
    };
    let _ = writeln!(out, "{} ({state})", shown(&f.path));
    if !f.hash.is_empty() {
        let _ = writeln!(out, "  sha256 {}", f.hash);
    }
    for h in &f.hooks {
        let matcher = h
            .matcher
            .as_deref()
            .map(|m| format!(" [{}]", shown(m)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  {}{matcher}: {} (timeout {} s)",
            h.event,
            shown(&h.command),
            h.timeout_secs
        );
    }
    for p in &f.problems {
        let _ = writeln!(out, "  skipped: {}", shown(p));
    }
}
