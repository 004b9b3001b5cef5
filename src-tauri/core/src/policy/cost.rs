//! Money (issue 19): prices per model, what each recorded model turn cost, and the money
//! budgets a run is held to (per task, per day, and the daily cap for unattended runs).
//!
//! Every figure is a sum over `turn_costs`, which the recorder writes in the transaction
//! of each `model_turn_completed` event: it survives a crash with the event, and a turn the
//! model is asked again after a crash is its own request with its own row. A request whose
//! answer was lost in the crash was never recorded, so it is not counted (its usage was
//! never received).
use std::sync::Arc;

use chrono::{DateTime, Duration, NaiveTime, Utc};
use serde::{Deserialize, Serialize};

use crate::config::Limits;
use crate::store::{costs, settings, StoreError};

pub const PRICES_KEY: &str = "prices";

/// What time it is for the day budgets and the usage rows: the system clock, or one a
/// test injects (`Runtime::set_clock`).
pub type Clock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

pub fn system_clock() -> Clock {
    Arc::new(Utc::now)
}

/// One model's prices in dollars per million tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Price {
    /// The provider's label (`openai:gpt-4o-mini`), the model name alone (`gpt-4o-mini`),
    /// `provider:*` or `*`. The most specific match wins.
    pub model: String,
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
    /// For prompt tokens the server reports as cached; `None`: the input price.
    #[serde(default)]
    pub cached_input_per_mtok: Option<f64>,
}

/// The prices setting (`pocketpilot prices set`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Prices {
    pub models: Vec<Price>,
}

impl Prices {
    pub fn load(c: &rusqlite::Connection) -> Result<Self, StoreError> {
        Ok(settings::get(c, PRICES_KEY)?.unwrap_or_default())
    }

    /// The price for a provider label: exact label, then model name, then `provider:*`,
    /// then `*`.
    pub fn find(&self, label: &str) -> Option<&Price> {
        let (provider, model) = label.split_once(':').unwrap_or(("", label));
        let wildcard = format!("{provider}:*");
        [label, model, wildcard.as_str(), "*"]
            .iter()
            .find_map(|want| self.models.iter().find(|p| p.model == *want))
    }

    /// Upserts one model's price.
    pub fn set(&mut self, price: Price) {
        self.models.retain(|p| p.model != price.model);
        self.models.push(price);
    }

    /// Dollars for one turn; `None` without a price for `label`. Cached prompt tokens
    /// are part of `prompt` (as OpenAI-compatible servers count them).
    pub fn cost(&self, label: &str, prompt: u64, cached: u64, completion: u64) -> Option<f64> {
        let p = self.find(label)?;
        let cached = cached.min(prompt);
        let fresh = (prompt - cached) as f64 * p.input_per_mtok;
        let cached = cached as f64 * p.cached_input_per_mtok.unwrap_or(p.input_per_mtok);
        let out = completion as f64 * p.output_per_mtok;
        Some((fresh + cached + out) / 1_000_000.0)
    }
}

/// The UTC day `now` falls in, as the stamps `turn_costs.at` is compared with.
pub fn day_of(now: DateTime<Utc>) -> (String, String) {
    let start = now.date_naive().and_time(NaiveTime::MIN).and_utc();
    let end = start + Duration::days(1);
    (stamp(start), stamp(end))
}

pub fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A money budget that ran out, and why, for the pause.
#[derive(Debug, Clone, PartialEq)]
pub struct MoneyOut {
    pub message: String,
    /// When the budget that ran out starts again and the run may continue by itself:
    /// the daily cap for unattended runs (the next UTC day). The person's own budgets
    /// (the task's, the day's) wait for the person.
    pub resumes_at: Option<String>,
}

/// Whether `task` may ask the model again: its own money budget (with what people
/// raised), the day's, and for unattended runs the day's cap for triggers. A raise lifts
/// each of them for this task by the amount raised.
pub fn money_out(
    c: &rusqlite::Connection,
    task: &crate::store::tasks::Task,
    limits: &Limits,
    now: DateTime<Utc>,
) -> Result<Option<MoneyOut>, StoreError> {
    let extra = task.extra.usd;
    if let Some(limit) = limits.max_task_usd {
        let spent = costs::for_task(c, task.id)?.cost_usd;
        if spent >= limit + extra {
            return Ok(Some(MoneyOut {
                message: format!(
                    "the task cost {} of its budget of {}{}",
                    usd(spent),
                    usd(limit + extra),
                    raised(extra)
                ),
                resumes_at: None,
            }));
        }
    }
    let (from, to) = day_of(now);
    if let Some(limit) = limits.max_day_usd {
        let spent = costs::between(c, &from, &to, false)?.cost_usd;
        if spent >= limit + extra {
            return Ok(Some(MoneyOut {
                message: format!(
                    "today's runs cost {} of the daily budget of {}{}",
                    usd(spent),
                    usd(limit + extra),
                    raised(extra)
                ),
                resumes_at: None,
            }));
        }
    }
    let unattended = task.trigger.is_trigger();
    if let (true, Some(limit)) = (unattended, limits.max_trigger_day_usd) {
        let spent = costs::between(c, &from, &to, true)?.cost_usd;
        if spent >= limit + extra {
            return Ok(Some(MoneyOut {
                message: format!(
                    "today's unattended runs cost {} of their daily cap of {}{}; it resets at {to}, and the run continues by itself then",
                    usd(spent),
                    usd(limit + extra),
                    raised(extra)
                ),
                resumes_at: Some(to.clone()),
            }));
        }
    }
    Ok(None)
}

fn raised(extra: f64) -> String {
    if extra > 0.0 {
        format!(" (raised by {})", usd(extra))
    } else {
        String::new()
    }
}

/// Dollars as shown everywhere: four decimals under a cent, else two.
pub fn usd(v: f64) -> String {
    if v != 0.0 && v.abs() < 0.01 {
        format!("${v:.4}")
    } else {
        format!("${v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn price(model: &str, i: f64, o: f64, c: Option<f64>) -> Price {
        Price {
            model: model.into(),
            input_per_mtok: i,
            output_per_mtok: o,
            cached_input_per_mtok: c,
        }
    }

    #[test]
    fn the_most_specific_price_wins_and_cached_tokens_cost_their_own_price() {
        let prices = Prices {
            models: vec![
                price("*", 100.0, 100.0, None),
                price("openai:*", 10.0, 10.0, None),
                price("gpt-4o", 2.5, 10.0, Some(1.25)),
            ],
        };
        assert_eq!(prices.find("openai:gpt-4o").unwrap().input_per_mtok, 2.5);
        assert_eq!(prices.find("openai:other").unwrap().input_per_mtok, 10.0);
        assert_eq!(
            prices.find("scripted:/x.json").unwrap().input_per_mtok,
            100.0
        );
        // 1000 prompt of which 400 cached, 100 out.
        let c = prices.cost("openai:gpt-4o", 1000, 400, 100).unwrap();
        let want = (600.0 * 2.5 + 400.0 * 1.25 + 100.0 * 10.0) / 1e6;
        assert!((c - want).abs() < 1e-12, "{c} {want}");
        assert_eq!(Prices::default().cost("openai:gpt-4o", 1, 0, 1), None);
    }

    #[test]
    fn a_day_is_the_utc_calendar_day() {
        let t = DateTime::parse_from_rfc3339("2030-01-01T23:59:59Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(
            day_of(t),
            (
                "2030-01-01T00:00:00.000Z".to_string(),
                "2030-01-02T00:00:00.000Z".to_string()
            )
        );
    }
}

/// What a `model_turn_completed` event cost at the prices stored now; `None` without
/// usage or without a price for its model.
pub fn turn_cost(
    c: &rusqlite::Connection,
    event: &crate::event::RuntimeEvent,
) -> Result<Option<f64>, StoreError> {
    let crate::event::RuntimeEvent::ModelTurnCompleted {
        usage: Some(u),
        cached_prompt_tokens,
        model: Some(model),
        ..
    } = event
    else {
        return Ok(None);
    };
    let prices = Prices::load(c)?;
    Ok(prices.cost(
        model,
        u.prompt_tokens,
        cached_prompt_tokens.unwrap_or(0),
        u.completion_tokens,
    ))
}

/// The cost row of a recorded model turn, in the event's transaction (keyed by it: the
/// same event is never counted twice).
pub fn record_turn(
    c: &rusqlite::Connection,
    task: &crate::store::tasks::Task,
    stored: &crate::store::StoredEvent,
    at: &str,
) -> Result<(), StoreError> {
    let crate::event::RuntimeEvent::ModelTurnCompleted {
        step,
        usage,
        cached_prompt_tokens,
        model,
        cost_usd,
        ..
    } = &stored.event
    else {
        return Ok(());
    };
    let u = usage.unwrap_or_default();
    costs::insert(
        c,
        &costs::TurnCost {
            task_id: task.id,
            sequence: stored.sequence,
            session_id: task.session_id,
            step: *step,
            trigger: task.trigger,
            model: model.as_deref(),
            prompt_tokens: u.prompt_tokens,
            cached_prompt_tokens: cached_prompt_tokens.unwrap_or(0),
            completion_tokens: u.completion_tokens,
            cost_usd: *cost_usd,
            at,
        },
    )
}

/// What a task cost, turn by turn, for `pocketpilot show` and the window.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TaskCost {
    pub task: costs::Totals,
    pub session: costs::Totals,
    /// Each model turn: its step and cost (`None`: no price for its model).
    pub turns: Vec<costs::TurnFigure>,
}

/// `pocketpilot usage`: per day and model from `since`, and today's totals.
#[derive(Debug, Clone, Serialize)]
pub struct Usage {
    pub since: String,
    pub days: Vec<costs::DayModel>,
    pub today: costs::Totals,
    pub today_unattended: costs::Totals,
    pub total: costs::Totals,
}
