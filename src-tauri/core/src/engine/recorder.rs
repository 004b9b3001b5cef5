//! The recorder: persists a run's events with a gapless per-task sequence, applies what
//! each event means to the tables in the same transaction, and fans events out live.
//!
//! Invariants:
//! - a persisted event and its effects (status, transcript entry, tool journal, approval)
//!   commit together or not at all;
//! - per task, commit and publish happen under one lock, and `subscribe` takes its replay
//!   and its live receiver under the same lock: a subscriber sees every event exactly once;
//! - deltas are coalesced per task over a short window (never reordered or dropped) and
//!   flushed before any persisted event, so text and events keep their order;
//! - a slow subscriber lags on its own: it re-reads from the store and is given the text so
//!   far as a `stream_reset`, never a silent hole; the run never waits for it.
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::broadcast;

use crate::engine::inbox;
use crate::engine::watch::StoreWatch;
use crate::event::{EventKind, RuntimeEvent};
use crate::store::{
    self, approvals, entries, events, sessions, tasks, tool_calls, StoreError, StoredEvent,
};
use crate::task::TaskStatus;
use pocketpilot_protocol::{EntryKind, ToolCallStatus, ToolErrorKind};

pub type TaskEvent = StoredEvent;

const CHANNEL_CAPACITY: usize = 4096;

struct Channel {
    tx: broadcast::Sender<Arc<TaskEvent>>,
    /// Text of the current model turn that subscribers have been sent.
    partial: String,
    /// Text received but not yet flushed to subscribers.
    pending: String,
    flush_scheduled: bool,
    /// When text was last sent: a delta arriving a window after it goes out at once,
    /// without waiting for the timer (whose task a busy runtime may run late).
    last_flush: Option<Instant>,
    /// The highest sequence published on this channel (`None` before the first): a
    /// replayed event above it has committed but not been published yet (its after-commit
    /// hook is still to run).
    published: Option<i64>,
}

pub struct Recorder {
    store: Arc<store::Store>,
    fan: Arc<FanOut>,
    window: Duration,
    /// The time usage rows are stamped with and day budgets are counted by (issue 19).
    clock: std::sync::RwLock<crate::policy::cost::Clock>,
    /// The lease each running task records under: every write of that task's events
    /// checks, in its own transaction, that the lease is still this holder's.
    claims: Mutex<HashMap<i64, Claim>>,
    /// What other processes commit (see `watch`).
    watch: Arc<StoreWatch>,
}

/// A run's session lease as this process holds it.
#[derive(Debug, Clone)]
pub struct Claim {
    pub session_id: i64,
    pub holder: String,
}

impl Claim {
    fn check(&self, tx: &rusqlite::Transaction<'_>) -> Result<(), StoreError> {
        if store::leases::is_held_by(tx, self.session_id, &self.holder)? {
            Ok(())
        } else {
            Err(StoreError::LeaseLost {
                session_id: self.session_id,
            })
        }
    }
}

fn check_claim(tx: &rusqlite::Transaction<'_>, claim: Option<&Claim>) -> Result<(), StoreError> {
    claim.map_or(Ok(()), |c| c.check(tx))
}

/// The live side: per-task channels and the change feed. Shared with the store's
/// after-commit hooks, which publish each write's events once it committed, in commit
/// order (see `pocketpilot_store`).
struct FanOut {
    channels: Mutex<HashMap<i64, Arc<Mutex<Channel>>>>,
    /// Every change of a task's state, for the sessions list, the tray and notifications.
    changes: broadcast::Sender<TaskChange>,
}

/// A task changed state (`kind` is the event that changed it).
#[derive(Debug, Clone, serde::Serialize, PartialEq)]
pub struct TaskChange {
    pub task_id: i64,
    pub kind: EventKind,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn delta_event(task_id: i64, text: &str) -> Arc<TaskEvent> {
    Arc::new(TaskEvent::live(
        task_id,
        RuntimeEvent::AssistantDelta {
            text: text.to_owned(),
        },
    ))
}

fn reset_event(task_id: i64, text: &str) -> Arc<TaskEvent> {
    Arc::new(TaskEvent::live(
        task_id,
        RuntimeEvent::StreamReset {
            text: text.to_owned(),
        },
    ))
}

/// Whether `kind` ends the model turn's text (so the text so far is cleared).
fn ends_turn_text(kind: EventKind) -> bool {
    kind == EventKind::ModelTurnCompleted || kind.is_terminal()
}

impl FanOut {
    fn channel(&self, task_id: i64) -> Arc<Mutex<Channel>> {
        lock(&self.channels)
            .entry(task_id)
            .or_insert_with(|| {
                let (tx, _) = broadcast::channel(CHANNEL_CAPACITY);
                Arc::new(Mutex::new(Channel {
                    tx,
                    partial: String::new(),
                    pending: String::new(),
                    flush_scheduled: false,
                    last_flush: None,
                    published: None,
                }))
            })
            .clone()
    }

    /// Publishes committed events: the change feed, then each event on its task's
    /// channel. Runs after the commit, in commit order.
    fn published<'a>(&self, events: impl Iterator<Item = &'a TaskEvent> + Clone) {
        for ev in events.clone().filter(|e| e.kind().changes_state()) {
            let _ = self.changes.send(TaskChange {
                task_id: ev.task_id,
                kind: ev.kind(),
            });
        }
        let mut ended = Vec::new();
        for ev in events {
            let ch = self.channel(ev.task_id);
            let mut g = lock(&ch);
            if ends_turn_text(ev.kind()) {
                g.partial.clear();
            }
            g.published = g.published.max(Some(ev.sequence));
            if ev.kind().is_terminal() {
                ended.push(ev.task_id);
            }
            let _ = g.tx.send(Arc::new(ev.clone()));
        }
        if !ended.is_empty() {
            let mut channels = lock(&self.channels);
            for id in ended {
                channels.remove(&id);
            }
        }
    }
}

impl Recorder {
    pub fn new(store: Arc<store::Store>, window: Duration) -> Arc<Self> {
        Arc::new(Self {
            fan: Arc::new(FanOut {
                channels: Mutex::new(HashMap::new()),
                changes: broadcast::channel(1024).0,
            }),
            window,
            clock: std::sync::RwLock::new(crate::policy::cost::system_clock()),
            claims: Mutex::new(HashMap::new()),
            watch: StoreWatch::new(store.clone()),
            store,
        })
    }

    /// Wakes whenever another process sharing the data directory committed (see `watch`).
    pub fn foreign_commits(&self) -> tokio::sync::watch::Receiver<u64> {
        self.watch.foreign_commits()
    }

    /// From now until [`Recorder::release`], `task_id`'s writes commit only while `claim`
    /// is its session's lease holder.
    pub fn claim(&self, task_id: i64, claim: Claim) {
        lock(&self.claims).insert(task_id, claim);
    }

    pub fn release(&self, task_id: i64) {
        lock(&self.claims).remove(&task_id);
    }

    fn claim_of(&self, task_id: i64) -> Option<Claim> {
        lock(&self.claims).get(&task_id).cloned()
    }

    /// Replaces the clock (a test's injected one).
    pub fn set_clock(&self, clock: crate::policy::cost::Clock) {
        *self.clock.write().unwrap_or_else(|p| p.into_inner()) = clock;
    }

    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        (self.clock.read().unwrap_or_else(|p| p.into_inner()))()
    }

    fn stamp(&self) -> String {
        crate::policy::cost::stamp(self.now())
    }

    /// Task state changes made by this process, as they commit.
    pub fn changes(&self) -> broadcast::Receiver<TaskChange> {
        self.fan.changes.subscribe()
    }

    fn channel(&self, task_id: i64) -> Arc<Mutex<Channel>> {
        self.fan.channel(task_id)
    }

    fn flush_locked(task_id: i64, ch: &mut Channel) {
        if ch.pending.is_empty() {
            return;
        }
        let text = std::mem::take(&mut ch.pending);
        ch.last_flush = Some(Instant::now());
        ch.partial.push_str(&text);
        let _ = ch.tx.send(delta_event(task_id, &text));
    }

    /// Sends the text held back by the delta window: it goes out before the event that is
    /// about to be written, so text and events keep their order.
    fn flush(&self, task_id: i64) {
        let ch = self.channel(task_id);
        Self::flush_locked(task_id, &mut lock(&ch));
    }

    /// Live-only text of the answer being generated. Never persisted.
    pub fn delta(self: &Arc<Self>, task_id: i64, text: &str) {
        let ch = self.channel(task_id);
        let mut guard = lock(&ch);
        guard.pending.push_str(text);
        // The first text of a task goes out at once: a prompt's first chunk (the figure an
        // editor or a script waits on) never waits a window; what follows is coalesced.
        let window_passed = guard.last_flush.is_none_or(|t| t.elapsed() >= self.window);
        if self.window.is_zero() || window_passed {
            Self::flush_locked(task_id, &mut guard);
            return;
        }
        if guard.flush_scheduled {
            return;
        }
        guard.flush_scheduled = true;
        let window = self.window;
        let ch = ch.clone();
        drop(guard);
        let spawned = tokio::runtime::Handle::try_current().map(|h| {
            h.spawn(async move {
                tokio::time::sleep(window).await;
                let mut g = lock(&ch);
                g.flush_scheduled = false;
                Self::flush_locked(task_id, &mut g);
            })
        });
        if spawned.is_err() {
            // No runtime to time the window: flush now rather than hold text back.
            let ch = self.channel(task_id);
            let mut g = lock(&ch);
            g.flush_scheduled = false;
            Self::flush_locked(task_id, &mut g);
        }
    }

    /// Publishes a live-only event (a delta or a reset) without touching the store.
    fn live(&self, task_id: i64, event: &RuntimeEvent) {
        let ch = self.channel(task_id);
        let mut guard = lock(&ch);
        Self::flush_locked(task_id, &mut guard);
        match event {
            RuntimeEvent::AssistantDelta { text } => {
                guard.partial.push_str(text);
                let _ = guard.tx.send(delta_event(task_id, text));
            }
            _ => {
                guard.partial.clear();
                let _ = guard.tx.send(reset_event(task_id, ""));
            }
        }
    }

    /// Persists `event` (with its effects) and publishes it once committed. Live-only
    /// events are published without touching the store. Blocks this thread until the
    /// commit (on a tokio worker, in `block_in_place`); writes from many runs at once share
    /// a group commit.
    pub fn record(
        &self,
        task_id: i64,
        event: &RuntimeEvent,
    ) -> Result<Option<TaskEvent>, StoreError> {
        if event.is_live_only() {
            self.live(task_id, event);
            return Ok(None);
        }
        self.flush(task_id);
        let event = event.clone();
        let fan = self.fan.clone();
        let at = self.stamp();
        let claim = self.claim_of(task_id);
        let stored = self.store.write_queued(
            move |tx| {
                check_claim(tx, claim.as_ref())?;
                apply(tx, task_id, &event, &at)
            },
            move |ev| fan.published(std::iter::once(ev)),
        )?;
        Ok(Some(stored))
    }

    /// `record` for what a person does to a run (answering its approval), which holds
    /// whichever process works the run now: it is not a write of this process's run, so
    /// this process's claim on the session, live or lost, does not apply to it.
    pub fn record_for_person(
        &self,
        task_id: i64,
        event: &RuntimeEvent,
    ) -> Result<Option<TaskEvent>, StoreError> {
        self.flush(task_id);
        let event = event.clone();
        let fan = self.fan.clone();
        let at = self.stamp();
        let stored = self.store.write_queued(
            move |tx| apply(tx, task_id, &event, &at),
            move |ev| fan.published(std::iter::once(ev)),
        )?;
        Ok(Some(stored))
    }

    /// `record` for async callers: awaits the commit without blocking the runtime.
    pub async fn record_async(
        &self,
        task_id: i64,
        event: RuntimeEvent,
    ) -> Result<Option<TaskEvent>, StoreError> {
        if event.is_live_only() {
            self.live(task_id, &event);
            return Ok(None);
        }
        self.flush(task_id);
        let fan = self.fan.clone();
        let at = self.stamp();
        let claim = self.claim_of(task_id);
        let stored = self
            .store
            .write_async_then(
                move |tx| {
                    check_claim(tx, claim.as_ref())?;
                    apply(tx, task_id, &event, &at)
                },
                move |ev| fan.published(std::iter::once(ev)),
            )
            .await?;
        Ok(Some(stored))
    }

    /// Persists several events of one task at once, in order, as one write: they commit
    /// together (with their effects) or not at all, and are published once committed.
    /// For a run that has a burst ready (a model turn's tool calls and their results).
    pub fn record_burst(
        &self,
        task_id: i64,
        burst: &[RuntimeEvent],
    ) -> Result<Vec<TaskEvent>, StoreError> {
        if let Some(live) = burst.iter().find(|e| e.is_live_only()) {
            return Err(StoreError::Invalid(format!(
                "{} is live only and never persisted",
                live.kind()
            )));
        }
        self.flush(task_id);
        let burst = burst.to_vec();
        let fan = self.fan.clone();
        let at = self.stamp();
        let claim = self.claim_of(task_id);
        self.store.write_queued(
            move |tx| {
                check_claim(tx, claim.as_ref())?;
                burst
                    .iter()
                    .map(|ev| apply(tx, task_id, ev, &at))
                    .collect::<Result<Vec<_>, _>>()
            },
            move |stored: &Vec<TaskEvent>| fan.published(stored.iter()),
        )
    }

    /// Runs `f` as one write and publishes the events it returns (which may belong to
    /// other tasks, e.g. a run started at a boundary) once it committed.
    pub fn commit<T: 'static, E: From<StoreError> + 'static>(
        &self,
        task_id: i64,
        f: impl FnOnce(
            &rusqlite::Transaction<'_>,
            &mut Vec<TaskEvent>,
        ) -> Result<(Vec<TaskEvent>, T), E>,
    ) -> Result<(Vec<TaskEvent>, T), E> {
        self.flush(task_id);
        let fan = self.fan.clone();
        let claim = self.claim_of(task_id);
        let (events, extra, value) = self.store.write_then(
            |tx| {
                check_claim(tx, claim.as_ref())?;
                let mut extra = Vec::new();
                let (events, value) = f(tx, &mut extra)?;
                Ok::<_, E>((events, extra, value))
            },
            move |(events, extra, _)| fan.published(events.iter().chain(extra)),
        )?;
        Ok((events.into_iter().chain(extra).collect(), value))
    }

    /// `commit` for writes that belong to no run yet (a new submission, which may start
    /// one): no run's text is flushed; each event goes to the task it names.
    pub fn commit_admission<T: 'static, E: From<StoreError> + 'static>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>, &mut Vec<TaskEvent>) -> Result<T, E>,
    ) -> Result<T, E> {
        let fan = self.fan.clone();
        let (_, value) = self.store.write_then(
            |tx| {
                let mut events = Vec::new();
                let value = f(tx, &mut events)?;
                Ok::<_, E>((events, value))
            },
            move |(events, _)| fan.published(events.iter()),
        )?;
        Ok(value)
    }

    /// `commit_admission` for a closure that owns what it needs: it joins the writer's
    /// group commit, so submissions arriving together share one fsync.
    pub fn commit_admission_queued<T, E>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>, &mut Vec<TaskEvent>) -> Result<T, E> + Send + 'static,
    ) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
    {
        let fan = self.fan.clone();
        let (_, value) = self.store.write_queued(
            move |tx| {
                let mut events = Vec::new();
                let value = f(tx, &mut events)?;
                Ok::<_, E>((events, value))
            },
            move |(events, _): &(Vec<TaskEvent>, T)| fan.published(events.iter()),
        )?;
        Ok(value)
    }

    /// The `postTools` boundary of a run (see `inbox`).
    pub fn post_tools(&self, task_id: i64) -> Result<inbox::PostTools, StoreError> {
        let (_, result) = self.commit(task_id, |tx, out| {
            let task = tasks::get(tx, task_id)?;
            let r = inbox::post_tools_boundary(tx, &task, out)?;
            Ok::<_, StoreError>((Vec::new(), r))
        })?;
        Ok(result)
    }

    /// Ends a run: records `terminal`, settles the run's inputs and, after an answer or a
    /// reset, applies the `final` boundary. Returns the run it started, if any.
    pub fn finish_run(
        &self,
        task_id: i64,
        terminal: &RuntimeEvent,
        ended_by_reset: bool,
    ) -> Result<Option<i64>, StoreError> {
        let at = self.stamp();
        let (_, next) = self.commit(task_id, |tx, out| {
            let stored = apply(tx, task_id, terminal, &at)?;
            let task = tasks::get(tx, task_id)?;
            let answered = matches!(terminal, RuntimeEvent::TaskCompleted { .. });
            let reason = match terminal {
                _ if ended_by_reset => "reset",
                RuntimeEvent::TaskFailed { kind, .. } if kind.is_model() => "model_error",
                RuntimeEvent::TaskFailed { kind, .. } => kind.as_str(),
                RuntimeEvent::TaskCancelled { .. } => "cancelled",
                RuntimeEvent::BudgetExceeded { .. } => "budget_exceeded",
                _ => "ended",
            };
            inbox::settle_run(tx, &task, answered, reason)?;
            let next = if answered || ended_by_reset {
                if ended_by_reset {
                    sessions::set_last_failure(tx, task.session_id, None)?;
                }
                inbox::final_boundary(tx, task.session_id, Some(&task), out)?.next_task
            } else {
                None
            };
            Ok::<_, StoreError>((vec![stored], next))
        })?;
        Ok(next)
    }

    /// Replays persisted events after `after_sequence`, then the answer so far, then
    /// continues live until a task-terminal event.
    pub fn subscribe(
        self: &Arc<Self>,
        task_id: i64,
        after_sequence: i64,
    ) -> Result<Subscription, StoreError> {
        let mut sub = Subscription {
            recorder: self.clone(),
            task_id,
            last: after_sequence,
            rx: None,
            foreign: Some(self.foreign_commits()),
            backlog: std::collections::VecDeque::new(),
            done: false,
        };
        sub.attach(None)?;
        Ok(sub)
    }
}

/// Writes one event and what it means, inside the caller's transaction. `at` stamps the
/// cost row of a model turn (the recorder's clock).
fn apply(
    tx: &rusqlite::Transaction<'_>,
    task_id: i64,
    event: &RuntimeEvent,
    at: &str,
) -> Result<TaskEvent, StoreError> {
    let task = tasks::get(tx, task_id)?;
    let mut recorded = event.clone();
    if let RuntimeEvent::ModelTurnCompleted { cost_usd, .. } = &mut recorded {
        *cost_usd = crate::policy::cost::turn_cost(tx, event)?;
    }
    match event {
        RuntimeEvent::TaskStarted { .. } => {
            // A resumed run is already running; it records that it started again.
            if task.status != TaskStatus::Running {
                tasks::set_status(tx, task_id, TaskStatus::Running)?;
            }
        }
        RuntimeEvent::ModelTurnCompleted { .. } => model_turn_completed(tx, &task, event)?,
        RuntimeEvent::ToolCallStarted { .. }
        | RuntimeEvent::ToolCallCompleted { .. }
        | RuntimeEvent::ToolCallFailed { .. } => tool_call(tx, &task, event)?,
        RuntimeEvent::ApprovalRequired { .. } => {
            let id = approval_required(tx, &task, event)?;
            if let RuntimeEvent::ApprovalRequired { approval_id, .. } = &mut recorded {
                *approval_id = Some(id);
            }
        }
        RuntimeEvent::ApprovalResolved { .. } => approval_resolved(tx, &task, event)?,
        // The compaction entry commits with its audit event, or neither does.
        RuntimeEvent::ContextCompacted { .. } => {
            crate::engine::context::apply_compacted(tx, task.session_id, task_id, event)?
        }
        RuntimeEvent::AgentCompleted { final_answer } => {
            tasks::finish(tx, task_id, Some(final_answer), None)?;
        }
        RuntimeEvent::TaskCompleted { .. }
        | RuntimeEvent::TaskFailed { .. }
        | RuntimeEvent::TaskCancelled { .. }
        | RuntimeEvent::BudgetExceeded { .. } => task_ended(tx, &task, event)?,
        RuntimeEvent::RunPaused { .. } | RuntimeEvent::RunContinued { .. } => {
            crate::policy::pause::apply(tx, &task, event)?
        }
        RuntimeEvent::HookRan { .. } => hook_ran(tx, &task, event)?,
        RuntimeEvent::PlanProposed { plan, source, .. } => {
            let id = store::plans::propose(tx, task.session_id, task_id, plan, *source)?;
            if let RuntimeEvent::PlanProposed { plan_id, .. } = &mut recorded {
                *plan_id = Some(id);
            }
        }
        RuntimeEvent::PlanStepDone { plan_id, step } => {
            store::plans::step_done(tx, *plan_id, *step)?;
        }
        RuntimeEvent::TaskCreated { .. }
        | RuntimeEvent::ModelTurnStarted { .. }
        | RuntimeEvent::InputPlaced { .. }
        | RuntimeEvent::McpProblem { .. }
        | RuntimeEvent::ToolCallRepaired { .. }
        | RuntimeEvent::AllowedByRule { .. } => {}
        RuntimeEvent::AssistantDelta { .. } | RuntimeEvent::StreamReset { .. } => {
            return Err(StoreError::Invalid(format!(
                "{} is live only and never persisted",
                event.kind()
            )))
        }
    }
    sessions::touch(tx, task.session_id)?;
    let stored = events::append(tx, task_id, &recorded)?;
    crate::policy::cost::record_turn(tx, &task, &stored, at)?;
    Ok(stored)
}

/// A transcript entry of the task's session, written by its run.
fn entry(
    tx: &rusqlite::Transaction<'_>,
    task: &store::Task,
    kind: EntryKind,
    content: &serde_json::Value,
) -> Result<i64, StoreError> {
    entries::append(tx, task.session_id, Some(task.id), &kind, content)
}

/// What a session, prompt or stop hook added joins the conversation with its record.
fn hook_ran(
    tx: &rusqlite::Transaction<'_>,
    task: &store::Task,
    event: &RuntimeEvent,
) -> Result<(), StoreError> {
    let RuntimeEvent::HookRan {
        hook_event,
        command,
        context: Some(context),
        ..
    } = event
    else {
        return Ok(());
    };
    if !crate::policy::hooks::adds_message(*hook_event) {
        return Ok(());
    }
    let text = crate::policy::hooks::conversation_text(*hook_event, command, context);
    entry(
        tx,
        task,
        EntryKind::User,
        &serde_json::json!({ "text": text }),
    )?;
    Ok(())
}

/// The assistant's turn: its transcript entry, the step reached, the tokens used.
fn model_turn_completed(
    tx: &rusqlite::Transaction<'_>,
    task: &store::Task,
    event: &RuntimeEvent,
) -> Result<(), StoreError> {
    let RuntimeEvent::ModelTurnCompleted {
        step,
        text,
        tool_calls,
        usage,
        ..
    } = event
    else {
        return Ok(());
    };
    let content = serde_json::json!({ "text": text, "tool_calls": tool_calls });
    entry(tx, task, EntryKind::Assistant, &content)?;
    tasks::set_step(tx, task.id, *step)?;
    if let Some(u) = usage {
        tasks::add_usage(tx, task.id, u.prompt_tokens, u.completion_tokens)?;
    }
    Ok(())
}

/// A tool call's journal row (its intent, then its outcome) and its transcript result.
fn tool_call(
    tx: &rusqlite::Transaction<'_>,
    task: &store::Task,
    event: &RuntimeEvent,
) -> Result<(), StoreError> {
    let task_id = task.id;
    // A call's outcome belongs to the turn it was asked in: the task's last step (a run
    // stops before the next turn while a call waits or is carried out).
    let step = task.step_count;
    match event {
        RuntimeEvent::ToolCallStarted {
            step,
            call_id,
            name,
            arguments,
            capability,
            replay_safe,
            ..
        } => {
            tool_calls::intent(
                tx,
                &tool_calls::Intent {
                    task_id,
                    call_id,
                    step: *step,
                    name,
                    arguments,
                    capability: capability.as_deref(),
                    replay_safe: *replay_safe,
                },
            )?;
        }
        RuntimeEvent::ToolCallCompleted {
            call_id, output, ..
        } => {
            tool_calls::finish(
                tx,
                task_id,
                step,
                call_id,
                ToolCallStatus::Done,
                output,
                false,
            )?;
            let content =
                serde_json::json!({ "call_id": call_id, "text": output, "is_error": false });
            entry(tx, task, EntryKind::ToolResult, &content)?;
        }
        RuntimeEvent::ToolCallFailed {
            call_id,
            name,
            error,
            kind,
        } => {
            // A call refused before it ran has no journal row; one that ran has.
            if tool_calls::get(tx, task_id, step, call_id)?.is_some() {
                let status = if *kind == ToolErrorKind::Interrupted {
                    ToolCallStatus::Interrupted
                } else {
                    ToolCallStatus::Done
                };
                tool_calls::finish(tx, task_id, step, call_id, status, error, true)?;
            }
            let text = format!("Tool {name} failed: {error}");
            let content = serde_json::json!({ "call_id": call_id, "text": text, "is_error": true });
            entry(tx, task, EntryKind::ToolResult, &content)?;
        }
        _ => {}
    }
    Ok(())
}

/// A call waits for a person: its approval row (whose id the event records) and the
/// task's status.
fn approval_required(
    tx: &rusqlite::Transaction<'_>,
    task: &store::Task,
    event: &RuntimeEvent,
) -> Result<i64, StoreError> {
    let RuntimeEvent::ApprovalRequired {
        step,
        call_id,
        name,
        arguments,
        capability,
        effect,
        reason,
        ..
    } = event
    else {
        return Err(StoreError::Invalid(format!(
            "{} is not an approval request",
            event.kind()
        )));
    };
    let id = approvals::insert(
        tx,
        &approvals::NewApproval {
            task_id: task.id,
            call_id,
            tool: name,
            capability: capability.as_deref(),
            arguments,
            effect,
            reason,
            step: *step,
        },
    )?;
    tasks::set_status(tx, task.id, TaskStatus::WaitingApproval)?;
    Ok(id)
}

/// A person answered: the approval row, a session grant if they gave one, and the run
/// goes on.
fn approval_resolved(
    tx: &rusqlite::Transaction<'_>,
    task: &store::Task,
    event: &RuntimeEvent,
) -> Result<(), StoreError> {
    let RuntimeEvent::ApprovalResolved {
        approval_id,
        approved,
        session_grant,
        edited_arguments,
        note,
        by,
        ..
    } = event
    else {
        return Ok(());
    };
    let resolved = approvals::resolve(
        tx,
        *approval_id,
        &approvals::Resolution {
            approved: *approved,
            note: note.as_deref(),
            edited_args: edited_arguments.as_ref(),
            session_grant: *session_grant,
            by,
        },
    )?;
    if *session_grant {
        if let Some(cap) = &resolved.capability {
            sessions::add_grant(tx, task.session_id, cap)?;
        }
    }
    tasks::set_status(tx, task.id, TaskStatus::Running)?;
    Ok(())
}

/// A task-terminal event: the task's status and outcome, and the session's last failure.
fn task_ended(
    tx: &rusqlite::Transaction<'_>,
    task: &store::Task,
    event: &RuntimeEvent,
) -> Result<(), StoreError> {
    let (status, answer, error) = match event {
        RuntimeEvent::TaskCompleted { final_answer } => {
            (TaskStatus::Completed, Some(final_answer), None)
        }
        RuntimeEvent::TaskFailed { error, .. } => (TaskStatus::Failed, None, Some(error)),
        RuntimeEvent::TaskCancelled { reason } => (TaskStatus::Cancelled, None, Some(reason)),
        RuntimeEvent::BudgetExceeded { reason, .. } => {
            (TaskStatus::BudgetExceeded, None, Some(reason))
        }
        _ => return Ok(()),
    };
    tasks::set_status(tx, task.id, status)?;
    if task.pause.is_some() {
        tasks::set_pause(tx, task.id, None)?;
    }
    tasks::finish(
        tx,
        task.id,
        answer.map(String::as_str),
        error.map(String::as_str),
    )?;
    sessions::set_last_failure(tx, task.session_id, error.map(String::as_str))
}

/// A live view of one task's events. See `Recorder::subscribe`.
pub struct Subscription {
    recorder: Arc<Recorder>,
    task_id: i64,
    last: i64,
    rx: Option<broadcast::Receiver<Arc<TaskEvent>>>,
    /// Another process may be running this task: its persisted events reach us through
    /// the store (its deltas do not), looked up when it commits.
    foreign: Option<tokio::sync::watch::Receiver<u64>>,
    backlog: std::collections::VecDeque<TaskEvent>,
    done: bool,
}

impl Subscription {
    /// (Re)attaches: replay from the store and the text so far, taken atomically with the
    /// live receiver. `reset` makes the text so far a `stream_reset` (after a lag) rather
    /// than a delta.
    fn attach(&mut self, reset: Option<()>) -> Result<(), StoreError> {
        let ch = self.recorder.channel(self.task_id);
        let guard = lock(&ch);
        let rx = guard.tx.subscribe();
        let replay = self
            .recorder
            .store
            .read(|c| events::list_after(c, self.task_id, self.last))?;
        // An event that committed but whose publication is still to come may end the
        // turn's text: the text so far is then stale, as its publication will make it.
        let stale = guard.published.is_some_and(|published| {
            replay
                .iter()
                .any(|e| e.sequence > published && ends_turn_text(e.kind()))
        });
        let partial = if stale {
            String::new()
        } else {
            guard.partial.clone()
        };
        drop(guard);
        // Unknown task: a clear error rather than a stream that never ends.
        if replay.is_empty() && self.last == 0 {
            self.recorder.store.read(|c| tasks::get(c, self.task_id))?;
        }
        let terminal = replay.iter().any(|e| e.kind().is_terminal());
        self.backlog.extend(replay);
        if reset.is_some() {
            self.backlog
                .push_back((*reset_event(self.task_id, &partial)).clone());
        } else if !partial.is_empty() && !terminal {
            self.backlog
                .push_back((*delta_event(self.task_id, &partial)).clone());
        }
        self.rx = Some(rx);
        if terminal {
            // Nothing will follow; drop the channel made just to look.
            lock(&self.recorder.fan.channels).remove(&self.task_id);
        }
        Ok(())
    }

    /// The next event, or `None` once a task-terminal event has been delivered.
    pub async fn next(&mut self) -> Option<Result<TaskEvent, StoreError>> {
        loop {
            if self.done {
                return None;
            }
            if let Some(ev) = self.backlog.pop_front() {
                if ev.sequence > 0 {
                    if ev.sequence <= self.last {
                        continue;
                    }
                    self.last = ev.sequence;
                }
                if ev.kind().is_terminal() {
                    self.done = true;
                }
                return Some(Ok(ev));
            }
            let rx = self.rx.as_mut()?;
            let foreign = async {
                match self.foreign.as_mut() {
                    Some(f) => f.changed().await.is_ok(),
                    None => std::future::pending().await,
                }
            };
            let received = tokio::select! {
                r = rx.recv() => r,
                still = foreign => {
                    if !still {
                        // The runtime is going: nothing more will be committed elsewhere
                        // that this subscription could be told of.
                        self.foreign = None;
                        continue;
                    }
                    match self
                        .recorder
                        .store
                        .read(|c| events::list_after(c, self.task_id, self.last))
                    {
                        Ok(found) => self.backlog.extend(found),
                        Err(e) => return Some(Err(e)),
                    }
                    continue;
                }
            };
            match received {
                Ok(ev) => self.backlog.push_back((*ev).clone()),
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    if let Err(e) = self.attach(Some(())) {
                        return Some(Err(e));
                    }
                }
                Err(broadcast::error::RecvError::Closed) => {
                    // The channel went away (task ended): whatever is left is in the store.
                    let replay = match self
                        .recorder
                        .store
                        .read(|c| events::list_after(c, self.task_id, self.last))
                    {
                        Ok(r) => r,
                        Err(e) => return Some(Err(e)),
                    };
                    if replay.is_empty() {
                        if let Err(e) = self.attach(None) {
                            return Some(Err(e));
                        }
                    }
                    self.backlog.extend(replay);
                }
            }
        }
    }
}

/// Records one task's events outside a run (a compaction the person asked for).
pub struct TaskSink<'a> {
    recorder: &'a Recorder,
    task_id: i64,
}

impl Recorder {
    pub fn task_sink(&self, task_id: i64) -> TaskSink<'_> {
        TaskSink {
            recorder: self,
            task_id,
        }
    }
}

impl crate::engine::sink::EventSink for TaskSink<'_> {
    fn emit(&self, event: RuntimeEvent) -> Result<(), crate::engine::sink::RecordError> {
        self.recorder.record(self.task_id, &event)?;
        Ok(())
    }
    fn delta(&self, _text: &str) {}
    fn post_tools(
        &self,
    ) -> Result<crate::engine::sink::Boundary, crate::engine::sink::RecordError> {
        Ok(crate::engine::sink::Boundary::default())
    }
}
