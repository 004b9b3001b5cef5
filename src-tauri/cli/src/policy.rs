//! `pocketpilot policy`: the workspace's capability rules (`allow`, `deny`, `show`,
//! `clear`, in `settings.rs`) and its command rules (`list`, `add`, `remove`, `explain`).
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Subcommand;
use pocketpilot_core::api::service::Runtime;
use pocketpilot_core::ops;
use pocketpilot_protocol::{CallExplanation, CommandRule, CommandRuleKind};

use super::{escape::shown, print_json, settings, CliError};

#[derive(Subcommand, Debug)]
pub enum PolicyCommand {
    #[command(flatten)]
    Capability(settings::PolicyCommand),
    /// List the command rules of a workspace (with its sessions' own), or of every one.
    List {
        #[arg(long)]
        workspace: Option<PathBuf>,
        /// Every workspace's rules.
        #[arg(long, conflicts_with = "workspace")]
        all: bool,
        #[arg(long)]
        json: bool,
    },
    /// Add a command rule: a program and its arguments as you would type them, `*` at the
    /// end for any further arguments (`pocketpilot policy add 'cargo test *'`). Commands
    /// every part of which an allow rule covers run without asking; a deny rule refuses
    /// a command wherever it appears in it, and always wins.
    Add {
        rule: String,
        /// A deny rule instead of an allow rule.
        #[arg(long)]
        deny: bool,
        #[arg(long)]
        workspace: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Remove a command rule by its id (`policy list` shows them).
    Remove { id: i64 },
    /// Why a call of a task ran without asking, asked, or was refused (CALL is the call's
    /// id, as `pocketpilot show TASK --json` lists it).
    Explain {
        task: i64,
        call: String,
        #[arg(long)]
        json: bool,
    },
}

pub fn policy(rt: &Arc<Runtime>, cmd: PolicyCommand) -> Result<ExitCode, CliError> {
    let mut out = std::io::stdout().lock();
    match cmd {
        PolicyCommand::Capability(cmd) => return settings::policy(rt, cmd),
        PolicyCommand::List {
            workspace,
            all,
            json,
        } => {
            let ws = if all {
                None
            } else {
                Some(workspace_of(workspace)?)
            };
            let rules = rt.call(ops::ListCommandRules {
                workspace: ws.as_deref().map(|s| s.to_string()),
            })?;
            if json {
                print_json(&rules);
            } else if rules.is_empty() {
                let _ = writeln!(out, "no command rules");
            } else {
                for r in &rules {
                    let _ = writeln!(out, "{}", line(r, all));
                }
            }
        }
        PolicyCommand::Add {
            rule,
            deny,
            workspace,
            json,
        } => {
            let ws = workspace_of(workspace)?;
            let kind = if deny {
                CommandRuleKind::Deny
            } else {
                CommandRuleKind::Allow
            };
            let added = rt.call(ops::AddCommandRule {
                workspace: ws.to_string(),
                kind,
                rule: rule.to_string(),
            })?;
            if json {
                print_json(&added);
            } else {
                let _ = writeln!(out, "{}", line(&added, true));
            }
        }
        PolicyCommand::Remove { id } => {
            let removed = rt.call(ops::RemoveCommandRule { id })?;
            let _ = writeln!(out, "removed {}", line(&removed, true));
        }
        PolicyCommand::Explain { task, call, json } => {
            let why = rt.call(ops::ExplainCall {
                task_id: task,
                call_id: call.to_string(),
            })?;
            if json {
                print_json(&why);
            } else {
                explain(&mut out, &why);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn workspace_of(w: Option<PathBuf>) -> Result<String, CliError> {
    let w = w
        .or_else(super::default_workspace)
        .ok_or_else(|| CliError::Usage("give --workspace".into()))?;
    Ok(w.display().to_string())
}

/// `3  allow  cargo test *  (person, added 2 Dec 2025)`, with the workspace when asked.
fn line(r: &CommandRule, with_workspace: bool) -> String {
    let scope = match r.session_id {
        Some(s) => format!(", session {s}"),
        None => String::new(),
    };
    let ws = if with_workspace {
        format!("  in {}", shown(&r.workspace))
    } else {
        String::new()
    };
    format!(
        "{:>4}  {:<5}  {}  ({}{scope}, added {}){ws}",
        r.id,
        r.kind.as_str(),
        shown(&r.rule),
        r.origin,
        pocketpilot_core::policy::command_rules::added_on(&r.created_at),
    )
}

fn explain(out: &mut impl Write, e: &CallExplanation) {
    let _ = writeln!(
        out,
        "task {} call {} ({})",
        e.task_id,
        shown(&e.call_id),
        shown(&e.tool)
    );
    if let Some(c) = &e.command {
        let _ = writeln!(out, "command: {}", shown(c));
    }
    let _ = writeln!(out, "outcome: {}", e.outcome);
    for w in &e.why {
        let _ = writeln!(out, "  {}", shown(w));
    }
    if let (Some(now), Some(why)) = (e.now, &e.now_why) {
        let _ = writeln!(out, "with today's rules: {now} ({})", shown(why));
    }
}
