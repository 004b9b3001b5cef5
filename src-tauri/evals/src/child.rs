//! `start.child`: the run in a real `pocketpilot` child process on the case's store,
//! killed with SIGKILL at given points and resumed by a new process each time — what a
//! crash does to the record (issue 19: cost figures survive kill -9).
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use pocketpilot_core::api::service::Runtime;
use tokio::process::{Child, Command};

use super::case::{Case, ChildRun, KillAt};
use super::runner::{CaseEnv, CaseError};

/// Resumes after the last kill before the run counts as stuck.
const MAX_RESUMES: usize = 5;

/// Plays the child run; returns its task.
pub(super) async fn play(
    case: &Case,
    program: Option<&Path>,
    env: &CaseEnv,
    provider: Option<&str>,
    spec: &ChildRun,
) -> Result<i64, CaseError> {
    let program = program.ok_or_else(|| {
        CaseError::Case(
            "a `start.child` case needs the pocketpilot program: run it with `pocketpilot eval`"
                .into(),
        )
    })?;
    let rt = env.rt()?;
    let workspace = env.workspace.display().to_string();
    let mut args: Vec<String> = vec![
        "run".into(),
        "--workspace".into(),
        workspace,
        "--goal".into(),
        case.goal.clone(),
    ];
    if let Some(p) = provider {
        args.extend(["--provider".into(), p.to_owned()]);
    }
    for g in &case.setup.grants {
        args.extend(["--allow".into(), g.to_string()]);
    }
    let mut child = spawn(program, env, &args)?;
    let mut task = None;
    for (i, kill) in spec.kills.iter().enumerate() {
        let Some(id) = until_recorded(&rt, &mut child, kill).await? else {
            env.note(format!(
                "kill {i}: the process ended before {} × {}",
                kill.count, kill.after
            ));
            break;
        };
        task = Some(id);
        *super::runner::lock(&env.first_task) = Some(id);
        // `Child::kill` is SIGKILL on Unix: no handler, no flush, no goodbye.
        child.kill().await?;
        child = spawn(program, env, &["resume".into(), id.to_string()])?;
    }
    child.wait().await?;
    let task = match task {
        Some(t) => t,
        None => first_task(&rt)?.ok_or_else(|| CaseError::Case("the child made no task".into()))?,
    };
    for _ in 0..MAX_RESUMES {
        if rt.task(task)?.status.is_terminal() {
            break;
        }
        spawn(program, env, &["resume".into(), task.to_string()])?
            .wait()
            .await?;
    }
    Ok(task)
}

fn spawn(program: &Path, env: &CaseEnv, args: &[String]) -> Result<Child, CaseError> {
    Command::new(program)
        .args(args)
        .env("POCKETPILOT_DATA_DIR", &env.data)
        .env("HOME", &env.root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| CaseError::context(format!("cannot start {}", program.display()), e))
}

/// The store's first task (the child's).
fn first_task(rt: &Arc<Runtime>) -> Result<Option<i64>, CaseError> {
    Ok(rt.tasks(10_000)?.into_iter().map(|t| t.id).min())
}

/// Until the child's task recorded `kill.count` events of `kill.after`: its id, or `None`
/// when the child exited first.
async fn until_recorded(
    rt: &Arc<Runtime>,
    child: &mut Child,
    kill: &KillAt,
) -> Result<Option<i64>, CaseError> {
    loop {
        if let Some(id) = first_task(rt)? {
            let seen = rt
                .events(id)?
                .iter()
                .filter(|e| e.kind() == kill.after)
                .count();
            if seen >= kill.count {
                return Ok(Some(id));
            }
        }
        if child.try_wait()?.is_some() {
            return Ok(None);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
