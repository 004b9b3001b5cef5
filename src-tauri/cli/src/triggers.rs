//! `pocketpilot hooks|cron|watch|triggers|serve`: trigger definitions and the headless host.
//!
//! Every command writes to the `out` it is given (stdout in the binary), so that what it
//! prints is testable; `hooks add` prints the token and nothing else there.
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Subcommand};
use pocketpilot_model::ProviderSpec;

use super::escape::{json_safe, shown};
use super::{default_workspace, CliError};
use pocketpilot_core::api::service::Runtime;
use pocketpilot_triggers::{self as trigger, cron, watch, webhook, TriggerError};

#[derive(Subcommand, Debug)]
pub enum HooksCommand {
    /// Create a webhook for a workspace; prints its token (shown only this once).
    Add {
        name: String,
        #[arg(long)]
        workspace: Option<PathBuf>,
        /// `scripted:FILE` for demos and tests; default: the configured model.
        #[arg(long, hide = true)]
        provider: Option<ProviderSpec>,
    },
    /// List webhooks (never their tokens).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Stop accepting requests for a hook (it answers 404).
    Pause {
        name: String,
    },
    Resume {
        name: String,
    },
    Delete {
        name: String,
    },
}

#[derive(Subcommand, Debug)]
pub enum CronCommand {
    /// Add a schedule: 5 fields in UTC (`0 9 * * MON-FRI`) or @hourly, @daily, @weekly.
    Add {
        expr: String,
        #[arg(long)]
        workspace: Option<PathBuf>,
        #[arg(long)]
        goal: String,
        /// After PocketPilot was closed, run the latest missed tick (one) at start.
        #[arg(long)]
        catch_up: bool,
        #[arg(long, hide = true)]
        provider: Option<ProviderSpec>,
    },
    List {
        #[arg(long)]
        json: bool,
    },
    Pause {
        id: i64,
    },
    Resume {
        id: i64,
    },
    Delete {
        id: i64,
    },
    /// Every fire and skip of a schedule, with the reason.
    Runs {
        id: i64,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand, Debug)]
pub enum WatchCommand {
    /// Watch a path or glob inside a workspace (`*.md` top folder, `**/*.md` everywhere).
    Add {
        pattern: String,
        #[arg(long)]
        workspace: Option<PathBuf>,
        #[arg(long)]
        goal: String,
        /// At most one task per this many seconds; changes in between are coalesced.
        #[arg(long, default_value_t = watch::DEFAULT_MIN_INTERVAL_SECS)]
        interval: i64,
        #[arg(long, hide = true)]
        provider: Option<ProviderSpec>,
    },
    List {
        #[arg(long)]
        json: bool,
    },
    Pause {
        id: i64,
    },
    Resume {
        id: i64,
    },
    Delete {
        id: i64,
    },
    /// Every fire and skip of a watch.
    Runs {
        id: i64,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand, Debug)]
pub enum TriggersCommand {
    /// Pause every trigger (webhooks answer 503; ticks and changes are skipped).
    Pause,
    Resume,
    /// Whether triggers are paused.
    Status,
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// The webhook port on 127.0.0.1 (default: the settings', 8765; 0: any free port).
    #[arg(long)]
    pub port: Option<u16>,
}

impl From<TriggerError> for CliError {
    fn from(e: TriggerError) -> Self {
        match e {
            TriggerError::Runtime(r) => CliError::Runtime(r),
            e if e.is_usage() => CliError::Usage(e.to_string()),
            e => CliError::Other(e.to_string()),
        }
    }
}

fn workspace(w: Option<PathBuf>) -> Result<PathBuf, CliError> {
    w.or_else(default_workspace)
        .ok_or_else(|| CliError::Usage("give --workspace".into()))
}

fn json_line(out: &mut dyn Write, v: &impl serde::Serialize) {
    let text = serde_json::to_string_pretty(v).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    let _ = writeln!(out, "{}", json_safe(text));
}

/// What a trigger stores for its runs' provider: the script made absolute, since the
/// host runs them from another folder; nothing for the configured model.
fn absolute_provider(p: Option<ProviderSpec>) -> Option<String> {
    p.and_then(|spec| spec.absolute().to_stored())
}

pub fn hooks(
    rt: &Arc<Runtime>,
    cmd: HooksCommand,
    out: &mut dyn Write,
) -> Result<ExitCode, CliError> {
    match cmd {
        HooksCommand::Add {
            name,
            workspace: w,
            provider,
        } => {
            let created = webhook::create(
                rt,
                &name,
                &workspace(w)?,
                absolute_provider(provider).as_deref(),
            )?;
            // stdout: the token alone, so that `TOKEN=$(pocketpilot hooks add x)` works.
            let _ = writeln!(out, "{}", created.token);
            let _ = writeln!(
                std::io::stderr(),
                "webhook `{}` for {}: POST /hooks/{} with header X-PocketPilot-Token. The token is shown only now.",
                shown(&name),
                shown(&created.hook.workspace.to_string()),
                shown(&name)
            );
        }
        HooksCommand::List { json } => {
            let hooks = webhook::list(rt)?;
            if json {
                json_line(out, &hooks);
            } else {
                for h in hooks {
                    let state = if h.paused { "paused" } else { "active" };
                    let _ = writeln!(
                        out,
                        "{}\t{state}\t{}",
                        shown(&h.name),
                        shown(&h.workspace.to_string())
                    );
                }
            }
        }
        HooksCommand::Pause { name } => {
            webhook::set_paused(rt, &name, true)?;
            let _ = writeln!(out, "paused {}", shown(&name));
        }
        HooksCommand::Resume { name } => {
            webhook::set_paused(rt, &name, false)?;
            let _ = writeln!(out, "resumed {}", shown(&name));
        }
        HooksCommand::Delete { name } => {
            webhook::delete(rt, &name)?;
            let _ = writeln!(out, "deleted {}", shown(&name));
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn cron(
    rt: &Arc<Runtime>,
    cmd: CronCommand,
    out: &mut dyn Write,
) -> Result<ExitCode, CliError> {
    let now = chrono::Utc::now();
    match cmd {
        CronCommand::Add {
            expr,
            workspace: w,
            goal,
            catch_up,
            provider,
        } => {
            let s = cron::create(
                rt,
                &cron::NewSchedule {
                    expr,
                    workspace: workspace(w)?,
                    goal,
                    provider: absolute_provider(provider),
                    catch_up,
                },
                now,
            )?;
            let next = cron::next_fire(&s, now)
                .map(|t| t.to_rfc3339())
                .unwrap_or_default();
            let _ = writeln!(out, "{}", s.id);
            let _ = writeln!(std::io::stderr(), "schedule {} `{}` (UTC), next at {next}; it runs while PocketPilot or `pocketpilot serve` runs", s.id, shown(&s.expr));
        }
        CronCommand::List { json } => {
            let list = cron::list(rt)?;
            if json {
                json_line(out, &list);
            } else {
                for s in list {
                    let state = if s.paused { "paused" } else { "active" };
                    let next = cron::next_fire(&s, now)
                        .map(|t| t.to_rfc3339())
                        .unwrap_or_default();
                    let _ = writeln!(
                        out,
                        "{}\t{state}\t{}\tnext {next}\t{}\t{}",
                        s.id,
                        shown(&s.expr),
                        shown(&s.workspace.to_string()),
                        shown(&s.goal)
                    );
                }
            }
        }
        CronCommand::Pause { id } => {
            cron::set_paused(rt, id, true)?;
            let _ = writeln!(out, "paused schedule {id}");
        }
        CronCommand::Resume { id } => {
            cron::set_paused(rt, id, false)?;
            let _ = writeln!(out, "resumed schedule {id}");
        }
        CronCommand::Delete { id } => {
            cron::delete(rt, id)?;
            let _ = writeln!(out, "deleted schedule {id}");
        }
        CronCommand::Runs { id, json } => print_runs(rt, "cron", id, json, out)?,
    }
    Ok(ExitCode::SUCCESS)
}

pub fn watch(
    rt: &Arc<Runtime>,
    cmd: WatchCommand,
    out: &mut dyn Write,
) -> Result<ExitCode, CliError> {
    match cmd {
        WatchCommand::Add {
            pattern,
            workspace: w,
            goal,
            interval,
            provider,
        } => {
            let created = watch::create(
                rt,
                &watch::NewWatch {
                    pattern,
                    workspace: workspace(w)?,
                    goal,
                    provider: absolute_provider(provider),
                    min_interval_secs: Some(interval),
                },
            )?;
            let _ = writeln!(out, "{}", created.id);
            let _ = writeln!(
                std::io::stderr(),
                "watch {} on `{}` in {}",
                created.id,
                shown(&created.pattern),
                shown(&created.workspace.to_string())
            );
        }
        WatchCommand::List { json } => {
            let list = watch::list(rt)?;
            if json {
                json_line(out, &list);
            } else {
                for w in list {
                    let state = if w.paused { "paused" } else { "active" };
                    let _ = writeln!(
                        out,
                        "{}\t{state}\t{}\t{}\t{}",
                        w.id,
                        shown(&w.pattern),
                        shown(&w.workspace.to_string()),
                        shown(&w.goal)
                    );
                }
            }
        }
        WatchCommand::Pause { id } => {
            watch::set_paused(rt, id, true)?;
            let _ = writeln!(out, "paused watch {id}");
        }
        WatchCommand::Resume { id } => {
            watch::set_paused(rt, id, false)?;
            let _ = writeln!(out, "resumed watch {id}");
        }
        WatchCommand::Delete { id } => {
            watch::delete(rt, id)?;
            let _ = writeln!(out, "deleted watch {id}");
        }
        WatchCommand::Runs { id, json } => print_runs(rt, "watch", id, json, out)?,
    }
    Ok(ExitCode::SUCCESS)
}

pub fn triggers(
    rt: &Arc<Runtime>,
    cmd: TriggersCommand,
    out: &mut dyn Write,
) -> Result<ExitCode, CliError> {
    match cmd {
        TriggersCommand::Pause => {
            trigger::pause_all(rt)?;
            let _ = writeln!(out, "all triggers paused");
        }
        TriggersCommand::Resume => {
            trigger::resume_all(rt)?;
            let _ = writeln!(out, "triggers resumed");
        }
        TriggersCommand::Status => {
            let paused = trigger::all_paused(rt)?;
            let _ = writeln!(out, "{}", if paused { "paused" } else { "active" });
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_runs(
    rt: &Arc<Runtime>,
    kind: &str,
    id: i64,
    json: bool,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let runs = trigger::runs(rt, kind, id)?;
    if json {
        json_line(out, &runs);
        return Ok(());
    }
    for r in runs {
        let task = r.task_id.map(|t| format!("task {t}")).unwrap_or_default();
        let _ = writeln!(
            out,
            "{}\t{}\t{}\t{task}\t{}",
            r.at,
            r.outcome,
            r.scheduled_for.unwrap_or_default(),
            shown(&r.reason.unwrap_or_default())
        );
    }
    Ok(())
}

/// `pocketpilot serve`: webhooks, schedules and watches without a window. The line
/// `listening on http://127.0.0.1:PORT` goes to stderr.
pub async fn serve(rt: &Arc<Runtime>, args: ServeArgs) -> Result<ExitCode, CliError> {
    trigger::serve::serve_until_signal(rt.clone(), args.port, std::io::stderr()).await?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::{Cli, Command};

    fn cron_provider(spec: &str) -> Result<Option<ProviderSpec>, clap::Error> {
        let argv = ["pocketpilot", "cron", "add", "@daily", "--goal", "g"];
        let cli = Cli::try_parse_from(argv.into_iter().chain(["--provider", spec]))?;
        match cli.command {
            Command::Cron(CronCommand::Add { provider, .. }) => Ok(provider),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn a_triggers_provider_is_parsed_at_the_flag_and_stored_with_an_absolute_script() {
        let spec = cron_provider("scripted:turns.json").unwrap();
        assert_eq!(spec, Some(ProviderSpec::Scripted("turns.json".into())));
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(
            absolute_provider(spec),
            Some(format!("scripted:{}", cwd.join("turns.json").display()))
        );
        let configured = cron_provider("settings").unwrap();
        assert_eq!(absolute_provider(configured), None);
        let err = cron_provider("openai:gpt-4o").unwrap_err().to_string();
        assert!(err.contains("unknown provider `openai:gpt-4o`"), "{err}");
    }
}
