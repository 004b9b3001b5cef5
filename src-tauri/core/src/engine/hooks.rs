//! Running a run's hooks: each matching command gets the event as JSON on stdin, runs
//! confined like the run's commands (`ToolContext::sandbox_policy`: writes in the
//! workspace only, no network without the grant, the app's data unreachable), within
//! its timeout (then it and everything it started are killed), and ends in a
//! `hook_ran` event. What its reply means is `policy::hooks`.
//!
//! Hooks of one event run one after the other, in file order (the person's first), so a
//! run's record is the same every time.
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use pocketpilot_protocol::{HookEvent, HookOutcome, HookScope};
use pocketpilot_tools::ToolContext;
use serde_json::{json, Map, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::engine::sink::{EventSink, RecordError};
use crate::event::RuntimeEvent;
use crate::policy::hooks::{self as rules, Hook, Loaded};

/// What a hook may print that is kept (each of stdout and stderr).
const OUTPUT_CAP: usize = 64 * 1024;
/// What of a hook's message the record and the model get.
const MESSAGE_CAP: usize = 4 * 1024;
/// After the lifeline is closed, how long the sandbox supervisor may take to kill the tree.
const END_GRACE: Duration = Duration::from_secs(5);
/// After the hook exited, how long its pipes may take to drain.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// The hooks of one run.
pub struct RunHooks {
    hooks: Vec<Hook>,
    session_id: i64,
    unconsented: Option<PathBuf>,
    /// A `Stop` hook already made the agent go on in this run: later stops are told so
    /// (`stop_hook_active`) and cannot be turned back again, so no hook can loop a run.
    stop_active: AtomicBool,
}

/// What the hooks of one event decided.
#[derive(Debug, Default)]
pub struct Fired {
    /// The first block: a sentence naming the hook and its reason.
    pub blocked: Option<String>,
    /// What they added, each as the model reads it.
    pub added: Vec<String>,
}

impl RunHooks {
    pub fn new(loaded: Loaded, session_id: i64) -> Self {
        for p in &loaded.problems {
            tracing::warn!(problem = %p, "hooks");
        }
        Self {
            hooks: loaded.hooks,
            session_id,
            unconsented: loaded.unconsented,
            stop_active: AtomicBool::new(false),
        }
    }

    /// No hooks at all (what tests and embedders without a store use).
    pub fn none() -> Self {
        Self::new(Loaded::default(), 0)
    }

    /// Once per run: the workspace's hooks did not run for want of consent, and how to
    /// give it.
    pub fn announce(&self, sink: &dyn EventSink) -> Result<(), RecordError> {
        let Some(path) = &self.unconsented else {
            return Ok(());
        };
        let workspace = path
            .parent()
            .and_then(|p| p.parent())
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        sink.emit(RuntimeEvent::HookRan {
            hook_event: HookEvent::SessionStart,
            scope: HookScope::Workspace,
            command: path.display().to_string(),
            call_id: None,
            outcome: HookOutcome::NotConsented,
            exit_code: None,
            message: Some(format!(
                "the workspace's hooks are new or changed since you allowed them, so none of them ran; \
                 see them with `pocketpilot agent-hooks list --workspace {workspace}` and allow them with \
                 `pocketpilot agent-hooks consent --workspace {workspace}`"
            )),
            context: None,
            duration_ms: 0,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    fn matching(&self, event: HookEvent, tool: Option<&str>) -> Vec<&Hook> {
        self.hooks
            .iter()
            .filter(|h| h.matches(event, tool))
            .collect()
    }

    /// Runs the hooks of `event` (for a tool event, those matching `call`'s tool) with
    /// `fields` added to the common input, records each, and says what they decided.
    pub async fn fire(
        &self,
        event: HookEvent,
        call: Option<(&str, &str)>,
        fields: Map<String, Value>,
        ctx: &ToolContext,
        sink: &dyn EventSink,
    ) -> Result<Fired, RecordError> {
        let mut fired = Fired::default();
        let hooks = self.matching(event, call.map(|(name, _)| name));
        if hooks.is_empty() {
            return Ok(fired);
        }
        let mut input = Map::new();
        input.insert("session_id".into(), json!(self.session_id.to_string()));
        // PocketPilot keeps the transcript in its store, not in a file.
        input.insert("transcript_path".into(), json!(""));
        input.insert("cwd".into(), json!(ctx.workspace.display().to_string()));
        input.insert("permission_mode".into(), json!("default"));
        input.insert("hook_event_name".into(), json!(event.as_str()));
        if let Some((name, _)) = call {
            // Claude Code's name where the tool has one (`Bash`, `Write`, …): scripts
            // written for it check `tool_name`. PocketPilot's own name goes beside it.
            let claude = rules::claude_name(name).unwrap_or(name);
            input.insert("tool_name".into(), json!(claude));
            input.insert("pocketpilot_tool".into(), json!(name));
        }
        if event == HookEvent::Stop {
            let active = self.stop_active.load(Ordering::SeqCst);
            input.insert("stop_hook_active".into(), json!(active));
        }
        input.extend(fields);
        // Claude Code's file tools name their file `file_path`, absolute.
        if let Some(Value::Object(args)) = input.get_mut("tool_input") {
            let path = args.get("path").and_then(Value::as_str).map(str::to_owned);
            if let (Some(p), false) = (path, args.contains_key("file_path")) {
                let full = ctx.workspace.join(p).display().to_string();
                args.insert("file_path".into(), json!(full));
            }
        }
        let bytes = Value::Object(input).to_string().into_bytes();
        for hook in hooks {
            let started = Instant::now();
            let ran = run_one(hook, &bytes, ctx).await;
            let duration_ms = started.elapsed().as_millis() as u64;
            let (outcome, exit_code, message, context) = self.judge(event, hook, ran, &mut fired);
            sink.emit(RuntimeEvent::HookRan {
                hook_event: event,
                scope: hook.scope,
                command: hook.command.clone(),
                call_id: call.map(|(_, id)| id.to_owned()),
                outcome,
                exit_code,
                message,
                context,
                duration_ms,
            })?;
        }
        Ok(fired)
    }

    /// What one finished hook means for the run: its outcome, code, message and the
    /// context recorded; `fired` gets its block and what it adds.
    fn judge(
        &self,
        event: HookEvent,
        hook: &Hook,
        ran: Ran,
        fired: &mut Fired,
    ) -> (HookOutcome, Option<i32>, Option<String>, Option<String>) {
        let command = &hook.command;
        let (code, stdout, stderr) = match ran {
            Ran::Exited {
                code,
                stdout,
                stderr,
            } => (code, stdout, stderr),
            Ran::TimedOut => {
                let m = format!("killed after {} s (its timeout)", hook.timeout_secs);
                return (HookOutcome::TimedOut, None, Some(m), None);
            }
            Ran::Failed(m) => return (HookOutcome::Error, None, Some(cap(&m)), None),
        };
        let reply = rules::read_reply(event, code, &stdout, &stderr);
        if reply.error {
            let m = reply.note.map(|n| cap(&n));
            return (HookOutcome::Error, code, m, None);
        }
        let context = reply.context.map(|c| cap(&c));
        let mut recorded_context = context.clone();
        let outcome = match &reply.blocked {
            Some(reason) => {
                match self.blocked(event, command, reason, fired) {
                    Ok(Some(went_on)) => recorded_context = Some(went_on),
                    Ok(None) => {}
                    Err(refused) => return (HookOutcome::Blocked, code, Some(refused), None),
                }
                HookOutcome::Blocked
            }
            None => HookOutcome::Ok,
        };
        if let Some(c) = context.as_ref().filter(|_| event != HookEvent::Stop) {
            fired.added.push(if rules::adds_message(event) {
                rules::conversation_text(event, command, c)
            } else {
                format!("[context from the {event} hook `{command}`: {c}]")
            });
        }
        let message = reply.blocked.or(reply.note).map(|m| cap(&m));
        // Only what reaches the model is recorded as added: a stop that ends adds nothing,
        // nor does a goal refused.
        let adds = match event {
            HookEvent::Stop => outcome == HookOutcome::Blocked,
            HookEvent::UserPromptSubmit => outcome != HookOutcome::Blocked,
            _ => true,
        };
        if !adds {
            recorded_context = None;
        }
        (outcome, code, message, recorded_context)
    }
}

impl RunHooks {
    /// What a hook's block means for `event`: `Ok(Some(reason))` when a Stop hook sends
    /// the agent back (the reason is what it reads next); `Err(message)` when a Stop
    /// hook asks again and is refused.
    fn blocked(
        &self,
        event: HookEvent,
        command: &str,
        reason: &str,
        fired: &mut Fired,
    ) -> Result<Option<String>, String> {
        let reason = cap(reason);
        match event {
            HookEvent::Stop => {
                // Once per run: after that the agent stops when it wants to.
                if self.stop_active.swap(true, Ordering::SeqCst) || fired.blocked.is_some() {
                    return Err(format!(
                        "asked to go on again ({reason}); the agent already went on once for a Stop hook, so it stops"
                    ));
                }
                fired.blocked = Some(reason.clone());
                fired
                    .added
                    .push(rules::conversation_text(event, command, &reason));
                Ok(Some(reason))
            }
            HookEvent::PostToolUse => {
                fired.added.push(format!(
                    "[the PostToolUse hook `{command}` objects: {reason}]"
                ));
                Ok(None)
            }
            // Neither can be stopped; their stderr is shown.
            HookEvent::SessionStart | HookEvent::PreCompact => Ok(None),
            HookEvent::PreToolUse | HookEvent::UserPromptSubmit => {
                if fired.blocked.is_none() {
                    fired.blocked =
                        Some(format!("blocked by the {event} hook `{command}`: {reason}"));
                }
                Ok(None)
            }
        }
    }
}

/// The fields of a `PreCompact` input: `trigger` is `auto` (the run's own compaction) or
/// `manual` (the person's "compact now"), as in Claude Code's contract.
pub fn pre_compact_fields(trigger: &str) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("trigger".into(), trigger.into());
    fields.insert("custom_instructions".into(), "".into());
    fields
}

/// The `PreCompact` hooks of a compaction the person asked for (`trigger: manual`), run
/// before it outside any run: in the session's workspace, confined as its commands are
/// (no grant widens them), recorded through `sink`. They can look and record, not stop it.
pub async fn pre_compact_manual(
    store: &crate::store::Store,
    data_dir: &std::path::Path,
    person: Option<&std::path::Path>,
    session_id: i64,
    workspace: &str,
    sink: &dyn EventSink,
) -> Result<(), RecordError> {
    let loaded = rules::load(store, std::path::Path::new(workspace), person)?;
    let hooks = RunHooks::new(loaded, session_id);
    hooks.announce(sink)?;
    if hooks.is_empty() {
        return Ok(());
    }
    let mut ctx = ToolContext::new(
        PathBuf::from(workspace),
        crate::engine::changes::forbidden_dirs(data_dir),
        tokio_util::sync::CancellationToken::new(),
    );
    if let Some(env) = crate::engine::agent_env::agent_env() {
        ctx = ctx.with_base_env(env);
    }
    ctx = ctx.with_sandbox(crate::policy::confinement::load_command_sandbox(
        store,
        workspace,
        &[],
    )?);
    hooks
        .fire(
            HookEvent::PreCompact,
            None,
            pre_compact_fields("manual"),
            &ctx,
            sink,
        )
        .await?;
    Ok(())
}

fn cap(s: &str) -> String {
    let s = s.trim();
    if s.len() <= MESSAGE_CAP {
        return s.to_owned();
    }
    let mut end = MESSAGE_CAP;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [cut]", &s[..end])
}

enum Ran {
    Exited {
        code: Option<i32>,
        stdout: String,
        stderr: String,
    },
    TimedOut,
    Failed(String),
}

/// With a watched run: the shell waits for the word `run` (its process recorded under the
/// session's lease first), then becomes `sh -c COMMAND`, the rest of stdin (the event's
/// JSON) still its input. The gate closing without the word means "do not run".
const GATED: &str = r#"IFS= read -r go && [ "$go" = run ] && exec /bin/sh -c "$1"; exit 125"#;

/// `sh -c COMMAND` in the workspace, confined, with `input` on stdin. Within a run, its
/// process (the sandbox supervisor, the root of its tree) is recorded under the session's
/// lease like a command's, so a process that takes the session over kills it; cancel and
/// the timeout close the lifeline, which kills the whole tree.
async fn run_one(hook: &Hook, input: &[u8], ctx: &ToolContext) -> Ran {
    let watch = pocketpilot_tools::builtin::run_command::process_watch();
    let mut cmd = tokio::process::Command::new("/bin/sh");
    if watch.is_some() {
        cmd.args(["-c", GATED, "pocketpilot-hook", &hook.command]);
    } else {
        cmd.arg("-c").arg(&hook.command);
    }
    cmd.current_dir(&ctx.workspace)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut sandbox = match pocketpilot_sandbox::confine(&mut cmd, &ctx.sandbox_policy()) {
        Ok(g) => g,
        Err(e) => return Ran::Failed(format!("not run: {e}")),
    };
    // Set after `confine`, which rebuilds the environment: Claude Code's variable, so
    // scripts written for it find the project.
    cmd.env("CLAUDE_PROJECT_DIR", &ctx.workspace);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return Ran::Failed(format!("cannot start sh: {e}")),
    };
    drop(cmd);
    let mut stdin_bytes = Vec::with_capacity(input.len() + 4);
    let watched = match (watch, child.id()) {
        (Some(w), Some(pid)) => match w.started(pid) {
            Ok(()) => {
                stdin_bytes.extend_from_slice(b"run\n");
                Some((w, pid))
            }
            Err(e) => {
                end_tree(&mut sandbox, &mut child).await;
                return Ran::Failed(format!("not run: its process could not be recorded ({e})"));
            }
        },
        _ => None,
    };
    stdin_bytes.extend_from_slice(input);
    let ran = supervise(hook, &stdin_bytes, ctx, &mut sandbox, &mut child).await;
    drop(sandbox);
    if let Some((w, pid)) = watched {
        w.ended(pid);
    }
    ran
}

/// Closes the lifeline (the supervisor kills the tree) and waits for the supervisor.
async fn end_tree(sandbox: &mut pocketpilot_sandbox::CallGuard, child: &mut tokio::process::Child) {
    sandbox.end();
    if tokio::time::timeout(END_GRACE, child.wait()).await.is_err() {
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
}

/// Feeds the hook its input and waits for it, its timeout or the run's cancel.
async fn supervise(
    hook: &Hook,
    input: &[u8],
    ctx: &ToolContext,
    sandbox: &mut pocketpilot_sandbox::CallGuard,
    child: &mut tokio::process::Child,
) -> Ran {
    let writer = child.stdin.take().map(|mut stdin| {
        let input = input.to_vec();
        // A hook that never reads its input must not hold the run up: written apart.
        tokio::spawn(async move {
            let _ = stdin.write_all(&input).await;
        })
    });
    let out = child.stdout.take().map(|o| tokio::spawn(read_capped(o)));
    let err = child.stderr.take().map(|e| tokio::spawn(read_capped(e)));
    let timeout = Duration::from_secs(hook.timeout_secs);
    let ended = tokio::select! {
        status = child.wait() => Some(status),
        _ = tokio::time::sleep(timeout) => None,
        _ = ctx.cancel.cancelled() => None,
    };
    if let Some(w) = writer {
        w.abort();
    }
    let Some(status) = ended else {
        // Closing the lifeline kills the hook's whole tree.
        end_tree(sandbox, child).await;
        if ctx.cancel.is_cancelled() {
            return Ran::Failed("cancelled with its run".into());
        }
        return Ran::TimedOut;
    };
    let stdout = drained(out).await;
    let stderr = drained(err).await;
    match status {
        Ok(s) => Ran::Exited {
            code: s.code(),
            stdout,
            stderr,
        },
        Err(e) => Ran::Failed(format!("waiting for it failed: {e}")),
    }
}

async fn drained(task: Option<tokio::task::JoinHandle<Vec<u8>>>) -> String {
    let Some(task) = task else {
        return String::new();
    };
    match tokio::time::timeout(DRAIN_GRACE, task).await {
        Ok(Ok(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
        _ => String::new(),
    }
}

/// Reads to the end, keeping the first [`OUTPUT_CAP`] bytes (a hook that prints more is
/// not blocked on a full pipe).
async fn read_capped(mut r: impl tokio::io::AsyncRead + Unpin) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut buf = vec![0u8; 8 * 1024];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => return kept,
            Ok(n) => {
                let room = OUTPUT_CAP.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
}
