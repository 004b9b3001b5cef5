use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;

use pocketpilot_core::ops;
use pocketpilot_protocol::{has_hidden, visible, CommandRuleScope, Effect, KeepRules};

use super::escape::shown;
use super::{print_json, CliError};
use pocketpilot_core::api::service::{ApprovalAnswer, Runtime};

#[derive(Args, Debug)]
#[command(group = clap::ArgGroup::new("keeping").args(["always", "for_session"]).multiple(false))]
pub struct ApproveArgs {
    pub id: i64,
    /// Run the call with these arguments instead (a JSON object); they are checked again.
    #[arg(long = "args", value_name = "JSON")]
    pub args: Option<String>,
    /// Also allow this capability for the rest of the session.
    #[arg(long)]
    pub session_grant: bool,
    /// A command: also keep command rules for this workspace ("Always allow `cargo test *`
    /// in this workspace"): the rules the approval suggests, or those of `--rule`.
    #[arg(long, conflicts_with = "for_session")]
    pub always: bool,
    /// A command: also keep command rules for the rest of this session only.
    #[arg(long)]
    pub for_session: bool,
    /// The rule to keep with `--always` or `--for-session` (repeatable), instead of the
    /// suggested ones.
    #[arg(long = "rule", value_name = "RULE", requires = "keeping")]
    pub rules: Vec<String>,
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
    let pending = rt.call(ops::PendingApprovals {})?;
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
    let task = rt.call(ops::GetTask { id: a.task_id }).ok()?;
    let session = rt
        .call(ops::GetSession {
            session_id: task.session_id,
        })
        .ok()?;
    let sandbox = rt
        .call(ops::GetCommandSandbox {
            workspace: session.workspace.to_string(),
            grants: vec![],
        })
        .ok()?;
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
    (answer, keep): (ApprovalAnswer, Option<KeepRules>),
    json: bool,
) -> Result<ExitCode, CliError> {
    let before = rt.call(ops::GetApproval { id: approval_id })?;
    let last = rt
        .call(ops::TaskEvents {
            task_id: before.task_id,
        })?
        .last()
        .map(|e| e.sequence)
        .unwrap_or(0);
    if let Some(k) = &keep {
        let where_ = match k.scope {
            CommandRuleScope::Workspace => "in this workspace",
            CommandRuleScope::Session => "for this session",
        };
        let rules: Vec<String> = k
            .rules
            .iter()
            .map(|r| format!("`{}`", visible(r)))
            .collect();
        let _ = writeln!(std::io::stderr(), "keeping {} {where_}", rules.join(", "));
    }
    let task_id = rt.call(ops::ResolveApprovalKeeping {
        approval_id,
        answer,
        keep,
    })?;
    super::run::follow_from(rt, task_id, last, json).await
}

/// The command rules `approve --always` / `--for-session` keeps: the ones given, else the
/// ones the approval suggests (none suggested: refused, saying why).
fn kept_rules(rt: &Arc<Runtime>, args: &ApproveArgs) -> Result<Option<KeepRules>, CliError> {
    let scope = match (args.always, args.for_session) {
        (true, _) => CommandRuleScope::Workspace,
        (false, true) => CommandRuleScope::Session,
        (false, false) => return Ok(None),
    };
    let rules = if args.rules.is_empty() {
        let offer = rt
            .call(ops::GetCommandOffer {
                approval_id: args.id,
            })?
            .ok_or_else(|| {
                CliError::Usage(format!(
                    "approval {} is not for a command: no rule to keep",
                    args.id
                ))
            })?;
        if offer.suggested.is_empty() {
            return Err(CliError::Usage(format!(
                "no rule can cover this command ({}); approve it without one, or name one with --rule",
                offer.reason
            )));
        }
        offer.suggested
    } else {
        args.rules.clone()
    };
    Ok(Some(KeepRules { scope, rules }))
}

pub async fn approve(rt: &Arc<Runtime>, args: ApproveArgs) -> Result<ExitCode, CliError> {
    let edited = match &args.args {
        Some(text) => Some(
            serde_json::from_str::<serde_json::Value>(text)
                .map_err(|e| CliError::Usage(format!("--args is not valid JSON: {e}")))?,
        ),
        None => None,
    };
    let keep = kept_rules(rt, &args)?;
    let answer = super::run::answer(true, args.session_grant, edited, None);
    continue_after(rt, args.id, (answer, keep), args.json).await
}

pub async fn reject(rt: &Arc<Runtime>, args: RejectArgs) -> Result<ExitCode, CliError> {
    let answer = super::run::answer(false, false, None, Some(args.reason));
    continue_after(rt, args.id, (answer, None), args.json).await
}

/// What a call asks about: its tool, arguments, capability, effect, sandbox line and, for a
/// command, the part no rule covered and the rules approving it may keep.
pub struct Asked<'a> {
    pub name: &'a str,
    pub arguments: &'a serde_json::Value,
    pub capability: Option<&'a str>,
    pub effect: &'a Effect,
    pub sandbox: Option<&'a str>,
    pub command: Option<&'a pocketpilot_protocol::CommandAsk>,
}

/// Asks on the terminal: y = approve, n = reject, a = allow for this session, e = edit;
/// for a command a rule can cover, w = keep its rules for the workspace, s = for the session.
pub fn ask(asked: &Asked<'_>) -> Result<(ApprovalAnswer, Option<KeepRules>), CliError> {
    let offered: &[String] = asked.command.map_or(&[], |c| c.suggested.as_slice());
    if offered.is_empty() {
        return ask_plain(asked).map(|a| (a, None));
    }
    let rules: Vec<String> = offered
        .iter()
        .map(|r| format!("`{}`", visible(r)))
        .collect();
    let rules = rules.join(", ");
    let hint = format!(
        "  w = approve, and always allow {rules} in this workspace\n  s = approve, and allow {rules} for this session\n  a = approve, and allow every shell command for this session"
    );
    let keep = |scope| KeepRules {
        scope,
        rules: offered.to_vec(),
    };
    let approve = super::run::answer(true, false, None, None);
    ask_with(asked, &["w", "s"], Some(&hint), |letter| match letter {
        "w" | "W" => Some((approve.clone(), Some(keep(CommandRuleScope::Workspace)))),
        "s" | "S" => Some((approve.clone(), Some(keep(CommandRuleScope::Session)))),
        _ => None,
    })
}

fn ask_plain(asked: &Asked<'_>) -> Result<ApprovalAnswer, CliError> {
    ask_with(asked, &[], None, |_| None).map(|(a, _)| a)
}

/// The prompt loop: `extra` letters first, answered by `more`; then y, n, a, e.
fn ask_with(
    asked: &Asked<'_>,
    extra: &[&str],
    hint: Option<&str>,
    more: impl Fn(&str) -> Option<(ApprovalAnswer, Option<KeepRules>)>,
) -> Result<(ApprovalAnswer, Option<KeepRules>), CliError> {
    let mut err = std::io::stderr();
    describe_call(asked, &mut err);
    if let Some(hint) = hint {
        let _ = writeln!(err, "{hint}");
    }
    let letters: String = extra.iter().map(|l| format!(" / [{l}]")).collect();
    loop {
        let prompt =
            format!("Approve? [y]es / [n]o{letters} / [a]llow for this session / [e]dit: ");
        let Some(line) = read_answer(&mut err, &prompt)? else {
            return Err(CliError::Other(
                "no answer on the terminal; the approval stays pending".into(),
            ));
        };
        if let Some(found) = more(&line) {
            return Ok(found);
        }
        let answer = match line.as_str() {
            "y" | "Y" | "yes" => super::run::answer(true, false, None, None),
            "a" | "A" => super::run::answer(true, true, None, None),
            "n" | "N" | "no" => {
                let reason = read_answer(&mut err, "Reason: ")?.unwrap_or_default();
                super::run::answer(false, false, None, Some(reason))
            }
            "e" | "E" => {
                let text = read_answer(&mut err, "New arguments (one line of JSON): ")?;
                match serde_json::from_str::<serde_json::Value>(&text.unwrap_or_default()) {
                    Ok(v) if v.is_object() => super::run::answer(true, false, Some(v), None),
                    _ => {
                        let _ = writeln!(err, "That is not a JSON object.");
                        continue;
                    }
                }
            }
            _ => continue,
        };
        return Ok((answer, None));
    }
}

/// What the call would do, and how a command is confined (in red when it is not).
fn describe_call(asked: &Asked<'_>, err: &mut std::io::Stderr) {
    let _ = writeln!(
        err,
        "\nThe agent wants to run {} {} ({})\n{}",
        visible(asked.name),
        visible(&asked.arguments.to_string()),
        visible(asked.capability.unwrap_or("?")),
        describe_effect(asked.effect)
    );
    if let Some(line) = asked.sandbox {
        let _ = writeln!(
            err,
            "  {}",
            sandbox_line(line, std::io::IsTerminal::is_terminal(err))
        );
    }
}

/// One trimmed line typed after `prompt`; `None` at the end of input.
fn read_answer(err: &mut std::io::Stderr, prompt: &str) -> Result<Option<String>, CliError> {
    let _ = write!(err, "{prompt}");
    let _ = err.flush();
    let mut line = String::new();
    let n = std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| CliError::Other(e.to_string()))?;
    Ok((n > 0).then(|| line.trim().to_owned()))
}
