use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;

use super::{default_workspace, CliError};
use pocketpilot_core::service::{ApprovalAnswer, NewTask, Runtime};
use pocketpilot_protocol::task::TaskStatus;
use pocketpilot_protocol::{visible, RuntimeEvent};

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The workspace folder the agent works in (default: the current folder).
    #[arg(long)]
    pub workspace: Option<PathBuf>,
    /// What the agent should do.
    #[arg(long)]
    pub goal: String,
    /// Continue in an existing session.
    #[arg(long)]
    pub session: Option<i64>,
    /// The task this one follows up.
    #[arg(long)]
    pub follow_up_of: Option<i64>,
    /// `scripted:FILE` plays model turns from a file; default: the configured model.
    #[arg(long)]
    pub provider: Option<String>,
    /// Print every event as a JSON line instead of the plain answer.
    #[arg(long)]
    pub json: bool,
    /// Grant a capability (e.g. fs:write) for this run; recorded as your decision.
    #[arg(long = "allow", value_name = "CAP")]
    pub allow: Vec<String>,
    /// MCP servers or tools this run may use (`server`, `server:tool`, `*`; repeatable;
    /// `none` for none). Default: every server configured for the workspace.
    #[arg(long = "mcp", value_name = "ENTRY")]
    pub mcp: Vec<String>,
}

pub async fn run(rt: &Arc<Runtime>, args: RunArgs) -> Result<ExitCode, CliError> {
    let workspace = match (&args.workspace, args.session) {
        (Some(w), _) => Some(w.clone()),
        (None, None) => default_workspace(),
        (None, Some(_)) => None,
    };
    let provider = super::absolute_provider(args.provider);
    let id = rt.submit(&NewTask {
        goal: args.goal,
        workspace,
        session_id: args.session,
        follow_up_of: args.follow_up_of,
        trigger: "cli".into(),
        provider,
        grants: args.allow,
        mcp: match args.mcp.as_slice() {
            [] => None,
            [only] if only == "none" => Some(Vec::new()),
            entries => Some(entries.to_vec()),
        },
    })?;
    let _ = writeln!(std::io::stderr(), "task {id}");
    follow_session(rt, id, args.json).await
}

/// Follows a task, then each run its session starts after it (queued follow-ups), until
/// the session is idle or waiting for a person. The exit code is the last run's.
pub async fn follow_session(
    rt: &Arc<Runtime>,
    first: i64,
    json: bool,
) -> Result<ExitCode, CliError> {
    follow_from(rt, first, 0, json).await
}

pub async fn follow_from(
    rt: &Arc<Runtime>,
    first: i64,
    after: i64,
    json: bool,
) -> Result<ExitCode, CliError> {
    let session = rt.task(first)?.session_id;
    let mut task = first;
    let mut after = after;
    loop {
        let code = follow(rt, task, after, json).await?;
        if rt.task(task)?.status.needs_person() {
            return Ok(code);
        }
        let next = rt
            .store
            .read(|c| pocketpilot_core::inbox::current_task(c, session))?
            .filter(|t| t.id != task);
        match next {
            Some(t) => {
                if !json {
                    let _ = writeln!(std::io::stderr(), "task {} (queued for this session)", t.id);
                }
                task = t.id;
                after = 0;
            }
            None => return Ok(code),
        }
    }
}

/// Streams a task's events until it ends or waits for an approval nobody here can give.
pub async fn follow(
    rt: &Arc<Runtime>,
    id: i64,
    after: i64,
    json: bool,
) -> Result<ExitCode, CliError> {
    let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let mut sub = rt.subscribe(id, after)?;
    let mut out = std::io::stdout();
    let mut err = std::io::stderr();
    let mut at_line_start = true;
    // Text shown for the current turn: a turn replayed from the store (it ended before we
    // subscribed) has no deltas, so its text is printed from its completion.
    let mut turn_shown = String::new();
    loop {
        let ev = tokio::select! {
            ev = sub.next() => ev,
            _ = tokio::signal::ctrl_c() => {
                let _ = rt.cancel(id);
                continue;
            }
        };
        let Some(ev) = ev else { break };
        let ev = ev?;
        if json {
            let _ = writeln!(out, "{}", serde_json::to_string(&ev).unwrap_or_default());
        }
        match &ev.event {
            RuntimeEvent::AssistantDelta { text } if !json => {
                let _ = write!(out, "{}", visible(text));
                let _ = out.flush();
                turn_shown.push_str(text);
                at_line_start = text.ends_with('\n');
            }
            RuntimeEvent::StreamReset { .. } if !json => {
                if !turn_shown.is_empty() {
                    let _ = writeln!(err, "\n[the answer was cut off and is being asked again]");
                }
                turn_shown.clear();
                at_line_start = true;
            }
            RuntimeEvent::ModelTurnCompleted { text, .. } if !json => {
                if turn_shown.is_empty() && !text.is_empty() {
                    let _ = write!(out, "{}", visible(text));
                    at_line_start = text.ends_with('\n');
                }
                if !at_line_start {
                    let _ = writeln!(out);
                    at_line_start = true;
                }
                turn_shown.clear();
            }
            RuntimeEvent::ToolCallStarted {
                name, arguments, ..
            } if !json => {
                let _ = writeln!(err, "→ {} {}", visible(name), visible(arguments));
            }
            RuntimeEvent::ToolCallCompleted { name, .. } if !json => {
                let _ = writeln!(err, "✓ {}", visible(name));
            }
            RuntimeEvent::ToolCallFailed { name, error, .. } if !json => {
                let _ = writeln!(err, "✗ {}: {}", visible(name), visible(error));
            }
            RuntimeEvent::ApprovalRequired {
                approval_id,
                name,
                arguments,
                capability,
                effect,
                sandbox,
                ..
            } => {
                if rt.task(id)?.status != TaskStatus::WaitingApproval {
                    continue;
                }
                let Some(approval_id) = *approval_id else {
                    return Err(CliError::Other(format!(
                        "task {id} asked for an approval that was not recorded"
                    )));
                };
                if !interactive {
                    let _ = writeln!(
                        err,
                        "task {id} is waiting for approval {approval_id}: {} {}\n  approve: pocketpilot approve {approval_id}\n  reject:  pocketpilot reject {approval_id} --reason TEXT",
                        visible(name),
                        visible(&arguments.to_string())
                    );
                    if let Some(line) = sandbox {
                        let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
                        let _ =
                            writeln!(err, "  {}", super::approvals::sandbox_line(line, terminal));
                    }
                    if !json {
                        let _ = writeln!(out, "approval {approval_id}");
                    }
                    return Ok(ExitCode::from(TaskStatus::WaitingApproval.exit_code()));
                }
                let answer = super::approvals::ask(
                    name,
                    arguments,
                    capability.as_deref(),
                    effect,
                    sandbox.as_deref(),
                )?;
                rt.resolve_approval(approval_id, answer)?;
            }
            RuntimeEvent::RunPaused { message, .. } => {
                if rt.task(id)?.status != TaskStatus::Paused {
                    continue;
                }
                let _ = writeln!(
                    err,
                    "task {id} paused: {message}\n  continue: pocketpilot raise {id} [--steps N | --seconds N | --tokens N | --usd X] [--steer TEXT]\n  stop:     pocketpilot stop {id}"
                );
                return Ok(ExitCode::from(TaskStatus::Paused.exit_code()));
            }
            _ => {}
        }
    }
    let task = rt.task(id)?;
    if !json {
        if !at_line_start {
            let _ = writeln!(out);
        }
        if task.status != TaskStatus::Completed {
            let _ = writeln!(
                err,
                "task {id} {}: {}",
                task.status,
                visible(task.error.as_deref().unwrap_or(""))
            );
        }
    }
    Ok(ExitCode::from(task.status.exit_code()))
}

pub fn answer(
    approve: bool,
    session_grant: bool,
    edited: Option<serde_json::Value>,
    note: Option<String>,
) -> ApprovalAnswer {
    ApprovalAnswer {
        approve,
        edited_arguments: edited,
        session_grant,
        note,
        by: "cli".into(),
    }
}
