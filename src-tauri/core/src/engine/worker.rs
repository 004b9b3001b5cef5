//! The worker: runs one task on its own tokio task. Provider, tools and policy are built
//! here for every run — never cached across runs, because workspace and policy differ.
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pocketpilot_local::server::BusyGuard;
use pocketpilot_model::{Message, ProviderSpec, Usage};
use pocketpilot_tools::{PolicyRules, Registry, ToolContext};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::config::{workspace_rules_key, Limits, ProviderSettings};
use crate::engine::agent::{self, Agent, AgentLimits, AgentOutcome, EventSink, RecordError};
use crate::engine::conversation::Conversation;
use crate::engine::lease::SessionLease;
use crate::engine::plan::PlanScope;
use crate::engine::provider;
use crate::engine::recorder::{Claim, Recorder};
use crate::engine::scheduler::RunRegistry;
use crate::engine::title;
use crate::engine::transcript;
use crate::event::RuntimeEvent;
use crate::store::space::{DiskFull, Space};
use crate::store::{approvals, entries, sessions, settings, tasks, tool_calls, Store, StoreError};
use crate::task::TaskStatus;
use pocketpilot_protocol::{ApprovalStatus, Budget, ErrorKind, McpProblemKind, PauseReason};

/// What a worker needs of the runtime: the store, the recorder, this process's runs and
/// its data directory. Passed in, so the worker does not depend on the service.
#[derive(Clone)]
pub struct RunContext {
    pub(crate) store: Arc<Store>,
    pub(crate) recorder: Arc<Recorder>,
    pub runs: Arc<RunRegistry>,
    pub data_dir: PathBuf,
    /// Editors attached to sessions in this process (ACP).
    pub editors: Arc<crate::engine::editors::Editors>,
    /// The person's hooks file; `None`: none (an eval's runtime, isolated from the
    /// evaluating person's configuration).
    pub person_hooks: Option<PathBuf>,
    /// Where a new session's title is asked for after its first answer.
    pub titles: Arc<title::Titles>,
}

/// Records a run's events, each only while this process still holds the session's lease.
struct Sink {
    recorder: Arc<Recorder>,
    store: Arc<Store>,
    task_id: i64,
    lease: Arc<SessionLease>,
    limits: Limits,
    space: Space,
}

impl Sink {
    /// A write refused because the lease moved on (checked in the write's transaction)
    /// is the lease lost, not a store failure; one that failed for lack of space is the
    /// disk full (a write rolled back with a full disk's group counts too).
    fn lost_or(&self, e: StoreError) -> RecordError {
        match e {
            StoreError::LeaseLost { .. } => RecordError::Lease(self.lease.lost_in_write()),
            e if e.is_disk_full() => RecordError::DiskFull(self.space.full_now()),
            e @ StoreError::NotCommitted(_) => match self.space.check() {
                Err(full) => RecordError::DiskFull(full),
                Ok(()) => RecordError::Store(e),
            },
            e => RecordError::Store(e),
        }
    }
}

impl EventSink for Sink {
    fn emit(&self, event: RuntimeEvent) -> Result<(), RecordError> {
        self.lease.check()?;
        // New work (a model request, a tool call) starts only while the disk has room, so
        // a run pauses between calls rather than inside one; what ends a call or a turn
        // is still written while the floor's headroom lasts.
        use crate::event::EventKind;
        if matches!(
            event.kind(),
            EventKind::ModelTurnStarted | EventKind::ToolCallStarted
        ) {
            self.space.check()?;
        }
        self.recorder
            .record(self.task_id, &event)
            .map_err(|e| self.lost_or(e))?;
        Ok(())
    }
    fn delta(&self, text: &str) {
        if !self.lease.is_lost() {
            self.recorder.delta(self.task_id, text);
        }
    }
    fn post_tools(&self) -> Result<agent::Boundary, RecordError> {
        self.lease.check()?;
        let placed = self
            .recorder
            .post_tools(self.task_id)
            .map_err(|e| self.lost_or(e))?;
        Ok(agent::Boundary {
            steers: placed.steers.into_iter().map(|(_, text)| text).collect(),
            end_run: placed.end_run,
        })
    }
    fn money_out(&self) -> Result<Option<crate::policy::cost::MoneyOut>, RecordError> {
        // Asked before every model request: without a money budget there is nothing to read.
        let l = &self.limits;
        if l.max_task_usd.is_none() && l.max_day_usd.is_none() && l.max_trigger_day_usd.is_none() {
            return Ok(None);
        }
        let now = self.recorder.now();
        Ok(self.store.read(|c| {
            let task = tasks::get(c, self.task_id)?;
            crate::policy::cost::money_out(c, &task, &self.limits, now)
        })?)
    }
    fn left_open(
        &self,
        turn: u32,
        call: &pocketpilot_model::ToolCall,
    ) -> Result<Option<agent::LeftOpen>, RecordError> {
        let (approval, journal) = self.store.read(|c| {
            Ok((
                approvals::for_call(c, self.task_id, turn.into(), &call.id)?,
                tool_calls::get(c, self.task_id, turn.into(), &call.id)?,
            ))
        })?;
        Ok(match (approval, journal) {
            (_, Some(j)) if j.status.is_open() => Some(agent::LeftOpen::Interrupted(j)),
            (Some(a), None) if a.status != ApprovalStatus::Pending => {
                Some(agent::LeftOpen::Answered(Box::new(a)))
            }
            _ => None,
        })
    }
}

impl Sink {
    fn new(cx: &RunContext, task_id: i64, lease: &Arc<SessionLease>, limits: &Limits) -> Self {
        Sink {
            recorder: cx.recorder.clone(),
            store: cx.store.clone(),
            task_id,
            lease: lease.clone(),
            limits: limits.clone(),
            space: Space::new(&cx.data_dir),
        }
    }

    /// Ends the run (see `Recorder::finish_run`), unless the lease is lost.
    fn finish(&self, terminal: &RuntimeEvent, ended_by_reset: bool) -> Result<(), RecordError> {
        self.lease.check()?;
        self.recorder
            .finish_run(self.task_id, terminal, ended_by_reset)
            .map_err(|e| self.lost_or(e))?;
        Ok(())
    }
}

/// Grace given to a cancelled agent to stop its tool processes before it is dropped.
const CANCEL_GRACE: Duration = Duration::from_millis(300);

/// Runs (or resumes) one task from what the store holds, while `lease` (the session's)
/// is this process's.
pub async fn run(cx: RunContext, task_id: i64, lease: Arc<SessionLease>) {
    let span = tracing::info_span!("task", task_id, session_id = lease.session_id);
    async move {
        let Some(cancel) = cx.runs.register(task_id, &lease.cancel) else {
            tracing::debug!("already running in this process");
            return;
        };
        // Every write of the run commits only while the lease is this holder's: a worker
        // frozen past its lease records nothing on waking.
        cx.recorder.claim(
            task_id,
            Claim {
                session_id: lease.session_id,
                holder: lease.holder().to_owned(),
            },
        );
        // Every process the run starts is recorded under the lease, for a takeover to kill.
        let registered = run_registered(&cx, task_id, &lease, cancel);
        match crate::engine::lease::watching(&lease, task_id, registered).await {
            Ok(()) => {}
            Err(RecordError::Lease(e)) => tracing::warn!(error = %e, "the run stopped"),
            Err(RecordError::DiskFull(full)) => pause_for_space(&cx, task_id, &lease, full),
            Err(e) => tracing::error!(error = %e, "the run could not be recorded"),
        }
        cx.recorder.release(task_id);
        cx.runs.unregister(task_id);
    }
    .instrument(span)
    .await
}

async fn run_registered(
    cx: &RunContext,
    task_id: i64,
    lease: &Arc<SessionLease>,
    cancel: CancellationToken,
) -> Result<(), RecordError> {
    let task = cx.store.read(|c| tasks::get(c, task_id))?;
    if nothing_to_run(&task, &cancel) {
        return Ok(());
    }
    let limits = Limits::load(&cx.store)?;
    let sink = Sink::new(cx, task_id, lease, &limits);
    // Room to record a pause, should the disk fill up during the run.
    sink.space.ensure_reserve();
    let spec = match ProviderSpec::from_stored(task.provider.as_deref()) {
        Ok(spec) => spec,
        Err(e) => return sink.finish(&no_model(e.to_string()), false),
    };
    let settings = ProviderSettings::load(&cx.store)?;
    // The guard keeps the built-in model's server from the idle stop until this run ends.
    let (settings, local_busy) = match model_server(cx, &spec, settings).await {
        Ok(found) => found,
        Err(failed) => return sink.finish(&failed, false),
    };
    let provider = match provider::build_spec(&spec, &settings) {
        Ok(p) => p,
        Err(e) => return sink.finish(&no_model(e.to_string()), false),
    };
    if cancel.is_cancelled() {
        return sink.finish(&cancelled(), false);
    }
    let label = provider.label();
    sink.emit(RuntimeEvent::TaskStarted {
        provider: provider.label(),
        resumed: task.status == TaskStatus::Running,
    })?;
    // Started (so it can pause), and paused at once if the disk is full already.
    sink.space.check()?;
    let (agent, mcp_session, messages) =
        build_agent(cx, &sink, &task, provider, &limits, &settings, &cancel).await?;
    let watcher = watch_cancel_requests(
        cx.store.clone(),
        cx.recorder.foreign_commits(),
        task_id,
        cancel.clone(),
    );
    let started = Instant::now();
    let resumed = task.status == TaskStatus::Running;
    let outcome = drive_agent(
        cx,
        (&agent, messages),
        &sink,
        &task,
        (&limits, resumed),
        &cancel,
    )
    .await;
    watcher.abort();
    let full = disk_full(outcome.as_ref(), &sink.space);
    if full.is_some() {
        // The rest of the run's record (its time, its pause) must fit.
        sink.space.release_reserve();
    }
    if let Some(mcp) = mcp_session {
        close_mcp(mcp, &sink, full.is_none()).await?;
    }
    // A run stopped because another process took the session over records nothing more.
    lease.check()?;
    add_active_time(cx, task_id, started)?;
    if let Some(full) = full {
        return Err(RecordError::DiskFull(full));
    }
    let server = configured_server(&spec, &settings);
    let answered = (&task, &settings, label);
    name_session(cx, &spec, outcome.as_ref(), answered, local_busy);
    record_end(cx, &sink, &task, outcome, (&limits, server.as_deref()))?;
    prune_changes(cx);
    Ok(())
}

/// Asks for the session's title after a completed answer (see `title`), before the end is
/// recorded: whoever sees the run end finds the request already under way
/// (`Runtime::titles_settled`). A scripted run is never named: its answers are a script's.
fn name_session(
    cx: &RunContext,
    spec: &ProviderSpec,
    outcome: Option<&AgentOutcome>,
    (task, settings, label): (&tasks::Task, &ProviderSettings, String),
    busy: Option<BusyGuard>,
) {
    let Some(AgentOutcome::Completed { final_answer }) = outcome else {
        return;
    };
    if !spec.is_configured() {
        return;
    }
    let done = title::Answered {
        task,
        answer: final_answer,
        settings,
        label,
    };
    title::after_answer(&cx.titles, &cx.store, &cx.runs, done, busy);
}

/// An ended task has nothing to run; nor has one waiting for a person (an approval, or
/// a pause: issue 19), also after a crash: nothing to ask the model server either.
fn nothing_to_run(task: &tasks::Task, cancel: &CancellationToken) -> bool {
    task.status.is_terminal() || (task.status.needs_person() && !cancel.is_cancelled())
}

/// The configured server, named in a failure's plain sentence (a scripted run has none).
fn configured_server(spec: &ProviderSpec, settings: &ProviderSettings) -> Option<String> {
    match spec {
        ProviderSpec::Configured => settings.base_url.as_deref().and_then(server_of),
        ProviderSpec::Scripted(_) => None,
    }
}

/// The settings of the run's model server: the built-in model's when nothing else is set
/// up (a configured provider always wins), with the guard that keeps it running; `Err`:
/// the event that fails the run when the built-in model cannot start.
async fn model_server(
    cx: &RunContext,
    spec: &ProviderSpec,
    mut settings: ProviderSettings,
) -> Result<(ProviderSettings, Option<BusyGuard>), RuntimeEvent> {
    let mut local_busy = None;
    if spec.is_configured() && !settings.is_configured() {
        match crate::engine::local_model::endpoint(&cx.data_dir, &cx.store).await {
            Ok(Some((local, busy))) => {
                settings = local;
                local_busy = Some(busy);
            }
            Ok(None) => {}
            Err(e) => {
                return Err(RuntimeEvent::TaskFailed {
                    error: e.to_string(),
                    kind: ErrorKind::LocalModel,
                    summary: Some(ErrorKind::LocalModel.plain_sentence(None)),
                })
            }
        }
    }
    // The output reserve the context budget keeps free is what the model may write: sent
    // to the model server as `max_tokens`, so that a long answer cannot run past the
    // window the budget kept.
    if spec.is_configured() && settings.max_tokens.is_none() {
        let facts = crate::engine::context::server_facts(&settings).await;
        settings.max_tokens = Some(facts.output_reserve);
    }
    Ok((settings, local_busy))
}

/// Closes the run's MCP servers, first reporting those that stopped during it (unless
/// the disk is full: `report` false).
async fn close_mcp(
    mcp: pocketpilot_mcp::McpSession,
    sink: &Sink,
    report: bool,
) -> Result<(), RecordError> {
    for p in mcp.stopped_servers().into_iter().filter(|_| report) {
        sink.emit(mcp_problem(p))?;
    }
    mcp.shutdown().await;
    Ok(())
}

/// The run's time added to the task's; on a full disk it is left out, not the run's end.
fn add_active_time(cx: &RunContext, task_id: i64, started: Instant) -> Result<(), RecordError> {
    let elapsed = started.elapsed().as_millis() as u64;
    match cx
        .store
        .write(|tx| tasks::add_active_ms(tx, task_id, elapsed))
    {
        Err(e) if e.is_disk_full() => tracing::warn!(error = %e, "the run's time was not added"),
        done => done?,
    }
    Ok(())
}

/// Records how the run ended or paused after `outcome`, unless it only waits for an
/// approval; `server` names the configured model server in a failure's sentence.
fn record_end(
    cx: &RunContext,
    sink: &Sink,
    task: &tasks::Task,
    outcome: Option<AgentOutcome>,
    (limits, server): (&Limits, Option<&str>),
) -> Result<(), RecordError> {
    let ended_by_reset = matches!(outcome, Some(AgentOutcome::EndedByReset));
    let limits = with_extra(limits, task);
    let Some(event) = terminal_event(outcome, &limits, server) else {
        return Ok(());
    };
    // A task the service already ended (cancelled while queued) stays as it is.
    let ended = cx
        .store
        .read(|c| tasks::get(c, task.id))
        .map(|t| t.status.is_terminal())
        .unwrap_or(true);
    let paused = event.kind() == crate::event::EventKind::RunPaused;
    if !ended && paused {
        // Paused, not ended: the run's inputs stay placed for when it continues.
        sink.emit(event)?;
    } else if !ended {
        sink.finish(&event, ended_by_reset)?;
    }
    Ok(())
}

/// The full disk a run stopped on, if that is why it stopped.
fn disk_full(outcome: Option<&AgentOutcome>, space: &Space) -> Option<DiskFull> {
    match outcome? {
        AgentOutcome::RecordFailed { error } => match error {
            RecordError::DiskFull(d) => Some(*d),
            RecordError::Store(e) if e.is_disk_full() => Some(space.full_now()),
            _ => None,
        },
        _ => None,
    }
}

/// Pauses a run that stopped because the disk is full: the reserve is given back so that
/// the pause fits, and the run continues (`raise`, Continue) once space is freed.
fn pause_for_space(cx: &RunContext, task_id: i64, lease: &SessionLease, full: DiskFull) {
    Space::new(&cx.data_dir).release_reserve();
    tracing::warn!(
        task_id,
        free = full.free,
        "the disk is full: the run pauses"
    );
    if lease.check().is_err() {
        return;
    }
    let event = RuntimeEvent::RunPaused {
        reason: PauseReason::DiskFull,
        budget: None,
        message: full.to_string(),
        repeated: None,
        resumes_at: None,
    };
    if let Err(e) = cx.recorder.record(task_id, &event) {
        tracing::error!(task_id, error = %e, "the pause for a full disk could not be recorded");
    }
}

/// A run that cannot have its model: ended like any other run, so its inputs are settled
/// (unanswered, no_model) rather than left `placed` with no run answering them.
fn no_model(error: String) -> RuntimeEvent {
    RuntimeEvent::TaskFailed {
        error,
        kind: ErrorKind::NoModel,
        summary: Some(ErrorKind::NoModel.plain_sentence(None)),
    }
}

/// Issue 16: retention runs after each run, off the run's path.
fn prune_changes(cx: &RunContext) {
    let (store, data_dir) = (cx.store.clone(), cx.data_dir.clone());
    tokio::task::spawn_blocking(move || {
        match crate::engine::changes::retention::prune(&store, &data_dir, chrono::Utc::now()) {
            Ok(p) if p.sets > 0 || p.blobs > 0 => {
                tracing::info!(
                    sets = p.sets,
                    blobs = p.blobs,
                    freed = p.bytes_freed,
                    "kept contents pruned"
                )
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "retention could not prune kept contents"),
        }
    });
}

/// The grants the person gave the run at its start, as the policy matches them (names).
fn run_grants(task: &tasks::Task) -> Vec<String> {
    task.grants.iter().map(ToString::to_string).collect()
}

/// The provider, tools (built-in and the run's MCP servers'), policy and grants of a run,
/// and its conversation: the session read once, the agent's messages and its context's
/// kept view both made from that one read.
async fn build_agent(
    cx: &RunContext,
    sink: &Sink,
    task: &tasks::Task,
    provider: Arc<dyn pocketpilot_model::Provider>,
    limits: &Limits,
    settings: &ProviderSettings,
    cancel: &CancellationToken,
) -> Result<(Agent, Option<pocketpilot_mcp::McpSession>, Vec<Message>), RecordError> {
    let session = cx.store.read(|c| sessions::get(c, task.session_id))?;
    let policy = run_policy(cx, task, &session)?;
    // issue 14: the OS sandbox of this run's commands (network only with `net:network`).
    let all_grants: Vec<String> = policy
        .grants
        .iter()
        .chain(&policy.user_grants)
        .cloned()
        .collect();
    let mut ctx = tool_context(cx, &session, cancel, &all_grants)?;
    let mut tools = Registry::builtin();
    // Issue 18 hook: skills, `remember`, the auto-accept grant and the run's preamble.
    let mut user_grants = run_grants(task);
    let preamble = crate::policy::rules::prepare_run(
        &cx.store,
        task.id,
        &session.workspace,
        &mut ctx,
        &mut tools,
        &mut user_grants,
    )?;
    let mcp_session = connect_mcp(cx, sink, task, &session.workspace, &mut tools).await?;
    // The one read of the session's transcript in a run (after the plan-mode note).
    let since_head = cx.store.read(|c| entries::since_head(c, session.id))?;
    let messages = transcript::to_messages(&ctx.workspace.display().to_string(), &since_head);
    // Issue 13 hook: the run's context window, estimator and compaction (context.rs).
    let context = crate::engine::context::SessionContext::for_run(
        cx.store.clone(),
        Conversation::of(session.id, since_head),
        task.id,
        &session.workspace,
        provider.as_ref(),
    )
    .await?;
    crate::engine::plan::register(&mut tools, &policy.plan);
    // Small windows get the short tool specs, and tools the policy denies are not offered,
    // nor, while planning, any tool but the reading ones.
    crate::engine::context::offer_tools(&mut tools, context.as_deref(), &policy.rules);
    tools.withhold_also(|t| policy.plan.refuses(t.capability()));
    let changes = change_journal(cx, task, &ctx)?;
    let hooks = run_hooks(cx, sink, &session)?;
    let agent = Agent {
        hooks,
        context,
        changes,
        provider,
        tools,
        rules: policy.rules,
        grants: policy.grants,
        user_grants,
        command_rules: policy.command_rules,
        plan: policy.plan,
        preamble: Some(preamble),
        ctx,
        limits: {
            let l = with_extra(limits, task);
            AgentLimits {
                max_steps: l.max_steps,
                max_tokens: l.max_task_tokens,
                stream: settings.stream,
                repeat_limit: l.repeat_limit,
            }
        },
    };
    Ok((agent, mcp_session, messages))
}

/// The person's hooks, and the workspace's when the person consented to its file;
/// announced to the run.
fn run_hooks(
    cx: &RunContext,
    sink: &Sink,
    session: &sessions::Session,
) -> Result<Arc<crate::engine::hooks::RunHooks>, RecordError> {
    let hooks = crate::policy::hooks::load(
        &cx.store,
        std::path::Path::new(&session.workspace),
        cx.person_hooks.as_deref(),
    )?;
    let hooks = Arc::new(crate::engine::hooks::RunHooks::new(hooks, session.id));
    hooks.announce(sink)?;
    Ok(hooks)
}

/// What a run may do: the workspace policy, its plan mode, its command rules and the
/// grants the person gave.
struct RunPolicy {
    rules: PolicyRules,
    plan: PlanScope,
    command_rules: crate::policy::command_rules::RuleSet,
    /// Given in the session's approvals.
    grants: Vec<String>,
    /// Given at the run's start.
    user_grants: Vec<String>,
}

fn run_policy(
    cx: &RunContext,
    task: &tasks::Task,
    session: &sessions::Session,
) -> Result<RunPolicy, RecordError> {
    let rules: PolicyRules = cx
        .store
        .read(|c| settings::get(c, &workspace_rules_key(&session.workspace)))?
        .unwrap_or_default();
    tracing::debug!(allow = ?rules.allow, deny = ?rules.deny, "workspace policy");
    // A trigger's run follows the workspace policy only: no grant a person gave in the
    // session, none given at its start.
    let interactive = pocketpilot_protocol::RunSource::is_interactive(&task.trigger);
    // Plan mode: planning (read only), or carrying out an approved plan, whose commands
    // join the command rules for this run only.
    let (plan, carried) = plan_scope(cx, task)?;
    // A trigger's run gets the workspace's command rules, not a session's.
    let rows = cx.store.read(|c| {
        crate::store::command_rules::in_force(
            c,
            &session.workspace,
            interactive.then_some(session.id),
        )
    })?;
    let command_rules = match &carried {
        Some(p) => crate::policy::plan::with_plan_commands(rows, p),
        None => crate::policy::command_rules::RuleSet::from_rows(rows),
    };
    let (grants, user_grants) = if interactive {
        let grants = cx.store.read(|c| sessions::grants(c, session.id))?;
        (grants, run_grants(task))
    } else {
        tracing::info!(task_id = task.id, trigger = %task.trigger, "a trigger's run: no grants");
        (Vec::new(), Vec::new())
    };
    Ok(RunPolicy {
        rules,
        plan,
        command_rules,
        grants,
        user_grants,
    })
}

/// The tools' view of the run: its workspace, what they may not touch, its environment,
/// the editor attached to the session and the sandbox of its commands.
fn tool_context(
    cx: &RunContext,
    session: &sessions::Session,
    cancel: &CancellationToken,
    grants: &[String],
) -> Result<ToolContext, RecordError> {
    let mut ctx = ToolContext::new(
        PathBuf::from(&session.workspace),
        forbidden_dirs(&cx.data_dir),
        cancel.clone(),
    );
    if let Some(env) = crate::engine::agent_env::agent_env() {
        ctx = ctx.with_base_env(env);
    }
    if let Some(editor) = cx.editors.of(session.id) {
        ctx = ctx.with_editor(editor);
    }
    Ok(
        ctx.with_sandbox(crate::policy::confinement::load_command_sandbox(
            &cx.store,
            &session.workspace,
            grants,
        )?),
    )
}

/// Issue 16: the run's change journal. Without one the run still works, its changes not
/// undoable; with no room for what undo keeps, the run pauses rather than run without.
fn change_journal(
    cx: &RunContext,
    task: &tasks::Task,
    ctx: &ToolContext,
) -> Result<Option<Arc<crate::engine::changes::RunChanges>>, RecordError> {
    match crate::engine::changes::RunChanges::open(
        cx.store.clone(),
        &cx.data_dir,
        task.session_id,
        task.id,
        ctx,
    ) {
        Ok(j) => Ok(Some(Arc::new(j))),
        Err(crate::engine::changes::ChangeError::DiskFull(full)) => {
            Err(RecordError::DiskFull(full))
        }
        Err(e) => {
            tracing::warn!(error = %e, "no change journal for this run");
            Ok(None)
        }
    }
}

/// The run's plan mode, and the approved plan it carries out. A planning run's transcript
/// gets the plan-mode note once, after the person's input.
fn plan_scope(
    cx: &RunContext,
    task: &tasks::Task,
) -> Result<(PlanScope, Option<pocketpilot_protocol::Plan>), RecordError> {
    use crate::store::plans;
    if let Some(plan) = cx.store.read(|c| plans::carried_by(c, task.id))? {
        return Ok((PlanScope::carrying(&plan), Some(plan)));
    }
    if !cx.store.read(|c| plans::task_plans(c, task.id))? {
        return Ok((PlanScope::Act, None));
    }
    cx.recorder.commit(task.id, |tx, _| {
        plans::note_once(
            tx,
            task.session_id,
            task.id,
            crate::policy::plan::PLAN_MODE_NOTE,
        )?;
        Ok::<_, crate::store::StoreError>((Vec::new(), ()))
    })?;
    Ok((PlanScope::Planning, None))
}

/// Runs the agent on the session's conversation (`messages`, as the run found it: the
/// agent finishes the calls left open first), within the time budget and until cancelled.
/// `None`: the budget ran out.
async fn drive_agent(
    cx: &RunContext,
    (agent, mut messages): (&Agent, Vec<Message>),
    sink: &Sink,
    task: &tasks::Task,
    (limits, resumed): (&Limits, bool),
    cancel: &CancellationToken,
) -> Option<AgentOutcome> {
    let budget_ms = (with_extra(limits, task).max_task_seconds * 1000)
        .saturating_sub(task.active_ms.max(0) as u64);
    let work = async {
        let current = match cx.store.read(|c| tasks::get(c, task.id)) {
            Ok(found) => found,
            Err(e) => return AgentOutcome::RecordFailed { error: e.into() },
        };
        // A run starting on its goal (not resumed, not continued after an approval).
        if current.step_count == 0 && !resumed {
            let first_of_session = match cx
                .store
                .read(|c| tasks::list_for_session(c, task.session_id))
            {
                Ok(all) => all.iter().all(|t| t.id >= task.id),
                Err(e) => return AgentOutcome::RecordFailed { error: e.into() },
            };
            if let Err(outcome) = agent
                .start_hooks(&mut messages, first_of_session, &task.goal, sink)
                .await
            {
                return outcome;
            }
        }
        let used = Usage {
            prompt_tokens: current.prompt_tokens as u64,
            completion_tokens: current.completion_tokens as u64,
            total_tokens: (current.prompt_tokens + current.completion_tokens) as u64,
        };
        agent
            .run(messages, current.step_count as u32 + 1, used, sink)
            .await
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
}

/// The limits with what people raised for this task added (issue 19).
fn with_extra(limits: &Limits, task: &tasks::Task) -> Limits {
    let mut l = limits.clone();
    l.max_steps = l.max_steps.saturating_add(task.extra.steps);
    l.max_task_seconds = l.max_task_seconds.saturating_add(task.extra.seconds.into());
    l.max_task_tokens = l
        .max_task_tokens
        .map(|t| t.saturating_add(task.extra.tokens.into()));
    l
}

fn budget_pause(budget: Budget, message: String) -> RuntimeEvent {
    lifting_pause(budget, message, None)
}

/// A budget pause; `resumes_at`: when it lifts by itself (the daily cap for unattended
/// runs resets then).
fn lifting_pause(budget: Budget, message: String, resumes_at: Option<String>) -> RuntimeEvent {
    RuntimeEvent::RunPaused {
        reason: PauseReason::Budget,
        budget: Some(budget),
        message,
        repeated: None,
        resumes_at,
    }
}

/// The event that ends or pauses a run after `outcome` (`None`: the time budget ran
/// out); `None` when the run only waits for an approval. A budget that runs out pauses
/// the task (issue 19): the person raises it and continues, or stops it.
fn terminal_event(
    outcome: Option<AgentOutcome>,
    limits: &Limits,
    server: Option<&str>,
) -> Option<RuntimeEvent> {
    let Some(outcome) = outcome else {
        return Some(budget_pause(
            Budget::Seconds,
            format!(
                "the task used its time budget of {} seconds",
                limits.max_task_seconds
            ),
        ));
    };
    Some(match outcome {
        AgentOutcome::EndedByReset => RuntimeEvent::TaskCancelled {
            reason: "a queued reset ended the run".into(),
        },
        AgentOutcome::Completed { final_answer } => RuntimeEvent::TaskCompleted { final_answer },
        AgentOutcome::WaitingApproval => return None,
        AgentOutcome::StepsExhausted { steps } => budget_pause(
            Budget::Steps,
            format!("the agent used all {steps} steps without a final answer"),
        ),
        AgentOutcome::TokenBudget { used, limit } => budget_pause(
            Budget::Tokens,
            format!("the task used {used} tokens, over its budget of {limit}"),
        ),
        AgentOutcome::MoneyBudget {
            message,
            resumes_at,
        } => lifting_pause(Budget::Usd, message, resumes_at),
        AgentOutcome::Repeating { repeated } => RuntimeEvent::RunPaused {
            reason: PauseReason::Repetition,
            budget: None,
            message: crate::policy::repetition::describe(&repeated),
            repeated: Some(repeated),
            resumes_at: None,
        },
        AgentOutcome::ModelFailed { error } => RuntimeEvent::TaskFailed {
            error: error.to_string(),
            kind: error.kind(),
            summary: Some(error.kind().plain_sentence(server)),
        },
        AgentOutcome::Cancelled => cancelled(),
        AgentOutcome::PromptBlocked { reason } => RuntimeEvent::TaskFailed {
            error: reason,
            kind: ErrorKind::HookBlocked,
            summary: Some(ErrorKind::HookBlocked.plain_sentence(None)),
        },
        AgentOutcome::RecordFailed { error } => RuntimeEvent::TaskFailed {
            error: format!("the run could not be recorded: {error}"),
            kind: ErrorKind::Record,
            summary: Some(ErrorKind::Record.plain_sentence(None)),
        },
    })
}

/// `host:port` of a base URL, as a person would name the server.
pub(crate) fn server_of(base_url: &str) -> Option<String> {
    let url = url::Url::parse(base_url).ok()?;
    let host = url.host_str()?;
    Some(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    })
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
    cx: &RunContext,
    sink: &Sink,
    task: &tasks::Task,
    workspace: &str,
    tools: &mut Registry,
) -> Result<Option<pocketpilot_mcp::McpSession>, RecordError> {
    let servers = crate::engine::mcp::for_workspace(&cx.store, workspace)?;
    if servers.is_empty() || task.mcp.is_empty() {
        return Ok(None);
    }
    let whitelist = match crate::engine::mcp::whitelist(&task.mcp) {
        Ok(w) => w,
        Err(e) => {
            sink.emit(RuntimeEvent::McpProblem {
                server: "*".into(),
                kind: McpProblemKind::Whitelist,
                message: e.to_string(),
            })?;
            return Ok(None);
        }
    };
    let options = pocketpilot_mcp::ConnectOptions {
        whitelist,
        secrets: crate::engine::mcp::secrets(&servers),
        workspace: Some(PathBuf::from(workspace)),
        base_env: crate::engine::agent_env::agent_env(),
        forbidden: forbidden_dirs(&cx.data_dir),
    };
    let session = pocketpilot_mcp::connect(&servers, &options).await;
    for p in session.problems.clone() {
        sink.emit(mcp_problem(p))?;
    }
    session.register_into(tools);
    Ok(Some(session))
}

/// A cancel may come from another process sharing the data directory (`pocketpilot
/// cancel`); it reaches this run through the store, looked at when that process commits
/// (the process's one store watcher wakes it), never on a timer.
fn watch_cancel_requests(
    store: Arc<Store>,
    mut foreign: tokio::sync::watch::Receiver<u64>,
    task_id: i64,
    cancel: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        // Looked at once first: a cancel asked before this run began following the store.
        loop {
            if store
                .read(|c| tasks::cancel_requested(c, task_id))
                .unwrap_or(false)
            {
                cancel.cancel();
                return;
            }
            tokio::select! {
                _ = cancel.cancelled() => return,
                changed = foreign.changed() => if changed.is_err() { return },
            }
        }
    })
}

/// The app's own data and config: no tool may touch them, whatever the workspace.
fn forbidden_dirs(data_dir: &std::path::Path) -> Vec<PathBuf> {
    crate::engine::changes::forbidden_dirs(data_dir)
}

fn cancelled() -> RuntimeEvent {
    RuntimeEvent::TaskCancelled {
        reason: "cancelled by the user".into(),
    }
}
