//! Cron schedules: 5-field UTC expressions (`minute hour day-of-month month day-of-week`)
//! and the aliases `@hourly`, `@daily`, `@weekly` (also `@monthly`, `@yearly`).
//!
//! Parser: `croner`. Of the maintained crates, `cron` (zslayton) only takes 6/7 fields
//! with seconds, and `saffron` has had no release since 0.1.0 (2020); `croner` parses
//! POSIX/Vixie 5-field patterns and the `@` aliases, is released regularly, and can be
//! told to refuse a seconds field (`Seconds::Disallowed`), so `* * * * * *` is an error
//! here instead of silently meaning "every second".
//!
//! # The runner
//! One tokio task per active schedule. It computes the next tick after the last one
//! handled and sleeps until then on the injected [`Clock`] (no polling). At a tick:
//! - the tick is *claimed* in the store (`last_fired_at` moves forward only), so two hosts
//!   on one data directory never both fire it, and a restart never fires it twice;
//! - if all triggers are paused, or the schedule's previous task is not terminal, the
//!   tick is recorded as skipped with the reason; otherwise a task is submitted.
//!
//! A tick observed more than [`LATE_GRACE`] after its time was missed (the app was closed,
//! the computer slept). Such a tick fires only if the schedule asks for catch-up — and then
//! only the latest missed one; otherwise one skip is recorded ("missed").
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration as ChronoDuration, Utc};
use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use pocketpilot_core::ops;
use pocketpilot_protocol::{ErrorKind, RunSource};

use super::{canonical_workspace, parse_stamp, stamp, Fire, Result, TriggerError, TriggerSettings};
use pocketpilot_core::api::service::Runtime;
use pocketpilot_store::triggers::Schedule;

/// How late a tick may be observed and still count as on time.
pub const LATE_GRACE: ChronoDuration = ChronoDuration::seconds(60);

const ALIASES: [&str; 6] = [
    "@hourly",
    "@daily",
    "@weekly",
    "@monthly",
    "@yearly",
    "@annually",
];

/// A parsed schedule expression, evaluated in UTC.
#[derive(Debug, Clone)]
pub struct CronExpr {
    cron: Cron,
    text: String,
}

impl CronExpr {
    pub fn parse(text: &str) -> Result<Self> {
        let text = text.trim();
        let invalid = |reason: String| TriggerError::InvalidExpression {
            expr: text.to_owned(),
            reason,
        };
        if text.starts_with('@') {
            if !ALIASES.iter().any(|a| a.eq_ignore_ascii_case(text)) {
                return Err(invalid(format!(
                    "unknown alias (known: {})",
                    ALIASES.join(", ")
                )));
            }
        } else {
            let fields = text.split_whitespace().count();
            if fields != 5 {
                return Err(invalid(format!("it has {fields} fields, not 5")));
            }
        }
        let cron = CronParser::builder()
            .seconds(Seconds::Disallowed)
            .year(Year::Disallowed)
            .build()
            .parse(text)
            .map_err(|e| invalid(e.to_string()))?;
        Ok(Self {
            cron,
            text: text.to_owned(),
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The first tick strictly after `t`.
    pub fn next_after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.cron.find_next_occurrence(&t, false).ok()
    }

    /// The latest tick at or before `t`.
    pub fn latest_at_or_before(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.cron.find_previous_occurrence(&t, true).ok()
    }
}

// ------------------------------------------------------------------------------- clock

pub type Sleep = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Time, injected so that schedules are testable without sleeping.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> DateTime<Utc>;
    /// Resolves once `now() >= at`.
    fn sleep_until(&self, at: DateTime<Utc>) -> Sleep;
}

/// The real clock. `shifted` moves it by a fixed offset: the one real-time test uses it to
/// stand a second before a minute boundary instead of waiting up to a minute; the sleeping
/// is real.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock {
    offset: ChronoDuration,
}

impl SystemClock {
    pub fn shifted(offset: ChronoDuration) -> Self {
        Self { offset }
    }
}

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now() + self.offset
    }

    fn sleep_until(&self, at: DateTime<Utc>) -> Sleep {
        let clock = *self;
        Box::pin(async move {
            // Wall time may jump (suspend, NTP): sleep again until it really is `at`.
            loop {
                let left = at - clock.now();
                let Ok(left) = left.to_std() else { return };
                if left.is_zero() {
                    return;
                }
                tokio::time::sleep(left).await;
            }
        })
    }
}

/// A clock that moves only when told to (tests, simulations).
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<DateTime<Utc>>,
    tx: tokio::sync::watch::Sender<DateTime<Utc>>,
}

impl ManualClock {
    pub fn new(start: DateTime<Utc>) -> Arc<Self> {
        let (tx, _) = tokio::sync::watch::channel(start);
        Arc::new(Self {
            now: Mutex::new(start),
            tx,
        })
    }

    pub fn set(&self, t: DateTime<Utc>) {
        *self.now.lock().unwrap_or_else(|p| p.into_inner()) = t;
        self.tx.send_replace(t);
    }

    pub fn advance(&self, by: ChronoDuration) {
        let t = self.now() + by;
        self.set(t);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.now.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn sleep_until(&self, at: DateTime<Utc>) -> Sleep {
        let mut rx = self.tx.subscribe();
        Box::pin(async move {
            loop {
                if *rx.borrow_and_update() >= at {
                    return;
                }
                if rx.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        })
    }
}

// ------------------------------------------------------------------------- definitions

#[derive(Debug, Clone, Default)]
pub struct NewSchedule {
    pub expr: String,
    pub workspace: std::path::PathBuf,
    pub goal: String,
    /// `scripted:FILE`, or `None` for `POCKETPILOT_PROVIDER` / the configured model.
    pub provider: Option<String>,
    /// Fire the latest missed tick (one) after the app was closed.
    pub catch_up: bool,
}

/// Creates a schedule; ticks before `now` never count (nothing to catch up yet).
pub fn create(rt: &Arc<Runtime>, new: &NewSchedule, now: DateTime<Utc>) -> Result<Schedule> {
    let expr = CronExpr::parse(&new.expr)?;
    let goal = new.goal.trim();
    if goal.is_empty() {
        return Err(TriggerError::EmptyGoal);
    }
    let workspace = canonical_workspace(Path::new(&new.workspace))?;
    let created = stamp(now);
    let schedule = rt.call(ops::CreateSchedule {
        expr: expr.as_str().to_owned(),
        workspace,
        goal: goal.to_owned(),
        provider: new.provider.clone(),
        catch_up: new.catch_up,
        created_at: created,
    })?;
    tracing::info!(schedule_id = schedule.id, expr = %schedule.expr, "schedule created");
    Ok(schedule)
}

pub fn list(rt: &Arc<Runtime>) -> Result<Vec<Schedule>> {
    Ok(rt.call(ops::ListSchedules {})?)
}

pub fn set_paused(rt: &Arc<Runtime>, id: i64, paused: bool) -> Result<()> {
    Ok(rt.call(ops::SetSchedulePaused { id, paused })?)
}

pub fn delete(rt: &Arc<Runtime>, id: i64) -> Result<()> {
    Ok(rt.call(ops::DeleteSchedule { id })?)
}

/// When a schedule fires next, for display.
pub fn next_fire(schedule: &Schedule, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    CronExpr::parse(&schedule.expr).ok()?.next_after(now)
}

// ------------------------------------------------------------------------------ runner

/// Runs one schedule until `cancel`, it is deleted or paused, or its expression breaks.
pub(crate) async fn run(
    rt: Arc<Runtime>,
    schedule_id: i64,
    clock: Arc<dyn Clock>,
    cancel: CancellationToken,
) {
    let span = tracing::info_span!("schedule", schedule_id);
    async move {
        if let Err(e) = run_inner(&rt, schedule_id, clock.as_ref(), &cancel).await {
            tracing::error!(error = %e, "the schedule stopped");
        }
    }
    .instrument(span)
    .await
}

async fn run_inner(
    rt: &Arc<Runtime>,
    id: i64,
    clock: &dyn Clock,
    cancel: &CancellationToken,
) -> Result<()> {
    loop {
        if cancel.is_cancelled() {
            return Ok(());
        }
        let Some(s) = rt.call(ops::GetSchedule { id })? else {
            return Ok(());
        };
        if s.paused {
            return Ok(());
        }
        let expr = CronExpr::parse(&s.expr)?;
        let handled = parse_stamp(s.last_fired_at.as_deref().unwrap_or(&s.created_at))
            .unwrap_or_else(|| clock.now());
        let now = clock.now();
        if let Some(tick) = expr.latest_at_or_before(now).filter(|t| *t > handled) {
            let rt = rt.clone();
            let late = now - tick > LATE_GRACE;
            super::blocking(move || match (late, s.catch_up) {
                (false, _) => tick_due(&rt, &s, tick, None),
                (true, true) => tick_due(
                    &rt,
                    &s,
                    tick,
                    Some("catch-up: the latest tick missed while PocketPilot was not running"),
                ),
                (true, false) => missed(&rt, &s, tick),
            })
            .await?;
            continue;
        }
        let Some(next) = expr.next_after(now.max(handled)) else {
            tracing::info!("the expression has no future tick");
            return Ok(());
        };
        tracing::debug!(next = %next, "sleeping until the next tick");
        tokio::select! {
            _ = clock.sleep_until(next) => {}
            _ = cancel.cancelled() => return Ok(()),
        }
    }
}

/// Handles a tick that is due: claim it, then fire or record why not.
fn tick_due(
    rt: &Arc<Runtime>,
    s: &Schedule,
    tick: DateTime<Utc>,
    reason: Option<&str>,
) -> Result<()> {
    let at = stamp(tick);
    if !rt.call(ops::ClaimTick {
        id: s.id,
        tick: at.clone(),
    })? {
        return Ok(());
    }
    if TriggerSettings::load(rt)?.paused {
        return super::skip(
            rt,
            RunSource::Cron,
            s.id,
            Some(&at),
            "all triggers are paused",
        );
    }
    if let Some(prev) = s.last_task_id {
        match rt.call(ops::GetTask { id: prev }) {
            Ok(t) if !t.status.is_terminal() => {
                let why = format!("the previous task {prev} is still {}", t.status);
                return super::skip(rt, RunSource::Cron, s.id, Some(&at), &why);
            }
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
    }
    let fire = Fire {
        kind: RunSource::Cron,
        trigger_id: s.id,
        workspace: &s.workspace,
        goal: &s.goal,
        provider: s.provider.as_deref(),
        session_id: None,
        follow_up_of: None,
        scheduled_for: Some(&at),
        reason,
    };
    match super::fire(rt, &fire) {
        Ok(task_id) => {
            rt.call(ops::NoteScheduleTask { id: s.id, task_id })?;
            Ok(())
        }
        // The tick is recorded, not retried: a broken workspace would fail every minute.
        Err(e) => super::skip(
            rt,
            RunSource::Cron,
            s.id,
            Some(&at),
            &format!("the task could not be created: {e}"),
        ),
    }
}

fn missed(rt: &Arc<Runtime>, s: &Schedule, tick: DateTime<Utc>) -> Result<()> {
    let at = stamp(tick);
    if rt.call(ops::ClaimTick {
        id: s.id,
        tick: at.clone(),
    })? {
        super::skip(
            rt,
            RunSource::Cron,
            s.id,
            Some(&at),
            "missed: PocketPilot was not running (or the computer slept) at this tick, and the schedule does not catch up",
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn five_fields_and_aliases_parse_and_others_do_not() {
        for ok in [
            "*/5 * * * *",
            "0 9 * * MON-FRI",
            "@hourly",
            "@daily",
            "@weekly",
            "@DAILY",
        ] {
            assert!(CronExpr::parse(ok).is_ok(), "{ok}");
        }
        for bad in [
            "* * * * * *",
            "* * * *",
            "@reboot",
            "@every 5m",
            "61 * * * *",
            "",
        ] {
            let err = CronExpr::parse(bad).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidExpression, "{bad}");
        }
    }

    #[test]
    fn ticks_are_utc() {
        let e = CronExpr::parse("30 9 * * *").unwrap();
        assert_eq!(
            e.next_after(t("2030-01-01T09:30:00Z")),
            Some(t("2030-01-02T09:30:00Z"))
        );
        assert_eq!(
            e.latest_at_or_before(t("2030-01-01T09:30:00Z")),
            Some(t("2030-01-01T09:30:00Z"))
        );
        let h = CronExpr::parse("@hourly").unwrap();
        assert_eq!(
            h.next_after(t("2030-01-01T09:30:00Z")),
            Some(t("2030-01-01T10:00:00Z"))
        );
        let w = CronExpr::parse("@weekly").unwrap();
        // 2030-01-01 is a Tuesday; @weekly is Sunday midnight.
        assert_eq!(
            w.next_after(t("2030-01-01T00:00:00Z")),
            Some(t("2030-01-06T00:00:00Z"))
        );
    }

    #[tokio::test]
    async fn the_manual_clock_wakes_sleepers_when_moved() {
        let c = ManualClock::new(t("2030-01-01T00:00:00Z"));
        let sleep = c.sleep_until(t("2030-01-01T00:01:00Z"));
        let waiter = tokio::spawn(sleep);
        c.advance(ChronoDuration::seconds(30));
        assert!(!waiter.is_finished());
        c.advance(ChronoDuration::seconds(30));
        tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
            .await
            .unwrap()
            .unwrap();
    }
}
