use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;

use super::{default_workspace, CliError};
use pocketpilot_core::api::service::{ApprovalAnswer, NewTask, Runtime};
use pocketpilot_core::ops;
use pocketpilot_protocol::task::TaskStatus;
use pocketpilot_protocol::{visible, Capability, PauseReason, RunSource, RuntimeEvent};

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
    pub allow: Vec<Capability>,
    /// MCP servers or tools this run may use (`server`, `server:tool`, `*`; repeatable;
    /// `none` for none). Default: every server configured for the workspace.
    #[arg(long = "mcp", value_name = "ENTRY")]
    pub mcp: Vec<String>,
    /// Plan mode: the agent only reads and ends with a plan, which you approve, edit or
    /// reject before anything is written or run.
    #[arg(long)]
    pub plan: bool,
}

pub async fn run(rt: &Arc<Runtime>, args: RunArgs) -> Result<ExitCode, CliError> {
    let workspace = match (&args.workspace, args.session) {
        (Some(w), _) => Some(w.clone()),
        (None, None) => default_workspace(),
        (None, Some(_)) => None,
    };
    let provider = super::absolute_provider(args.provider);
    let new = NewTask {
        goal: args.goal,
        workspace,
        session_id: args.session,
        follow_up_of: args.follow_up_of,
        trigger: RunSource::Cli,
        provider,
        grants: args.allow,
        mcp: match args.mcp.as_slice() {
            [] => None,
            [only] if only == "none" => Some(Vec::new()),
            entries => Some(entries.to_vec()),
        },
    };
    if args.plan {
        let id = rt.call(ops::SubmitPlanning { new })?;
        let _ = writeln!(std::io::stderr(), "task {id} (plan mode)");
        let code = follow_with(rt, id, 0, &FollowOptions::run(args.json)).await?;
        return super::plan::after_planning(rt, id, code, args.json).await;
    }
    let id = rt.call(ops::SubmitTask { new })?;
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
    follow_session_with(rt, first, after, &FollowOptions::run(json)).await
}

/// How a task is followed: what is printed, and what happens when it asks a person.
#[derive(Debug, Clone, Copy)]
pub struct FollowOptions {
    /// Every event as a JSON line on stdout.
    pub json: bool,
    /// The streamed answer on stdout (when not `json`). Off when the caller prints the
    /// answer itself once it was checked.
    pub answer_on_stdout: bool,
    pub approvals: OnApproval,
}

impl FollowOptions {
    /// `run`'s way: the answer on stdout, approvals asked on a terminal.
    pub fn run(json: bool) -> Self {
        Self {
            json,
            answer_on_stdout: true,
            approvals: OnApproval::AskOnTerminal,
        }
    }
}

/// What following does when the run waits for an approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnApproval {
    /// Ask inline when a person is at the terminal, else leave it pending and return.
    AskOnTerminal,
    /// Never ask here: say how to answer and keep following until someone answers
    /// (the window, `pocketpilot approve`).
    Wait,
    /// Never ask here: say how to answer and return at once; the approval stays pending.
    Fail,
}

/// [`follow_from`] with explicit options.
pub async fn follow_session_with(
    rt: &Arc<Runtime>,
    first: i64,
    after: i64,
    opts: &FollowOptions,
) -> Result<ExitCode, CliError> {
    let json = opts.json;
    let session = rt.call(ops::GetTask { id: first })?.session_id;
    let mut task = first;
    let mut after = after;
    loop {
        let code = follow_with(rt, task, after, opts).await?;
        if rt.call(ops::GetTask { id: task })?.status.needs_person() {
            return Ok(code);
        }
        let next = rt
            .call(ops::OpenTaskOfSession {
                session_id: session,
            })?
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
pub async fn follow_with(
    rt: &Arc<Runtime>,
    id: i64,
    after: i64,
    opts: &FollowOptions,
) -> Result<ExitCode, CliError> {
    let json = opts.json;
    let mut sub = rt.call(ops::SubscribeTask {
        task_id: id,
        after_sequence: after,
    })?;
    let mut following = Following {
        rt,
        id,
        json,
        answer_on_stdout: opts.answer_on_stdout,
        approvals: opts.approvals,
        told: None,
        interactive: opts.approvals == OnApproval::AskOnTerminal
            && std::io::stdin().is_terminal()
            && std::io::stderr().is_terminal(),
        out: std::io::stdout(),
        err: std::io::stderr(),
        at_line_start: true,
        turn_shown: String::new(),
    };
    loop {
        let ev = tokio::select! {
            ev = sub.next() => ev,
            _ = tokio::signal::ctrl_c() => {
                let _ = rt.call(ops::CancelTask { task_id: id });
                continue;
            }
        };
        let Some(ev) = ev else { break };
        let ev = ev?;
        if json {
            let _ = writeln!(
                following.out,
                "{}",
                serde_json::to_string(&ev).unwrap_or_default()
            );
        } else {
            following.show(&ev.event);
        }
        if let Some(code) = following.answer(&ev.event)? {
            return Ok(code);
        }
    }
    following.ended()
}

/// One task followed on the terminal: its answer on stdout, its tool calls and what it
/// waits for on stderr (or every event as a JSON line on stdout).
struct Following<'a> {
    rt: &'a Arc<Runtime>,
    id: i64,
    json: bool,
    answer_on_stdout: bool,
    approvals: OnApproval,
    /// The approval already said to be waiting (an event replayed after a lag says it again).
    told: Option<i64>,
    /// A person is at the terminal to answer approvals.
    interactive: bool,
    out: std::io::Stdout,
    err: std::io::Stderr,
    at_line_start: bool,
    /// Text shown for the current turn: a turn replayed from the store (it ended before
    /// we subscribed) has no deltas, so its text is printed from its completion.
    turn_shown: String,
}

impl Following<'_> {
    /// The event as text, when it is one the person reads.
    fn show(&mut self, event: &RuntimeEvent) {
        let (out, err) = (&mut self.out, &mut self.err);
        match event {
            RuntimeEvent::AssistantDelta { text } => {
                if self.answer_on_stdout {
                    let _ = write!(out, "{}", visible(text));
                    let _ = out.flush();
                    self.at_line_start = text.ends_with('\n');
                }
                self.turn_shown.push_str(text);
            }
            RuntimeEvent::StreamReset { .. } => {
                if !self.turn_shown.is_empty() {
                    let _ = writeln!(err, "\n[the answer was cut off and is being asked again]");
                }
                self.turn_shown.clear();
                self.at_line_start = true;
            }
            RuntimeEvent::ModelTurnCompleted { text, .. } => {
                if self.turn_shown.is_empty() && !text.is_empty() && self.answer_on_stdout {
                    let _ = write!(out, "{}", visible(text));
                    self.at_line_start = text.ends_with('\n');
                }
                if !self.at_line_start {
                    let _ = writeln!(out);
                    self.at_line_start = true;
                }
                self.turn_shown.clear();
            }
            RuntimeEvent::ToolCallStarted {
                name, arguments, ..
            } => {
                let _ = writeln!(err, "→ {} {}", visible(name), visible(arguments));
            }
            RuntimeEvent::ToolCallCompleted { name, .. } => {
                let _ = writeln!(err, "✓ {}", visible(name));
            }
            RuntimeEvent::ToolCallFailed { name, error, .. } => {
                let _ = writeln!(err, "✗ {}: {}", visible(name), visible(error));
            }
            RuntimeEvent::PlanStepDone { plan_id, step } => {
                let text = self
                    .rt
                    .call(ops::GetPlan { plan_id: *plan_id })
                    .ok()
                    .and_then(|p| {
                        let i = (*step as usize).checked_sub(1)?;
                        p.content.steps.get(i).cloned()
                    })
                    .unwrap_or_default();
                let _ = writeln!(err, "[x] {step}. {}", visible(&text));
            }
            _ => {}
        }
    }

    /// What the task waits for, answered here when a person is at the terminal; else the
    /// exit code saying what it waits for, and how to answer.
    fn answer(&mut self, event: &RuntimeEvent) -> Result<Option<ExitCode>, CliError> {
        let id = self.id;
        match event {
            RuntimeEvent::ApprovalRequired {
                approval_id,
                name,
                arguments,
                capability,
                effect,
                sandbox,
                command,
                ..
            } => {
                if self.rt.call(ops::GetTask { id })?.status != TaskStatus::WaitingApproval {
                    return Ok(None);
                }
                let Some(approval_id) = *approval_id else {
                    return Err(CliError::Other(format!(
                        "task {id} asked for an approval that was not recorded"
                    )));
                };
                if !self.interactive {
                    if self.told != Some(approval_id) {
                        self.waiting(approval_id, name, arguments, sandbox.as_deref());
                        self.told = Some(approval_id);
                    }
                    if self.approvals == OnApproval::Wait {
                        return Ok(None);
                    }
                    return Ok(Some(ExitCode::from(
                        TaskStatus::WaitingApproval.exit_code(),
                    )));
                }
                let (answer, keep) = super::approvals::ask(&super::approvals::Asked {
                    name,
                    arguments,
                    capability: capability.as_deref(),
                    effect,
                    sandbox: sandbox.as_deref(),
                    command: command.as_ref(),
                })?;
                self.rt.call(ops::ResolveApprovalKeeping {
                    approval_id,
                    answer,
                    keep,
                })?;
                Ok(None)
            }
            RuntimeEvent::RunPaused {
                message, reason, ..
            } => {
                if self.rt.call(ops::GetTask { id })?.status != TaskStatus::Paused {
                    return Ok(None);
                }
                let how = match reason {
                    PauseReason::DiskFull => format!(
                        "free some space on the disk of the data folder, then: pocketpilot raise {id}"
                    ),
                    PauseReason::Budget | PauseReason::Repetition => format!(
                        "pocketpilot raise {id} [--steps N | --seconds N | --tokens N | --usd X] [--steer TEXT]"
                    ),
                };
                let _ = writeln!(
                    self.err,
                    "task {id} paused: {message}\n  continue: {how}\n  stop:     pocketpilot stop {id}"
                );
                Ok(Some(ExitCode::from(TaskStatus::Paused.exit_code())))
            }
            _ => Ok(None),
        }
    }

    /// How to answer an approval from another terminal.
    fn waiting(
        &mut self,
        approval_id: i64,
        name: &str,
        arguments: &serde_json::Value,
        sandbox: Option<&str>,
    ) {
        let id = self.id;
        let _ = writeln!(
            self.err,
            "task {id} is waiting for approval {approval_id}: {} {}\n  approve: pocketpilot approve {approval_id}\n  reject:  pocketpilot reject {approval_id} --reason TEXT",
            visible(name),
            visible(&arguments.to_string())
        );
        if let Some(line) = sandbox {
            let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
            let _ = writeln!(
                self.err,
                "  {}",
                super::approvals::sandbox_line(line, terminal)
            );
        }
        if !self.json && self.answer_on_stdout {
            let _ = writeln!(self.out, "approval {approval_id}");
        }
    }

    /// The task's end: the exit code of its status, and why when it did not complete.
    fn ended(mut self) -> Result<ExitCode, CliError> {
        let id = self.id;
        let task = self.rt.call(ops::GetTask { id })?;
        if !self.json {
            if !self.at_line_start {
                let _ = writeln!(self.out);
            }
            if task.status != TaskStatus::Completed {
                let _ = writeln!(
                    self.err,
                    "task {id} {}: {}",
                    task.status,
                    visible(task.error.as_deref().unwrap_or(""))
                );
            }
        }
        Ok(ExitCode::from(task.status.exit_code()))
    }
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
