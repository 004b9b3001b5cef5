//! `run_command` (shell:execute): `sh -c COMMAND` in the workspace root.
//!
//! - Confined by `pocketpilot-sandbox` (approved is not unconfined): writes only in the
//!   workspace and a private TMPDIR, no network without the grant, `.git/hooks` and
//!   `.git/config` read-only, the app's data dirs (`ToolContext::forbidden`) unreachable.
//!   When the sandbox cannot be applied the call fails, unless the context explicitly
//!   says "no sandbox".
//! - The environment is the base environment minus anything that looks like a secret
//!   (except the names the sandbox settings pass through).
//! - On cancel, on timeout, and also when the shell exits, the sandbox's supervisor kills
//!   every process of the tree, detached ones included: nothing outlives the call.
//! - stdout and stderr share one pipe (so their order is kept), capped: the head and the
//!   tail are kept with a marker in between.
//! - Within a watched run ([`PROCESS_WATCH`]) the sandbox supervisor, the root of the
//!   call's tree, is recorded before the command runs: the shell waits at a gate on its
//!   stdin until the record is committed, and a call that cannot be recorded never runs.
use std::ffi::{OsStr, OsString};
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::io::AsyncReadExt;

use super::{parse_args, MAX_CONTENT_BYTES};
use crate::guard::WorkspaceGuard;
use crate::tool::{Effect, Tool, ToolContext, ToolError, ToolOutput};

pub const DEFAULT_TIMEOUT_SECS: u64 = 120;
pub const MAX_TIMEOUT_SECS: u64 = 600;
/// Output kept: half from the start, half from the end.
pub const OUTPUT_CAP_BYTES: usize = 64 * 1024;
const MAX_COMMAND_BYTES: usize = 64 * 1024;
/// After the supervisor exits (the whole tree is dead by then), how long to wait for the
/// pipe to drain.
const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// After the lifeline is closed, how long the supervisor may take to kill the tree.
const END_GRACE: Duration = Duration::from_secs(5);

/// The shell that waits until its process is recorded, then becomes `sh -c COMMAND` with
/// stdin from /dev/null (the same process: the record names it). The gate closing without
/// the word (the call failed, the app died) means "do not run".
const GATED: &str =
    r#"IFS= read -r go && [ "$go" = run ] && exec /bin/sh -c "$1" </dev/null; exit 125"#;

/// Told of each process a run starts for a tool call or an MCP server (the sandbox
/// supervisor, the root of its tree) while it is still the caller's unreaped child: a
/// process the run's record does not name could outlive a takeover of its session.
pub trait ProcessWatch: Send + Sync {
    /// Records the process; on an error the process is killed and the call fails.
    fn started(&self, pid: u32) -> Result<(), NotRecorded>;
    /// The process and its tree have exited.
    fn ended(&self, pid: u32);
}

/// Why a started process could not be recorded.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NotRecorded(pub String);

tokio::task_local! {
    /// The watch of the run this tokio task works, if it is watched.
    pub static PROCESS_WATCH: std::sync::Arc<dyn ProcessWatch>;
}

/// The watch of the run on this tokio task, if any.
pub fn process_watch() -> Option<std::sync::Arc<dyn ProcessWatch>> {
    PROCESS_WATCH.try_with(std::sync::Arc::clone).ok()
}

/// Variables whose names contain one of these (case-insensitively) never reach a command.
const SECRET_MARKERS: &[&str] = &["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    command: String,
    #[serde(default)]
    timeout_secs: Option<u64>,
}

impl Args {
    fn parse(args: &Value) -> Result<(Self, u64), ToolError> {
        let args: Args = parse_args(args)?;
        if args.command.trim().is_empty() {
            return Err(ToolError::InvalidArguments("`command` is empty".into()));
        }
        if args.command.contains('\0') {
            return Err(ToolError::InvalidArguments(
                "`command` contains a NUL byte".into(),
            ));
        }
        if args.command.len() > MAX_COMMAND_BYTES.min(MAX_CONTENT_BYTES) {
            return Err(ToolError::InvalidArguments(format!(
                "`command` is {} bytes; at most {MAX_COMMAND_BYTES} are accepted",
                args.command.len()
            )));
        }
        let timeout = args.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS);
        if timeout == 0 || timeout > MAX_TIMEOUT_SECS {
            return Err(ToolError::InvalidArguments(format!(
                "timeout_secs must be between 1 and {MAX_TIMEOUT_SECS}"
            )));
        }
        Ok((args, timeout))
    }
}

/// Whether a variable may be passed to a command. (The runtime uses this list to decide
/// what to strip from its own environment; commands get the sandbox's broader scrub.)
pub fn is_secret_name(name: &OsStr) -> bool {
    let upper = name.to_string_lossy().to_ascii_uppercase();
    upper == "POCKETPILOT_API_KEY" || SECRET_MARKERS.iter().any(|m| upper.contains(m))
}

/// The base environment (the context's, else this process's) without secrets, as a
/// command of this context gets it (before TMPDIR is set).
pub fn scrubbed_env(ctx: &ToolContext) -> Vec<(OsString, OsString)> {
    let base: Vec<(OsString, OsString)> = match &ctx.base_env {
        Some(env) => env.clone(),
        None => std::env::vars_os().collect(),
    };
    pocketpilot_sandbox::scrub_env(base, &ctx.sandbox.env_pass)
}

pub struct RunCommand;

#[async_trait]
impl Tool for RunCommand {
    fn name(&self) -> &'static str {
        "run_command"
    }

    fn description(&self) -> &'static str {
        "Run a shell command (`sh -c`) in the workspace root. Returns the exit code and the \
         combined stdout/stderr (capped). It runs sandboxed: it may write only inside the \
         workspace and $TMPDIR, has no network unless granted, and secrets are removed from \
         the environment; the command and everything it starts are killed when it ends or \
         on timeout (default 120 s, at most 600 s)."
    }

    fn brief(&self) -> &'static str {
        "Run a shell command in the workspace (sandboxed)."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The shell command line."},
                "timeout_secs": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_SECS}
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }

    fn capability(&self) -> &'static str {
        "shell:execute"
    }

    fn kind(&self) -> pocketpilot_model::ToolKind {
        pocketpilot_model::ToolKind::Command
    }

    fn replay_safe(&self) -> bool {
        false
    }

    fn effect(&self, args: &Value, ctx: &ToolContext) -> Result<Effect, ToolError> {
        let (args, _) = Args::parse(args)?;
        let guard = WorkspaceGuard::for_context(ctx)?;
        Ok(Effect::Command {
            command: args.command,
            cwd: guard.root().display().to_string(),
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let (args, timeout) = Args::parse(&args)?;
        let guard = WorkspaceGuard::for_context(ctx)?;
        run(&args.command, &guard, ctx, Duration::from_secs(timeout)).await
    }
}

async fn run(
    command: &str,
    guard: &WorkspaceGuard,
    ctx: &ToolContext,
    timeout: Duration,
) -> Result<ToolOutput, ToolError> {
    let failed = |what: &str, e: std::io::Error| ToolError::Failed(format!("{what}: {e}"));
    let (reader, writer) = std::io::pipe().map_err(|e| failed("cannot create a pipe", e))?;
    let writer_err = writer
        .try_clone()
        .map_err(|e| failed("cannot create a pipe", e))?;
    let watch = process_watch();
    let mut cmd = tokio::process::Command::new("/bin/sh");
    cmd.current_dir(guard.root())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::from(writer_err));
    let mut gate = None;
    if watch.is_some() {
        let (gate_read, gate_write) =
            std::io::pipe().map_err(|e| failed("cannot create a pipe", e))?;
        cmd.args(["-c", GATED, "pocketpilot-gate", command])
            .stdin(Stdio::from(gate_read));
        gate = Some(gate_write);
    } else {
        cmd.arg("-c").arg(command).stdin(Stdio::null());
    }
    // Dropping the sandbox guard (also when this future is dropped mid-run) closes the
    // supervisor's lifeline: it kills the whole tree. No kill_on_drop: a SIGKILL to the
    // supervisor would leave detached descendants behind.
    let mut sandbox = pocketpilot_sandbox::confine(&mut cmd, &ctx.sandbox_policy())
        .map_err(|e| ToolError::Failed(e.to_string()))?;
    let spawned = cmd.spawn();
    // The Command holds the pipe's write ends; drop them or the read never sees EOF.
    drop(cmd);
    let mut child = spawned.map_err(|e| failed("cannot start sh", e))?;
    let watched = match (&watch, gate, child.id()) {
        (Some(w), Some(mut gate), Some(pid)) => match w.started(pid) {
            Ok(()) => {
                use std::io::Write;
                // Never blocks: a pipe holds far more than the word.
                if let Err(e) = gate.write_all(b"run\n") {
                    tracing::warn!(error = %e, "the command's gate could not be opened");
                }
                Some((w.clone(), pid))
            }
            Err(e) => {
                drop(gate);
                stop(&mut sandbox, &mut child).await;
                return Err(ToolError::Failed(format!(
                    "the command was not run: its process could not be recorded ({e})"
                )));
            }
        },
        _ => None,
    };
    let result = finish(child, sandbox, receiver_task(reader)?, ctx, timeout).await;
    if let Some((w, pid)) = watched {
        w.ended(pid);
    }
    result
}

/// Kills the call's tree (closing the sandbox's lifeline) and waits for its supervisor.
async fn stop(sandbox: &mut pocketpilot_sandbox::CallGuard, child: &mut tokio::process::Child) {
    sandbox.end();
    if tokio::time::timeout(END_GRACE, child.wait()).await.is_err() {
        tracing::warn!("the sandbox supervisor did not exit; killing it");
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
}

fn receiver_task(
    reader: std::io::PipeReader,
) -> Result<tokio::task::JoinHandle<Captured>, ToolError> {
    let receiver = tokio::net::unix::pipe::Receiver::from_owned_fd(reader.into())
        .map_err(|e| ToolError::Failed(format!("cannot read the output: {e}")))?;
    Ok(tokio::spawn(collect(receiver)))
}

/// Waits for the call to end (or its timeout, or a cancel) and renders its outcome.
async fn finish(
    mut child: tokio::process::Child,
    mut sandbox: pocketpilot_sandbox::CallGuard,
    collector: tokio::task::JoinHandle<Captured>,
    ctx: &ToolContext,
    timeout: Duration,
) -> Result<ToolOutput, ToolError> {
    let failed = |what: &str, e: std::io::Error| ToolError::Failed(format!("{what}: {e}"));
    // The supervisor exits with the command's status once the command has exited and
    // the rest of its tree is killed.
    let ending = tokio::select! {
        status = child.wait() => Ok(status),
        _ = tokio::time::sleep(timeout) => Err(ToolError::TimedOut(timeout.as_secs())),
        _ = ctx.cancel.cancelled() => Err(ToolError::Cancelled),
    };
    let status = match ending {
        Ok(status) => status,
        Err(err) => {
            stop(&mut sandbox, &mut child).await;
            return Err(err);
        }
    };
    let output = match tokio::time::timeout(DRAIN_GRACE, collector).await {
        Ok(Ok(output)) => output,
        _ => Captured::default(),
    };
    let status = status.map_err(|e| failed("waiting for the command failed", e))?;
    let code = match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code: {code}"),
        (None, Some(signal)) => format!("exit code: none (killed by signal {signal})"),
        (None, None) => "exit code: unknown".to_string(),
    };
    let rendered = output.render();
    let mut text = format!("{code}\n{rendered}");
    // The tree is gone now (the supervisor has exited): git metadata the command changed
    // or added is put back, and each such file is named here with the reason, so neither
    // the model nor the person is surprised by it.
    let restored = sandbox
        .restore_git_metadata()
        .into_iter()
        .map(|r| r.to_string());
    // The command's own error stays; the hint says where it came from.
    for hint in sandbox.blocked_hints(&rendered).into_iter().chain(restored) {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("[{hint}]\n"));
    }
    Ok(ToolOutput::text(text))
}

#[derive(Default)]
struct Captured {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    total: usize,
}

impl Captured {
    fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len();
        let half = OUTPUT_CAP_BYTES / 2;
        let room = half.saturating_sub(self.head.len());
        let (to_head, rest) = chunk.split_at(room.min(chunk.len()));
        self.head.extend_from_slice(to_head);
        self.tail.extend(rest);
        while self.tail.len() > half {
            self.tail.pop_front();
        }
    }

    fn render(&self) -> String {
        let mut out = String::from_utf8_lossy(&self.head).into_owned();
        let omitted = self.total - self.head.len() - self.tail.len();
        if omitted > 0 {
            out.push_str(&format!(
                "\n[output truncated: {omitted} bytes omitted; {} bytes in total]\n",
                self.total
            ));
        }
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        out.push_str(&String::from_utf8_lossy(&tail));
        out
    }
}

async fn collect(mut receiver: tokio::net::unix::pipe::Receiver) -> Captured {
    let mut captured = Captured::default();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match receiver.read(&mut buf).await {
            Ok(0) | Err(_) => return captured,
            Ok(n) => captured.push(&buf[..n]),
        }
    }
}

#[cfg(test)]
#[path = "run_command_tests.rs"]
mod tests;
