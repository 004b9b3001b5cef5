//! Runs cases: each in its own temporary data folder, workspace and `{outside}` folder,
//! through a real `Runtime`. The runner plays the person: it answers approvals as the case
//! says, says things to the session while it works, restarts the runtime.
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use pocketpilot_core::ops;
use pocketpilot_model::ToolCall;
use pocketpilot_tools::Registry;
use serde::Serialize;

use super::case::{expand, expand_str, Action, Case, Crash, RewindStep, Setup, Start, UndoStep};
use super::score::{self, Snapshot};
use pocketpilot_core::api::service::{ApprovalAnswer, NewTask, Runtime};
use pocketpilot_core::config::{Limits, ProviderSettings};
use pocketpilot_core::engine::inbox::{Say, Submit};
use pocketpilot_protocol::event::{EventKind, RuntimeEvent};
use pocketpilot_protocol::task::{RunSource, TaskStatus};
use pocketpilot_protocol::Boundary;

#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Play the goals against the configured model instead of the scripts.
    pub real: bool,
    /// Cases run at once.
    pub jobs: usize,
    /// The secret no case may leak (see `install_canary`); `None`: not checked.
    pub secret: Option<String>,
    /// With `real`: the provider settings copied into each case's store.
    pub provider: Option<ProviderSettings>,
    /// The `pocketpilot` program, for cases that run it as a child process
    /// (`start.child`); the CLI passes itself.
    pub program: Option<PathBuf>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    pub name: String,
    pub passed: bool,
    /// The first task's status when the case ended.
    pub status: Option<String>,
    pub seconds: f64,
    pub failures: Vec<String>,
}

/// Runs `cases` with at most `opts.jobs` at once; results in case order.
pub async fn run_suite(cases: &[Case], opts: &RunOptions) -> Vec<CaseResult> {
    futures::stream::iter(cases.iter().map(|c| run_case(c, opts)))
        .buffered(opts.jobs.max(1))
        .collect()
        .await
}

/// One case's folders and runtime.
pub(super) struct CaseEnv {
    _dir: tempfile::TempDir,
    _http: super::http::Servers,
    /// The case's temporary folder (the child processes' home).
    pub root: PathBuf,
    pub data: PathBuf,
    pub workspace: PathBuf,
    pub outside: PathBuf,
    pub script: PathBuf,
    pub vars: Vec<(&'static str, String)>,
    rt: Mutex<Option<Arc<Runtime>>>,
    pub(super) first_task: Mutex<Option<i64>>,
    /// The webhook listener and schedule runner, when the case has any.
    triggers: tokio::sync::OnceCell<Option<super::triggers::Triggers>>,
    /// Problems met while playing (an inbox step that got the wrong answer, …).
    notes: Mutex<Vec<String>>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl CaseEnv {
    pub fn rt(&self) -> Result<Arc<Runtime>, CaseError> {
        lock(&self.rt)
            .clone()
            .ok_or_else(|| CaseError::Case("the runtime is closed".to_owned()))
    }
    pub fn first_task(&self) -> Option<i64> {
        *lock(&self.first_task)
    }
    pub(super) fn note(&self, s: String) {
        lock(&self.notes).push(s);
    }
}

pub async fn run_case(case: &Case, opts: &RunOptions) -> CaseResult {
    let started = Instant::now();
    let limit = Duration::from_secs(
        case.timeout_secs
            .unwrap_or(if opts.real { 300 } else { 30 }),
    );
    let mut failures = Vec::new();
    let mut status = None;
    match prepare(case, opts) {
        Err(e) => failures.push(format!("setup: {e}")),
        Ok((env, before)) => {
            match tokio::time::timeout(limit, play(case, opts, &env)).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => failures.push(e.to_string()),
                Err(_) => failures.push(format!("did not settle within {} s", limit.as_secs())),
            }
            failures.extend(lock(&env.notes).drain(..));
            match env.rt() {
                Ok(rt) => {
                    if let Some(id) = env.first_task() {
                        status = rt
                            .call(ops::GetTask { id })
                            .ok()
                            .map(|t| t.status.as_str().to_owned());
                    }
                    failures.extend(score::check(
                        case,
                        &env,
                        &rt,
                        &before,
                        opts.secret.as_deref(),
                    ));
                    stop_everything(&rt);
                    if let Some(Some(t)) = env.triggers.get() {
                        t.shutdown().await;
                    }
                }
                Err(e) => failures.push(e.to_string()),
            }
            let rt = lock(&env.rt).take();
            if let Some(rt) = rt {
                close(rt).await;
            }
        }
    }
    CaseResult {
        name: case.name.clone(),
        passed: failures.is_empty(),
        status,
        seconds: started.elapsed().as_secs_f64(),
        failures,
    }
}

/// Folders, files, settings; returns the environment and the snapshots to compare with.
fn prepare(case: &Case, opts: &RunOptions) -> Result<(CaseEnv, Snapshot), CaseError> {
    let dir = tempfile::Builder::new()
        .prefix("pocketpilot-eval-")
        .tempdir()
        .map_err(|e| CaseError::context("cannot make a temp folder", e))?;
    // Canonical: on macOS the temp dir sits behind a symlink; the guard sees real paths.
    let root = std::fs::canonicalize(dir.path())?;
    let workspace = root.join("workspace");
    let outside = root.join("outside");
    let data = if case.setup.data_in_workspace {
        workspace.join(".pocketpilot-data")
    } else {
        root.join("data")
    };
    for d in [&workspace, &outside] {
        mkdir(d)?;
    }
    let mut vars: Vec<(&'static str, String)> = vec![
        ("workspace", workspace.display().to_string()),
        ("outside", outside.display().to_string()),
        ("data", data.display().to_string()),
    ];
    let setup = &case.setup;
    let http = super::http::start(&setup.http_servers, &mut vars)?;
    lay_out(setup, &workspace, &outside, &vars)?;
    if let Some(hooks) = &setup.person_hooks {
        let mut hooks = hooks.clone();
        expand(&mut hooks, &vars);
        write(&person_hooks_file(&root), &hooks.to_string())?;
    }
    let before = Snapshot {
        workspace: score::snapshot(&workspace, Some(&data)),
        outside: score::snapshot(&outside, None),
    };
    // The person's config is the case's (its own HOME), never the evaluating person's.
    let rt = Runtime::open_with_config(&data, Some(person_hooks_file(&root)))?;
    configure(&rt, setup, opts, &workspace, &vars)?;
    let script = root.join("script.json");
    let mut body = case.script.clone();
    expand(&mut body, &vars);
    write(&script, &body.to_string())?;
    let env = CaseEnv {
        _dir: dir,
        _http: http,
        root,
        data,
        workspace,
        outside,
        script,
        vars,
        rt: Mutex::new(Some(rt)),
        first_task: Mutex::new(None),
        triggers: tokio::sync::OnceCell::new(),
        notes: Mutex::new(Vec::new()),
    };
    Ok((env, before))
}

/// The case's folders, files and symlinks, in the workspace and outside it.
fn lay_out(
    setup: &Setup,
    workspace: &Path,
    outside: &Path,
    vars: &[(&str, String)],
) -> Result<(), CaseError> {
    for d in &setup.dirs {
        mkdir(&inside(workspace, d)?)?;
    }
    for (rel, content) in &setup.files {
        write(&inside(workspace, rel)?, content)?;
    }
    for (rel, content) in &setup.outside_files {
        write(&inside(outside, rel)?, content)?;
    }
    for (rel, target) in &setup.symlinks {
        let link = inside(workspace, rel)?;
        if let Some(parent) = link.parent() {
            mkdir(parent)?;
        }
        std::os::unix::fs::symlink(expand_str(target, vars), &link)
            .map_err(|e| CaseError::context(format!("cannot make the symlink {rel}"), e))?;
    }
    Ok(())
}

/// The case's settings in its runtime's store: limits, prices, rules, memories, MCP
/// servers and the model's server.
fn configure(
    rt: &Arc<Runtime>,
    setup: &Setup,
    opts: &RunOptions,
    workspace: &Path,
    vars: &[(&str, String)],
) -> Result<(), CaseError> {
    set_limits(rt, setup)?;
    if let Some(prices) = &setup.prices {
        let prices: pocketpilot_core::policy::cost::Prices = serde_json::from_value(prices.clone())
            .map_err(|e| CaseError::context("setup.prices", e))?;
        rt.call(ops::SetPrices {
            prices: prices.clone(),
        })
        .map_err(|e| CaseError::context("setup.prices", e))?;
    }
    if let Some(rules) = &setup.policy {
        rt.call(ops::SetPolicyRules {
            workspace: workspace.display().to_string().to_string(),
            rules: rules.clone(),
        })?;
    }
    for r in &setup.command_rules {
        let kind = if r.deny {
            pocketpilot_protocol::CommandRuleKind::Deny
        } else {
            pocketpilot_protocol::CommandRuleKind::Allow
        };
        rt.call(ops::AddCommandRule {
            workspace: workspace.display().to_string().to_string(),
            kind,
            rule: r.rule.to_string(),
        })?;
    }
    for text in &setup.memories {
        rt.call(ops::AddMemory {
            scope: pocketpilot_protocol::MemoryScope::Global,
            workspace: None,
            text: text.to_string(),
        })?;
    }
    add_mcp_servers(rt, setup, workspace, vars)?;
    if setup.hooks_consent {
        rt.call(ops::ConsentHooks {
            workspace: workspace.display().to_string().to_string(),
            hash: None,
        })
        .map_err(|e| CaseError::context("setup.hooks_consent", e))?;
    }
    if let (true, Some(p)) = (opts.real, &opts.provider) {
        rt.call(ops::SetProviderSettings {
            settings: p.clone(),
        })?;
    }
    if let Some(settings) = &setup.model_server {
        let mut settings = settings.clone();
        expand(&mut settings, vars);
        let settings: pocketpilot_core::config::ProviderSettings = serde_json::from_value(settings)
            .map_err(|e| CaseError::context("setup.model_server", e))?;
        rt.call(ops::SetProviderSettings {
            settings: settings.clone(),
        })?;
    }
    Ok(())
}

/// The default limits with the case's own on top.
fn set_limits(rt: &Arc<Runtime>, setup: &Setup) -> Result<(), CaseError> {
    let mut limits = serde_json::to_value(Limits::default())?;
    if let (Some(serde_json::Value::Object(patch)), Some(obj)) =
        (&setup.limits, limits.as_object_mut())
    {
        for (k, v) in patch {
            obj.insert(k.clone(), v.clone());
        }
    }
    let limits: Limits =
        serde_json::from_value(limits).map_err(|e| CaseError::context("setup.limits", e))?;
    rt.call(ops::SetLimits { limits })?;
    Ok(())
}

fn add_mcp_servers(
    rt: &Arc<Runtime>,
    setup: &Setup,
    workspace: &Path,
    vars: &[(&str, String)],
) -> Result<(), CaseError> {
    for server in &setup.mcp_servers {
        let mut server = server.clone();
        expand(&mut server, vars);
        let config: pocketpilot_mcp::McpServerConfig = serde_json::from_value(server)
            .map_err(|e| CaseError::context("setup.mcp_servers", e))?;
        rt.call(ops::AddMcpServerConfig {
            workspace: Some(workspace.display().to_string()),
            config,
        })
        .map_err(|e| CaseError::context("setup.mcp_servers", e))?;
    }
    Ok(())
}

fn inside(root: &Path, rel: &str) -> Result<PathBuf, CaseError> {
    if Path::new(rel).is_absolute() || rel.split('/').any(|c| c == "..") {
        return Err(CaseError::Case(format!(
            "setup path `{rel}` must be relative, without `..`"
        )));
    }
    Ok(root.join(rel))
}

fn mkdir(p: &Path) -> Result<(), CaseError> {
    std::fs::create_dir_all(p)
        .map_err(|e| CaseError::context(format!("cannot make {}", p.display()), e))
}

fn write(p: &Path, content: &str) -> Result<(), CaseError> {
    if let Some(parent) = p.parent() {
        mkdir(parent)?;
    }
    std::fs::write(p, content)
        .map_err(|e| CaseError::context(format!("cannot write {}", p.display()), e))
}

/// Starts the case's first run (a person's submission, a crash and resume, a trigger, a
/// child process) and returns its task.
async fn start_first(
    case: &Case,
    opts: &RunOptions,
    env: &CaseEnv,
    new: &NewTask,
    provider: Option<&str>,
) -> Result<i64, CaseError> {
    let rt = env.rt()?;
    let triggers = env
        .triggers
        .get_or_try_init(|| super::triggers::start(case, &rt, env, provider))
        .await?
        .as_ref();
    let id = match (&case.start, &case.crash, triggers) {
        (Some(_), Some(_), _) => {
            return Err(CaseError::Case(
                "`start` and `crash` exclude each other".into(),
            ))
        }
        (Some(Start::Webhook { requests }), None, Some(t)) => {
            super::triggers::send_requests(case, env, t, requests).await?
        }
        (Some(Start::Schedule(s)), None, Some(t)) => {
            super::triggers::play_schedule(env, t, s).await?
        }
        (Some(Start::Webhook { .. } | Start::Schedule(_)), None, None) => {
            return Err(CaseError::Case(
                "`start.webhook` needs `setup.webhooks`".into(),
            ))
        }
        (Some(Start::Child(spec)), None, _) => {
            drop(rt);
            super::child::play(case, opts.program.as_deref(), env, provider, spec).await?
        }
        (None, Some(crash), _) => {
            let id = rt
                .call(ops::CreateTask { new: new.clone() })
                .map_err(|e| CaseError::context("create", e))?;
            *lock(&env.first_task) = Some(id);
            record_crashed_turn(&rt, id, crash, provider.unwrap_or("settings"), &env.vars)?;
            drop(rt);
            let rt = restart(env).await?;
            rt.call(ops::ResumeAll {})
                .map_err(|e| CaseError::context("resume_all", e))?;
            id
        }
        (None, None, _) if case.plan.is_some() => rt
            .call(ops::SubmitPlanning { new: new.clone() })
            .map_err(|e| CaseError::context("submit in plan mode", e))?,
        (None, None, _) => rt
            .call(ops::SubmitTask { new: new.clone() })
            .map_err(|e| CaseError::context("submit", e))?,
    };
    *lock(&env.first_task) = Some(id);
    Ok(id)
}

/// Plays the case: start (or crash and resume), inbox steps, approvals, until settled.
async fn play(case: &Case, opts: &RunOptions, env: &CaseEnv) -> Result<(), CaseError> {
    let scripted = !opts.real && case.setup.model_server.is_none();
    let provider =
        scripted.then(|| pocketpilot_model::ProviderSpec::Scripted(env.script.clone()).to_string());
    let new = NewTask {
        goal: case.goal.clone(),
        workspace: Some(env.workspace.clone()),
        trigger: RunSource::Eval,
        provider: provider.clone(),
        grants: case.setup.grants.clone(),
        ..Default::default()
    };
    let task = start_first(case, opts, env, &new, provider.as_deref()).await?;
    let session = env.rt()?.call(ops::GetTask { id: task })?.session_id;
    let rt = env.rt()?;
    let modes = (case.setup.steering_mode, case.setup.follow_up_mode);
    if modes.0.is_some() || modes.1.is_some() {
        rt.call(ops::SetSessionModes {
            session_id: session,
            steering: modes.0,
            follow_up: modes.1,
        })
        .map_err(|e| CaseError::context("session modes", e))?;
    }
    for step in &case.inbox {
        if let Some(kind) = &step.after {
            until_event(&rt, task, *kind).await?;
        }
        if let Some(hook) = &step.via_webhook {
            say_via_webhook(env, session, hook, step).await?;
            continue;
        }
        let submit = Submit {
            session_id: session,
            say: Say::Input {
                text: step.text.clone(),
                when_busy: step.when_busy,
                reject_if_idle: false,
            },
            request_id: None,
            provider: provider.clone(),
            trigger: Some(RunSource::Eval),
            grants: Vec::new(),
            mcp: None,
        };
        match (
            rt.call(ops::Say {
                submit: submit.clone(),
            }),
            &step.expect_error,
        ) {
            (Ok(_), None) => {}
            (Err(e), Some(kind)) if e.kind() == *kind => {}
            (Ok(_), Some(kind)) => env.note(format!(
                "saying {:?} was accepted, expected {kind}",
                step.text
            )),
            (Err(e), _) => env.note(format!("saying {:?} failed: {} ({e})", step.text, e.kind())),
        }
        write_files(env, &step.then_files)?;
    }
    drop(rt);
    answer_approvals(case, opts, env, session).await?;
    if !case.undo.is_empty() || !case.rewind.is_empty() {
        quiet(&env.rt()?, session).await?;
    }
    for (i, step) in case.undo.iter().enumerate() {
        undo_step(env, session, i + 1, step)?;
    }
    for (i, step) in case.rewind.iter().enumerate() {
        rewind_step(env, session, i + 1, step)?;
    }
    Ok(())
}

/// Plays one `rewind` step and notes where it went otherwise than expected.
fn rewind_step(env: &CaseEnv, session: i64, n: usize, step: &RewindStep) -> Result<(), CaseError> {
    use pocketpilot_core::engine::changes::undo::Options;
    use pocketpilot_protocol::EntryKind;
    let rt = env.rt()?;
    let messages: Vec<i64> = rt
        .call(ops::SessionEntries {
            session_id: session,
        })?
        .iter()
        .filter(|e| e.kind == EntryKind::User)
        .map(|e| e.id)
        .collect();
    // Past the person's messages: the session's first answer, which is not one of them.
    let to = match messages.get(step.to_message.wrapping_sub(1)) {
        Some(id) => *id,
        None => rt
            .call(ops::SessionEntries {
                session_id: session,
            })?
            .iter()
            .find(|e| e.kind == EntryKind::Assistant)
            .map(|e| e.id)
            .ok_or_else(|| CaseError::Case(format!("rewind {n}: the session has no answer")))?,
    };
    for (rel, content) in &step.edit_files {
        write(&inside(&env.workspace, rel)?, content)?;
    }
    if let Some(t) = step.tamper_task {
        let tasks = rt.call(ops::SessionTasks {
            session_id: session,
        })?;
        let task = tasks
            .get(t.wrapping_sub(1))
            .ok_or_else(|| CaseError::Case(format!("rewind {n}: the session has no task {t}")))?
            .id;
        tamper(&rt, task, &step.tamper_paths, &env.vars)?;
    }
    let opts = Options {
        dry_run: step.dry_run,
        keep_theirs: step.keep_theirs,
    };
    let report = match (
        rt.call(ops::Rewind {
            session_id: session,
            to_entry: to,
            opts,
        }),
        &step.expect_error,
    ) {
        (Err(e), Some(kind)) if e.kind() == *kind => return Ok(()),
        (Err(e), _) => {
            env.note(format!("rewind {n}: failed: {} ({e})", e.kind()));
            return Ok(());
        }
        (Ok(r), Some(kind)) => {
            env.note(format!(
                "rewind {n}: expected {kind}, it restored {:?}",
                r.files.restored
            ));
            return Ok(());
        }
        (Ok(r), None) => r,
    };
    check_rewind(env, session, n, step, &report)
}

/// What a `rewind` step checks once the rewind answered: the conflicts, the restored
/// paths, the entries set aside, and with `redo` that taking it back brings them back.
fn check_rewind(
    env: &CaseEnv,
    session: i64,
    n: usize,
    step: &RewindStep,
    report: &pocketpilot_core::engine::changes::rewind::RewindReport,
) -> Result<(), CaseError> {
    use pocketpilot_core::engine::changes::undo::Options;
    let rt = env.rt()?;
    let refused: Vec<&str> = report
        .files
        .conflicts
        .iter()
        .map(|c| c.path.as_str())
        .collect();
    if refused != step.expect_conflicts {
        env.note(format!(
            "rewind {n}: refused {refused:?}, expected {:?}",
            step.expect_conflicts
        ));
    }
    for p in &step.expect_restored {
        if !report.files.restored.contains(p) {
            env.note(format!(
                "rewind {n}: did not restore {p} (restored {:?})",
                report.files.restored
            ));
        }
    }
    let set_aside = rt
        .call(ops::SessionEntries {
            session_id: session,
        })?
        .iter()
        .filter(|e| e.rewound_by.is_some() && e.rewound_by == report.files.id)
        .count();
    if let Some(want) = step.expect_set_aside {
        // What the report says and what the store holds must both be it (none when dry
        // or refused).
        let applied = report.files.id.is_some();
        if report.set_aside.len() != want || (applied && set_aside != want) {
            env.note(format!(
                "rewind {n}: set aside {} ({set_aside} in the store), expected {want}",
                report.set_aside.len()
            ));
        }
    }
    if step.redo {
        let Some(id) = report.files.id else {
            env.note(format!("rewind {n}: nothing to redo (it was not applied)"));
            return Ok(());
        };
        if let Err(e) = rt.call(ops::Redo {
            undo_id: id,
            opts: Options::default(),
        }) {
            env.note(format!("rewind {n}: its redo failed: {} ({e})", e.kind()));
        }
        let back = rt
            .call(ops::SessionEntries {
                session_id: session,
            })?
            .iter()
            .filter(|e| e.rewound_by == Some(id))
            .count();
        if back != 0 {
            env.note(format!(
                "rewind {n}: after its redo {back} entries are still set aside"
            ));
        }
    }
    Ok(())
}

/// An inbox step said by a webhook: a real request naming the session.
async fn say_via_webhook(
    env: &CaseEnv,
    session: i64,
    hook: &str,
    step: &super::case::InboxStep,
) -> Result<(), CaseError> {
    let Some(Some(triggers)) = env.triggers.get() else {
        return Err(CaseError::Case(format!(
            "an inbox step via webhook `{hook}` needs `setup.webhooks`"
        )));
    };
    let body = serde_json::json!({
        "text": step.text, "session": session, "when_busy": step.when_busy,
    });
    let (status, text) = triggers.post(hook, &super::case::Token::Own, &body).await?;
    let want = if step.expect_error.is_some() {
        409
    } else {
        202
    };
    if status != want {
        env.note(format!(
            "saying {:?} via webhook `{hook}` got {status}, expected {want} ({text})",
            step.text
        ));
    }
    write_files(env, &step.then_files)
}

fn write_files(
    env: &CaseEnv,
    files: &std::collections::BTreeMap<String, String>,
) -> Result<(), CaseError> {
    for (rel, content) in files {
        write(&inside(&env.workspace, rel)?, content)?;
    }
    Ok(())
}

/// Until the session has nothing running and nothing queued (follow-ups included): an
/// undo is asked for by a person looking at a finished session.
async fn quiet(rt: &Arc<Runtime>, session: i64) -> Result<(), CaseError> {
    loop {
        settle(rt, session).await?;
        if rt
            .call(ops::GetInbox {
                session_id: session,
            })?
            .is_empty()
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let tasks = rt.call(ops::SessionTasks {
                session_id: session,
            })?;
            let busy = tasks
                .iter()
                .any(|t| !t.status.is_terminal() && !t.status.needs_person());
            if rt
                .call(ops::GetInbox {
                    session_id: session,
                })?
                .is_empty()
                && !busy
            {
                return Ok(());
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Plays one `undo` step and notes where it went otherwise than expected.
fn undo_step(env: &CaseEnv, session: i64, n: usize, step: &UndoStep) -> Result<(), CaseError> {
    use pocketpilot_core::engine::changes::undo::{Options, Target};
    let rt = env.rt()?;
    let tasks = rt.call(ops::SessionTasks {
        session_id: session,
    })?;
    let task = tasks
        .get(step.task.wrapping_sub(1))
        .ok_or_else(|| CaseError::Case(format!("undo {n}: the session has no task {}", step.task)))?
        .id;
    for (rel, content) in &step.edit_files {
        write(&inside(&env.workspace, rel)?, content)?;
    }
    if !step.tamper_paths.is_empty() {
        tamper(&rt, task, &step.tamper_paths, &env.vars)?;
    }
    let target = Target::Task {
        task_id: task,
        call_id: None,
    };
    let opts = Options::apply(step.keep_theirs);
    match (
        rt.call(ops::Undo {
            target: target.clone(),
            opts,
        }),
        &step.expect_error,
    ) {
        (Err(e), Some(kind)) if e.kind() == *kind => {}
        (Err(e), _) => env.note(format!("undo {n}: failed: {} ({e})", e.kind())),
        (Ok(r), Some(kind)) => env.note(format!(
            "undo {n}: expected {kind}, it restored {:?}",
            r.restored
        )),
        (Ok(r), None) => {
            let refused: Vec<&str> = r.conflicts.iter().map(|c| c.path.as_str()).collect();
            if refused != step.expect_conflicts {
                env.note(format!(
                    "undo {n}: refused {refused:?}, expected {:?}",
                    step.expect_conflicts
                ));
            }
            for p in &step.expect_restored {
                if !r.restored.contains(p) {
                    env.note(format!(
                        "undo {n}: did not restore {p} (restored {:?})",
                        r.restored
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Rewrites the paths in a task's recorded changes, as someone editing the database would.
fn tamper(
    rt: &Arc<Runtime>,
    task: i64,
    paths: &[String],
    vars: &[(&'static str, String)],
) -> Result<(), CaseError> {
    use pocketpilot_protocol::changes::ChangeSetKind;
    let sets = rt.call(ops::TaskChangeSets {
        task_id: task,
        kind: ChangeSetKind::Call,
    })?;
    let mut next = paths.iter().cycle();
    for set in sets {
        let mut changes = set.changes.clone();
        for c in &mut changes {
            if let Some(p) = next.next() {
                c.path = expand_str(p, vars);
            }
        }
        rt.call(ops::SetChangeSetChanges {
            id: set.id,
            changes,
        })?;
    }
    Ok(())
}

/// Answers approvals in the case's order until the session settles with none pending (or
/// the answers run out). With `--real`, approvals beyond the list are rejected (bounded).
async fn answer_approvals(
    case: &Case,
    opts: &RunOptions,
    env: &CaseEnv,
    session: i64,
) -> Result<(), CaseError> {
    let mut answers = case.approvals.iter();
    let mut pauses = case.pauses.iter();
    let mut plan = case.plan.as_ref();
    let mut extra = 0;
    loop {
        settle(&env.rt()?, session).await?;
        let pending = env.rt()?.call(ops::PendingApprovals {})?;
        let Some(approval) = pending.into_iter().next() else {
            if answer_pause(&env.rt()?, session, pauses.next())? {
                continue;
            }
            if answer_plan(env, plan.take())? {
                continue;
            }
            return Ok(());
        };
        let answer = match answers.next() {
            Some(a) => a.clone(),
            None if opts.real && extra < 20 => {
                extra += 1;
                super::case::Answer {
                    action: Action::Reject,
                    arguments: None,
                    note: Some("the eval case has no answer for this approval".into()),
                    restart_before: false,
                    wait_ms: 0,
                    edit_files: Default::default(),
                }
            }
            None => return Ok(()),
        };
        tokio::time::sleep(Duration::from_millis(answer.wait_ms)).await;
        write_files(env, &answer.edit_files)?;
        if answer.restart_before {
            restart(env).await?;
        }
        let edited = match (answer.action, &answer.arguments) {
            (Action::Edit, Some(args)) => {
                let mut a = args.clone();
                expand(&mut a, &env.vars);
                Some(a)
            }
            (Action::Edit, None) => {
                return Err(CaseError::Case("an `edit` answer needs `arguments`".into()))
            }
            _ => None,
        };
        env.rt()?
            .call(ops::ResolveApproval {
                approval_id: approval.id,
                answer: ApprovalAnswer {
                    approve: answer.action != Action::Reject,
                    edited_arguments: edited,
                    session_grant: answer.action == Action::Session,
                    note: answer.note.clone(),
                    by: "eval".into(),
                },
            })
            .map_err(|e| CaseError::context(format!("answering approval {}", approval.id), e))?;
    }
}

/// Answers the first task's plan, if it made one and the case has an answer; whether a
/// run carries it out.
fn answer_plan(env: &CaseEnv, answer: Option<&super::case::PlanAnswer>) -> Result<bool, CaseError> {
    use super::case::PlanAction;
    let (Some(answer), Some(task)) = (answer, env.first_task()) else {
        return Ok(false);
    };
    let rt = env.rt()?;
    if rt.call(ops::PlanOfTask { task_id: task })?.is_none() {
        env.note(format!("task {task} made no plan to answer"));
        return Ok(false);
    }
    let context = |e| CaseError::context(format!("answering the plan of task {task}"), e);
    match answer.action {
        PlanAction::Approve => {
            rt.call(ops::ApprovePlan {
                task_id: task,
                edited: answer.plan.as_ref().cloned(),
                by: RunSource::Eval,
            })
            .map_err(context)?;
            Ok(true)
        }
        PlanAction::Reject => {
            rt.call(ops::RejectPlan {
                task_id: task,
                reason: answer.reason.as_deref().map(|s| s.to_string()),
            })
            .map_err(context)?;
            Ok(false)
        }
        PlanAction::Leave => Ok(false),
    }
}

/// Answers the session's paused task, if it has one and the case an answer; whether the
/// run goes on.
fn answer_pause(
    rt: &Arc<Runtime>,
    session: i64,
    answer: Option<&super::case::PauseAnswer>,
) -> Result<bool, CaseError> {
    let paused = rt
        .call(ops::SessionTasks {
            session_id: session,
        })?
        .into_iter()
        .find(|t| t.status == TaskStatus::Paused);
    let (Some(task), Some(answer)) = (paused, answer) else {
        return Ok(false);
    };
    match answer.action {
        super::case::PauseAction::Continue => rt
            .call(ops::ContinueTask {
                task_id: task.id,
                raise: answer.raise.clone(),
                steer: answer.steer.clone(),
                by: "eval".into(),
            })
            .map_err(|e| CaseError::context(format!("continuing task {}", task.id), e))?,
        super::case::PauseAction::Stop => {
            rt.call(ops::StopTask { task_id: task.id })
                .map_err(|e| CaseError::context(format!("stopping task {}", task.id), e))?;
        }
    }
    Ok(true)
}

/// Until every task of the session is terminal or waiting for a person.
async fn settle(rt: &Arc<Runtime>, session: i64) -> Result<(), CaseError> {
    loop {
        let tasks = rt.call(ops::SessionTasks {
            session_id: session,
        })?;
        let busy = tasks
            .iter()
            .any(|t| !t.status.is_terminal() && !t.status.needs_person());
        if !busy {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Until `task` records `kind` (an input placed at `final` does not count: that is the
/// one that started the run).
async fn until_event(rt: &Arc<Runtime>, task: i64, kind: EventKind) -> Result<(), CaseError> {
    let mut sub = rt.call(ops::SubscribeTask {
        task_id: task,
        after_sequence: 0,
    })?;
    while let Some(ev) = sub.next().await {
        let ev = ev?;
        let at_final = matches!(
            ev.event,
            RuntimeEvent::InputPlaced {
                boundary: Boundary::Final,
                ..
            }
        );
        if ev.kind() == kind && !at_final {
            return Ok(());
        }
    }
    Err(CaseError::Case(format!(
        "task {task} ended without `{kind}`"
    )))
}

/// What a crash leaves behind: a started run whose last turn asked for tools, each call
/// committed as intent (`tool_call_started`) and none finished.
fn record_crashed_turn(
    rt: &Arc<Runtime>,
    task: i64,
    crash: &Crash,
    provider: &str,
    vars: &[(&str, String)],
) -> Result<(), CaseError> {
    let record = |ev: RuntimeEvent| {
        rt.call(ops::RecordEvents {
            task_id: task,
            events: vec![ev],
        })
    };
    record(RuntimeEvent::TaskStarted {
        provider: provider.to_owned(),
        resumed: false,
    })?;
    record(RuntimeEvent::ModelTurnStarted { step: 1 })?;
    let calls: Vec<ToolCall> = crash
        .calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut args = c.arguments.clone();
            expand(&mut args, vars);
            ToolCall {
                id: format!("call_crash_{i}"),
                name: c.name.clone(),
                arguments: args.to_string(),
            }
        })
        .collect();
    record(RuntimeEvent::ModelTurnCompleted {
        step: 1,
        text: crash.text.clone(),
        tool_calls: calls.clone(),
        finish_reason: Some("tool_calls".into()),
        usage: None,
        cached_prompt_tokens: None,
        model: None,
        cost_usd: None,
    })?;
    let registry = Registry::builtin();
    for call in calls {
        let tool = registry.get(&call.name);
        record(RuntimeEvent::ToolCallStarted {
            step: 1,
            call_id: call.id,
            name: call.name,
            arguments: call.arguments,
            capability: tool.as_ref().map(|t| t.capability().to_owned()),
            replay_safe: tool.as_ref().is_some_and(|t| t.replay_safe()),
            decision: pocketpilot_protocol::Decision::Allow,
            decision_source: pocketpilot_protocol::DecisionSource::User,
        })?;
    }
    Ok(())
}

/// The case's person's hooks file: under its own HOME, as `setup.person_hooks` lays it out
/// and a child run finds it (`XDG_CONFIG_HOME` is the case's `.config`).
fn person_hooks_file(root: &Path) -> PathBuf {
    root.join(".config/pocketpilot/hooks.json")
}

/// Drops the runtime (once its workers let go of it) and opens the store again.
async fn restart(env: &CaseEnv) -> Result<Arc<Runtime>, CaseError> {
    let old = lock(&env.rt).take();
    if let Some(old) = old {
        if !close(old).await {
            // Not a real restart while a worker of the old runtime is alive.
            env.note("the old runtime was still in use when it was restarted".into());
        }
    }
    let rt = Runtime::open_with_config(&env.data, Some(person_hooks_file(&env.root)))
        .map_err(|e| CaseError::context("reopening the store", e))?;
    *lock(&env.rt) = Some(rt.clone());
    Ok(rt)
}

/// Waits (bounded) for background workers to drop their handles, then drops ours.
async fn close(rt: Arc<Runtime>) -> bool {
    let deadline = Instant::now() + Duration::from_secs(2);
    while Arc::strong_count(&rt) > 1 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let alone = Arc::strong_count(&rt) == 1;
    drop(rt);
    alone
}

/// Cancels whatever is still going (a case that timed out or left a task waiting).
fn stop_everything(rt: &Arc<Runtime>) {
    for t in rt
        .call(ops::ListTasks { limit: 10_000 })
        .unwrap_or_default()
    {
        if !t.status.is_terminal() {
            let _ = rt.call(ops::CancelTask { task_id: t.id });
        }
    }
}

/// Why a case could not be set up or played (its failures are listed, not errors).
#[derive(Debug, thiserror::Error)]
pub enum CaseError {
    /// The case asks for something that cannot be done as written.
    #[error("{0}")]
    Case(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Runtime(#[from] pocketpilot_core::RuntimeError),
    #[error(transparent)]
    Store(#[from] pocketpilot_store::StoreError),
    #[error(transparent)]
    Mcp(#[from] pocketpilot_core::engine::mcp::McpConfigError),
    #[error(transparent)]
    Settings(#[from] pocketpilot_core::api::settings::SettingsError),
    #[error(transparent)]
    Trigger(#[from] pocketpilot_triggers::TriggerError),
    #[error("{what}: {source}")]
    Context {
        what: String,
        source: Box<CaseError>,
    },
}

impl CaseError {
    pub(super) fn context(what: impl Into<String>, source: impl Into<CaseError>) -> Self {
        CaseError::Context {
            what: what.into(),
            source: Box::new(source.into()),
        }
    }
}
