//! The trigger definitions (webhooks, schedules, watches), their record of fires and
//! skips, and their settings, as ops: the triggers crate decides when to fire, and reads
//! and writes what it keeps through these.
use pocketpilot_protocol::RunSource;
use serde_json::Value;

use crate::api::service::{Result, Runtime};
use crate::store::triggers::{self, Schedule, TriggerRun, Watch, Webhook};
use crate::store::{settings, StoreError};

/// What became of a trigger's moment: a task was started, or not, for a stated reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TriggerOutcome {
    Fired,
    Skipped,
}

impl TriggerOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            TriggerOutcome::Fired => "fired",
            TriggerOutcome::Skipped => "skipped",
        }
    }
}

impl Runtime {
    fn new_webhook(&self, op: &CreateWebhook) -> Result<Option<Webhook>> {
        Ok(self.store.write(|c| {
            if triggers::webhook_by_name(c, &op.name)?.is_some() {
                return Ok(None);
            }
            triggers::insert_webhook(
                c,
                &op.name,
                &op.workspace,
                &op.token_sha256,
                op.provider.as_deref(),
            )?;
            triggers::webhook_by_name(c, &op.name)
        })?)
    }

    fn new_schedule(&self, op: &CreateSchedule) -> Result<Schedule> {
        Ok(self.store.write(|c| {
            let id = triggers::insert_schedule(
                c,
                &triggers::NewSchedule {
                    expr: &op.expr,
                    workspace: &op.workspace,
                    goal: &op.goal,
                    provider: op.provider.as_deref(),
                    catch_up: op.catch_up,
                    created_at: &op.created_at,
                },
            )?;
            triggers::schedule(c, id)?.ok_or_else(|| StoreError::not_found("schedule", id))
        })?)
    }

    fn new_watch(&self, op: &CreateWatch) -> Result<Watch> {
        Ok(self.store.write(|c| {
            let id = triggers::insert_watch(
                c,
                &triggers::NewWatch {
                    pattern: &op.pattern,
                    workspace: &op.workspace,
                    goal: &op.goal,
                    provider: op.provider.as_deref(),
                    min_interval_secs: op.min_interval_secs,
                },
            )?;
            triggers::watch(c, id)?.ok_or_else(|| StoreError::not_found("watch", id))
        })?)
    }

    fn record_trigger_run(&self, op: &RecordTriggerRun) -> Result<i64> {
        Ok(self.store.write(|c| {
            triggers::record_run(
                c,
                &triggers::NewRun {
                    kind: op.kind.as_str(),
                    trigger_id: op.trigger_id,
                    outcome: op.outcome.as_str(),
                    task_id: op.task_id,
                    reason: op.reason.as_deref(),
                    scheduled_for: op.scheduled_for.as_deref(),
                },
            )
        })?)
    }

    /// Sets one field of a JSON object setting in one write, so two processes setting
    /// different fields do not undo each other.
    fn set_setting_field(&self, key: &str, field: &str, value: &Value) -> Result<()> {
        Ok(self.store.write(|c| {
            let mut all = match settings::get::<Value>(c, key)? {
                Some(Value::Object(m)) => m,
                _ => serde_json::Map::new(),
            };
            all.insert(field.to_owned(), value.clone());
            settings::set(c, key, &Value::Object(all))
        })?)
    }
}

crate::api::call::op! {
    /// A webhook under a new name; `None` when the name is taken.
    #[derive(Debug, Clone)]
    CreateWebhook { name: String, workspace: String, token_sha256: String, provider: Option<String> }
        -> Result<Option<Webhook>>
        = |rt, op| rt.new_webhook(&op);
    /// Every webhook.
    #[derive(Debug, Clone)]
    ListWebhooks {} -> Result<Vec<Webhook>>
        = |rt, op| Ok(rt.store.read(triggers::webhooks)?);
    /// The webhook of this name, if there is one.
    #[derive(Debug, Clone)]
    GetWebhook { name: String } -> Result<Option<Webhook>>
        = |rt, op| Ok(rt.store.read(|c| triggers::webhook_by_name(c, &op.name))?);
    #[derive(Debug, Clone)]
    SetWebhookPaused { name: String, paused: bool } -> Result<()>
        = |rt, op| Ok(rt.store.write(|c| triggers::set_webhook_paused(c, &op.name, op.paused))?);
    #[derive(Debug, Clone)]
    DeleteWebhook { name: String } -> Result<()>
        = |rt, op| Ok(rt.store.write(|c| triggers::delete_webhook(c, &op.name))?);
    /// Notes when a webhook last started or spoke to a task.
    #[derive(Debug, Clone)]
    NoteWebhookFired { id: i64, at: String } -> Result<()>
        = |rt, op| Ok(rt.store.write(|c| triggers::webhook_fired(c, op.id, &op.at))?);

    /// A new schedule, as stored. `expr` is already checked; ticks before `created_at`
    /// never count.
    #[derive(Debug, Clone)]
    CreateSchedule {
        expr: String,
        workspace: String,
        goal: String,
        provider: Option<String>,
        catch_up: bool,
        created_at: String,
    } -> Result<Schedule>
        = |rt, op| rt.new_schedule(&op);
    #[derive(Debug, Clone)]
    ListSchedules {} -> Result<Vec<Schedule>>
        = |rt, op| Ok(rt.store.read(triggers::schedules)?);
    #[derive(Debug, Clone)]
    GetSchedule { id: i64 } -> Result<Option<Schedule>>
        = |rt, op| Ok(rt.store.read(|c| triggers::schedule(c, op.id))?);
    #[derive(Debug, Clone)]
    SetSchedulePaused { id: i64, paused: bool } -> Result<()>
        = |rt, op| Ok(rt.store.write(|c| triggers::set_schedule_paused(c, op.id, op.paused))?);
    #[derive(Debug, Clone)]
    DeleteSchedule { id: i64 } -> Result<()>
        = |rt, op| Ok(rt.store.write(|c| triggers::delete_schedule(c, op.id))?);
    /// Claims a schedule's tick for this process; `false` when another process (or an
    /// earlier look) already has it, so a tick fires at most once.
    #[derive(Debug, Clone)]
    ClaimTick { id: i64, tick: String } -> Result<bool>
        = |rt, op| Ok(rt.store.write(|c| triggers::claim_tick(c, op.id, &op.tick))?);
    /// Notes the task a schedule's tick started.
    #[derive(Debug, Clone)]
    NoteScheduleTask { id: i64, task_id: i64 } -> Result<()>
        = |rt, op| Ok(rt.store.write(|c| triggers::schedule_task(c, op.id, op.task_id))?);
    /// Every schedule and every watch, read together: what the trigger host runs.
    #[derive(Debug, Clone)]
    TriggerDefinitions {} -> Result<(Vec<Schedule>, Vec<Watch>)>
        = |rt, op| Ok(rt.store.read(|c| Ok((triggers::schedules(c)?, triggers::watches(c)?)))?);

    /// A new watch, as stored. `pattern` is already checked.
    #[derive(Debug, Clone)]
    CreateWatch {
        pattern: String,
        workspace: String,
        goal: String,
        provider: Option<String>,
        min_interval_secs: i64,
    } -> Result<Watch>
        = |rt, op| rt.new_watch(&op);
    #[derive(Debug, Clone)]
    ListWatches {} -> Result<Vec<Watch>>
        = |rt, op| Ok(rt.store.read(triggers::watches)?);
    #[derive(Debug, Clone)]
    GetWatch { id: i64 } -> Result<Option<Watch>>
        = |rt, op| Ok(rt.store.read(|c| triggers::watch(c, op.id))?);
    #[derive(Debug, Clone)]
    SetWatchPaused { id: i64, paused: bool } -> Result<()>
        = |rt, op| Ok(rt.store.write(|c| triggers::set_watch_paused(c, op.id, op.paused))?);
    #[derive(Debug, Clone)]
    DeleteWatch { id: i64 } -> Result<()>
        = |rt, op| Ok(rt.store.write(|c| triggers::delete_watch(c, op.id))?);
    /// Notes the task a watch started and when.
    #[derive(Debug, Clone)]
    NoteWatchFired { id: i64, task_id: i64, at: String } -> Result<()>
        = |rt, op| Ok(rt.store.write(|c| triggers::watch_fired(c, op.id, op.task_id, &op.at))?);
    /// Paths under `workspace` that agent runs changed since `since`: a watch does not
    /// fire on the agent's own writes.
    #[derive(Debug, Clone)]
    AgentChangesSince { workspace: String, since: String } -> Result<Vec<String>>
        = |rt, op| Ok(rt.store.read(|c| triggers::agent_changes_since(c, &op.workspace, &op.since))?);
    /// Whether a tool call in `workspace` has started and not finished.
    #[derive(Debug, Clone)]
    ToolCallInFlight { workspace: String } -> Result<bool>
        = |rt, op| Ok(rt.store.read(|c| triggers::tool_call_in_flight(c, &op.workspace))?);

    /// Records a trigger's fire or skip, with its reason.
    #[derive(Debug, Clone)]
    RecordTriggerRun {
        kind: RunSource,
        trigger_id: i64,
        outcome: TriggerOutcome,
        task_id: Option<i64>,
        reason: Option<String>,
        scheduled_for: Option<String>,
    } -> Result<i64>
        = |rt, op| rt.record_trigger_run(&op);
    /// A trigger's fires and skips, oldest first. `kind` is `webhook`, `cron` or `watch`.
    #[derive(Debug, Clone)]
    TriggerRuns { kind: String, trigger_id: i64 } -> Result<Vec<TriggerRun>>
        = |rt, op| Ok(rt.store.read(|c| triggers::runs(c, &op.kind, op.trigger_id))?);

    /// A stored setting of another crate (the triggers' own), as JSON; `None` when unset.
    #[derive(Debug, Clone)]
    GetSetting { key: String } -> Result<Option<Value>>
        = |rt, op| Ok(rt.store.read(|c| settings::get(c, &op.key))?);
    /// Stores a setting of another crate as JSON.
    #[derive(Debug, Clone)]
    SetSetting { key: String, value: Value } -> Result<()>
        = |rt, op| Ok(rt.store.write(|c| settings::set(c, &op.key, &op.value))?);
    /// Sets one field of a JSON object setting, read and written in one transaction.
    #[derive(Debug, Clone)]
    SetSettingField { key: String, field: String, value: Value } -> Result<()>
        = |rt, op| rt.set_setting_field(&op.key, &op.field, &op.value);
}
