use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use clap::builder::TypedValueParser;
use clap::{Args, Subcommand};

use super::escape::shown;
use super::{print_json, CliError};
use pocketpilot_core::api::service::Runtime;
use pocketpilot_core::engine::inbox::{Say, Submit, WhenBusy};
use pocketpilot_core::ops;
use pocketpilot_protocol::{RunSource, SessionMode, WireName};

#[derive(Args, Debug)]
pub struct SayArgs {
    pub session: i64,
    pub text: String,
    /// Join the current run at its next tool boundary instead of waiting for its answer.
    #[arg(long, conflicts_with_all = ["reject_if_busy"])]
    pub steer: bool,
    /// Refuse (exit 6) rather than queue while the agent is busy.
    #[arg(long)]
    pub reject_if_busy: bool,
    /// Refuse (exit 7) when nothing is running.
    #[arg(long)]
    pub reject_if_idle: bool,
    /// Saying the same request id twice returns the first submission and writes nothing.
    #[arg(long)]
    pub request_id: Option<String>,
    /// `scripted:FILE` for a run this starts (default: the session's last provider).
    #[arg(long)]
    pub provider: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand, Debug)]
pub enum SessionCommand {
    /// The transcript (entries in order) and every submission with its status and reason.
    Show {
        session: i64,
        #[arg(long)]
        json: bool,
    },
    /// Compacts the session's context now (summarises older turns with its model).
    Compact {
        session: i64,
        #[arg(long)]
        json: bool,
    },
    /// Deletes the session with its tasks, transcript, approvals, costs and kept changes
    /// (it cannot be undone). Asks first on a terminal; `--yes` skips the question.
    /// Refused (exit 6) while one of its tasks is open: cancel or stop it first.
    Delete {
        session: i64,
        #[arg(long)]
        yes: bool,
    },
    /// A new session from before one of the person's messages, in a git worktree, a copy
    /// of the workspace or the same folder.
    Fork(super::rewind::ForkArgs),
    /// How many queued steers and follow-ups a boundary takes: `one-at-a-time` or `all`.
    Modes {
        session: i64,
        #[arg(long, value_parser = session_mode())]
        steering: Option<SessionMode>,
        #[arg(long, value_parser = session_mode())]
        follow_up: Option<SessionMode>,
    },
}

/// A session mode by its name; clap lists the names in the usage error and in `--help`.
fn session_mode() -> impl TypedValueParser<Value = SessionMode> {
    clap::builder::PossibleValuesParser::new(SessionMode::ALL.iter().map(|m| m.as_str()))
        .try_map(|name| name.parse::<SessionMode>())
}

/// Says something to a session. Queued while it is busy (the process working it places it
/// at its next boundary); when it is idle this process starts the run and works the
/// session until it is idle again, streaming the answers.
pub async fn say(rt: &Arc<Runtime>, args: SayArgs) -> Result<ExitCode, CliError> {
    let when_busy = if args.steer {
        WhenBusy::Steer
    } else if args.reject_if_busy {
        WhenBusy::Reject
    } else {
        WhenBusy::FollowUp
    };
    let submit = Submit {
        session_id: args.session,
        say: Say::Input {
            text: args.text,
            when_busy,
            reject_if_idle: args.reject_if_idle,
        },
        request_id: args.request_id,
        provider: super::absolute_provider(args.provider),
        trigger: Some(RunSource::Cli),
        grants: Vec::new(),
        mcp: None,
    };
    admitted(rt, &submit, args.json).await
}

pub async fn continue_(rt: &Arc<Runtime>, session: i64, json: bool) -> Result<ExitCode, CliError> {
    let submit = Submit {
        session_id: session,
        say: Say::Continue,
        request_id: None,
        provider: None,
        trigger: Some(RunSource::Cli),
        grants: Vec::new(),
        mcp: None,
    };
    admitted(rt, &submit, json).await
}

async fn admitted(rt: &Arc<Runtime>, submit: &Submit, json: bool) -> Result<ExitCode, CliError> {
    let a = rt.call(ops::Say {
        submit: submit.clone(),
    })?;
    let s = &a.submission;
    if json {
        print_json(
            &serde_json::json!({ "submission": s, "started": a.started, "deduplicated": a.deduplicated }),
        );
    } else {
        let _ = writeln!(
            std::io::stderr(),
            "submission {} {}{}",
            s.id,
            s.status,
            if a.deduplicated {
                " (already submitted)"
            } else {
                ""
            }
        );
    }
    match a.started {
        Some(task) => super::run::follow_session(rt, task, json).await,
        None => Ok(ExitCode::SUCCESS),
    }
}

pub fn inbox(rt: &Arc<Runtime>, session: i64, json: bool) -> Result<ExitCode, CliError> {
    let items = rt.call(ops::GetInbox {
        session_id: session,
    })?;
    if json {
        print_json(&items);
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    for s in items {
        let text = s.content["text"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| s.content.to_string());
        let _ = writeln!(
            out,
            "{:>5}  {:<9} {}",
            s.id,
            s.mode.map(|m| m.as_str()).unwrap_or(s.kind.as_str()),
            shown(&text)
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn withdraw(rt: &Arc<Runtime>, id: i64) -> Result<ExitCode, CliError> {
    let s = rt.call(ops::Withdraw { submission_id: id })?;
    let _ = writeln!(
        std::io::stdout(),
        "submission {} {} ({})",
        s.id,
        s.status,
        shown(&s.reason.unwrap_or_default())
    );
    Ok(ExitCode::SUCCESS)
}

pub async fn session(rt: &Arc<Runtime>, cmd: SessionCommand) -> Result<ExitCode, CliError> {
    match cmd {
        SessionCommand::Show { session, json } => {
            let s = rt.call(ops::GetSession {
                session_id: session,
            })?;
            let entries = rt.call(ops::SessionEntries {
                session_id: session,
            })?;
            let submissions = rt.call(ops::ListSubmissions {
                session_id: session,
            })?;
            let tasks = rt.call(ops::SessionTasks {
                session_id: session,
            })?;
            if json {
                let context = super::context::context_json(rt, session).await?;
                print_json(&serde_json::json!({
                    "session": s, "entries": entries, "submissions": submissions, "tasks": tasks,
                    "context": context["context"], "compactions": context["compactions"],
                }));
                return Ok(ExitCode::SUCCESS);
            }
            let mut out = std::io::stdout().lock();
            let _ = writeln!(
                out,
                "session {}  {}  ({})",
                s.id,
                shown(&s.title),
                shown(&s.workspace)
            );
            for e in entries {
                let text = e.content["text"]
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| e.content.to_string());
                // A rewound entry stays in the history, marked: the model no longer sees it.
                let mark = if e.rewound_by.is_some() { "~" } else { " " };
                let _ = writeln!(out, "{:>5}{mark}{:<12} {}", e.id, e.kind, shown(&text));
            }
            for s in submissions {
                let _ = writeln!(
                    out,
                    "submission {:>4} {:<8} {:<10} {}",
                    s.id,
                    s.kind,
                    s.status,
                    shown(&s.reason.unwrap_or_default())
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        SessionCommand::Delete { session, yes } => super::tasks::delete_session(rt, session, yes),
        SessionCommand::Fork(args) => super::rewind::fork(rt, args),
        SessionCommand::Compact { session, json } => {
            super::context::compact(rt, session, json).await
        }
        SessionCommand::Modes {
            session,
            steering,
            follow_up,
        } => {
            rt.call(ops::SetSessionModes {
                session_id: session,
                steering,
                follow_up,
            })?;
            let s = rt.call(ops::GetSession {
                session_id: session,
            })?;
            let _ = writeln!(
                std::io::stdout(),
                "steering {} · follow-up {}",
                s.steering_mode,
                s.follow_up_mode
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Resumes interrupted work in the foreground: one task, or every session nobody works.
pub async fn resume(rt: &Arc<Runtime>, task: Option<i64>) -> Result<ExitCode, CliError> {
    let sessions = match task {
        Some(id) => vec![rt.call(ops::GetTask { id })?.session_id],
        None => rt.call(ops::InterruptedSessions {})?,
    };
    if sessions.is_empty() {
        let _ = writeln!(std::io::stderr(), "nothing to resume");
    }
    for s in sessions {
        let _ = writeln!(std::io::stderr(), "resuming session {s}");
        rt.call(ops::DriveSession { session_id: s }).await?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::SessionCommand;
    use crate::{Cli, Command};
    use pocketpilot_protocol::SessionMode;

    fn modes(args: &[&str]) -> Result<(Option<SessionMode>, Option<SessionMode>), clap::Error> {
        let argv = ["pocketpilot", "session", "modes", "7"].iter().chain(args);
        match Cli::try_parse_from(argv)?.command {
            Command::Session(SessionCommand::Modes {
                session: 7,
                steering,
                follow_up,
            }) => Ok((steering, follow_up)),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn modes_parse_by_name() {
        assert_eq!(
            modes(&["--steering", "all", "--follow-up", "one-at-a-time"]).unwrap(),
            (Some(SessionMode::All), Some(SessionMode::OneAtATime))
        );
        assert_eq!(
            modes(&["--follow-up", "all"]).unwrap(),
            (None, Some(SessionMode::All))
        );
    }

    #[test]
    fn a_mode_nobody_knows_is_a_usage_error_listing_the_modes() {
        for args in [["--steering", "sometimes"], ["--follow-up", "ALL"]] {
            let err = modes(&args).unwrap_err();
            assert_eq!(err.kind(), clap::error::ErrorKind::InvalidValue, "{err}");
            // `main_with` exits with the usage code for an error clap prints to stderr.
            assert!(err.use_stderr());
            let text = err.render().to_string();
            assert!(
                text.contains(&format!("invalid value '{}'", args[1])),
                "{text}"
            );
            assert!(
                text.contains("[possible values: one-at-a-time, all]"),
                "{text}"
            );
        }
    }
}
