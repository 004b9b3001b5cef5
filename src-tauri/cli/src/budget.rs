//! Budgets on the command line: raise a paused task's budget and continue it, stop it,
//! what runs cost (`usage`), the prices and the money/repetition budgets.
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Subcommand};

use super::escape::shown;
use super::{print_json, CliError};
use pocketpilot_core::api::service::{Runtime, RuntimeError};
use pocketpilot_core::ops;
use pocketpilot_core::policy::cost::{usd, Price};
use pocketpilot_protocol::{Budget, Raise};

#[derive(Args, Debug)]
pub struct RaiseArgs {
    /// The paused task.
    pub task: i64,
    #[arg(long, default_value_t = 0)]
    pub steps: u32,
    #[arg(long, default_value_t = 0)]
    pub seconds: u32,
    #[arg(long, default_value_t = 0)]
    pub tokens: u32,
    /// Dollars.
    #[arg(long, default_value_t = 0.0)]
    pub usd: f64,
    /// Said to the agent before it goes on (for a task that was repeating itself).
    #[arg(long)]
    pub steer: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand, Debug)]
pub enum PricesCommand {
    /// Set a model's prices in dollars per million tokens. MODEL: a provider label
    /// (`openai:gpt-4o-mini`), a model name, `provider:*` or `*`.
    Set {
        model: String,
        #[arg(long)]
        input: f64,
        #[arg(long)]
        output: f64,
        /// For prompt tokens the server reports as cached (default: the input price).
        #[arg(long)]
        cached: Option<f64>,
    },
    Show {
        #[arg(long)]
        json: bool,
    },
    Delete {
        model: String,
    },
}

#[derive(Subcommand, Debug)]
pub enum BudgetCommand {
    /// Money budgets in dollars (`none` removes one) and the repetition guard's limit (0: off).
    Set {
        #[arg(long)]
        task_usd: Option<String>,
        #[arg(long)]
        day_usd: Option<String>,
        #[arg(long)]
        trigger_day_usd: Option<String>,
        #[arg(long)]
        repeat: Option<u32>,
    },
    Show,
}

/// `pocketpilot raise TASK --steps N …`: continue a paused task here. With no amount,
/// a budget pause continues with that budget again.
pub async fn raise(rt: &Arc<Runtime>, a: RaiseArgs) -> Result<ExitCode, CliError> {
    let raise = Raise {
        steps: a.steps,
        seconds: a.seconds,
        tokens: a.tokens,
        usd: a.usd,
    };
    let last = rt
        .call(ops::TaskEvents { task_id: a.task })?
        .last()
        .map(|e| e.sequence)
        .unwrap_or(0);
    match rt.call(ops::ContinueTask {
        task_id: a.task,
        raise,
        steer: a.steer,
        by: "cli".into(),
    }) {
        Ok(()) => {}
        // The runtime says it in words; here the flag that adds it is named too.
        Err(e @ RuntimeError::RaiseNeeded { budget, .. }) => {
            return Err(CliError::Usage(format!("{e} (--{} N)", flag(budget))));
        }
        Err(e) => return Err(e.into()),
    }
    super::run::follow_from(rt, a.task, last, a.json).await
}

/// The `raise` option that adds to `budget`.
fn flag(budget: Budget) -> &'static str {
    match budget {
        Budget::Steps => "steps",
        Budget::Seconds => "seconds",
        Budget::Tokens => "tokens",
        Budget::Usd => "usd",
    }
}

pub fn stop(rt: &Arc<Runtime>, task: i64) -> Result<ExitCode, CliError> {
    let status = rt.call(ops::StopTask { task_id: task })?;
    let _ = writeln!(std::io::stdout(), "task {task} {status}");
    Ok(ExitCode::from(status.exit_code()))
}

fn parse_date(s: &str) -> Result<chrono::NaiveDate, CliError> {
    chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .map_err(|_| CliError::Usage(format!("--since wants a date like 2030-01-31, not {s:?}")))
}

pub fn usage(rt: &Arc<Runtime>, since: Option<String>, json: bool) -> Result<ExitCode, CliError> {
    let since = since.as_deref().map(parse_date).transpose()?;
    let u = rt.call(ops::GetUsage { since })?;
    if json {
        print_json(&u);
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "since {} (UTC days)", u.since);
    for d in &u.days {
        let t = &d.totals;
        let _ = writeln!(
            out,
            "{}  {:<40} {:>4} turns  {:>9} in ({} cached) {:>8} out  {}{}",
            d.day,
            shown(d.model.as_deref().unwrap_or("?")),
            t.turns,
            t.prompt_tokens,
            t.cached_prompt_tokens,
            t.completion_tokens,
            usd(t.cost_usd),
            unpriced(t.unpriced_turns)
        );
    }
    let _ = writeln!(
        out,
        "total {}{}  today {} (unattended {})",
        usd(u.total.cost_usd),
        unpriced(u.total.unpriced_turns),
        usd(u.today.cost_usd),
        usd(u.today_unattended.cost_usd)
    );
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn unpriced(n: u32) -> String {
    if n == 0 {
        String::new()
    } else {
        format!(" (+{n} turns without a price)")
    }
}

pub fn prices(rt: &Arc<Runtime>, cmd: PricesCommand) -> Result<ExitCode, CliError> {
    let mut prices = rt.call(ops::GetPrices {})?;
    match cmd {
        PricesCommand::Set {
            model,
            input,
            output,
            cached,
        } => {
            prices.set(Price {
                model,
                input_per_mtok: input,
                output_per_mtok: output,
                cached_input_per_mtok: cached,
            });
            rt.call(ops::SetPrices {
                prices: prices.clone(),
            })?;
        }
        PricesCommand::Delete { model } => {
            prices.models.retain(|p| p.model != model);
            rt.call(ops::SetPrices {
                prices: prices.clone(),
            })?;
        }
        PricesCommand::Show { json: true } => {
            print_json(&prices);
            return Ok(ExitCode::SUCCESS);
        }
        PricesCommand::Show { json: false } => {}
    }
    let mut out = std::io::stdout().lock();
    for p in &prices.models {
        let cached = p
            .cached_input_per_mtok
            .map(|c| format!(", cached ${c}"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{}  in ${} out ${}{cached} per million tokens",
            shown(&p.model),
            p.input_per_mtok,
            p.output_per_mtok
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn dollars(flag: &str, v: &str) -> Result<Option<f64>, CliError> {
    if v == "none" {
        return Ok(None);
    }
    match v.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(Some(x)),
        _ => Err(CliError::Usage(format!(
            "--{flag} wants dollars (0 or more) or `none`, not {v:?}"
        ))),
    }
}

pub fn budget(rt: &Arc<Runtime>, cmd: BudgetCommand) -> Result<ExitCode, CliError> {
    let mut l = rt.call(ops::StoredLimits {})?;
    if let BudgetCommand::Set {
        task_usd,
        day_usd,
        trigger_day_usd,
        repeat,
    } = cmd
    {
        if let Some(v) = task_usd {
            l.max_task_usd = dollars("task-usd", &v)?;
        }
        if let Some(v) = day_usd {
            l.max_day_usd = dollars("day-usd", &v)?;
        }
        if let Some(v) = trigger_day_usd {
            l.max_trigger_day_usd = dollars("trigger-day-usd", &v)?;
        }
        if let Some(n) = repeat {
            l.repeat_limit = n;
        }
        rt.call(ops::SetLimits { limits: l.clone() })?;
    }
    let show = |v: Option<f64>| v.map(usd).unwrap_or_else(|| "none".into());
    let _ = writeln!(
        std::io::stdout(),
        "task {}  day {}  unattended day {}  repetition guard {}",
        show(l.max_task_usd),
        show(l.max_day_usd),
        show(l.max_trigger_day_usd),
        if l.repeat_limit == 0 {
            "off".to_string()
        } else {
            format!("{} in a row", l.repeat_limit)
        }
    );
    Ok(ExitCode::SUCCESS)
}
