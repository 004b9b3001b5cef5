//! The settings screen's money section (issue 19): the prices per model, the money
//! budgets (per task, per day, and the daily cap for unattended runs) and today's spend.
//! The window sends what the person typed as text; the runtime parses and checks it, so a
//! negative or non-numeric figure is refused with the same message wherever it is typed,
//! and nothing is saved. Each change is one write transaction: read, change, store.
use pocketpilot_protocol::{MoneyBudgetsForm, MoneySettings, PriceForm, PriceRow, SpendToday};

use crate::api::service::{Result, Runtime, RuntimeError};
use crate::config::{Limits, LIMITS_KEY};
use crate::policy::cost::{day_of, Price, Prices, PRICES_KEY};
use crate::store::{costs, settings};

/// Dollars as a person typed them: a finite number, 0 or more. `what` names the field in
/// the error ("the input price").
pub fn parse_dollars(what: &str, unit: &str, text: &str) -> Result<f64> {
    let t = text.trim();
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        Ok(_) => Err(RuntimeError::InvalidValue(format!(
            "{what} must be 0 or more {unit}, not {t}"
        ))),
        Err(_) => Err(RuntimeError::InvalidValue(format!(
            "{what} must be a number of {unit} (like 2.5), not {t:?}"
        ))),
    }
}

/// A budget as typed: blank is no budget.
fn parse_budget(what: &str, text: &str) -> Result<Option<f64>> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    parse_dollars(what, "dollars", text).map(Some)
}

const PER_MTOK: &str = "dollars per million tokens";

/// The stored price a form describes, every figure checked.
fn price_of(form: &PriceForm) -> Result<Price> {
    let model = form.model.trim();
    if model.is_empty() {
        return Err(RuntimeError::InvalidValue(
            "a price needs a model: a provider label (openai:gpt-4o-mini), a model name, provider:* or *".into(),
        ));
    }
    let cached = if form.cached.trim().is_empty() {
        None
    } else {
        Some(parse_dollars(
            "the cached input price",
            PER_MTOK,
            &form.cached,
        )?)
    };
    Ok(Price {
        model: model.to_owned(),
        input_per_mtok: parse_dollars("the input price", PER_MTOK, &form.input)?,
        output_per_mtok: parse_dollars("the output price", PER_MTOK, &form.output)?,
        cached_input_per_mtok: cached,
    })
}

impl From<Price> for PriceRow {
    fn from(p: Price) -> Self {
        Self {
            model: p.model,
            input_per_mtok: p.input_per_mtok,
            output_per_mtok: p.output_per_mtok,
            cached_input_per_mtok: p.cached_input_per_mtok,
        }
    }
}

impl Runtime {
    /// The prices, the budgets as stored (no environment override: what the form edits;
    /// the overrides are in `setting_overrides`), and today's spend against the budgets
    /// runs use.
    pub(crate) fn money_settings(&self) -> Result<MoneySettings> {
        let stored = Limits::stored(&self.store)?;
        let effective = self.limits()?;
        let now = self.recorder.now();
        let (from, to) = day_of(now);
        let (prices, today, unattended) = self.store.read(|c| {
            Ok((
                Prices::load(c)?,
                costs::between(c, &from, &to, false)?,
                costs::between(c, &from, &to, true)?,
            ))
        })?;
        Ok(MoneySettings {
            prices: prices.models.into_iter().map(Into::into).collect(),
            max_task_usd: stored.max_task_usd,
            max_day_usd: stored.max_day_usd,
            max_trigger_day_usd: stored.max_trigger_day_usd,
            today: SpendToday {
                day: now.date_naive().to_string(),
                cost_usd: today.cost_usd,
                unattended_cost_usd: unattended.cost_usd,
                turns: today.turns,
                unpriced_turns: today.unpriced_turns,
                day_budget_usd: effective.max_day_usd,
                trigger_day_budget_usd: effective.max_trigger_day_usd,
                resets_at: to,
            },
        })
    }

    /// Sets one model's prices (replacing its earlier ones). Turns already recorded keep
    /// the cost they were recorded at.
    pub(crate) fn set_price(&self, form: PriceForm) -> Result<PriceRow> {
        let price = price_of(&form)?;
        let saved = price.clone();
        self.store.write(move |c| {
            let mut prices = Prices::load(c)?;
            prices.set(price);
            settings::set(c, PRICES_KEY, &prices)
        })?;
        Ok(saved.into())
    }

    /// Removes a model's prices; false when it had none.
    pub(crate) fn delete_price(&self, model: &str) -> Result<bool> {
        let model = model.trim().to_owned();
        Ok(self.store.write(move |c| {
            let mut prices = Prices::load(c)?;
            let before = prices.models.len();
            prices.models.retain(|p| p.model != model);
            let removed = prices.models.len() != before;
            if removed {
                settings::set(c, PRICES_KEY, &prices)?;
            }
            Ok(removed)
        })?)
    }

    /// Saves the three money budgets (blank: none) over the stored limits; the other
    /// limits stay as stored. Every figure is checked before anything is written.
    pub(crate) fn set_money_budgets(&self, form: MoneyBudgetsForm) -> Result<()> {
        let task = parse_budget("the task budget", &form.task_usd)?;
        let day = parse_budget("the daily budget", &form.day_usd)?;
        let trigger_day = parse_budget("the daily cap for unattended runs", &form.trigger_day_usd)?;
        Ok(self.store.write(move |c| {
            let mut l: Limits = settings::get(c, LIMITS_KEY)?.unwrap_or_default();
            l.max_task_usd = task;
            l.max_day_usd = day;
            l.max_trigger_day_usd = trigger_day;
            settings::set(c, LIMITS_KEY, &l)
        })?)
    }
}

crate::api::call::op! {
    /// The prices, the budgets as stored (no environment override: what the form edits; the
    /// overrides are in `setting_overrides`), and today's spend against the budgets runs use.
    #[derive(Debug, Clone)]
    GetMoneySettings {} -> Result<MoneySettings>
        = |rt, op| rt.money_settings();
    /// Sets one model's prices (replacing its earlier ones). Turns already recorded keep the cost
    /// they were recorded at.
    #[derive(Debug, Clone)]
    SetPrice { form: PriceForm } -> Result<PriceRow>
        = |rt, op| rt.set_price(op.form);
    /// Removes a model's prices; false when it had none.
    #[derive(Debug, Clone)]
    DeletePrice { model: String } -> Result<bool>
        = |rt, op| rt.delete_price(&op.model);
    /// Saves the three money budgets (blank: none) over the stored limits; the other limits stay as
    /// stored. Every figure is checked before anything is written.
    #[derive(Debug, Clone)]
    SetMoneyBudgets { form: MoneyBudgetsForm } -> Result<()>
        = |rt, op| rt.set_money_budgets(op.form);
}
