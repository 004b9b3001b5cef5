//! `start.child`: the run in a real `pocketpilot` child process on the case's store,
//! killed with SIGKILL at given points and resumed by a new process each time — what a
//! crash does to the record (issue 19: cost figures survive kill -9).
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use pocketpilot_core::api::service::Runtime;
use pocketpilot_core::ops;
use tokio::process::{Child, Command};

use super::case::{expand_str, Case, ChildCommand, ChildRun, KillAt};
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
    let mut args: Vec<String> = match spec.command {
        ChildCommand::Run => vec![
            "run".into(),
            "--workspace".into(),
            workspace,
            "--goal".into(),
            case.goal.clone(),
        ],
        ChildCommand::Exec => vec![
            "exec".into(),
            case.goal.clone(),
            "--workspace".into(),
            workspace,
        ],
    };
    if let Some(p) = provider {
        args.extend(["--provider".into(), p.to_owned()]);
    }
    for g in &case.setup.grants {
        args.extend(["--allow".into(), g.to_string()]);
    }
    args.extend(spec.args.iter().map(|a| expand_str(a, &env.vars)));
    if spec.kills.is_empty() {
        let task = checked_once(program, env, &args, spec).await?;
        return match task {
            Some(t) => Ok(t),
            None => {
                first_task(&rt)?.ok_or_else(|| CaseError::Case("the child made no task".into()))
            }
        };
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
        if rt.call(ops::GetTask { id: task })?.status.is_terminal() {
            break;
        }
        spawn(program, env, &["resume".into(), task.to_string()])?
            .wait()
            .await?;
    }
    Ok(task)
}

/// One process to its end, its exit code and stdout checked against the case; `None`:
/// look the task up in the store.
async fn checked_once(
    program: &Path,
    env: &CaseEnv,
    args: &[String],
    spec: &ChildRun,
) -> Result<Option<i64>, CaseError> {
    let mut cmd = command(program, env, args);
    cmd.stdout(Stdio::piped());
    let out = cmd
        .output()
        .await
        .map_err(|e| CaseError::context(format!("cannot run {}", program.display()), e))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let code = out.status.code();
    if let Some(want) = spec.exit_code {
        if code != Some(want) {
            return Err(CaseError::Case(format!(
                "the child exited {code:?}, not {want}: {}",
                stdout.lines().last().unwrap_or_default()
            )));
        }
    }
    for want in &spec.stdout_contains {
        if !stdout.contains(want.as_str()) {
            return Err(CaseError::Case(format!(
                "the child's stdout lacks {want:?}: {stdout}"
            )));
        }
    }
    Ok(None)
}

fn spawn(program: &Path, env: &CaseEnv, args: &[String]) -> Result<Child, CaseError> {
    command(program, env, args)
        .spawn()
        .map_err(|e| CaseError::context(format!("cannot start {}", program.display()), e))
}

fn command(program: &Path, env: &CaseEnv, args: &[String]) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env("POCKETPILOT_DATA_DIR", &env.data)
        .env("HOME", &env.root)
        // The person's config (hooks) is the case's.
        .env("XDG_CONFIG_HOME", env.root.join(".config"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    cmd
}

/// The store's first task (the child's).
fn first_task(rt: &Arc<Runtime>) -> Result<Option<i64>, CaseError> {
    Ok(rt
        .call(ops::ListTasks { limit: 10_000 })?
        .into_iter()
        .map(|t| t.id)
        .min())
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
                .call(ops::TaskEvents { task_id: id })?
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
