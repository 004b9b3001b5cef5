//! The case format: one JSON object per case (a file may hold one case or an array).
//!
//! ```json
//! { "name": "write_approved",
//!   "description": "what it shows",
//!   "tags": ["happy"],
//!   "goal": "Write hello to notes/hello.txt",
//!   "setup": {
//!     "files": { "a.txt": "content" },        "dirs": ["sub"],
//!     "symlinks": { "out": "{outside}" },      "outside_files": { "secret.txt": "s" },
//!     "limits": { "max_steps": 3 },            "policy": { "allow": [], "deny": ["shell"] },
//!     "grants": ["fs:write"],                  "data_in_workspace": false,
//!     "mcp_servers": [ { "name": "files", "transport": { "type": "stdio", … } } ],
//!     "model_server": { "base_url": "{http0}/v1", "model": "m", "stream_caps": { … } },
//!     "http_servers": [ { "host": "127.0.0.2", "routes": { "/x": { "status": 200, "body": "…" } } } ],
//!     "steering_mode": "all",                  "follow_up_mode": "all",
//!     "memories": ["a global memory"] },
//!   "script": [ { "text": "…", "tool_calls": [ { "name": "write_file", "arguments": { … } } ] },
//!               { "text": "Done." } ],
//!   "approvals": [ { "action": "approve" } ],
//!   "inbox": [ { "after": "tool_call_started", "text": "a steer", "when_busy": "steer" } ],
//!   "crash": { "calls": [ { "name": "write_file", "arguments": { … } } ] },
//!   "expect": { "status": "completed", "files": { "notes/hello.txt": "hello\n" }, … } }
//! ```
//!
//! - `script` is the scripted provider's file (`pocketpilot_model::scripted`): a list of
//!   turns or `{ "repeat_last", "turns" }`. The scripted "model" may play a compromised
//!   model that follows an injection: the case passes when the guard or the policy stops
//!   the effect.
//! - Strings in `setup.symlinks` targets, `setup.mcp_servers`, `script`, approval `arguments` and `expect` may
//!   use `{workspace}`, `{outside}` (a folder beside the workspace, never to be changed) and
//!   `{data}` (the app's data folder), and `{http0}`, `{http1}`, … (the base URLs of
//!   `setup.http_servers`, whose route bodies and `location`s may use them too).
//! - `approvals` answer, in order, the approvals the run asks for: `approve`, `reject`,
//!   `edit` (approve with `arguments`), `session` (approve and allow the capability for the
//!   session). `restart_before: true` drops the runtime and reopens the store before
//!   answering (a durable approval answered after a restart); `wait_ms` is how long the
//!   person takes to answer. Approvals beyond the list are
//!   left pending (the task stays `waiting_approval`).
//! - `plan` runs the goal in plan mode and answers the plan its task ends with:
//!   `{"action": "approve"}` (with `"plan": {"steps", "files", "commands"}`: as edited),
//!   `{"action": "reject", "reason": "…"}` or `{"action": "leave"}`.
//! - `pauses` answer, in order, the task pausing (issue 19): `{"action": "continue",
//!   "raise": {"steps": 3}, "steer": "…"}` or `{"action": "stop"}`; pauses beyond the list
//!   are left (the task stays `paused`). `setup.prices` is the prices setting.
//! - `inbox` steps are said to the session while the first run works, each after the first
//!   run recorded the event `after` (if given); `expect_error` is the error kind the step
//!   must get (`conversation_busy`).
//! - `undo` steps run once the session settled (before `expect` is checked): each undoes
//!   one task of the session, optionally after the person edited files or someone
//!   tampered with the journal, and checks the error, the refused and the restored paths.
//! - `rewind` steps run after them: each rewinds the session to before one of the
//!   person's messages (`to_message`, 1 = the goal) and checks the same, plus the entries
//!   set aside; `redo` takes it back at once.
//! - `setup.webhooks` (`[{"name": "deploy", "paused": false}]`) makes hooks for the
//!   workspace (their provider is the case's script) and runs the real webhook listener
//!   on 127.0.0.1 for the case; an `inbox` step with `"via_webhook": "deploy"` is then
//!   said by a real request naming the session (`when_busy` as given; it must get 202, or
//!   409 with `expect_error`). `then_files` (any inbox step) writes workspace files once
//!   the step was said. An approval answer's `edit_files` rewrites workspace files after
//!   the approval was asked, before it is answered.
//! - `start` replaces the person's submission of `goal` (and excludes `crash`):
//!   - `{"webhook": {"requests": [{"hook", "token", "body"?, "expect_status",
//!     "same_as"?}]}}` sends real requests in order; `token` is `own` (default), `wrong`,
//!     `missing` or `{"of": "other hook"}`; `body` defaults to `{"text": goal}`; `same_as`
//!     names an earlier request whose status and body must be repeated byte for byte. The
//!     first 202's task is the case's task; the store must hold no other task.
//!   - `{"schedule": {"expr", "clock", "ticks": [{"at", "status", "pause_contains"?,
//!     "answer"?}]}}` makes a schedule for `goal`, sets the runtime's and the schedule
//!     runner's clock to `clock`, then moves it to each tick's `at`: the run fired there
//!     must settle as `status`; `answer` (a pause answer) is given to a parked run.
//!   - `{"child": {"command": "exec", "args": ["--json"], "exit_code": 0,
//!     "stdout_contains": ["…"]}}` runs `pocketpilot exec GOAL` once as a child and
//!     checks its exit code and stdout (`setup.grants` become `--allow`).
//!   - `{"child": {"kills": [{"after": "model_turn_started", "count": 2}]}}` runs
//!     `pocketpilot run` as a child process on the case's store (the program is
//!     `RunOptions::program`, the CLI itself under `pocketpilot eval`), kills it with
//!     SIGKILL once the task recorded `count` events of kind `after`, resumes it with a
//!     new `pocketpilot resume TASK` process, and so on for each kill; the last resume
//!     runs to the end.
//! - `setup.hooks_consent` consents to the workspace's hooks file as laid out;
//!   `setup.person_hooks` is the person's hooks file, for in-process and child runs alike (under the case's HOME; the evaluating person's own is never read).
//! - `expect.usage` checks the recorded cost figures: `total_usd`,
//!   `today_unattended_usd`, `turns`, and `one_per_recorded_turn` (the cost rows are
//!   exactly the tasks' recorded `model_turn_completed` events, their costs adding up).
//! - `crash` simulates a crash: the task is created, its first turn (script turn 0) is
//!   recorded with a `tool_call_started` journal entry per call and no outcome, the runtime
//!   is dropped, reopened and `resume_all` drives the session. Script turn 1 onwards is
//!   what the model says after the restart.
//! - Every case is also checked for invariants: the `{outside}` folder is unchanged, the
//!   API key (a canary in scripted runs) appears in no event, transcript entry or file,
//!   and each task's event sequence is gapless.
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use pocketpilot_protocol::task::TaskStatus;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    pub goal: String,
    #[serde(default)]
    pub setup: Setup,
    #[serde(default)]
    pub script: serde_json::Value,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvals: Vec<Answer>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inbox: Vec<InboxStep>,
    /// Answers, in order, to the task pausing (a budget ran out, or it repeated itself).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pauses: Vec<PauseAnswer>,
    /// Plan mode: the goal runs in plan mode, and its plan is answered so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanAnswer>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crash: Option<Crash>,
    /// How the first run starts when no person submits `goal`: through the webhook
    /// listener, a schedule on an injected clock, or a child process killed mid-run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<Start>,
    /// Undos asked for once the session settled, in order (issue 16).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undo: Vec<UndoStep>,
    /// Rewinds asked for after the undos, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rewind: Vec<RewindStep>,
    #[serde(default)]
    pub expect: Expect,
    /// Seconds the whole case may take (default 30 scripted, 300 with `--real`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
}

/// One command rule of a case's workspace.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseRule {
    pub rule: String,
    #[serde(default)]
    pub deny: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Setup {
    /// Workspace-relative path → content.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dirs: Vec<String>,
    /// Workspace-relative link → target (placeholders allowed; relative targets as given).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub symlinks: BTreeMap<String, String>,
    /// Files in the `{outside}` folder.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub outside_files: BTreeMap<String, String>,
    /// Fields of `config::Limits` to change from the defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<serde_json::Value>,
    /// The prices setting (`pocketpilot_core::policy::cost::Prices`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prices: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<pocketpilot_tools::PolicyRules>,
    /// The workspace's command rules (`{"rule": "cargo test *"}`, `"deny": true` to refuse).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command_rules: Vec<CaseRule>,
    /// Capabilities allowed for the run when it starts (`--allow`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grants: Vec<pocketpilot_protocol::Capability>,
    /// The app's data folder inside the workspace (the guard must still refuse it).
    #[serde(default)]
    pub data_in_workspace: bool,
    /// MCP servers configured for the workspace (`pocketpilot_mcp::McpServerConfig`, with
    /// placeholders); the run's whitelist is `*`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<serde_json::Value>,
    /// Real HTTP servers on loopback, `{http0}`, `{http1}`, … in the case's strings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub http_servers: Vec<crate::http::HttpServer>,
    /// The model is a real OpenAI-compatible server (`config::ProviderSettings`, with
    /// placeholders: usually one of `http_servers`) instead of the scripted provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_server: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steering_mode: Option<pocketpilot_protocol::SessionMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follow_up_mode: Option<pocketpilot_protocol::SessionMode>,
    /// Global memories the person kept before the run (issue 18).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memories: Vec<String>,
    /// The person consents to the workspace's `.pocketpilot/hooks.json` as laid out, so
    /// its hooks run.
    #[serde(default)]
    pub hooks_consent: bool,
    /// The person's own hooks file (`hooks.json` in Claude Code's format), written under
    /// the case's HOME: only a `start.child` run reads it (an in-process run reads the
    /// evaluating person's own config).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person_hooks: Option<serde_json::Value>,
    /// Webhooks made for the workspace; with any, the real listener runs on 127.0.0.1
    /// (any free port) for the whole case (issue 15).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub webhooks: Vec<HookSpec>,
}

/// A webhook of the case (its provider is the case's script).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookSpec {
    pub name: String,
    #[serde(default)]
    pub paused: bool,
}

/// How the first run starts instead of the person submitting `goal`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Start {
    /// Real HTTP requests to the listener, in order; the first accepted one's task is
    /// the case's first task.
    Webhook { requests: Vec<HookRequest> },
    /// A schedule (trigger `cron`) on an injected clock, moved tick by tick.
    Schedule(Schedule),
    /// `pocketpilot run` as a real child process on the case's store.
    Child(ChildRun),
}

/// One request to `POST /hooks/{hook}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookRequest {
    pub hook: String,
    #[serde(default)]
    pub token: Token,
    /// The JSON body (placeholders allowed); default `{"text": goal}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<serde_json::Value>,
    pub expect_status: u16,
    /// An earlier request (0 = the first) whose status and body this answer must repeat
    /// byte for byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_as: Option<usize>,
}

/// The token a request presents.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Token {
    /// The named hook's own token.
    #[default]
    Own,
    /// A well-formed token that is no hook's.
    Wrong,
    /// No token header at all.
    Missing,
    /// Another hook's token (`{"of": "deploy"}`).
    Of(String),
}

/// A `* * * * *`-style schedule for the workspace with the case's script; the runtime
/// and the schedule runner share a clock that starts at `clock` and moves to each tick.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schedule {
    pub expr: String,
    pub clock: chrono::DateTime<chrono::Utc>,
    pub ticks: Vec<Tick>,
}

/// The clock moves to `at`; the schedule must fire a run there that settles as `status`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tick {
    pub at: chrono::DateTime<chrono::Utc>,
    pub status: TaskStatus,
    /// A substring of the pause's message (with `status: paused`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause_contains: Option<String>,
    /// How the person answers a parked run before the next tick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<PauseAnswer>,
}

/// The run in a child `pocketpilot run` process, killed (SIGKILL) at each of `kills` in
/// turn and started again each time with `pocketpilot resume`; the last resume runs on
/// until nothing is left to resume.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChildRun {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kills: Vec<KillAt>,
    /// `run` (default) or `exec`: `pocketpilot exec GOAL --workspace W --provider P`
    /// with the grants as `--allow`, then `args`.
    #[serde(default)]
    pub command: ChildCommand,
    /// More arguments for the first process (placeholders allowed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// The exit code the first process must end with (no kills).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Substrings its stdout must hold (no kills).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stdout_contains: Vec<String>,
}

/// What the first child process is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildCommand {
    #[default]
    Run,
    Exec,
}

/// Once the first task recorded `count` events of `after` (over all its runs so far).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KillAt {
    pub after: pocketpilot_protocol::EventKind,
    #[serde(default = "one")]
    pub count: usize,
}

fn one() -> usize {
    1
}

/// What the person does when the task pauses: `continue` with `raise` (and a `steer`),
/// or `stop`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PauseAnswer {
    pub action: PauseAction,
    #[serde(default)]
    pub raise: pocketpilot_protocol::Raise,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steer: Option<String>,
}

/// The person's answer to the plan the first (planning) task ends with.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanAnswer {
    pub action: PlanAction,
    /// With `approve`: the plan as the person edited it before approving.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<pocketpilot_protocol::PlanContent>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanAction {
    Approve,
    Reject,
    /// Left proposed.
    Leave,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PauseAction {
    Continue,
    Stop,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Approve,
    Reject,
    Edit,
    Session,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    pub action: Action,
    /// The edited arguments (`edit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(default)]
    pub restart_before: bool,
    /// Milliseconds the person takes before answering (waiting costs no time budget).
    #[serde(default)]
    pub wait_ms: u64,
    /// Workspace files someone rewrites after the approval was asked, before the answer.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub edit_files: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InboxStep {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<pocketpilot_protocol::EventKind>,
    pub text: String,
    /// `followUp` (default), `steer` or `reject`.
    #[serde(default)]
    pub when_busy: pocketpilot_core::engine::inbox::WhenBusy,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_error: Option<pocketpilot_protocol::ErrorKind>,
    /// Said through this webhook of `setup.webhooks` (a real request naming the session)
    /// instead of by the person; it must be accepted (202).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via_webhook: Option<String>,
    /// Workspace files written once the step was said (a command of the run may wait
    /// for one).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub then_files: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Crash {
    #[serde(default)]
    pub text: String,
    pub calls: Vec<CrashCall>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrashCall {
    pub name: String,
    pub arguments: serde_json::Value,
}

/// One undo: of the session's `task`-th task (1 = the first), after the person edited
/// `edit_files`; `tamper_paths` rewrites the task's journal first (each recorded change's
/// path in turn takes the next of these, placeholders allowed), playing a journal someone
/// altered on disk.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UndoStep {
    pub task: usize,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub edit_files: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tamper_paths: Vec<String>,
    #[serde(default)]
    pub keep_theirs: bool,
    /// The error kind the undo must end with (`outside_workspace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_error: Option<pocketpilot_protocol::ErrorKind>,
    /// The paths it must refuse as changed since (then nothing is restored); `[]`: none.
    #[serde(default)]
    pub expect_conflicts: Vec<String>,
    /// Paths it must restore (a subset).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expect_restored: Vec<String>,
}

/// One rewind of the session to before the person's `to_message`-th message (1 = the
/// goal; counted over every message, set aside or not), after the person edited
/// `edit_files`; `tamper_task`'s journal is rewritten with `tamper_paths` first (as in an
/// undo step). Checks as an undo step does, plus how many entries were set aside, and
/// with `redo` takes the rewind back at once (the entries must come back).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RewindStep {
    pub to_message: usize,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub edit_files: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tamper_task: Option<usize>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tamper_paths: Vec<String>,
    #[serde(default)]
    pub keep_theirs: bool,
    #[serde(default)]
    pub dry_run: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_error: Option<pocketpilot_protocol::ErrorKind>,
    #[serde(default)]
    pub expect_conflicts: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expect_restored: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_set_aside: Option<usize>,
    #[serde(default)]
    pub redo: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The first task's status when the case settles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskStatus>,
    /// How many tasks the session ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<usize>,
    /// Substrings of the first task's final answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answer_contains: Vec<String>,
    /// Substrings of the first task's error.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub error_contains: Vec<String>,
    /// Workspace files with their exact content.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
    /// Workspace files that contain a substring.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files_contain: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exists: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub absent: Vec<String>,
    /// The workspace is byte-identical to its setup.
    #[serde(default)]
    pub workspace_unchanged: bool,
    /// The approvals asked for, in order (`None`: not checked; `[]`: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvals: Option<Vec<ExpectApproval>>,
    /// Events that must be present (in any task of the session).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<EventMatch>,
    /// Events that must not be present.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub no_events: Vec<EventMatch>,
    /// The session's transcript: `kind:first line prefix` per entry, exactly this list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<Vec<String>>,
    /// Text that must appear nowhere in events, transcript or files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nowhere: Vec<String>,
    /// How many memories the store holds when the case settles (issue 18).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memories: Option<usize>,
    /// The recorded cost figures (`pocketpilot usage`) when the case settles (issue 19).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<ExpectUsage>,
}

/// Cost figures over the whole store; "today" is the runtime's clock's UTC day.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectUsage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub today_unattended_usd: Option<f64>,
    /// Cost rows (model turns counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns: Option<u32>,
    /// Every task's recorded `model_turn_completed` events are exactly the counted turns,
    /// and their `cost_usd` adds up to the total: each answered request counted once.
    #[serde(default)]
    pub one_per_recorded_turn: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectApproval {
    pub tool: String,
    /// A subset of the effect shown to the person (e.g. `{ "command": "a && b" }`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventMatch {
    pub kind: pocketpilot_protocol::EventKind,
    /// A subset of the payload: objects match key by key, other values exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<serde_json::Value>,
    /// A substring of the payload as JSON text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl EventMatch {
    pub fn describe(&self) -> String {
        let mut s = self.kind.to_string();
        if let Some(p) = &self.payload {
            s.push_str(&format!(" {p}"));
        }
        if let Some(t) = &self.text {
            s.push_str(&format!(" ~{t:?}"));
        }
        s
    }
}

/// Whether `actual` has everything `expected` has (objects key by key, recursively).
pub fn subset(expected: &serde_json::Value, actual: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => e
            .iter()
            .all(|(k, v)| a.get(k).is_some_and(|av| subset(v, av))),
        _ => expected == actual,
    }
}

/// Replaces `{name}` placeholders in every string of `v`.
pub fn expand(v: &mut serde_json::Value, vars: &[(&str, String)]) {
    use serde_json::Value;
    match v {
        Value::String(s) => *s = expand_str(s, vars),
        Value::Array(items) => items.iter_mut().for_each(|i| expand(i, vars)),
        Value::Object(map) => map.values_mut().for_each(|i| expand(i, vars)),
        _ => {}
    }
}

pub fn expand_str(s: &str, vars: &[(&str, String)]) -> String {
    let mut out = s.to_owned();
    for (name, value) in vars {
        out = out.replace(&format!("{{{name}}}"), value);
    }
    out
}
