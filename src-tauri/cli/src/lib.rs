//! The `pocketpilot` command line: the same runtime as the desktop app, without a window.
//!
//! Exit codes: 0 completed, 1 failed (or an error), 2 usage error, 3 left waiting for an
//! approval, 4 cancelled, 5 budget exceeded, 6 the session is busy (`--reject-if-busy`),
//! 7 the session is idle (`--reject-if-idle`), 8 the inbox is full, 9 paused (a budget ran
//! out or the agent repeated itself: `pocketpilot raise` or `stop`), 10 an undo or redo
//! refused because files were changed since, 11 `exec --output-schema` not met, 12 the
//! store cannot be used (damaged, or written by a newer build: `pocketpilot doctor`).
#![deny(clippy::print_stdout, clippy::print_stderr)]
mod agent_hooks;
mod approvals;
mod autostart;
mod backup;
mod budget;
mod changes;
mod context;
mod doctor;
mod escape;
mod eval;
mod exec;
mod export;
mod inbox;
mod mcp;
mod memory;
mod models;
mod plan;
mod policy;
mod rewind;
mod run;
mod sandbox;
mod search;
mod settings;
mod tasks;
pub mod triggers;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use pocketpilot_core::api::service::{Runtime, RuntimeError};
use pocketpilot_protocol::ErrorKind;

pub const EXIT_FAILED: u8 = 1;
pub const EXIT_USAGE: u8 = 2;
pub const EXIT_BUSY: u8 = 6;
pub const EXIT_IDLE: u8 = 7;
/// The session's inbox is full (`inbox_full`): nothing was written.
pub const EXIT_INBOX_FULL: u8 = 8;
/// The store is damaged or from a newer build: nothing was written to it.
pub const EXIT_STORE: u8 = 12;

#[derive(Parser, Debug)]
#[command(
    name = "pocketpilot",
    version,
    about = "PocketPilot: a desktop agent you stay in control of. With no command it opens the window."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Create a task, run it here and stream its answer to stdout.
    Run(run::RunArgs),
    /// One goal, headless, for scripts: JSON lines, a schema-checked answer, exit codes.
    Exec(exec::ExecArgs),
    /// Serve the Agent Client Protocol on stdin/stdout, for editors (Zed, JetBrains, Neovim).
    Acp {
        /// `scripted:FILE` plays model turns from a file; default: the configured model.
        #[arg(long)]
        provider: Option<String>,
        /// Use the editor's file methods when it offers them: reads see its unsaved
        /// buffers, approved writes go to it (`on`, the default, or `off`; also
        /// `POCKETPILOT_ACP_EDITOR_FILES`).
        #[arg(long, env = "POCKETPILOT_ACP_EDITOR_FILES", default_value = "on")]
        editor_files: OnOff,
    },
    /// List recent tasks.
    Tasks {
        #[arg(long)]
        json: bool,
        #[arg(long, default_value_t = 50)]
        limit: i64,
    },
    /// Show a task: status, goal, final answer and every persisted event.
    Show {
        task: i64,
        #[arg(long)]
        json: bool,
    },
    /// Cancel a task in any non-terminal state.
    Cancel { task: i64 },
    /// Continue a paused task with more budget (`--steps N | --seconds N | --tokens N | --usd X`).
    Raise(budget::RaiseArgs),
    /// Stop a paused task: `budget_exceeded` (a budget paused it) or `cancelled` (repetition).
    Stop { task: i64 },
    /// What the model turns cost, per UTC day and model.
    Usage {
        /// A UTC day, `YYYY-MM-DD` (default: the last 30 days).
        #[arg(long)]
        since: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Model prices per million tokens (what costs are computed with).
    #[command(subcommand)]
    Prices(budget::PricesCommand),
    /// Money budgets and the repetition guard.
    #[command(subcommand)]
    Budget(budget::BudgetCommand),
    /// List sessions.
    Sessions {
        #[arg(long)]
        json: bool,
    },
    /// Show log lines (JSON), optionally of one task.
    Logs {
        #[arg(long)]
        task: Option<i64>,
    },
    /// List pending approvals.
    Approvals {
        #[arg(long)]
        json: bool,
    },
    /// Approve a pending approval and continue its task here.
    Approve(approvals::ApproveArgs),
    /// Reject a pending approval and continue its task here.
    Reject(approvals::RejectArgs),
    /// Model provider settings.
    #[command(subcommand)]
    Provider(settings::ProviderCommand),
    /// Say something to a session: queued while the agent is busy, a new run when idle.
    Say(inbox::SayArgs),
    /// Place queued items and run again on the session's context (idle sessions only).
    Continue {
        session: i64,
        #[arg(long)]
        json: bool,
    },
    /// A session's queued submissions.
    Inbox {
        session: i64,
        #[arg(long)]
        json: bool,
    },
    /// Withdraw a queued submission.
    Withdraw { submission: i64 },
    /// Sessions: show, modes.
    #[command(subcommand)]
    Session(inbox::SessionCommand),
    /// Resume interrupted tasks in the foreground (all, or one task's session).
    Resume { task: Option<i64> },
    /// Whether the app and `serve` resume interrupted work at start: `auto` or `ask`.
    Recovery {
        #[arg(value_enum)]
        mode: Option<RecoveryMode>,
    },
    /// MCP servers whose tools runs may use.
    #[command(subcommand)]
    Mcp(mcp::McpCommand),
    /// The API key in the OS keychain (write-only: it is never shown).
    #[command(subcommand)]
    Key(settings::KeyCommand),
    /// Per-workspace policy: capability rules and command rules (`cargo test *`).
    #[command(subcommand)]
    Policy(policy::PolicyCommand),
    /// Hooks runs call at their events (Claude Code's format): list, consent, revoke.
    #[command(subcommand)]
    AgentHooks(agent_hooks::AgentHooksCommand),
    /// Plan mode: a task's plan (show, approve, edit, reject) and a session's setting.
    #[command(subcommand)]
    Plan(plan::PlanCommand),
    /// Webhooks: `POST http://127.0.0.1:PORT/hooks/NAME` creates a task.
    #[command(subcommand)]
    Hooks(triggers::HooksCommand),
    /// Schedules (cron, UTC).
    #[command(subcommand)]
    Cron(triggers::CronCommand),
    /// File watches.
    #[command(subcommand)]
    Watch(triggers::WatchCommand),
    /// Pause or resume every trigger.
    #[command(subcommand)]
    Triggers(triggers::TriggersCommand),
    /// Run webhooks, schedules and watches without a window until Ctrl-C.
    Serve(triggers::ServeArgs),
    /// Run the scripted eval suite (each case in its own temporary store and workspace).
    Eval(eval::EvalArgs),
    /// Turn a recorded task into a scripted eval case.
    Replay(eval::ReplayArgs),
    /// Start the app at login, hidden in the tray (an XDG autostart entry): on, off, status.
    Autostart {
        #[arg(value_enum, default_value = "status")]
        switch: autostart::Switch,
    },
    /// What works here and what does not: the store, the sandbox, the keychain, private files.
    Doctor,
    /// Copies of the store: now, list, restore FILE, keep [DAYS].
    #[command(subcommand)]
    Backup(backup::BackupCommand),
    /// A workspace's sandbox: extra readable/writable dirs, network, passed variables.
    #[command(subcommand)]
    Sandbox(sandbox::SandboxCommand),
    /// Durable notes given to the model on every run: list, add, edit, delete.
    #[command(subcommand)]
    Memory(memory::MemoryCommand),
    /// The workspace's instructions, memories and skills in effect; switch a skill on/off.
    #[command(subcommand)]
    Rules(memory::RulesCommand),
    /// The local models kept here: list, import, pull, use, rm.
    #[command(subcommand)]
    Models(models::ModelsCommand),
    /// Find past work: words in every session's messages, answers and tool output.
    Search(search::SearchArgs),
    /// The files a task (or a session) changed, with diffs.
    Changes(changes::ChangesArgs),
    /// Undo a task's changes (or one call's, or a session's after a task).
    Undo(changes::UndoArgs),
    /// Redo an undo (or take back a rewind).
    Redo(changes::RedoArgs),
    /// Go back to before one of the person's messages: the conversation and the files.
    Rewind(rewind::RewindArgs),
    /// Write a session (or every session) out: transcript, tool calls, files changed.
    Export(export::ExportArgs),
}

/// Parses `args` and runs the command. `args[0]` is the program name.
pub fn main_with<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { EXIT_USAGE } else { 0 });
        }
    };
    let data_dir = pocketpilot_core::config::data_dir();
    let _log = pocketpilot_core::logging::init(&data_dir);
    let tokio = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(t) => t,
        Err(e) => return fail(&format!("cannot start: {e}")),
    };
    // What must work while the store does not open (or must not be open) runs first.
    let command = match cli.command {
        Command::Doctor => return doctor::doctor(&data_dir, &mut std::io::stdout().lock()),
        Command::Backup(cmd) if cmd.without_store() => {
            return backup::without_store(cmd, &data_dir)
        }
        other => other,
    };
    tokio.block_on(async move {
        let rt = match Runtime::open(&data_dir) {
            Ok(rt) => rt,
            Err(RuntimeError::Store(e)) => {
                return backup::unusable_store(&e, &data_dir)
                    .unwrap_or_else(|| fail(&e.to_string()))
            }
            Err(e) => return fail(&e.to_string()),
        };
        match dispatch(&rt, command, &data_dir).await {
            Ok(code) => code,
            Err(e) => error_exit(&e),
        }
    })
}

// long: one arm per command, nothing else
async fn dispatch(
    rt: &std::sync::Arc<Runtime>,
    command: Command,
    data_dir: &std::path::Path,
) -> Result<ExitCode, CliError> {
    match command {
        Command::Run(args) => run::run(rt, args).await,
        Command::Exec(args) => exec::exec(rt, args).await,
        Command::Acp {
            provider,
            editor_files,
        } => {
            let options = pocketpilot_acp::Options {
                provider: absolute_provider(provider),
                editor_files: editor_files == OnOff::On,
            };
            pocketpilot_acp::serve(rt.clone(), options)
                .await
                .map_err(|e| CliError::Other(e.to_string()))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Tasks { json, limit } => tasks::list(rt, json, limit),
        Command::Show { task, json } => tasks::show(rt, task, json),
        Command::Cancel { task } => tasks::cancel(rt, task).await,
        Command::Raise(args) => budget::raise(rt, args).await,
        Command::Stop { task } => budget::stop(rt, task),
        Command::Usage { since, json } => budget::usage(rt, since, json),
        Command::Prices(cmd) => budget::prices(rt, cmd),
        Command::Budget(cmd) => budget::budget(rt, cmd),
        Command::Sessions { json } => tasks::sessions(rt, json),
        Command::Logs { task } => {
            let lines = pocketpilot_core::logging::read(data_dir, task)
                .map_err(|e| CliError::Other(e.to_string()))?;
            let mut out = std::io::stdout().lock();
            for l in lines {
                let _ = writeln!(out, "{}", escape::shown(&l.to_string()));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Approvals { json } => approvals::list(rt, json),
        Command::Approve(args) => approvals::approve(rt, args).await,
        Command::Reject(args) => approvals::reject(rt, args).await,
        Command::Provider(cmd) => settings::provider(rt, cmd),
        Command::Policy(cmd) => policy::policy(rt, cmd),
        Command::Plan(cmd) => plan::plan(rt, cmd).await,
        Command::Key(cmd) => settings::key(rt, cmd),
        Command::Mcp(cmd) => mcp::mcp(rt, cmd),
        Command::Hooks(cmd) => triggers::hooks(rt, cmd, &mut std::io::stdout().lock()),
        Command::Cron(cmd) => triggers::cron(rt, cmd, &mut std::io::stdout().lock()),
        Command::Watch(cmd) => triggers::watch(rt, cmd, &mut std::io::stdout().lock()),
        Command::Triggers(cmd) => triggers::triggers(rt, cmd, &mut std::io::stdout().lock()),
        Command::Serve(args) => backup::serving(rt, triggers::serve(rt, args)).await,
        Command::Eval(args) => eval::eval(rt, args).await,
        Command::Replay(args) => eval::replay(rt, args),
        Command::Doctor => Ok(doctor::doctor(data_dir, &mut std::io::stdout().lock())),
        Command::Backup(cmd) => backup::with_store(rt, cmd),
        Command::Sandbox(cmd) => sandbox::sandbox(rt, cmd),
        Command::AgentHooks(cmd) => agent_hooks::agent_hooks(rt, cmd),
        Command::Memory(cmd) => memory::memory(rt, cmd, &mut std::io::stdout().lock()),
        Command::Rules(cmd) => memory::rules(rt, cmd, &mut std::io::stdout().lock()),
        Command::Models(cmd) => models::models(cmd, data_dir).await,
        Command::Search(args) => search::search(rt, args),
        Command::Changes(args) => changes::changes(rt, args),
        Command::Undo(args) => changes::undo(rt, args),
        Command::Redo(args) => changes::redo(rt, args),
        Command::Rewind(args) => rewind::rewind(rt, args),
        Command::Export(args) => export::export(rt, args),
        Command::Autostart { switch } => {
            autostart::command(switch, &mut std::io::stdout().lock())
                .map_err(|e| CliError::Other(e.to_string()))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Say(args) => inbox::say(rt, args).await,
        Command::Continue { session, json } => inbox::continue_(rt, session, json).await,
        Command::Inbox { session, json } => inbox::inbox(rt, session, json),
        Command::Withdraw { submission } => inbox::withdraw(rt, submission),
        Command::Session(cmd) => inbox::session(rt, cmd).await,
        Command::Resume { task } => inbox::resume(rt, task).await,
        Command::Recovery { mode } => settings::recovery(
            rt,
            mode.map(|m| match m {
                RecoveryMode::Auto => pocketpilot_core::config::ResumeOnStart::Auto,
                RecoveryMode::Ask => pocketpilot_core::config::ResumeOnStart::Ask,
            }),
        ),
    }
}

/// A setting that is on or off.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnOff {
    On,
    Off,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum RecoveryMode {
    Auto,
    Ask,
}

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Store(#[from] pocketpilot_store::StoreError),
    #[error("{0}")]
    Other(String),
}

fn error_exit(e: &CliError) -> ExitCode {
    let code = match e {
        CliError::Usage(_) => EXIT_USAGE,
        CliError::Runtime(r) => match r.kind() {
            ErrorKind::ConversationBusy | ErrorKind::SessionActive => EXIT_BUSY,
            ErrorKind::ConversationIdle => EXIT_IDLE,
            ErrorKind::InboxFull => EXIT_INBOX_FULL,
            kind if kind.is_usage() => EXIT_USAGE,
            _ => EXIT_FAILED,
        },
        CliError::Store(pocketpilot_store::StoreError::NotFound { .. }) => EXIT_USAGE,
        CliError::Store(_) | CliError::Other(_) => EXIT_FAILED,
    };
    // Errors can carry a tool's or the model's text.
    let e = e.to_string();
    let _ = writeln!(
        std::io::stderr(),
        "pocketpilot: {}",
        pocketpilot_protocol::visible(&e)
    );
    ExitCode::from(code)
}

fn fail(msg: &str) -> ExitCode {
    let _ = writeln!(
        std::io::stderr(),
        "pocketpilot: {}",
        escape::shown_block(msg)
    );
    ExitCode::from(EXIT_FAILED)
}

pub(crate) fn print_json(v: &impl serde::Serialize) {
    let text = serde_json::to_string_pretty(v).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    let _ = writeln!(std::io::stdout().lock(), "{}", escape::json_safe(text));
}

/// Reads a secret: typed without echo on a terminal, else one line of stdin. Never empty.
pub(crate) fn read_secret(prompt: &str) -> Result<String, CliError> {
    use std::io::{BufRead, IsTerminal};
    let value = if std::io::stdin().is_terminal() {
        rpassword::prompt_password(prompt)
            .map_err(|e| CliError::Other(format!("cannot read it: {e}")))?
    } else {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .map_err(|e| CliError::Other(format!("cannot read it: {e}")))?;
        line
    };
    let value = value.trim();
    if value.is_empty() {
        return Err(CliError::Usage(
            "the value is empty; nothing was stored".into(),
        ));
    }
    Ok(value.to_owned())
}

/// `scripted:FILE` with FILE made absolute: the task may be continued from another folder.
/// A spec that is not one is kept as typed: the run refuses it, saying what to write.
pub(crate) fn absolute_provider(p: Option<String>) -> Option<String> {
    p.map(|text| {
        let spec = text.parse::<pocketpilot_model::ProviderSpec>();
        spec.map_or(text, |s| s.absolute().to_string())
    })
}

pub(crate) fn default_workspace() -> Option<PathBuf> {
    std::env::current_dir().ok()
}
