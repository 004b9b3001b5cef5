//! The worker: runs one task on its own tokio task. Provider, tools and policy are built
//! here for every run — never cached across runs, because workspace and policy differ.
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use pocketpilot_model::Usage;
use pocketpilot_tools::{PolicyRules, Registry, ToolContext};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::agent::{self, Agent, AgentLimits, AgentOutcome, EventSink};
use crate::config::{workspace_rules_key, Limits, ProviderSettings};
use crate::event::RuntimeEvent;
use crate::provider;
use crate::recorder::Recorder;
use crate::service::Runtime;
use crate::store::{approvals, entries, sessions, settings, tasks, tool_calls, StoreError};
use crate::task::TaskStatus;
use crate::transcript;
use pocketpilot_protocol::{
    ApprovalStatus, Budget, Decision, DecisionSource, ErrorKind, McpProblemKind, ToolErrorKind,
};

struct Sink {
    recorder: Arc<Recorder>,
    task_id: i64,
}

impl EventSink for Sink {
    fn emit(&self, event: RuntimeEvent) -> Result<(), String> {
        self.recorder
            .record(self.task_id, &event)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
    fn delta(&self, text: &str) {
        self.recorder.delta(self.task_id, text);
    }
    fn post_tools(&self) -> Result<agent::Boundary, String> {
        let placed = self
            .recorder
            .post_tools(self.task_id)
            .map_err(|e| e.to_string())?;
        Ok(agent::Boundary {
            steers: placed.steers.into_iter().map(|(_, text)| text).collect(),
            end_run: placed.end_run,
        })
    }
}

/// Grace given to a cancelled agent to stop its tool processes before it is dropped.
const CANCEL_GRACE: Duration = Duration::from_millis(300);

/// Runs (or resumes) one task from what the store holds. The caller holds the session's
/// lease.
pub async fn run(rt: Arc<Runtime>, task_id: i64) {
    let session_id = rt.task(task_id).map(|t| t.session_id).unwrap_or_default();
    let span = tracing::info_span!("task", task_id, session_id);
    async move {
        let Some(cancel) = rt.register_run(task_id) else {
            tracing::debug!("already running in this process");
            return;
        };
        if let Err(e) = run_registered(&rt, task_id, cancel).await {
            tracing::error!(error = %e, "the run could not be recorded");
        }
        rt.unregister_run(task_id);
    }
    .instrument(span)
    .await
}

async fn run_registered(
    rt: &Arc<Runtime>,
    task_id: i64,
    cancel: CancellationToken,
) -> Result<(), StoreError> {
    let recorder = rt.recorder.clone();
    let sink = Sink {
        recorder: recorder.clone(),
        task_id,
    };
    let task = rt.store.read(|c| tasks::get(c, task_id))?;
    if task.status.is_terminal() {
        return Ok(());
    }
    let session = rt.store.read(|c| sessions::get(c, task.session_id))?;
    let limits = Limits::load(&rt.store)?;
    let settings = ProviderSettings::load(&rt.store)?;
    let provider = match provider::build(task.provider.as_deref(), &settings) {
        Ok(p) => p,
        Err(e) => {
            recorder.record(
                task_id,
                &RuntimeEvent::TaskFailed {
                    error: e.to_string(),
                    kind: ErrorKind::NoModel,
                },
            )?;
            return Ok(());
        }
    };
    if cancel.is_cancelled() {
        recorder.finish_run(task_id, &cancelled(), false)?;
        return Ok(());
    }
    if task.status == TaskStatus::WaitingApproval {
        return Ok(());
    }
    recorder.record(
        task_id,
        &RuntimeEvent::TaskStarted {
            provider: provider.label(),
            resumed: task.status == TaskStatus::Running,
        },
    )?;
    let rules: PolicyRules = rt
        .store
        .read(|c| settings::get(c, &workspace_rules_key(&session.workspace)))?
        .unwrap_or_default();
    tracing::debug!(allow = ?rules.allow, deny = ?rules.deny, "workspace policy");
    let grants = rt.store.read(|c| sessions::grants(c, session.id))?;
    let mut ctx = ToolContext::new(
        PathBuf::from(&session.workspace),
        forbidden_dirs(rt.data_dir()),
        cancel.clone(),
    );
    if let Some(env) = agent_env() {
        ctx = ctx.with_base_env(env);
    }
    let mut tools = Registry::builtin();
    let mcp_session = connect_mcp(rt, &recorder, &task, &session.workspace, &mut tools).await?;
    // Issue 13 hook: the run's context window, estimator and compaction (context.rs).
    let context = crate::context::SessionContext::for_run(
        rt.store.clone(),
        session.id,
        task_id,
        &session.workspace,
        task.provider.as_deref(),
        &settings,
    )
    .await?;
    let agent = Agent {
        context,
        provider,
        tools,
        rules,
        grants,
        user_grants: task.grants.clone(),
        ctx,
        limits: AgentLimits {
            max_steps: limits.max_steps,
            max_tokens: limits.max_task_tokens,
            stream: settings.stream,
        },
    };
    let watcher = watch_cancel_requests(rt.clone(), task_id, cancel.clone());
    let started = Instant::now();
    let budget_ms = (limits.max_task_seconds * 1000).saturating_sub(task.active_ms.max(0) as u64);
    let outcome = {
        let work = async {
            if let Err(e) = recover_open_calls(rt, &agent, &sink, task_id, &session.workspace).await
            {
                return AgentOutcome::RecordFailed { error: e };
            }
            let entries = match rt.store.read(|c| entries::since_head(c, task.session_id)) {
                Ok(e) => e,
                Err(e) => {
                    return AgentOutcome::RecordFailed {
                        error: e.to_string(),
                    }
                }
            };
            let messages = transcript::to_messages(&session.workspace, &entries);
            let current = rt.store.read(|c| tasks::get(c, task_id));
            let (start, used) = match current {
                Ok(t) => (
                    t.step_count as u32 + 1,
                    Usage {
                        prompt_tokens: t.prompt_tokens as u64,
                        completion_tokens: t.completion_tokens as u64,
                        total_tokens: (t.prompt_tokens + t.completion_tokens) as u64,
                    },
                ),
                Err(e) => {
                    return AgentOutcome::RecordFailed {
                        error: e.to_string(),
                    }
                }
            };
            agent.run(messages, start, used, &sink).await
        };
        tokio::pin!(work);
        tokio::select! {
            out = &mut work => Some(out),
            _ = cancel.cancelled() => {
                // Let the tools see the cancellation and kill their processes.
                let _ = tokio::time::timeout(CANCEL_GRACE, &mut work).await;
                Some(AgentOutcome::Cancelled)
            }
            _ = tokio::time::sleep(Duration::from_millis(budget_ms)) => {
                cancel.cancel();
                let _ = tokio::time::timeout(CANCEL_GRACE, &mut work).await;
                None
            }
        }
    };
    watcher.abort();
    if let Some(mcp) = mcp_session {
        for p in mcp.stopped_servers() {
            recorder.record(task_id, &mcp_problem(p))?;
        }
        mcp.shutdown().await;
    }
    let elapsed = started.elapsed().as_millis() as u64;
    rt.store
        .write(|tx| tasks::add_active_ms(tx, task_id, elapsed))?;
    let ended_by_reset = matches!(outcome, Some(AgentOutcome::EndedByReset));
    let terminal = match outcome {
        Some(AgentOutcome::EndedByReset) => Some(RuntimeEvent::TaskCancelled {
            reason: "a queued reset ended the run".into(),
        }),
        None => Some(RuntimeEvent::BudgetExceeded {
            budget: Budget::Seconds,
            reason: format!(
                "the task used its time budget of {} s (POCKETPILOT_MAX_TASK_SECONDS)",
                limits.max_task_seconds
            ),
        }),
        Some(AgentOutcome::Completed { final_answer }) => {
            Some(RuntimeEvent::TaskCompleted { final_answer })
        }
        Some(AgentOutcome::WaitingApproval) => None,
        Some(AgentOutcome::StepsExhausted { steps }) => Some(RuntimeEvent::TaskFailed {
            error: format!(
                "the agent used all {steps} steps without a final answer (POCKETPILOT_MAX_AGENT_STEPS)"
            ),
            kind: ErrorKind::StepsExhausted,
        }),
        Some(AgentOutcome::TokenBudget { used, limit }) => Some(RuntimeEvent::BudgetExceeded {
            budget: Budget::Tokens,
            reason: format!("the task used {used} tokens, over its budget of {limit}"),
        }),
        Some(AgentOutcome::ModelFailed { error }) => Some(RuntimeEvent::TaskFailed {
            error: error.to_string(),
            kind: error.kind(),
        }),
        Some(AgentOutcome::Cancelled) => Some(cancelled()),
        Some(AgentOutcome::RecordFailed { error }) => Some(RuntimeEvent::TaskFailed {
            error: format!("the run could not be recorded: {error}"),
            kind: ErrorKind::Record,
        }),
    };
    if let Some(event) = terminal {
        // A task the service already ended (cancelled while queued) stays as it is.
        if !rt
            .task(task_id)
            .map(|t| t.status.is_terminal())
            .unwrap_or(true)
        {
            recorder.finish_run(task_id, &event, ended_by_reset)?;
        }
    }
    Ok(())
}

fn mcp_problem(p: pocketpilot_mcp::McpProblem) -> RuntimeEvent {
    RuntimeEvent::McpProblem {
        server: p.server,
        kind: p.kind,
        message: p.message,
    }
}

/// Starts the run's whitelisted MCP servers and adds their tools. Problems are recorded;
/// none of them stops the run.
async fn connect_mcp(
    rt: &Arc<Runtime>,
    recorder: &Recorder,
    task: &tasks::Task,
    workspace: &str,
    tools: &mut Registry,
) -> Result<Option<pocketpilot_mcp::McpSession>, StoreError> {
    let servers = crate::mcp::for_workspace(&rt.store, workspace)?;
    if servers.is_empty() || task.mcp.is_empty() {
        return Ok(None);
    }
    let whitelist = match crate::mcp::whitelist(&task.mcp) {
        Ok(w) => w,
        Err(e) => {
            recorder.record(
                task.id,
                &RuntimeEvent::McpProblem {
                    server: "*".into(),
                    kind: McpProblemKind::Whitelist,
                    message: e.to_string(),
                },
            )?;
            return Ok(None);
        }
    };
    let options = pocketpilot_mcp::ConnectOptions {
        whitelist,
        secrets: crate::mcp::secrets(&servers),
        workspace: Some(PathBuf::from(workspace)),
        base_env: agent_env(),
    };
    let session = pocketpilot_mcp::connect(&servers, &options).await;
    for p in session.problems.clone() {
        recorder.record(task.id, &mcp_problem(p))?;
    }
    session.register_into(tools);
    Ok(Some(session))
}

/// Variables this process set for itself (the window's WebKit and GTK settings), kept out
/// of what the agent starts: a command or MCP server gets the environment the person
/// launched PocketPilot with, not a GTK without GL or a WebKit without JIT.
static APP_ONLY_ENV: OnceLock<Vec<OsString>> = OnceLock::new();

/// Names the variables the app set for itself (see [`APP_ONLY_ENV`]); once, at start.
pub fn keep_from_agents(names: Vec<OsString>) {
    let _ = APP_ONLY_ENV.set(names);
}

/// The environment for what the agent starts; `None`: this process's, unchanged.
pub fn agent_env() -> Option<Vec<(OsString, OsString)>> {
    let hidden = APP_ONLY_ENV.get().filter(|h| !h.is_empty())?;
    Some(
        std::env::vars_os()
            .filter(|(name, _)| !hidden.contains(name))
            .collect(),
    )
}

/// How often a run looks for a cancel asked from another process.
const CANCEL_POLL: Duration = Duration::from_millis(200);

/// A cancel may come from another process sharing the data directory (`pocketpilot
/// cancel`); it reaches this run through the store.
fn watch_cancel_requests(
    rt: Arc<Runtime>,
    task_id: i64,
    cancel: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(CANCEL_POLL) => {}
            }
            if rt
                .store
                .read(|c| tasks::cancel_requested(c, task_id))
                .unwrap_or(false)
            {
                cancel.cancel();
                return;
            }
        }
    })
}

/// The app's own data and config: no tool may touch them, whatever the workspace.
fn forbidden_dirs(data_dir: &std::path::Path) -> Vec<PathBuf> {
    let mut dirs = vec![data_dir.to_owned()];
    dirs.extend(dirs::config_dir().map(|d| d.join("pocketpilot")));
    dirs.extend(std::fs::canonicalize(data_dir).ok());
    dirs
}

fn cancelled() -> RuntimeEvent {
    RuntimeEvent::TaskCancelled {
        reason: "cancelled by the user".into(),
    }
}

/// Before the agent continues a run, the calls of its last turn that have no result are
/// looked at in order: an answered approval is carried out (approved: the call runs,
/// guarded again by the tool; rejected: the model is told); a call the journal shows as
/// started but never finished (a crash) is re-run at once if it is replay-safe, otherwise
/// the model is told it was interrupted. The first call that is none of these is left to the
/// agent, which decides it as usual.
async fn recover_open_calls(
    rt: &Arc<Runtime>,
    agent: &Agent,
    sink: &Sink,
    task_id: i64,
    workspace: &str,
) -> Result<(), String> {
    let session_id = rt.task(task_id).map_err(|e| e.to_string())?.session_id;
    let entries = rt
        .store
        .read(|c| entries::since_head(c, session_id))
        .map_err(|e| e.to_string())?;
    let messages = transcript::to_messages(workspace, &entries);
    for call in agent::open_calls(&messages) {
        let approval = rt
            .store
            .read(|c| approvals::for_call(c, task_id, &call.id))
            .map_err(|e| e.to_string())?;
        let journal = rt
            .store
            .read(|c| tool_calls::get(c, task_id, &call.id))
            .map_err(|e| e.to_string())?;
        match (approval, journal) {
            (_, Some(j)) if j.status.is_open() => {
                if j.replay_safe {
                    // Harmless to run again: do it now, so the calls after it are looked
                    // at here too.
                    let Some(tool) = agent.tools.get(&j.name) else {
                        return Ok(());
                    };
                    let args = serde_json::from_str(&j.arguments).map_err(|e| {
                        format!(
                            "the journal's arguments of call {} do not parse: {e}",
                            call.id
                        )
                    })?;
                    agent::execute(
                        tool.as_ref(),
                        &call,
                        args,
                        j.step as u32,
                        Decision::Allow,
                        DecisionSource::Replay,
                        &agent.ctx,
                        sink,
                    )
                    .await?;
                    continue;
                }
                let saved = j.output.clone().unwrap_or_default();
                let mut error = format!(
                    "Tool {} was interrupted and may have partially run; check before repeating it",
                    call.name
                );
                if !saved.is_empty() {
                    error.push_str(&format!(". Output saved before the interruption:\n{saved}"));
                }
                sink.emit(RuntimeEvent::ToolCallFailed {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    error,
                    kind: ToolErrorKind::Interrupted,
                })?;
            }
            (Some(a), None) if a.status == ApprovalStatus::Rejected => {
                let note = a.decision_note.clone().unwrap_or_default();
                let error = if note.is_empty() {
                    "rejected by the user".to_owned()
                } else {
                    format!("rejected by the user: {note}")
                };
                sink.emit(RuntimeEvent::ToolCallFailed {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    error,
                    kind: ToolErrorKind::Rejected,
                })?;
            }
            (Some(a), None) if a.status == ApprovalStatus::Approved => {
                let Some(tool) = agent.tools.get(&a.tool) else {
                    sink.emit(RuntimeEvent::ToolCallFailed {
                        call_id: call.id.clone(),
                        name: call.name.clone(),
                        error: format!("there is no tool named `{}`", call.name),
                        kind: ToolErrorKind::UnknownTool,
                    })?;
                    continue;
                };
                let args = a.edited_args.clone().unwrap_or_else(|| a.arguments.clone());
                agent::execute(
                    tool.as_ref(),
                    &call,
                    args,
                    a.step as u32,
                    Decision::Allow,
                    DecisionSource::User,
                    &agent.ctx,
                    sink,
                )
                .await?;
            }
            _ => return Ok(()),
        }
    }
    Ok(())
}
