//! `pocketpilot plan show|approve|edit|reject TASK`, `plan mode SESSION on|off`, and what
//! `run --plan` does once its planning run ends: the plan shown, and on a terminal asked
//! about (approve / edit / reject); an approved plan's run followed with its checklist.
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Subcommand;

use super::{print_json, CliError};
use pocketpilot_core::api::service::Runtime;
use pocketpilot_core::ops;
use pocketpilot_protocol::task::TaskStatus;
use pocketpilot_protocol::{visible, Plan, PlanContent, PlanStatus, RunSource};

#[derive(Subcommand, Debug)]
pub enum PlanCommand {
    /// The plan a task made (or the approved plan it carries out), with its ticked steps.
    Show {
        task: i64,
        #[arg(long)]
        json: bool,
    },
    /// Approve a task's plan and carry it out here: writes to its files and its exact
    /// commands run without asking; anything else asks.
    Approve {
        task: i64,
        /// Approve this plan instead (JSON `{"steps", "files", "commands"}`; `-`: stdin).
        #[arg(long, value_name = "FILE")]
        file: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Replace a task's proposed plan (JSON `{"steps", "files", "commands"}`; `-`: stdin).
    Edit {
        task: i64,
        #[arg(long, value_name = "FILE")]
        file: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Reject a task's plan: nothing of it runs.
    Reject {
        task: i64,
        #[arg(long)]
        reason: Option<String>,
    },
    /// Whether every run of a session plans first (`on`) or acts (`off`); no value: show it.
    Mode {
        session: i64,
        #[arg(value_parser = ["on", "off"])]
        value: Option<String>,
    },
}

pub async fn plan(rt: &Arc<Runtime>, cmd: PlanCommand) -> Result<ExitCode, CliError> {
    match cmd {
        PlanCommand::Show { task, json } => {
            let plan = plan_of(rt, task)?;
            if json {
                print_json(&plan);
            } else {
                show(&plan, &mut std::io::stdout().lock());
            }
            Ok(ExitCode::SUCCESS)
        }
        PlanCommand::Approve { task, file, json } => {
            let edited = file.map(|f| read_plan(&f)).transpose()?;
            carry_out(rt, task, edited.as_ref(), json).await
        }
        PlanCommand::Edit { task, file, json } => {
            let plan = rt.call(ops::EditPlan {
                task_id: task,
                content: (read_plan(&file)?).clone(),
            })?;
            if json {
                print_json(&plan);
            } else {
                show(&plan, &mut std::io::stdout().lock());
            }
            Ok(ExitCode::SUCCESS)
        }
        PlanCommand::Reject { task, reason } => {
            rt.call(ops::RejectPlan {
                task_id: task,
                reason: reason.as_deref().map(|s| s.to_string()),
            })?;
            let _ = writeln!(
                std::io::stderr(),
                "the plan of task {task} is rejected: nothing of it runs"
            );
            Ok(ExitCode::SUCCESS)
        }
        PlanCommand::Mode { session, value } => {
            if let Some(v) = value {
                rt.call(ops::SetSessionPlanMode {
                    session_id: session,
                    on: v == "on",
                })?;
            }
            let on = rt.call(ops::GetSessionPlanMode {
                session_id: session,
            })?;
            let _ = writeln!(std::io::stdout(), "{}", if on { "on" } else { "off" });
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn plan_of(rt: &Arc<Runtime>, task: i64) -> Result<Plan, CliError> {
    rt.call(ops::PlanOfTask { task_id: task })?
        .ok_or_else(|| CliError::Usage(format!("task {task} has no plan")))
}

fn read_plan(file: &std::path::Path) -> Result<PlanContent, CliError> {
    let text = if file.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin())
    } else {
        std::fs::read_to_string(file)
    }
    .map_err(|e| CliError::Usage(format!("cannot read {}: {e}", file.display())))?;
    serde_json::from_str(&text).map_err(|e| {
        CliError::Usage(format!(
            "{} is not a plan ({{\"steps\": [...], \"files\": [...], \"commands\": [...]}}): {e}",
            file.display()
        ))
    })
}

/// The plan as a checklist, with its status.
pub fn show(plan: &Plan, out: &mut impl Write) {
    let _ = writeln!(
        out,
        "plan {} of task {} ({}{})",
        plan.id,
        plan.task_id,
        plan.status,
        if plan.edited { ", edited" } else { "" }
    );
    let _ = write!(out, "{}", visible(&plan.content.render(&plan.done)));
    if let Some(run) = plan.run_task_id {
        let _ = writeln!(out, "carried out by task {run}");
    }
}

/// Approves the plan and follows the run that carries it out, its steps ticking.
async fn carry_out(
    rt: &Arc<Runtime>,
    task: i64,
    edited: Option<&PlanContent>,
    json: bool,
) -> Result<ExitCode, CliError> {
    let run = rt.call(ops::ApprovePlan {
        task_id: task,
        edited: edited.cloned(),
        by: RunSource::Cli,
    })?;
    let _ = writeln!(
        std::io::stderr(),
        "task {run} carries out the plan of task {task}"
    );
    let code = super::run::follow_session(rt, run, json).await?;
    if !json {
        if let Some(plan) = rt.call(ops::PlanOfTask { task_id: run })? {
            show(&plan, &mut std::io::stderr());
        }
    }
    Ok(code)
}

/// After `run --plan`: the plan shown; on a terminal, approved, edited or rejected here;
/// without one, left proposed (exit 3) with the commands that answer it.
pub async fn after_planning(
    rt: &Arc<Runtime>,
    task: i64,
    code: ExitCode,
    json: bool,
) -> Result<ExitCode, CliError> {
    if rt.call(ops::GetTask { id: task })?.status != TaskStatus::Completed {
        return Ok(code);
    }
    let Some(plan) = rt.call(ops::PlanOfTask { task_id: task })? else {
        let _ = writeln!(std::io::stderr(), "task {task} ended without a plan");
        return Ok(code);
    };
    if plan.status != PlanStatus::Proposed {
        return Ok(code);
    }
    let mut err = std::io::stderr();
    show(&plan, &mut err);
    let interactive = std::io::stdin().is_terminal() && err.is_terminal();
    if !interactive || json {
        let _ = writeln!(
            err,
            "the plan waits for you:\n  approve: pocketpilot plan approve {task}\n  edit:    pocketpilot plan edit {task} --file PLAN.json\n  reject:  pocketpilot plan reject {task} [--reason TEXT]"
        );
        return Ok(ExitCode::from(TaskStatus::WaitingApproval.exit_code()));
    }
    match ask(&mut err)? {
        Answer::Approve(edited) => carry_out(rt, task, edited.as_ref(), json).await,
        Answer::Reject(reason) => {
            rt.call(ops::RejectPlan {
                task_id: task,
                reason: Some(reason.to_string()),
            })?;
            let _ = writeln!(err, "rejected: nothing of the plan runs");
            Ok(ExitCode::SUCCESS)
        }
    }
}

enum Answer {
    Approve(Option<PlanContent>),
    Reject(String),
}

fn ask(err: &mut std::io::Stderr) -> Result<Answer, CliError> {
    let stdin = std::io::stdin();
    let line = |err: &mut std::io::Stderr, prompt: &str| -> Result<String, CliError> {
        let _ = write!(err, "{prompt}");
        let _ = err.flush();
        let mut text = String::new();
        let n = stdin
            .lock()
            .read_line(&mut text)
            .map_err(|e| CliError::Other(e.to_string()))?;
        if n == 0 {
            return Err(CliError::Other(
                "no answer on the terminal; the plan stays proposed".into(),
            ));
        }
        Ok(text.trim().to_owned())
    };
    loop {
        match line(err, "Approve the plan? [y]es / [e]dit / [n]o: ")?.as_str() {
            "y" | "Y" | "yes" => return Ok(Answer::Approve(None)),
            "n" | "N" | "no" => return Ok(Answer::Reject(line(err, "Reason: ")?)),
            "e" | "E" => {
                let text = line(
                    err,
                    "The plan (one line of JSON: {\"steps\", \"files\", \"commands\"}): ",
                )?;
                match serde_json::from_str::<PlanContent>(&text) {
                    Ok(p) if p.problem().is_none() => return Ok(Answer::Approve(Some(p))),
                    Ok(p) => {
                        let _ = writeln!(err, "{}", p.problem().unwrap_or_default());
                    }
                    Err(e) => {
                        let _ = writeln!(err, "That is not a plan: {e}");
                    }
                }
            }
            _ => {}
        }
    }
}
