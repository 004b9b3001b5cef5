//! `pocketpilot exec GOAL`: one goal, headless, for scripts and CI.
//!
//! It is `run` without a person at the terminal: it never asks inline. An approval the
//! run needs stays pending in the store (answerable from the window or `pocketpilot
//! approve`) while exec waits for it (`--on-approval wait`), or exec leaves at once with
//! the waiting code (`fail`); it never denies on anyone's behalf. `--json` prints every
//! event as one JSON line, the shape `docs/exec-schema.json` describes. `--output-schema`
//! makes the final answer a JSON value valid against a JSON Schema: an answer that is not
//! is sent back to the model with the validation errors, as a follow-up in the same
//! session, up to `--schema-retries` times.
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, ValueEnum};

use super::run::{FollowOptions, OnApproval};
use super::{default_workspace, CliError};
use pocketpilot_core::api::service::{NewTask, Runtime};
use pocketpilot_core::ops;
use pocketpilot_protocol::task::TaskStatus;
use pocketpilot_protocol::{Capability, RunSource};

/// The answer never became valid against `--output-schema` (after every retry).
pub const EXIT_SCHEMA_NOT_MET: u8 = 11;

/// How many validation errors are shown (to the model and on stderr) per answer.
const ERRORS_SHOWN: usize = 10;

#[derive(Args, Debug)]
pub struct ExecArgs {
    /// What the agent should do.
    pub goal: String,
    /// The workspace folder (default: the current folder; with `--resume`, the session's).
    #[arg(long)]
    pub workspace: Option<PathBuf>,
    /// Continue this session instead of starting a new one.
    #[arg(long, value_name = "SESSION")]
    pub resume: Option<i64>,
    /// `scripted:FILE` plays model turns from a file; default: the configured model.
    #[arg(long)]
    pub provider: Option<String>,
    /// Print every event as a JSON line (docs/exec-schema.json) instead of the answer.
    #[arg(long)]
    pub json: bool,
    /// The final answer must be JSON valid against this JSON Schema file.
    #[arg(long, value_name = "FILE")]
    pub output_schema: Option<PathBuf>,
    /// How many times an answer that does not match `--output-schema` is asked again.
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub schema_retries: u32,
    /// When the run needs an approval: `wait` until someone answers it (the window,
    /// `pocketpilot approve`), or `fail`: exit 3 at once, leaving it pending.
    #[arg(long, value_enum, default_value = "wait")]
    pub on_approval: ApprovalMode,
    /// Grant a capability (e.g. fs:write) for this run; recorded as your decision.
    #[arg(long = "allow", value_name = "CAP")]
    pub allow: Vec<Capability>,
    /// MCP servers or tools this run may use (`server`, `server:tool`, `*`; `none`).
    #[arg(long = "mcp", value_name = "ENTRY")]
    pub mcp: Vec<String>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApprovalMode {
    Wait,
    Fail,
}

pub async fn exec(rt: &Arc<Runtime>, args: ExecArgs) -> Result<ExitCode, CliError> {
    let schema = args
        .output_schema
        .as_deref()
        .map(OutputSchema::load)
        .transpose()?;
    let workspace = workspace_of(&args);
    let goal = match &schema {
        Some(s) => s.ask(&args.goal),
        None => args.goal,
    };
    let first = NewTask {
        goal,
        workspace,
        session_id: args.resume,
        follow_up_of: None,
        trigger: RunSource::Cli,
        provider: super::absolute_provider(args.provider),
        grants: args.allow.clone(),
        mcp: mcp_selection(&args.mcp),
    };
    let mut task = rt.call(ops::SubmitTask { new: first.clone() })?;
    let _ = writeln!(std::io::stderr(), "task {task}");
    let opts = FollowOptions {
        json: args.json,
        // With a schema the answer is printed once it was checked.
        answer_on_stdout: schema.is_none(),
        approvals: match args.on_approval {
            ApprovalMode::Wait => OnApproval::Wait,
            ApprovalMode::Fail => OnApproval::Fail,
        },
    };
    let mut retries = args.schema_retries;
    loop {
        let code = super::run::follow_session_with(rt, task, 0, &opts).await?;
        let Some(schema) = &schema else {
            return Ok(code);
        };
        // The session's last run is the one whose answer counts (queued follow-ups ran
        // after the first).
        let last = last_task(rt, task)?;
        let done = rt.call(ops::GetTask { id: last })?;
        if done.status != TaskStatus::Completed {
            return Ok(code);
        }
        let answer = done.final_answer.unwrap_or_default();
        let problems = match schema.check(&answer) {
            Ok(value) => {
                if !args.json {
                    let text = serde_json::to_string_pretty(&value).unwrap_or(answer);
                    let _ = writeln!(std::io::stdout(), "{}", super::escape::json_safe(text));
                }
                return Ok(code);
            }
            Err(problems) => problems,
        };
        show_problems(last, schema, &problems);
        if retries == 0 {
            return Ok(ExitCode::from(EXIT_SCHEMA_NOT_MET));
        }
        retries -= 1;
        let again = NewTask {
            goal: OutputSchema::ask_again(&problems),
            workspace: None,
            session_id: Some(done.session_id),
            follow_up_of: Some(last),
            provider: done.provider.clone().or_else(|| first.provider.clone()),
            ..first.clone()
        };
        task = rt.call(ops::SubmitTask { new: again })?;
        let _ = writeln!(
            std::io::stderr(),
            "task {task} (asked again: {retries} retries left)"
        );
    }
}

/// `--workspace`, else the current folder for a new session; a resumed session keeps its own.
fn workspace_of(args: &ExecArgs) -> Option<PathBuf> {
    match (&args.workspace, args.resume) {
        (Some(w), _) => Some(w.clone()),
        (None, None) => default_workspace(),
        (None, Some(_)) => None,
    }
}

/// The `--mcp` entries: none given allows every server of the workspace, `none` allows none.
fn mcp_selection(entries: &[String]) -> Option<Vec<String>> {
    match entries {
        [] => None,
        [only] if only == "none" => Some(Vec::new()),
        entries => Some(entries.to_vec()),
    }
}

/// Tells the person on stderr why `task`'s answer was refused (the model is told separately).
fn show_problems(task: i64, schema: &OutputSchema, problems: &[String]) {
    let mut err = std::io::stderr();
    let _ = writeln!(
        err,
        "task {task}: the answer does not match {}:",
        schema.path.display()
    );
    for p in problems {
        let _ = writeln!(err, "  - {}", pocketpilot_protocol::visible(p));
    }
}

/// The newest task of `first`'s session: the one following the session ended on.
fn last_task(rt: &Arc<Runtime>, first: i64) -> Result<i64, CliError> {
    let session = rt.call(ops::GetTask { id: first })?.session_id;
    let newest = rt
        .call(ops::SessionTasks {
            session_id: session,
        })?
        .into_iter()
        .map(|t| t.id)
        .max();
    Ok(newest.unwrap_or(first).max(first))
}

/// A JSON Schema the final answer must satisfy.
struct OutputSchema {
    path: PathBuf,
    text: String,
    validator: jsonschema::Validator,
}

impl OutputSchema {
    fn load(path: &std::path::Path) -> Result<Self, CliError> {
        let shown = path.display();
        let text = std::fs::read_to_string(path)
            .map_err(|e| CliError::Usage(format!("cannot read the schema {shown}: {e}")))?;
        let schema: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| CliError::Usage(format!("{shown} is not JSON: {e}")))?;
        let validator = jsonschema::validator_for(&schema)
            .map_err(|e| CliError::Usage(format!("{shown} is not a valid JSON Schema: {e}")))?;
        Ok(Self {
            path: path.to_owned(),
            text: serde_json::to_string(&schema).unwrap_or(text),
            validator,
        })
    }

    /// The goal with what the answer must be.
    fn ask(&self, goal: &str) -> String {
        format!(
            "{goal}\n\nYour final answer must be only a JSON value (no prose, no code fence) valid against this JSON Schema:\n{}",
            self.text
        )
    }

    /// The follow-up asking again, with what was wrong.
    fn ask_again(problems: &[String]) -> String {
        let list: String = problems.iter().map(|p| format!("- {p}\n")).collect();
        format!(
            "Your final answer does not match the required JSON Schema:\n{list}Answer again with only the corrected JSON value."
        )
    }

    /// The answer as JSON when it is valid, else what is wrong with it. One fenced code
    /// block around the value is accepted: models add one even when told not to.
    fn check(&self, answer: &str) -> Result<serde_json::Value, Vec<String>> {
        let text = unfenced(answer.trim());
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| vec![format!("the answer is not JSON: {e}")])?;
        let problems: Vec<String> = self
            .validator
            .iter_errors(&value)
            .take(ERRORS_SHOWN)
            .map(|e| {
                let at = e.instance_path().to_string();
                let at = if at.is_empty() { "/".to_owned() } else { at };
                format!("at {at}: {e}")
            })
            .collect();
        if problems.is_empty() {
            Ok(value)
        } else {
            Err(problems)
        }
    }
}

/// The inside of a single ```` ``` ```` (or ```` ```json ````) block, or the text as it is.
fn unfenced(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return text;
    };
    // The info string ends at the first newline.
    match body.split_once('\n') {
        Some((info, inner)) if !info.contains('{') && !info.contains('[') => inner.trim(),
        _ => body.trim(),
    }
}

#[cfg(test)]
#[path = "exec_tests.rs"]
mod tests;
