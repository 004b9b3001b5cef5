//! The agent: a bounded model → tool loop. It never touches the store: everything it does
//! is an event handed to its sink, which persists it before returning (so a tool's intent
//! is committed before the tool runs).
//!
//! ```text
//! finish the last turn's calls that have no result: an answered approval or a call cut
//! off by a crash as the store says (`EventSink::left_open`), the rest as fresh calls
//! for step in start..=max_steps:
//!     turn = model(messages)        # deltas streamed; tools only from the complete turn
//!     no tool calls, calls written as text → the turn's calls (`tool_call_repaired`)
//!     no tool calls → agent_completed
//!     each call: policy → allow (run, guarded) | approval (stop before it runs) | deny (tell the model)
//!     the same call with the same result N times, or N identical turns → paused (repetition)
//! a money budget out before a request, tokens or steps exhausted → paused (budget)
//! ```
use std::sync::Arc;

use futures::StreamExt;
use pocketpilot_model::{
    repair_response, BrokenCall, Message, ModelResponse, Provider, ProviderError, Role,
    StreamEvent, TemplateFamily, TextCalls, ToolCall, Usage,
};
use pocketpilot_tools::{PolicyRules, Registry, ToolContext};

use crate::engine::orchestrator::{self, CallEnv, Handled, Origin};
pub use crate::engine::sink::{Boundary, EventSink, LeftOpen, RecordError};
use crate::event::RuntimeEvent;
use crate::policy::repetition::RepetitionGuard;

#[derive(Debug, Clone)]
pub struct AgentLimits {
    pub max_steps: u32,
    /// Tokens (prompt + completion) the task may use in all; `None`: unbounded.
    pub max_tokens: Option<u64>,
    pub stream: bool,
    /// The repetition guard's limit (0: off).
    pub repeat_limit: u32,
}

#[derive(Debug)]
pub enum AgentOutcome {
    Completed {
        final_answer: String,
    },
    WaitingApproval,
    StepsExhausted {
        steps: u32,
    },
    TokenBudget {
        used: u64,
        limit: u64,
    },
    ModelFailed {
        error: ProviderError,
    },
    Cancelled,
    /// The sink could not persist an event: the run stops rather than act unrecorded.
    RecordFailed {
        error: RecordError,
    },
    /// A queued reset ended the run at its `postTools` boundary.
    EndedByReset,
    /// The repetition guard tripped: the run pauses for the person.
    Repeating {
        repeated: pocketpilot_protocol::Repeated,
    },
    /// A `UserPromptSubmit` hook refused the goal: the run fails with its reason.
    PromptBlocked {
        reason: String,
    },
    /// A money budget ran out before the next model request: the run pauses.
    MoneyBudget {
        message: String,
        /// When the pause lifts by itself (the daily cap for unattended runs resets).
        resumes_at: Option<String>,
    },
}

pub struct Agent {
    pub provider: Arc<dyn Provider>,
    pub tools: Registry,
    pub rules: PolicyRules,
    /// Capabilities allowed for the rest of the session from an approval dialog.
    pub grants: Vec<String>,
    /// Capabilities the person allowed for this run when starting it (`--allow`).
    pub user_grants: Vec<String>,
    /// The workspace's command rules, and the session's for a person's run.
    pub command_rules: crate::policy::command_rules::RuleSet,
    pub ctx: ToolContext,
    pub limits: AgentLimits,
    /// Issue 13: the run's context budget; `None` sends the messages as they are.
    pub context: Option<Arc<crate::engine::context::SessionContext>>,
    /// Issue 18: the workspace's instructions, memories and skills for the path without a
    /// context (with one, the view carries them).
    pub preamble: Option<Arc<crate::policy::instructions::Preamble>>,
    /// Issue 16: the run's change journal.
    pub changes: Option<Arc<crate::engine::changes::RunChanges>>,
    /// The run's hooks (the person's, and the workspace's when consented).
    pub hooks: Arc<crate::engine::hooks::RunHooks>,
    /// Plan mode: planning (read only, ends with a plan) or carrying out an approved plan.
    pub plan: crate::engine::plan::PlanScope,
}

use crate::engine::context::{ContextFailure, Prepared, SessionContext, MAX_OVERFLOW_RETRIES};
pub use crate::engine::transcript::{system_prompt, wrap_untrusted};
use pocketpilot_context::Budget;
use pocketpilot_model::openai::Uncounted;
use pocketpilot_protocol::CompactionCause;

/// How the open calls of a turn are decided: at a run's start, those of its last turn
/// (`Recover(turn)`) as the store says they stand first; after a model turn, all fresh.
#[derive(Clone, Copy)]
enum Left {
    Recover(u32),
    Fresh,
}

enum CallResult {
    Done,
    NeedsApproval,
    /// A planning run submitted its plan: the run ends with it as its answer.
    PlanSubmitted(String),
}

/// What a step leaves for the next.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Next {
    /// The turn's calls were handled: steers may join before the next turn.
    AfterTools,
    /// A `Stop` hook asked the agent to go on.
    AfterHook,
}

/// What one step works on: the conversation, the task's usage and the repetition guard.
struct Turn<'a> {
    step: u32,
    messages: &'a mut Vec<Message>,
    used: &'a mut Usage,
    guard: &'a mut RepetitionGuard,
}

/// After a turn's calls: the run goes on once they are done, waits for an approval, or
/// ends with a submitted plan.
fn go_on_after(result: CallResult, sink: &dyn EventSink) -> Result<(), AgentOutcome> {
    match result {
        CallResult::Done => Ok(()),
        CallResult::NeedsApproval => Err(AgentOutcome::WaitingApproval),
        CallResult::PlanSubmitted(plan) => Err(completed(plan, sink)),
    }
}

impl From<RecordError> for AgentOutcome {
    fn from(error: RecordError) -> Self {
        AgentOutcome::RecordFailed { error }
    }
}

impl From<crate::policy::cost::MoneyOut> for AgentOutcome {
    fn from(out: crate::policy::cost::MoneyOut) -> Self {
        AgentOutcome::MoneyBudget {
            message: out.message,
            resumes_at: out.resumes_at,
        }
    }
}

impl Agent {
    /// What the orchestrator needs of this agent to carry out a call.
    pub fn call_env(&self) -> CallEnv<'_> {
        CallEnv {
            tools: &self.tools,
            rules: &self.rules,
            session_grants: &self.grants,
            run_grants: &self.user_grants,
            command_rules: &self.command_rules,
            ctx: &self.ctx,
            changes: self.changes.as_ref(),
            hooks: &self.hooks,
            plan: &self.plan,
        }
    }

    fn tool_specs(&self) -> Vec<pocketpilot_model::ToolSpec> {
        self.tools.specs()
    }

    /// Runs from `start_step`. `messages` is the whole context (system prompt first), as
    /// the run found the session; `used` is the task's token usage so far. The calls its
    /// last turn left open are finished first, here and only here.
    pub async fn run(
        &self,
        mut messages: Vec<Message>,
        start_step: u32,
        mut used: Usage,
        sink: &dyn EventSink,
    ) -> AgentOutcome {
        let step_of_last = start_step.saturating_sub(1).max(1);
        let mut after_tools = !open_calls(&messages).is_empty()
            || messages.last().is_some_and(|m| m.role == Role::Tool);
        let mut guard = RepetitionGuard::new(self.limits.repeat_limit);
        let left = Left::Recover(start_step.saturating_sub(1));
        let finished = self
            .finish_open_calls(&mut messages, (step_of_last, left), &[], sink, &mut guard)
            .await;
        if let Err(outcome) = finished.and_then(|r| go_on_after(r, sink)) {
            return outcome;
        }
        for step in start_step..=self.limits.max_steps {
            let mut turn = Turn {
                step,
                messages: &mut messages,
                used: &mut used,
                guard: &mut guard,
            };
            match self.step(&mut turn, after_tools, sink).await {
                Ok(next) => after_tools = next == Next::AfterTools,
                Err(outcome) => return outcome,
            }
        }
        AgentOutcome::StepsExhausted {
            steps: self.limits.max_steps,
        }
    }

    /// One step: the model's turn, then its calls. `Err` holds how the run ends.
    async fn step(
        &self,
        turn: &mut Turn<'_>,
        after_tools: bool,
        sink: &dyn EventSink,
    ) -> Result<Next, AgentOutcome> {
        self.before_turn(turn.step, turn.messages, after_tools, sink)?;
        // Budgeted, compacted and retried on a refusal for length (see `model_request`).
        let response = model_request(self, turn.messages, sink).await?;
        // Made calls before the turn is recorded: the stored turn carries them, so a
        // resumed run replays the same calls and the server is sent proper ones back.
        let (response, text_calls) = self.repair_text_calls(response);
        self.record_turn(turn, &response, &text_calls, sink)?;
        if let Some(limit) = self.limits.max_tokens {
            if turn.used.total_tokens > limit {
                return Err(AgentOutcome::TokenBudget {
                    used: turn.used.total_tokens,
                    limit,
                });
            }
        }
        if response.tool_calls.is_empty() {
            return self.answer(turn.messages, response.text, sink).await;
        }
        let refused = text_calls.map(|t| t.broken).unwrap_or_default();
        let step = (turn.step, Left::Fresh);
        let finished = self
            .finish_open_calls(turn.messages, step, &refused, sink, turn.guard)
            .await?;
        go_on_after(finished, sink)?;
        turn.guard.observe_turn(&response);
        if let Some(repeated) = turn.guard.tripped() {
            return Err(AgentOutcome::Repeating {
                repeated: repeated.clone(),
            });
        }
        Ok(Next::AfterTools)
    }

    /// Before a model turn: a cancel or a queued reset ends the run, steers join the
    /// context after tools ran, a spent money budget pauses it; then the turn starts.
    fn before_turn(
        &self,
        step: u32,
        messages: &mut Vec<Message>,
        after_tools: bool,
        sink: &dyn EventSink,
    ) -> Result<(), AgentOutcome> {
        if self.ctx.cancel.is_cancelled() {
            return Err(AgentOutcome::Cancelled);
        }
        if after_tools {
            place_steers(messages, sink)?;
        }
        if let Some(out) = sink.money_out()? {
            return Err(out.into());
        }
        sink.emit(RuntimeEvent::ModelTurnStarted { step })?;
        Ok(())
    }

    /// The model's turn recorded (with the calls made from its text), counted and added
    /// to the conversation.
    fn record_turn(
        &self,
        turn: &mut Turn<'_>,
        response: &ModelResponse,
        text_calls: &Option<TextCalls>,
        sink: &dyn EventSink,
    ) -> Result<(), RecordError> {
        sink.emit(RuntimeEvent::ModelTurnCompleted {
            step: turn.step,
            text: response.text.clone(),
            tool_calls: response.tool_calls.clone(),
            finish_reason: response.finish_reason.clone(),
            usage: response.usage,
            cached_prompt_tokens: response.cached_prompt_tokens,
            model: Some(self.provider.label()),
            cost_usd: None,
        })?;
        if let Some(u) = response.usage {
            turn.used.add(u);
        }
        record_repairs(text_calls, sink)?;
        turn.messages.push(Message::assistant(
            response.text.clone(),
            response.tool_calls.clone(),
        ));
        Ok(())
    }

    /// A turn without calls: the run completes with its text, unless a `Stop` hook asks
    /// it to go on.
    async fn answer(
        &self,
        messages: &mut Vec<Message>,
        text: String,
        sink: &dyn EventSink,
    ) -> Result<Next, AgentOutcome> {
        if self.stop_hooks(messages, &text, sink).await? {
            return Ok(Next::AfterHook);
        }
        // A planning run that wrote its plan instead of submitting it.
        crate::engine::plan::from_answer(&self.plan, &text, sink)?;
        Err(completed(text, sink))
    }

    /// The hooks of a run's start, before the model is first asked: `SessionStart` for a
    /// session's first run, then `UserPromptSubmit` with the goal. What they add joins
    /// the conversation; a blocked goal ends the run with the hook's reason.
    pub async fn start_hooks(
        &self,
        messages: &mut Vec<Message>,
        first_of_session: bool,
        goal: &str,
        sink: &dyn EventSink,
    ) -> Result<(), AgentOutcome> {
        use pocketpilot_protocol::HookEvent;
        let record = |error| AgentOutcome::RecordFailed { error };
        if first_of_session {
            let mut fields = serde_json::Map::new();
            fields.insert("source".into(), "startup".into());
            let fired = self
                .hooks
                .fire(HookEvent::SessionStart, None, fields, &self.ctx, sink)
                .await
                .map_err(record)?;
            messages.extend(fired.added.into_iter().map(Message::user));
        }
        let mut fields = serde_json::Map::new();
        fields.insert("prompt".into(), goal.into());
        let fired = self
            .hooks
            .fire(HookEvent::UserPromptSubmit, None, fields, &self.ctx, sink)
            .await
            .map_err(record)?;
        if let Some(reason) = fired.blocked {
            return Err(AgentOutcome::PromptBlocked { reason });
        }
        messages.extend(fired.added.into_iter().map(Message::user));
        Ok(())
    }

    /// The `Stop` hooks, before the agent finishes with `answer`: `true` when one asks it
    /// to go on (at most once per run), its reason then the next message.
    async fn stop_hooks(
        &self,
        messages: &mut Vec<Message>,
        answer: &str,
        sink: &dyn EventSink,
    ) -> Result<bool, RecordError> {
        let mut fields = serde_json::Map::new();
        fields.insert("last_assistant_message".into(), answer.into());
        let fired = self
            .hooks
            .fire(
                pocketpilot_protocol::HookEvent::Stop,
                None,
                fields,
                &self.ctx,
                sink,
            )
            .await?;
        if fired.blocked.is_none() {
            return Ok(false);
        }
        messages.extend(fired.added.into_iter().map(Message::user));
        Ok(true)
    }

    /// Handles, in order, the calls of the last assistant message that have no result yet.
    /// `refused`: calls written as text that could not be read, answered with what was
    /// wrong (after a crash they are unknown here, and the orchestrator refuses them: their
    /// name or arguments are not a runnable call).
    /// At a run's start (`Left::Recover`), the leading calls the store shows answered or
    /// cut off are carried out as such (see [`Agent::recovered`]); from the first that is
    /// neither, every call is a fresh one.
    async fn finish_open_calls(
        &self,
        messages: &mut Vec<Message>,
        (step, mut left): (u32, Left),
        refused: &[BrokenCall],
        sink: &dyn EventSink,
        guard: &mut RepetitionGuard,
    ) -> Result<CallResult, AgentOutcome> {
        let mut submitted: Option<String> = None;
        for call in open_calls(messages) {
            if let Left::Recover(turn) = left {
                match self.recovered(&call, turn, sink).await {
                    Ok(Some(Handled::NeedsApproval)) => return Ok(CallResult::NeedsApproval),
                    Ok(Some(Handled::Done(text) | Handled::PlanSubmitted(text))) => {
                        let text = wrap_untrusted("tool result", &text);
                        messages.push(Message::tool_result(call.id.clone(), text));
                        continue;
                    }
                    Ok(None) => left = Left::Fresh,
                    Err(error) => return Err(AgentOutcome::RecordFailed { error }),
                }
            }
            if self.ctx.cancel.is_cancelled() {
                return Err(AgentOutcome::Cancelled);
            }
            // Calls after a submitted plan are answered, never run: the plan ends the run.
            if submitted.is_some() {
                let text = match not_after_plan(&call, sink) {
                    Ok(text) => text,
                    Err(error) => return Err(AgentOutcome::RecordFailed { error }),
                };
                messages.push(Message::tool_result(call.id.clone(), text));
                continue;
            }
            if let Some(broken) = refused.iter().find(|b| b.call.id == call.id) {
                let text = match refuse_broken(broken, sink) {
                    Ok(text) => text,
                    Err(error) => return Err(AgentOutcome::RecordFailed { error }),
                };
                guard.observe_call(&call, &text);
                messages.push(Message::tool_result(
                    call.id.clone(),
                    wrap_untrusted("tool result", &text),
                ));
                continue;
            }
            let text = match orchestrator::carry_out(
                &self.call_env(),
                &call,
                Origin::Fresh { step },
                sink,
            )
            .await
            {
                Ok(Handled::Done(text)) => text,
                Ok(Handled::NeedsApproval) => return Ok(CallResult::NeedsApproval),
                Ok(Handled::PlanSubmitted(plan)) => {
                    submitted = Some(plan.clone());
                    plan
                }
                Err(error) => return Err(AgentOutcome::RecordFailed { error }),
            };
            guard.observe_call(&call, &text);
            messages.push(Message::tool_result(
                call.id.clone(),
                wrap_untrusted("tool result", &text),
            ));
        }
        Ok(submitted.map_or(CallResult::Done, CallResult::PlanSubmitted))
    }

    /// A call left open when the run starts, carried out as the store says it stands: an
    /// answered approval (approved: the call runs, guarded again by the tool; rejected:
    /// the model is told), or a call the journal shows started and never finished (a
    /// crash: re-run if replay-safe, otherwise the model is told it was interrupted).
    /// `None`: neither, a fresh call.
    async fn recovered(
        &self,
        call: &ToolCall,
        turn: u32,
        sink: &dyn EventSink,
    ) -> Result<Option<Handled>, RecordError> {
        let Some(left) = sink.left_open(turn, call)? else {
            return Ok(None);
        };
        let origin = match &left {
            LeftOpen::Answered(a) => Origin::Answered(a),
            LeftOpen::Interrupted(j) => Origin::Interrupted(j),
        };
        orchestrator::carry_out(&self.call_env(), call, origin, sink)
            .await
            .map(Some)
    }

    /// A response without `tool_calls` whose text holds calls becomes a response with
    /// those calls (and the text without them); any other response is as it came.
    fn repair_text_calls(&self, response: ModelResponse) -> (ModelResponse, Option<TextCalls>) {
        let family = self
            .context
            .as_ref()
            .and_then(|c| c.template_family())
            .unwrap_or_else(|| template_family(&self.provider.label()));
        // Withheld tools count too: a call to one is then denied by the policy, visibly.
        let Some(found) = repair_response(&response, &self.tools.all_specs(), family) else {
            return (response, None);
        };
        tracing::info!(
            repaired = found.calls.len(),
            broken = found.broken.len(),
            ?family,
            "tool calls written as text"
        );
        let repaired = ModelResponse {
            text: found.remaining_text.clone(),
            tool_calls: found.tool_calls(),
            ..response
        };
        (repaired, Some(found))
    }

    pub(crate) async fn model_turn(
        &self,
        messages: &[Message],
        sink: &dyn EventSink,
    ) -> Result<ModelResponse, TurnError> {
        let cancel = &self.ctx.cancel;
        if !self.limits.stream {
            return tokio::select! {
                r = self.provider.complete(messages.to_vec(), self.tool_specs()) => r.map_err(TurnError::Model),
                _ = cancel.cancelled() => Err(TurnError::Cancelled),
            };
        }
        // Falling back to a plain request when a stream fails early is the provider's
        // business: it knows which failures a second request could fix.
        let mut stream = self.provider.stream(messages.to_vec(), self.tool_specs());
        loop {
            let item = tokio::select! {
                item = stream.next() => item,
                _ = cancel.cancelled() => return Err(TurnError::Cancelled),
            };
            match item {
                Some(Ok(StreamEvent::Delta(text))) => sink.delta(&text),
                Some(Ok(StreamEvent::Reset)) => {
                    let _ = sink.emit(RuntimeEvent::StreamReset {
                        text: String::new(),
                    });
                }
                Some(Ok(StreamEvent::Done(response))) => return Ok(response),
                Some(Err(error)) => {
                    let _ = sink.emit(RuntimeEvent::StreamReset {
                        text: String::new(),
                    });
                    return Err(TurnError::Model(error));
                }
                None => {
                    return Err(TurnError::Model(ProviderError::Stream(
                        "the stream ended without a complete answer".into(),
                    )))
                }
            }
        }
    }
}

impl From<TurnError> for AgentOutcome {
    fn from(e: TurnError) -> Self {
        match e {
            TurnError::Cancelled => AgentOutcome::Cancelled,
            TurnError::Model(error) => AgentOutcome::ModelFailed { error },
            TurnError::Record(error) => AgentOutcome::RecordFailed { error },
        }
    }
}

pub(crate) enum TurnError {
    Cancelled,
    Model(ProviderError),
    /// Issue 13: the context could not be read or its compaction recorded.
    Record(crate::engine::sink::RecordError),
}

/// The template family of the model behind `label` when its server named no chat
/// template: what an OpenAI-compatible server's model name says; any other provider reads
/// every form.
fn template_family(label: &str) -> TemplateFamily {
    label
        .strip_prefix("openai:")
        .map_or(TemplateFamily::Generic, TemplateFamily::from_model_name)
}

/// The run's answer: recorded, and the run ends with it.
fn completed(final_answer: String, sink: &dyn EventSink) -> AgentOutcome {
    if let Err(error) = sink.emit(RuntimeEvent::AgentCompleted {
        final_answer: final_answer.clone(),
    }) {
        return AgentOutcome::RecordFailed { error };
    }
    AgentOutcome::Completed { final_answer }
}

/// A call the model made in the same turn after submitting its plan: not run.
fn not_after_plan(call: &ToolCall, sink: &dyn EventSink) -> Result<String, RecordError> {
    let error = "not run: the plan was submitted, and nothing runs before the person approves it";
    sink.emit(RuntimeEvent::ToolCallFailed {
        call_id: call.id.clone(),
        name: call.name.clone(),
        error: error.into(),
        kind: pocketpilot_protocol::ToolErrorKind::Rejected,
    })?;
    Ok(format!("Tool {} failed: {error}", call.name))
}

/// Each call made from text, recorded with what it was read from before it is handled.
fn record_repairs(found: &Option<TextCalls>, sink: &dyn EventSink) -> Result<(), RecordError> {
    for c in found.iter().flat_map(|f| &f.calls) {
        sink.emit(RuntimeEvent::ToolCallRepaired {
            call_id: c.call.id.clone(),
            tool: c.call.name.clone(),
            original: c.original.clone(),
            fixes: c.fixes.clone(),
        })?;
    }
    Ok(())
}

/// A call written as text that could not be read: the model is told what was wrong, as
/// for any call refused before it runs.
fn refuse_broken(broken: &BrokenCall, sink: &dyn EventSink) -> Result<String, RecordError> {
    let error = broken.problem.to_string();
    let text = format!("Tool {} failed: {error}", broken.call.name);
    sink.emit(RuntimeEvent::ToolCallFailed {
        call_id: broken.call.id.clone(),
        name: broken.call.name.clone(),
        error,
        kind: broken.problem.kind(),
    })?;
    Ok(text)
}

/// The `postTools` boundary: steers join the context; a queued reset ends the run.
fn place_steers(messages: &mut Vec<Message>, sink: &dyn EventSink) -> Result<(), AgentOutcome> {
    match sink.post_tools() {
        Ok(b) if b.end_run => Err(AgentOutcome::EndedByReset),
        Ok(b) => {
            messages.extend(b.steers.into_iter().map(Message::user));
            Ok(())
        }
        Err(error) => Err(AgentOutcome::RecordFailed { error }),
    }
}

/// Calls of the last assistant message with no tool result after it — only while that
/// message is still the end of the conversation (nothing but tool results after it).
pub fn open_calls(messages: &[Message]) -> Vec<ToolCall> {
    let Some(pos) = messages.iter().rposition(|m| m.role != Role::Tool) else {
        return Vec::new();
    };
    if messages[pos].role != Role::Assistant {
        return Vec::new();
    }
    let answered: Vec<&str> = messages[pos + 1..]
        .iter()
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    messages[pos]
        .tool_calls
        .iter()
        .filter(|c| !answered.contains(&c.id.as_str()))
        .cloned()
        .collect()
}

/// What the server's count says of a prepared request.
enum Counted {
    /// It fits, or the server does not count (the estimate stands).
    Fits,
    /// Over the window by the server's count.
    Over(u32),
    /// The server did not count it in time: the estimate is all there is.
    NoAnswer,
}

async fn counted_over(
    ctx: &SessionContext,
    agent: &Agent,
    prepared: &Prepared,
    tools: &[pocketpilot_model::ToolSpec],
) -> Counted {
    let n = match ctx.count(agent.provider.as_ref(), prepared, tools).await {
        Ok(n) => n,
        Err(Uncounted::NotCounted) => return Counted::Fits,
        Err(Uncounted::NoAnswer) => return Counted::NoAnswer,
    };
    let budget = &prepared.budget;
    let room = budget.window.saturating_sub(budget.output_reserve);
    if n <= room {
        return Counted::Fits;
    }
    tracing::info!(counted = n, room, "counted over the window: planning again");
    Counted::Over(n)
}

/// The model request of one agent step (the hook in `Agent::run`): without a context,
/// the messages as they are; with one, the budgeted view, retried tighter on a refusal
/// for length and never sent twice the same.
pub(crate) async fn model_request(
    agent: &Agent,
    messages: &[Message],
    sink: &dyn EventSink,
) -> Result<ModelResponse, TurnError> {
    let Some(ctx) = &agent.context else {
        return match &agent.preamble {
            Some(p) => {
                let messages = crate::policy::instructions::apply(p, messages);
                agent.model_turn(&messages, sink).await
            }
            None => agent.model_turn(messages, sink).await,
        };
    };
    let tools = agent.tools.specs();
    let mut tries = Tries::default();
    loop {
        let cancel = &agent.ctx.cancel;
        let prepared = tokio::select! {
            p = ctx.prepare(agent.provider.as_ref(), &tools, tries.extra_margin, None, tries.cause, sink) => p,
            _ = cancel.cancelled() => return Err(TurnError::Cancelled),
        };
        let prepared = prepared.map_err(|e| unprepared(ctx, e))?;
        // Where the server counts before a request is sent (llama.cpp), a request it would
        // refuse is planned again at once, from its exact figure, and never sent: every
        // plan is counted, the last one after a refusal too.
        let counted = counted_over(ctx, agent, &prepared, &tools).await;
        let Some(prepared) = tries.after_count(ctx, counted, prepared)? else {
            continue;
        };
        if tries.last_sent.as_ref() == Some(&prepared.messages) {
            return Err(overflow(
                ctx,
                None,
                "the server refused the request for length and it cannot be made smaller",
            ));
        }
        if prepared.compacted {
            pre_compact(agent, sink).await?;
        }
        match agent.model_turn(&prepared.messages, sink).await {
            Ok(response) => {
                ctx.observe(&prepared, &tools, Some(&response));
                return Ok(response);
            }
            Err(TurnError::Model(ProviderError::ContextOverflow {
                requested, window, ..
            })) if tries.attempt < MAX_OVERFLOW_RETRIES => {
                ctx.observe(&prepared, &tools, None);
                tracing::info!(
                    ?requested,
                    ?window,
                    attempt = tries.attempt,
                    "refused for length: compacting harder"
                );
                tries.refused(ctx, (requested, window), prepared);
            }
            Err(e) => {
                ctx.observe(&prepared, &tools, None);
                return Err(e);
            }
        }
    }
}

/// The turn's failure for a request too large for the window.
fn overflow(ctx: &SessionContext, requested: Option<u32>, message: &str) -> TurnError {
    TurnError::Model(ProviderError::ContextOverflow {
        requested,
        window: Some(ctx.window().tokens),
        message: message.into(),
    })
}

/// Plans of one request the server may count over its window before the turn fails
/// instead: each one after the first is planned from the count, with more margin.
const MAX_COUNTED_REPLANS: u32 = 4;

/// The attempts at one model request: how much tighter the next plan is, and what was
/// already counted too big or refused, so that the same request is not tried again.
struct Tries {
    extra_margin: u32,
    cause: CompactionCause,
    last_sent: Option<Vec<Message>>,
    last_counted: Option<Vec<Message>>,
    /// Requests refused for length.
    attempt: u32,
    /// Plans the server counted over the window (none of them sent).
    counted: u32,
    /// The margin for a request the server did not count was added.
    uncounted: bool,
}

impl Default for Tries {
    fn default() -> Self {
        Tries {
            extra_margin: 0,
            cause: CompactionCause::BeforeRequest,
            last_sent: None,
            last_counted: None,
            attempt: 0,
            counted: 0,
            uncounted: false,
        }
    }
}

impl Tries {
    /// The prepared request to send after the server's count, or `None` to plan again.
    fn after_count(
        &mut self,
        ctx: &SessionContext,
        counted: Counted,
        prepared: Prepared,
    ) -> Result<Option<Prepared>, TurnError> {
        match counted {
            Counted::Over(n) if self.counted < MAX_COUNTED_REPLANS => {
                self.counted_over(ctx, n, prepared);
                Ok(None)
            }
            Counted::Over(n) => Err(overflow(
                ctx,
                Some(n),
                "by the server's count the request does not fit the window and cannot be made \
                 smaller",
            )),
            // A server that counts is busy: the estimate, which can be a few percent
            // short, gets the margin a refusal would, once, rather than a refusal.
            Counted::NoAnswer if !self.uncounted => {
                self.uncounted(&prepared.budget);
                Ok(None)
            }
            Counted::NoAnswer | Counted::Fits => Ok(Some(prepared)),
        }
    }

    /// The server counted `prepared` at `n` tokens, over the window.
    fn counted_over(&mut self, ctx: &SessionContext, n: u32, prepared: Prepared) {
        // The count anchors the next plan, which then sees the request's true size; only
        // a request already compacted (or planned the same again) needs the tighter
        // margin a refusal gets.
        if prepared.compacted || self.last_counted.as_ref() == Some(&prepared.messages) {
            self.extra_margin =
                self.extra_margin
                    .saturating_add(ctx.refused(Some(n), None, &prepared.budget));
        }
        self.last_counted = Some(prepared.messages);
        self.counted += 1;
    }

    /// The server did not count a request in time: plan again with a tenth of the room
    /// spare, as after a refusal.
    fn uncounted(&mut self, budget: &Budget) {
        self.extra_margin = self.extra_margin.saturating_add(budget.limit() / 10);
        self.uncounted = true;
    }

    /// The server refused `prepared` for length, saying the sizes it knew.
    fn refused(
        &mut self,
        ctx: &SessionContext,
        (requested, window): (Option<u32>, Option<u32>),
        prepared: Prepared,
    ) {
        self.extra_margin =
            self.extra_margin
                .saturating_add(ctx.refused(requested, window, &prepared.budget));
        self.cause = CompactionCause::Overflow;
        self.last_sent = Some(prepared.messages);
        self.attempt += 1;
    }
}

/// A view that could not be prepared, as the model turn's failure.
fn unprepared(ctx: &SessionContext, e: ContextFailure) -> TurnError {
    match e {
        ContextFailure::NothingFits(e) => TurnError::Model(ProviderError::ContextOverflow {
            requested: None,
            window: Some(ctx.window().tokens),
            message: e.to_string(),
        }),
        ContextFailure::Record(e) => TurnError::Record(e),
        ContextFailure::Store(e) => TurnError::Record(e.into()),
        e @ (ContextFailure::NoTask
        | ContextFailure::Provider(_)
        | ContextFailure::Busy(_)
        | ContextFailure::Differs(_)) => {
            TurnError::Model(ProviderError::InvalidResponse(e.to_string()))
        }
    }
}

/// The `PreCompact` hooks, once the view is planned compacted and before it is sent: they
/// can look and record, not stop it (as in Claude Code, exit 2 only shows stderr).
async fn pre_compact(agent: &Agent, sink: &dyn EventSink) -> Result<(), TurnError> {
    agent
        .hooks
        .fire(
            pocketpilot_protocol::HookEvent::PreCompact,
            None,
            crate::engine::hooks::pre_compact_fields("auto"),
            &agent.ctx,
            sink,
        )
        .await
        .map_err(TurnError::Record)?;
    Ok(())
}
