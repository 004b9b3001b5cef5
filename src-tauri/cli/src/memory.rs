//! `pocketpilot memory list|add|edit|delete` and `pocketpilot rules show|skill` (issue 18).
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Subcommand;
use pocketpilot_core::api::service::Runtime;
use pocketpilot_core::ops;
use pocketpilot_protocol::{Memory, MemoryScope};

use super::escape::shown;
use super::{default_workspace, CliError};

#[derive(Subcommand, Debug)]
pub enum MemoryCommand {
    /// Every memory, or those a run in `--workspace` is given.
    List {
        #[arg(long)]
        workspace: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Add a memory for a workspace (default: the current folder) or, with `--global`, for all.
    Add {
        text: String,
        #[arg(long, conflicts_with = "workspace")]
        global: bool,
        #[arg(long)]
        workspace: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Replace a memory's text.
    Edit { id: i64, text: String },
    /// Delete a memory.
    Delete { id: i64 },
}

#[derive(Subcommand, Debug)]
pub enum RulesCommand {
    /// The instruction files, memories and skills a run in the workspace is given.
    Show {
        #[arg(long)]
        workspace: Option<PathBuf>,
        /// The instruction files of the directories this session's agent worked in.
        #[arg(long)]
        session: Option<i64>,
        #[arg(long)]
        json: bool,
    },
    /// Switch a skill (by the folder `rules show` lists) on or off.
    Skill {
        dir: String,
        #[arg(value_enum)]
        switch: Switch,
    },
    /// Keep memories the agent proposes without asking (`on`), or ask each time (`off`).
    AutoAcceptMemories {
        #[arg(value_enum)]
        switch: Switch,
    },
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum Switch {
    On,
    Off,
}

fn workspace_or_here(w: Option<PathBuf>) -> Result<String, CliError> {
    w.or_else(default_workspace)
        .map(|p| p.display().to_string())
        .ok_or_else(|| CliError::Usage("give --workspace".into()))
}

fn line(m: &Memory) -> String {
    let whose = match (&m.scope, &m.workspace) {
        (MemoryScope::Workspace, Some(w)) => w.as_str(),
        _ => "global",
    };
    format!("{:>5}  [{}]  {}", m.id, shown(whose), shown(&m.text))
}

pub fn memory(
    rt: &Arc<Runtime>,
    cmd: MemoryCommand,
    out: &mut impl Write,
) -> Result<ExitCode, CliError> {
    match cmd {
        MemoryCommand::List { workspace, json } => {
            let w = workspace.map(|p| p.display().to_string());
            let list = rt.call(ops::ListMemories {
                workspace: w.as_deref().map(|s| s.to_string()),
            })?;
            if json {
                super::print_json(&list);
            } else if list.is_empty() {
                let _ = writeln!(out, "no memories");
            } else {
                for m in &list {
                    let _ = writeln!(out, "{}", line(m));
                }
            }
        }
        MemoryCommand::Add {
            text,
            global,
            workspace,
            json,
        } => {
            let m = if global {
                rt.call(ops::AddMemory {
                    scope: MemoryScope::Global,
                    workspace: None,
                    text: text.to_string(),
                })?
            } else {
                let w = workspace_or_here(workspace)?;
                rt.call(ops::AddMemory {
                    scope: MemoryScope::Workspace,
                    workspace: Some(w.to_string()),
                    text: text.to_string(),
                })?
            };
            if json {
                super::print_json(&m);
            } else {
                let _ = writeln!(out, "{}", line(&m));
            }
        }
        MemoryCommand::Edit { id, text } => {
            let m = rt.call(ops::EditMemory {
                id,
                text: text.to_string(),
            })?;
            let _ = writeln!(out, "{}", line(&m));
        }
        MemoryCommand::Delete { id } => {
            rt.call(ops::DeleteMemory { id })?;
            let _ = writeln!(out, "memory {id} deleted");
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn rules(
    rt: &Arc<Runtime>,
    cmd: RulesCommand,
    out: &mut impl Write,
) -> Result<ExitCode, CliError> {
    match cmd {
        RulesCommand::Show {
            workspace,
            session,
            json,
        } => {
            let w = workspace_or_here(workspace)?;
            let r = rt.call(ops::GetRulesInEffect {
                workspace: w.to_string(),
                session,
            })?;
            if json {
                super::print_json(&r);
                return Ok(ExitCode::SUCCESS);
            }
            let _ = writeln!(out, "Instructions in effect ({}):", shown(&r.workspace));
            for f in &r.instructions {
                let cut = if f.truncated { ", cut at the cap" } else { "" };
                let _ = writeln!(out, "  {} ({} bytes{cut})", shown(&f.path), f.bytes);
            }
            let _ = writeln!(out, "Memories:");
            for m in &r.memories {
                let _ = writeln!(out, "{}", line(m));
            }
            let _ = writeln!(out, "Skills:");
            for s in &r.skills {
                let on = if s.enabled { "on " } else { "off" };
                let _ = writeln!(
                    out,
                    "  [{on}] {} ({}): {}\n        {}",
                    shown(&s.name),
                    shown(&s.source.to_string()),
                    shown(&s.description),
                    shown(&s.dir)
                );
            }
            for p in &r.problems {
                let _ = writeln!(out, "  problem: {}", shown(&p.to_string()));
            }
        }
        RulesCommand::Skill { dir, switch } => {
            rt.call(ops::SetSkillEnabled {
                dir: dir.to_string(),
                enabled: matches!(switch, Switch::On),
            })?;
            let _ = writeln!(out, "skill {}: {switch:?}", shown(&dir));
        }
        RulesCommand::AutoAcceptMemories { switch } => {
            rt.call(ops::SetMemoryAutoAccept {
                on: matches!(switch, Switch::On),
            })?;
            let _ = writeln!(out, "auto-accept memories: {switch:?}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
