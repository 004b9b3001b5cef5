//! The money entry points: prices, a task's and a session's cost, usage.
use crate::api::service::Runtime;
use crate::policy::cost::{day_of, stamp, Prices, TaskCost, Usage, PRICES_KEY};
use crate::store::{costs, settings};
use chrono::{Duration, NaiveTime};

impl Runtime {
    pub(crate) fn prices(&self) -> crate::api::service::Result<Prices> {
        Ok(self.store.read(Prices::load)?)
    }

    pub(crate) fn set_prices(&self, prices: &Prices) -> crate::api::service::Result<()> {
        for p in &prices.models {
            let bad = [
                Some(p.input_per_mtok),
                Some(p.output_per_mtok),
                p.cached_input_per_mtok,
            ]
            .into_iter()
            .flatten()
            .any(|v| !v.is_finite() || v < 0.0);
            if bad || p.model.trim().is_empty() {
                return Err(crate::api::service::RuntimeError::InvalidArguments(
                    format!(
                    "a price needs a model and prices of 0 or more dollars per million tokens ({})",
                    p.model
                ),
                ));
            }
        }
        Ok(self.store.write(|c| settings::set(c, PRICES_KEY, prices))?)
    }

    pub(crate) fn task_cost(&self, task_id: i64) -> crate::api::service::Result<TaskCost> {
        let task = self.task(task_id)?;
        Ok(self.store.read(|c| {
            Ok(TaskCost {
                task: costs::for_task(c, task_id)?,
                session: costs::for_session(c, task.session_id)?,
                turns: costs::turns_of(c, task_id)?,
            })
        })?)
    }

    pub(crate) fn session_cost(
        &self,
        session_id: i64,
    ) -> crate::api::service::Result<costs::Totals> {
        Ok(self.store.read(|c| costs::for_session(c, session_id))?)
    }

    /// Usage from `since` (a UTC day, `YYYY-MM-DD`; `None`: the last 30 days).
    pub(crate) fn usage(
        &self,
        since: Option<chrono::NaiveDate>,
    ) -> crate::api::service::Result<Usage> {
        let now = self.recorder.now();
        let since = since.unwrap_or_else(|| (now - Duration::days(29)).date_naive());
        let from = stamp(since.and_time(NaiveTime::MIN).and_utc());
        let (day_start, day_end) = day_of(now);
        Ok(self.store.read(|c| {
            let days = costs::by_day(c, &from)?;
            let mut total = costs::Totals::default();
            for d in &days {
                total.turns += d.totals.turns;
                total.unpriced_turns += d.totals.unpriced_turns;
                total.prompt_tokens += d.totals.prompt_tokens;
                total.cached_prompt_tokens += d.totals.cached_prompt_tokens;
                total.completion_tokens += d.totals.completion_tokens;
                total.cost_usd += d.totals.cost_usd;
            }
            Ok(Usage {
                since: since.to_string(),
                days,
                today: costs::between(c, &day_start, &day_end, false)?,
                today_unattended: costs::between(c, &day_start, &day_end, true)?,
                total,
            })
        })?)
    }
}

crate::api::call::op! {
    /// The model prices the cost figures use, as stored.
    #[derive(Debug, Clone)]
    GetPrices {} -> crate::api::service::Result<Prices>
        = |rt, op| rt.prices();
    /// Replaces the stored model prices.
    #[derive(Debug, Clone)]
    SetPrices { prices: Prices } -> crate::api::service::Result<()>
        = |rt, op| rt.set_prices(&op.prices);
    /// A task's tokens and money, per model turn and in total.
    #[derive(Debug, Clone)]
    GetTaskCost { task_id: i64 } -> crate::api::service::Result<TaskCost>
        = |rt, op| rt.task_cost(op.task_id);
    /// A session's tokens and money in total.
    #[derive(Debug, Clone)]
    GetSessionCost { session_id: i64 } -> crate::api::service::Result<costs::Totals>
        = |rt, op| rt.session_cost(op.session_id);
    /// Usage from `since` (a UTC day, `YYYY-MM-DD`; `None`: the last 30 days).
    #[derive(Debug, Clone)]
    GetUsage { since: Option<chrono::NaiveDate> } -> crate::api::service::Result<Usage>
        = |rt, op| rt.usage(op.since);
}
