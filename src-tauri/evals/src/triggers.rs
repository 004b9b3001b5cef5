//! Cases that start work the way triggers do: `setup.webhooks` (the real listener on
//! 127.0.0.1, real HTTP requests), `start.webhook` and `start.schedule` (a schedule on an
//! injected clock the runtime shares, so a day's budget can end and begin again).
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pocketpilot_core::api::service::Runtime;
use pocketpilot_core::ops;
use pocketpilot_protocol::task::TaskStatus;
use pocketpilot_triggers::{cron, webhook, Clock, HostOptions, ManualClock, TriggerHost};

use super::case::{expand, Case, HookRequest, PauseAction, Schedule, Token};
use super::runner::{CaseEnv, CaseError};

/// The case's trigger host and what its requests need.
pub(super) struct Triggers {
    host: Mutex<Option<TriggerHost>>,
    addr: Option<SocketAddr>,
    /// Hook name → its token (shown once at creation).
    tokens: BTreeMap<String, String>,
    clock: Option<Arc<ManualClock>>,
    schedule: Option<i64>,
    client: reqwest::Client,
}

/// An answer of the listener: status and body text.
pub(super) type Reply = (u16, String);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Makes the case's hooks and schedule, then starts the host (webhooks only when the case
/// has hooks); `None` when the case has neither.
pub(super) async fn start(
    case: &Case,
    rt: &Arc<Runtime>,
    env: &CaseEnv,
    provider: Option<&str>,
) -> Result<Option<Triggers>, CaseError> {
    let schedule = match &case.start {
        Some(super::case::Start::Schedule(s)) => Some(s),
        _ => None,
    };
    if case.setup.webhooks.is_empty() && schedule.is_none() {
        return Ok(None);
    }
    let mut tokens = BTreeMap::new();
    for spec in &case.setup.webhooks {
        let hook = webhook::create(rt, &spec.name, &env.workspace, provider)
            .map_err(|e| CaseError::context(format!("setup.webhooks `{}`", spec.name), e))?;
        if spec.paused {
            webhook::set_paused(rt, &spec.name, true)
                .map_err(|e| CaseError::context("pausing a hook", e))?;
        }
        tokens.insert(spec.name.clone(), hook.token);
    }
    let (clock, schedule) = match schedule {
        Some(s) => {
            let clock = ManualClock::new(s.clock);
            let c = clock.clone();
            rt.call(ops::SetClock {
                clock: Arc::new(move || c.now()),
            });
            (
                Some(clock),
                Some(make_schedule(rt, case, env, s, provider)?),
            )
        }
        None => (None, None),
    };
    let host_clock: Arc<dyn Clock> = match &clock {
        Some(c) => c.clone(),
        None => Arc::new(pocketpilot_triggers::SystemClock::default()),
    };
    let settings = pocketpilot_triggers::TriggerSettings {
        port: 0,
        webhook_rate_per_minute: 10_000,
        webhook_burst: 10_000,
        reload_secs: 1,
        ..Default::default()
    };
    let opts = HostOptions {
        port: Some(0),
        webhooks: !case.setup.webhooks.is_empty(),
        clock: host_clock,
        settings: Some(settings),
    };
    let host = TriggerHost::start(rt.clone(), opts)
        .await
        .map_err(|e| CaseError::context("starting the triggers", e))?;
    Ok(Some(Triggers {
        addr: host.webhook_addr(),
        host: Mutex::new(Some(host)),
        tokens,
        clock,
        schedule,
        client: reqwest::Client::new(),
    }))
}

fn make_schedule(
    rt: &Arc<Runtime>,
    case: &Case,
    env: &CaseEnv,
    s: &Schedule,
    provider: Option<&str>,
) -> Result<i64, CaseError> {
    let new = cron::NewSchedule {
        expr: s.expr.clone(),
        workspace: env.workspace.clone(),
        goal: case.goal.clone(),
        provider: provider.map(str::to_owned),
        catch_up: false,
    };
    let made =
        cron::create(rt, &new, s.clock).map_err(|e| CaseError::context("start.schedule", e))?;
    Ok(made.id)
}

impl Triggers {
    /// Stops the host (its loops hold the runtime).
    pub async fn shutdown(&self) {
        let host = lock(&self.host).take();
        if let Some(host) = host {
            host.shutdown().await;
        }
    }

    /// `POST /hooks/{hook}` with `token` and a JSON `body`.
    pub async fn post(
        &self,
        hook: &str,
        token: &Token,
        body: &serde_json::Value,
    ) -> Result<Reply, CaseError> {
        let addr = self
            .addr
            .ok_or_else(|| CaseError::Case("a webhook request needs `setup.webhooks`".into()))?;
        let token = match token {
            Token::Own => Some(self.token_of(hook)?),
            Token::Of(other) => Some(self.token_of(other)?),
            Token::Wrong => Some("0".repeat(64)),
            Token::Missing => None,
        };
        let mut req = self
            .client
            .post(format!("http://{addr}/hooks/{hook}"))
            .json(body);
        if let Some(token) = token {
            req = req.header("X-PocketPilot-Token", token);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| CaseError::Case(format!("POST /hooks/{hook}: {e}")))?;
        let status = resp.status().as_u16();
        let text = resp
            .text()
            .await
            .map_err(|e| CaseError::Case(format!("POST /hooks/{hook}: the body: {e}")))?;
        Ok((status, text))
    }

    /// The token of a hook of `setup.webhooks`; any other name has none (a request to an
    /// unknown hook presents another's or a wrong one).
    fn token_of(&self, hook: &str) -> Result<String, CaseError> {
        self.tokens.get(hook).cloned().ok_or_else(|| {
            CaseError::Case(format!(
                "`{hook}` is not in setup.webhooks: it has no token of its own"
            ))
        })
    }
}

/// `start.webhook`: sends the requests in order, checking each answer; returns the task of
/// the first accepted one.
pub(super) async fn send_requests(
    case: &Case,
    env: &CaseEnv,
    triggers: &Triggers,
    requests: &[HookRequest],
) -> Result<i64, CaseError> {
    let mut replies: Vec<Reply> = Vec::new();
    let mut first = None;
    let mut accepted = 0;
    for (i, r) in requests.iter().enumerate() {
        let mut body = r
            .body
            .clone()
            .unwrap_or_else(|| serde_json::json!({ "text": case.goal }));
        expand(&mut body, &env.vars);
        let (status, text) = triggers.post(&r.hook, &r.token, &body).await?;
        if status != r.expect_status {
            env.note(format!(
                "request {i} to `{}` got {status}, expected {} ({text})",
                r.hook, r.expect_status
            ));
        }
        if let Some(j) = r.same_as {
            match replies.get(j) {
                Some(earlier) if *earlier == (status, text.clone()) => {}
                Some(earlier) => env.note(format!(
                    "request {i} got {status} {text}, unlike request {j}'s {} {}",
                    earlier.0, earlier.1
                )),
                None => {
                    return Err(CaseError::Case(format!(
                        "request {i}: no request {j} before it"
                    )))
                }
            }
        }
        if status == 202 {
            accepted += 1;
            let task = serde_json::from_str::<serde_json::Value>(&text)?["task_id"].as_i64();
            if first.is_none() {
                first = task;
                *super::runner::lock(&env.first_task) = task;
            }
        }
        replies.push((status, text));
    }
    // A refused request makes nothing: every task is an accepted request's.
    let made = env.rt()?.call(ops::ListTasks { limit: 10_000 })?.len();
    if made != accepted {
        env.note(format!("{made} tasks for {accepted} accepted requests"));
    }
    first.ok_or_else(|| CaseError::Case("no request started a task".into()))
}

/// `start.schedule`: moves the clock to each tick, waits for the schedule's run there and
/// checks how it settles; returns the first tick's task.
pub(super) async fn play_schedule(
    env: &CaseEnv,
    triggers: &Triggers,
    schedule: &Schedule,
) -> Result<i64, CaseError> {
    let rt = env.rt()?;
    let (Some(clock), Some(id)) = (&triggers.clock, triggers.schedule) else {
        return Err(CaseError::Case("the schedule was not made".into()));
    };
    let mut first = None;
    for (i, tick) in schedule.ticks.iter().enumerate() {
        clock.set(tick.at);
        let run = loop {
            let runs = pocketpilot_triggers::runs(&rt, "cron", id)?;
            if let Some(run) = runs.into_iter().nth(i) {
                break run;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        let Some(task) = run.task_id else {
            env.note(format!(
                "tick {i} at {}: the schedule skipped ({})",
                tick.at,
                run.reason.unwrap_or_default()
            ));
            continue;
        };
        if first.is_none() {
            first = Some(task);
            *super::runner::lock(&env.first_task) = Some(task);
        }
        let status = settled(&rt, task).await?;
        if status != tick.status {
            env.note(format!(
                "tick {i} at {}: the run is {status}, expected {}",
                tick.at, tick.status
            ));
        }
        if let Some(want) = &tick.pause_contains {
            let message = rt
                .call(ops::GetTask { id: task })?
                .pause
                .map(|p| p.message)
                .unwrap_or_default();
            if !message.contains(want.as_str()) {
                env.note(format!(
                    "tick {i}: the pause says {message:?}, not {want:?}"
                ));
            }
        }
        if let (Some(answer), TaskStatus::Paused) = (&tick.answer, status) {
            match answer.action {
                PauseAction::Stop => {
                    rt.call(ops::StopTask { task_id: task })?;
                }
                PauseAction::Continue => {
                    rt.call(ops::ContinueTask {
                        task_id: task,
                        raise: answer.raise.clone(),
                        steer: answer.steer.clone(),
                        by: "eval".into(),
                    })?;
                    settled(&rt, task).await?;
                }
            }
        }
    }
    first.ok_or_else(|| CaseError::Case("no tick ran a task".into()))
}

/// Until `task` is terminal or waits for a person; its status then.
async fn settled(rt: &Arc<Runtime>, task: i64) -> Result<TaskStatus, CaseError> {
    loop {
        let status = rt.call(ops::GetTask { id: task })?.status;
        if status.is_terminal() || status.needs_person() {
            return Ok(status);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
