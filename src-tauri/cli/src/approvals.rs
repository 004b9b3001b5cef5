use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;

use pocketpilot_protocol::{has_hidden, visible, Effect};

use super::escape::shown;
use super::{print_json, CliError};
use pocketpilot_core::api::service::{ApprovalAnswer, Runtime};

#[derive(Args, Debug)]
pub struct ApproveArgs {
    pub id: i64,
    /// Run the call with these arguments instead (a JSON object); they are checked again.
    #[arg(long = "args", value_name = "JSON")]
    pub args: Option<String>,
    /// Also allow this capability for the rest of the session.
    #[arg(long)]
    pub session_grant: bool,
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct RejectArgs {
    pub id: i64,
    #[arg(long)]
    pub reason: String,
    #[arg(long)]
    pub json: bool,
}

pub fn list(rt: &Arc<Runtime>, json: bool) -> Result<ExitCode, CliError> {
    let pending = rt.pending_approvals()?;
    if json {
        print_json(&pending);
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    let terminal = std::io::IsTerminal::is_terminal(&out);
    for a in pending {
        let _ = writeln!(
            out,
            "{:>5}  task {:<5} {} {}  ({})",
            a.id,
            a.task_id,
            shown(&a.tool),
            shown(&a.arguments.to_string()),
            shown(a.capability.as_deref().unwrap_or("?"))
        );
        let _ = writeln!(out, "{}", describe_effect(&a.effect));
        if let Some(line) = sandbox_of(rt, &a) {
            let _ = writeln!(out, "  {}", sandbox_line(&shown(&line), terminal));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The sandbox line of a pending command, as its approval showed it (the workspace's
/// settings as they are now).
fn sandbox_of(rt: &Arc<Runtime>, a: &pocketpilot_store::approvals::Approval) -> Option<String> {
    if a.capability.as_deref() != Some(pocketpilot_core::policy::confinement::SHELL_EXECUTE) {
        return None;
    }
    let task = rt.task(a.task_id).ok()?;
    let session = rt.session(task.session_id).ok()?;
    let sandbox = rt.command_sandbox(&session.workspace, &[]).ok()?;
    Some(pocketpilot_core::policy::confinement::approval_line(
        &pocketpilot_sandbox::probe(),
        &sandbox,
    ))
}

/// The effect as a person reads it: model-controlled text made visible (see
/// `pocketpilot_protocol::visible`), with a warning when it had hidden characters.
pub fn describe_effect(effect: &Effect) -> String {
    let (text, raw) = match effect {
        Effect::Diff { diff, .. } => (visible(diff).into_owned(), diff.as_str()),
        Effect::Command { command, cwd } => (
            format!("  $ {}\n  in {}", visible(command), visible(cwd)),
            command.as_str(),
        ),
        Effect::Fetch { url } => (format!("  GET {}", visible(url)), url.as_str()),
        Effect::Delete { path } => (format!("  delete {}", visible(path)), path.as_str()),
        Effect::Memory { scope, text } => (
            format!(
                "  remember ({scope}): {}\n  kept only if you approve",
                visible(text)
            ),
            text.as_str(),
        ),
        Effect::None => (String::new(), ""),
    };
    if has_hidden(raw) {
        format!("{text}\n  ! {HIDDEN_WARNING}")
    } else {
        text
    }
}

/// What an approval says when what it shows had hidden characters.
pub const HIDDEN_WARNING: &str =
    "this contains hidden characters (control, bidi or zero-width), shown escaped above";

/// The sandbox line of an approval; "NOT sandboxed: …" in red on a terminal.
pub fn sandbox_line(line: &str, terminal: bool) -> String {
    if terminal && line.starts_with("NOT sandboxed") {
        format!("\x1b[1;31m{line}\x1b[0m")
    } else {
        line.to_owned()
    }
}

async fn continue_after(
    rt: &Arc<Runtime>,
    approval_id: i64,
    answer: ApprovalAnswer,
    json: bool,
) -> Result<ExitCode, CliError> {
    let before = rt
        .store
        .read(|c| pocketpilot_store::approvals::get(c, approval_id))?;
    let last = rt
        .events(before.task_id)?
        .last()
        .map(|e| e.sequence)
        .unwrap_or(0);
    let task_id = rt.resolve_approval(approval_id, answer)?;
    super::run::follow_from(rt, task_id, last, json).await
}

pub async fn approve(rt: &Arc<Runtime>, args: ApproveArgs) -> Result<ExitCode, CliError> {
    let edited = match &args.args {
        Some(text) => Some(
            serde_json::from_str::<serde_json::Value>(text)
                .map_err(|e| CliError::Usage(format!("--args is not valid JSON: {e}")))?,
        ),
        None => None,
    };
    let answer = super::run::answer(true, args.session_grant, edited, None);
    continue_after(rt, args.id, answer, args.json).await
}

pub async fn reject(rt: &Arc<Runtime>, args: RejectArgs) -> Result<ExitCode, CliError> {
    let answer = super::run::answer(false, false, None, Some(args.reason));
    continue_after(rt, args.id, answer, args.json).await
}

/// Asks on the terminal: y = approve, n = reject, a = allow for this session, e = edit.
pub fn ask(
    name: &str,
    arguments: &serde_json::Value,
    capability: Option<&str>,
    effect: &Effect,
    sandbox: Option<&str>,
) -> Result<ApprovalAnswer, CliError> {
    let mut err = std::io::stderr();
    let _ = writeln!(
        err,
        "\nThe agent wants to run {} {} ({})\n{}",
        visible(name),
        visible(&arguments.to_string()),
        visible(capability.unwrap_or("?")),
        describe_effect(effect)
    );
    // issue 14: how the command will be confined, in red when it will not be.
    if let Some(line) = sandbox {
        let _ = writeln!(
            err,
            "  {}",
            sandbox_line(line, std::io::IsTerminal::is_terminal(&err))
        );
    }
    let stdin = std::io::stdin();
    loop {
        let _ = write!(
            err,
            "Approve? [y]es / [n]o / [a]llow for this session / [e]dit: "
        );
        let _ = err.flush();
        let mut line = String::new();
        if stdin
            .lock()
            .read_line(&mut line)
            .map_err(|e| CliError::Other(e.to_string()))?
            == 0
        {
            return Err(CliError::Other(
                "no answer on the terminal; the approval stays pending".into(),
            ));
        }
        match line.trim() {
            "y" | "Y" | "yes" => return Ok(super::run::answer(true, false, None, None)),
            "a" | "A" => return Ok(super::run::answer(true, true, None, None)),
            "n" | "N" | "no" => {
                let _ = write!(err, "Reason: ");
                let _ = err.flush();
                let mut reason = String::new();
                let _ = stdin.lock().read_line(&mut reason);
                return Ok(super::run::answer(
                    false,
                    false,
                    None,
                    Some(reason.trim().to_owned()),
                ));
            }
            "e" | "E" => {
                let _ = write!(err, "New arguments (one line of JSON): ");
                let _ = err.flush();
                let mut text = String::new();
                let _ = stdin.lock().read_line(&mut text);
                match serde_json::from_str::<serde_json::Value>(text.trim()) {
                    Ok(v) if v.is_object() => {
                        return Ok(super::run::answer(true, false, Some(v), None))
                    }
                    _ => {
                        let _ = writeln!(err, "That is not a JSON object.");
                    }
                }
            }
            _ => {}
        }
    }
}
