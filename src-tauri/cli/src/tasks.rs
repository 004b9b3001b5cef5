use super::escape::{shown, shown_block};
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use super::{print_json, CliError};
use pocketpilot_core::api::service::Runtime;
use pocketpilot_core::ops;
use pocketpilot_core::policy::cost::usd;

pub fn list(rt: &Arc<Runtime>, json: bool, limit: i64) -> Result<ExitCode, CliError> {
    let tasks = rt.call(ops::ListTasks { limit })?;
    if json {
        print_json(&tasks);
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    for t in tasks {
        let _ = writeln!(
            out,
            "{:>6}  {:<16} session {:<5} {}",
            t.id,
            t.status.as_str(),
            t.session_id,
            shown(t.goal.lines().next().unwrap_or_default())
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn show(rt: &Arc<Runtime>, id: i64, json: bool) -> Result<ExitCode, CliError> {
    let task = rt.call(ops::GetTask { id })?;
    let events = rt.call(ops::TaskEvents { task_id: id })?;
    let cost = rt.call(ops::GetTaskCost { task_id: id })?;
    if json {
        print_json(&serde_json::json!({ "task": task, "cost": cost, "events": events }));
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "task {}  {}", task.id, task.status);
    let _ = writeln!(out, "goal: {}", shown_block(&task.goal));
    if let Some(a) = &task.final_answer {
        let _ = writeln!(out, "final answer: {}", shown_block(a));
    }
    if let Some(e) = &task.error {
        let _ = writeln!(out, "error: {}", shown_block(e));
    }
    let _ = writeln!(
        out,
        "steps: {}  tokens: {} prompt / {} completion",
        task.step_count, task.prompt_tokens, task.completion_tokens
    );
    if let Some(p) = &task.pause {
        let _ = writeln!(out, "paused ({}): {}", p.reason, shown(&p.message));
    }
    let turns: Vec<String> = cost
        .turns
        .iter()
        .map(|t| t.cost_usd.map(usd).unwrap_or_else(|| "?".into()))
        .collect();
    let _ = writeln!(
        out,
        "cost: {}{} this task (turns: {}), {} this session",
        usd(cost.task.cost_usd),
        super::budget::unpriced(cost.task.unpriced_turns),
        if turns.is_empty() {
            "none".into()
        } else {
            turns.join(" ")
        },
        usd(cost.session.cost_usd)
    );
    for e in events {
        let _ = writeln!(
            out,
            "{:>4} {} {} {}",
            e.sequence,
            e.at,
            e.kind(),
            shown(&e.payload().to_string())
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn cancel(rt: &Arc<Runtime>, id: i64) -> Result<ExitCode, CliError> {
    rt.call(ops::CancelTask { task_id: id })?;
    // The worker (here or in another process) records the cancellation within a moment:
    // followed as it commits; a worker that does not answer in 2 s is reported as it is.
    let _ = tokio::time::timeout(
        Duration::from_secs(2),
        rt.call(ops::WaitSettled { task_id: id }),
    )
    .await;
    let _ = writeln!(
        std::io::stdout(),
        "task {id} {}",
        rt.call(ops::GetTask { id })?.status
    );
    Ok(ExitCode::SUCCESS)
}

/// `session delete`: on a terminal, asks (naming the session) unless `yes`; without one,
/// only with `yes`, so a script never deletes by accident.
pub fn delete_session(rt: &Arc<Runtime>, session: i64, yes: bool) -> Result<ExitCode, CliError> {
    use std::io::{BufRead, IsTerminal};
    let s = rt.call(ops::GetSession {
        session_id: session,
    })?;
    if !yes {
        if !std::io::stdin().is_terminal() {
            return Err(CliError::Usage(format!(
                "deleting session {session} cannot be undone; not on a terminal, so pass --yes to confirm"
            )));
        }
        let tasks = rt
            .call(ops::SessionTasks {
                session_id: session,
            })?
            .len();
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "Delete session {} \"{}\" ({}, {tasks} task{})? This cannot be undone. [y/N] ",
            s.id,
            shown(&s.title),
            shown(&s.workspace),
            if tasks == 1 { "" } else { "s" },
        );
        let _ = err.flush();
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .map_err(|e| CliError::Other(format!("cannot read the answer: {e}")))?;
        if !matches!(line.trim(), "y" | "Y" | "yes") {
            let _ = writeln!(err, "Kept session {session}.");
            return Ok(ExitCode::SUCCESS);
        }
    }
    let d = rt.call(ops::DeleteSession {
        session_id: session,
    })?;
    let _ = writeln!(
        std::io::stdout(),
        "deleted session {} \"{}\" ({} task{})",
        d.session.id,
        shown(&d.session.title),
        d.tasks,
        if d.tasks == 1 { "" } else { "s" },
    );
    Ok(ExitCode::SUCCESS)
}

pub fn sessions(rt: &Arc<Runtime>, json: bool) -> Result<ExitCode, CliError> {
    let sessions = rt.call(ops::ListSessions {})?;
    if json {
        print_json(&sessions);
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    for s in sessions {
        let _ = writeln!(
            out,
            "{:>5}  {}  ({})",
            s.id,
            shown(&s.title),
            shown(&s.workspace)
        );
    }
    Ok(ExitCode::SUCCESS)
}
