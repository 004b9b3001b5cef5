//! `pocketpilot sandbox …`: a workspace's sandbox settings (issue 14). Every widening is
//! shown in the approvals and recorded as the decision's source; a `deny` rule of
//! `pocketpilot policy` still beats "network on".
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Subcommand, ValueEnum};

use pocketpilot_core::api::service::Runtime;
use pocketpilot_core::ops;
use pocketpilot_core::policy::confinement::WorkspaceSandbox;

use super::escape::shown;
use super::{print_json, CliError};

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Switch {
    On,
    Off,
}

#[derive(Subcommand, Debug)]
pub enum SandboxCommand {
    /// Let the workspace's commands also read (and run from) DIR.
    AllowRead {
        dir: PathBuf,
        #[arg(long)]
        workspace: Option<PathBuf>,
    },
    /// Let the read tools read workspace files hard-linked into DIR (a package store,
    /// such as pnpm's, that `node_modules` links to).
    AllowLinks {
        dir: PathBuf,
        #[arg(long)]
        workspace: Option<PathBuf>,
    },
    /// Let the workspace's commands also write DIR.
    AllowWrite {
        dir: PathBuf,
        #[arg(long)]
        workspace: Option<PathBuf>,
    },
    /// Network for every command of the workspace (unless a rule denies `net:network`).
    Network {
        #[arg(value_enum)]
        switch: Switch,
        #[arg(long)]
        workspace: Option<PathBuf>,
    },
    /// Pass a secret-looking variable through to the workspace's commands, by exact name.
    PassEnv {
        name: String,
        #[arg(long)]
        workspace: Option<PathBuf>,
    },
    /// "No sandbox" for the workspace (on: confined, the default; off: NOT sandboxed, and
    /// then every command asks).
    Confine {
        #[arg(value_enum)]
        switch: Switch,
        #[arg(long)]
        workspace: Option<PathBuf>,
    },
    /// Back to the defaults.
    Reset {
        #[arg(long)]
        workspace: Option<PathBuf>,
    },
    /// The workspace's settings and the line its approvals show.
    Show {
        #[arg(long)]
        workspace: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
}

fn workspace(w: Option<PathBuf>) -> Result<String, CliError> {
    let w = w
        .or_else(super::default_workspace)
        .ok_or_else(|| CliError::Usage("give --workspace".into()))?;
    let real = std::fs::canonicalize(&w)
        .map_err(|_| CliError::Usage(format!("the workspace {} does not exist", w.display())))?;
    Ok(real.display().to_string())
}

fn dir(d: &std::path::Path) -> Result<PathBuf, CliError> {
    std::fs::canonicalize(d).map_err(|_| CliError::Usage(format!("{} does not exist", d.display())))
}

/// Changes the sandbox settings of a workspace (the current folder's by default); gives
/// the workspace's canonical path.
fn edit_sandbox(
    rt: &Arc<Runtime>,
    w: Option<PathBuf>,
    f: &dyn Fn(&mut WorkspaceSandbox),
) -> Result<String, CliError> {
    let ws = workspace(w)?;
    let mut value = rt.call(ops::GetWorkspaceSandbox {
        workspace: ws.clone(),
    })?;
    f(&mut value);
    rt.call(ops::SetWorkspaceSandbox {
        workspace: ws.clone(),
        value,
    })?;
    Ok(ws)
}

pub fn sandbox(rt: &Arc<Runtime>, cmd: SandboxCommand) -> Result<ExitCode, CliError> {
    let edit = |w: Option<PathBuf>, f: &dyn Fn(&mut WorkspaceSandbox)| edit_sandbox(rt, w, f);
    let mut out = std::io::stdout().lock();
    match cmd {
        SandboxCommand::AllowRead {
            dir: d,
            workspace: w,
        } => {
            let d = dir(&d)?;
            let ws = edit(w, &|s| add_once(&mut s.extra_read, &d))?;
            let _ = writeln!(out, "commands in {ws} may read {}", d.display());
        }
        SandboxCommand::AllowLinks {
            dir: d,
            workspace: w,
        } => {
            let d = dir(&d)?;
            let ws = edit(w, &|s| add_once(&mut s.link_stores, &d))?;
            let _ = writeln!(
                out,
                "files in {ws} hard-linked into {} may be read",
                d.display()
            );
        }
        SandboxCommand::AllowWrite {
            dir: d,
            workspace: w,
        } => {
            let d = dir(&d)?;
            let ws = edit(w, &|s| add_once(&mut s.extra_write, &d))?;
            let _ = writeln!(out, "commands in {ws} may write {}", d.display());
        }
        SandboxCommand::Network {
            switch,
            workspace: w,
        } => {
            let on = matches!(switch, Switch::On);
            let ws = edit(w, &|s| s.network = on)?;
            let state = if on { "on" } else { "off" };
            let _ = writeln!(out, "network for commands in {ws}: {state}");
        }
        SandboxCommand::PassEnv { name, workspace: w } => {
            let ws = edit(w, &|s| add_once(&mut s.env_pass, &name))?;
            let _ = writeln!(out, "commands in {} get ${}", shown(&ws), shown(&name));
        }
        SandboxCommand::Confine {
            switch,
            workspace: w,
        } => {
            let off = matches!(switch, Switch::Off);
            let ws = edit(w, &|s| s.no_sandbox = off)?;
            let how = if off {
                "NOT sandboxed (each one asks)"
            } else {
                "sandboxed"
            };
            let _ = writeln!(out, "commands in {ws} run {how}");
        }
        SandboxCommand::Reset { workspace: w } => {
            let ws = workspace(w)?;
            rt.call(ops::SetWorkspaceSandbox {
                workspace: ws.clone(),
                value: WorkspaceSandbox::default(),
            })?;
            let _ = writeln!(out, "the sandbox of {ws} is back to the defaults");
        }
        SandboxCommand::Show { workspace: w, json } => show(rt, w, json, &mut out)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn add_once<T: PartialEq + Clone>(list: &mut Vec<T>, item: &T) {
    if !list.contains(item) {
        list.push(item.clone());
    }
}

/// The workspace's sandbox settings (`json`), or the line an approval shows of them.
fn show(
    rt: &Arc<Runtime>,
    w: Option<PathBuf>,
    json: bool,
    out: &mut std::io::StdoutLock<'_>,
) -> Result<(), CliError> {
    let ws = workspace(w)?;
    let settings = rt.call(ops::GetWorkspaceSandbox {
        workspace: ws.to_string(),
    })?;
    if json {
        print_json(&settings);
        return Ok(());
    }
    let sandbox = rt.call(ops::GetCommandSandbox {
        workspace: ws.to_string(),
        grants: vec![],
    })?;
    let line = pocketpilot_core::policy::confinement::approval_line(
        &pocketpilot_sandbox::probe(),
        &sandbox,
    );
    let terminal = std::io::IsTerminal::is_terminal(&*out);
    let _ = writeln!(
        out,
        "{}",
        super::approvals::sandbox_line(&shown(&line), terminal)
    );
    Ok(())
}
