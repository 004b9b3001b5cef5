//! The recorded cost of every model turn (issue 19): one row per `model_turn_completed`
//! event, written in the same transaction, keyed by the event so a turn counts once.
use pocketpilot_protocol::wire::WireName;
use pocketpilot_protocol::RunSource;
use rusqlite::{params, Connection};
use serde::Serialize;

use super::Result;

/// The tasks started by a trigger rather than by a person (the daily cap for unattended
/// runs counts these), as an SQL list of their `trigger` names.
fn unattended_sql() -> String {
    let names: Vec<String> = RunSource::ALL
        .iter()
        .filter(|s| s.is_trigger())
        .map(|s| format!("'{}'", s.as_str()))
        .collect();
    format!("({})", names.join(","))
}

pub struct TurnCost<'a> {
    pub task_id: i64,
    pub sequence: i64,
    pub session_id: i64,
    pub step: u32,
    pub trigger: RunSource,
    pub model: Option<&'a str>,
    pub prompt_tokens: u64,
    pub cached_prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_usd: Option<f64>,
    pub at: &'a str,
}

pub fn insert(c: &Connection, t: &TurnCost<'_>) -> Result<()> {
    c.execute(
        "INSERT OR IGNORE INTO turn_costs (task_id, sequence, session_id, step, trigger, model, \
         prompt_tokens, cached_prompt_tokens, completion_tokens, cost_usd, at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        params![
            t.task_id,
            t.sequence,
            t.session_id,
            t.step,
            t.trigger.as_str(),
            t.model,
            t.prompt_tokens as i64,
            t.cached_prompt_tokens as i64,
            t.completion_tokens as i64,
            t.cost_usd,
            t.at,
        ],
    )?;
    Ok(())
}

/// What a set of turns used and cost.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Totals {
    pub turns: u32,
    /// Turns recorded without a price for their model: their cost is not in `cost_usd`.
    pub unpriced_turns: u32,
    pub prompt_tokens: u32,
    pub cached_prompt_tokens: u32,
    pub completion_tokens: u32,
    pub cost_usd: f64,
}

const TOTALS: &str = "COUNT(*), COALESCE(SUM(cost_usd IS NULL), 0), COALESCE(SUM(prompt_tokens), 0), \
    COALESCE(SUM(cached_prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0), COALESCE(SUM(cost_usd), 0.0)";

fn totals_row(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Totals> {
    let n = |i: usize| -> rusqlite::Result<u32> {
        Ok(u32::try_from(r.get::<_, i64>(at + i)?).unwrap_or(u32::MAX))
    };
    Ok(Totals {
        turns: n(0)?,
        unpriced_turns: n(1)?,
        prompt_tokens: n(2)?,
        cached_prompt_tokens: n(3)?,
        completion_tokens: n(4)?,
        cost_usd: r.get(at + 5)?,
    })
}

pub fn for_task(c: &Connection, task_id: i64) -> Result<Totals> {
    Ok(c.query_row(
        &format!("SELECT {TOTALS} FROM turn_costs WHERE task_id = ?1"),
        [task_id],
        |r| totals_row(r, 0),
    )?)
}

pub fn for_session(c: &Connection, session_id: i64) -> Result<Totals> {
    Ok(c.query_row(
        &format!("SELECT {TOTALS} FROM turn_costs WHERE session_id = ?1"),
        [session_id],
        |r| totals_row(r, 0),
    )?)
}

/// Turns recorded in `[from, to)` (RFC 3339 UTC stamps); `unattended`: only those of
/// trigger-started tasks.
pub fn between(c: &Connection, from: &str, to: &str, unattended: bool) -> Result<Totals> {
    let only = if unattended {
        format!(" AND trigger IN {}", unattended_sql())
    } else {
        String::new()
    };
    Ok(c.query_row(
        &format!("SELECT {TOTALS} FROM turn_costs WHERE at >= ?1 AND at < ?2{only}"),
        [from, to],
        |r| totals_row(r, 0),
    )?)
}

/// One day's (UTC) totals for one model.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct DayModel {
    pub day: String,
    pub model: Option<String>,
    pub totals: Totals,
}

/// Per day and model, from `from` on, oldest first.
pub fn by_day(c: &Connection, from: &str) -> Result<Vec<DayModel>> {
    let mut stmt = c.prepare(&format!(
        "SELECT substr(at, 1, 10) AS day, model, {TOTALS} FROM turn_costs WHERE at >= ?1 \
         GROUP BY day, model ORDER BY day, model"
    ))?;
    let rows = stmt.query_map([from], |r| {
        Ok(DayModel {
            day: r.get(0)?,
            model: r.get(1)?,
            totals: totals_row(r, 2)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// One model turn's cost, in a task's order.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TurnFigure {
    pub step: u32,
    pub model: Option<String>,
    /// `None`: no price for its model when it was recorded.
    pub cost_usd: Option<f64>,
}

/// Each turn of a task, in order.
pub fn turns_of(c: &Connection, task_id: i64) -> Result<Vec<TurnFigure>> {
    let mut stmt = c.prepare(
        "SELECT step, model, cost_usd FROM turn_costs WHERE task_id = ?1 ORDER BY sequence",
    )?;
    let rows = stmt.query_map([task_id], |r| {
        Ok(TurnFigure {
            step: r.get(0)?,
            model: r.get(1)?,
            cost_usd: r.get(2)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
