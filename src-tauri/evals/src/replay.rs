//! A recorded task → a scripted case. The model's turns come from the task's
//! `model_turn_completed` events (text, tool calls with their raw argument text, usage);
//! the person's answers from `approval_resolved`; the expectations from what happened:
//! the terminal status, the final answer, the approvals asked for, the tool failures, and
//! the files that completed `write_file` / `delete_path` calls left behind. Files the task
//! read are copied into the case's setup from the workspace as it is now (when small and
//! text). Not replayed: inbox steers and earlier runs of the session (the case starts a
//! fresh session; the scripted model does not care what came before).
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use pocketpilot_core::ops;
use pocketpilot_protocol::{EventKind, RuntimeEvent, ToolCall, Usage};
use pocketpilot_store::StoredEvent;
use serde_json::{json, Value};

use super::case::{Action, Answer, Case, EventMatch, Expect, ExpectApproval, Setup};
use super::EvalError;
use pocketpilot_core::api::service::Runtime;

/// Files larger than this are not copied into a case's setup.
const MAX_SETUP_FILE: u64 = 64 * 1024;

pub fn case_from_task(rt: &Arc<Runtime>, task_id: i64) -> Result<Case, EvalError> {
    let task = rt.call(ops::GetTask { id: task_id })?;
    let session = rt.call(ops::GetSession {
        session_id: task.session_id,
    })?;
    let workspace = Path::new(&session.workspace);
    let recorded = Recorded::from_events(&rt.call(ops::TaskEvents { task_id })?, workspace);
    if recorded.turns.is_empty() {
        return Err(EvalError::NothingToReplay(task_id));
    }
    let rules = rt.call(ops::GetPolicyRules {
        workspace: session.workspace.to_string(),
    })?;
    let policy = (!rules.allow.is_empty() || !rules.deny.is_empty()).then_some(rules);
    let setup = Setup {
        files: setup_files(workspace, &recorded.read),
        limits: serde_json::to_value(rt.call(ops::GetLimits {})?).ok(),
        policy,
        grants: task.grants.clone(),
        ..Setup::default()
    };
    let answer = task.final_answer.clone().filter(|a| !a.is_empty());
    Ok(Case {
        name: format!("replay_task_{task_id}"),
        description: format!(
            "Replayed from task {task_id} ({}), recorded {}: {}",
            task.status,
            task.created_at,
            task.goal.lines().next().unwrap_or_default()
        ),
        tags: vec!["replay".into()],
        goal: task.goal.clone(),
        setup,
        script: json!({ "turns": recorded.turns }),
        pauses: Vec::new(),
        plan: None,
        approvals: recorded.approvals,
        inbox: Vec::new(),
        crash: None,
        start: None,
        undo: Vec::new(),
        rewind: Vec::new(),
        expect: Expect {
            status: Some(task.status),
            answer_contains: answer.into_iter().collect(),
            files: recorded.files,
            absent: recorded.absent,
            approvals: Some(recorded.asked),
            events: recorded.failures,
            ..Expect::default()
        },
        timeout_secs: None,
    })
}

/// What a task's events say, as a case needs it.
#[derive(Default)]
struct Recorded {
    /// The model's turns, as the scripted model plays them.
    turns: Vec<Value>,
    /// The person's answers to approvals.
    approvals: Vec<Answer>,
    /// The approvals asked for.
    asked: Vec<ExpectApproval>,
    failures: Vec<EventMatch>,
    /// Files the completed calls wrote, as they left them.
    files: BTreeMap<String, String>,
    /// Paths the completed calls deleted.
    absent: Vec<String>,
    /// Files the completed calls read.
    read: Vec<String>,
    /// Arguments of each started call, by call id: what actually ran (edits included).
    started: BTreeMap<String, (String, Value)>,
}

impl Recorded {
    fn from_events(events: &[StoredEvent], workspace: &Path) -> Self {
        let mut recorded = Self::default();
        for ev in events {
            match &ev.event {
                RuntimeEvent::ModelTurnCompleted {
                    text,
                    tool_calls,
                    usage,
                    ..
                } => recorded
                    .turns
                    .push(scripted_turn(text, tool_calls, usage.as_ref())),
                RuntimeEvent::ApprovalRequired { name, .. } => {
                    recorded.asked.push(ExpectApproval {
                        tool: name.clone(),
                        effect: None,
                    })
                }
                RuntimeEvent::ApprovalResolved {
                    approved,
                    session_grant,
                    edited_arguments,
                    note,
                    ..
                } => recorded.approvals.push(answer(
                    *approved,
                    *session_grant,
                    edited_arguments,
                    note,
                )),
                RuntimeEvent::ToolCallStarted {
                    call_id,
                    name,
                    arguments,
                    ..
                } => {
                    // Arguments the guard refused never ran; they leave no file to expect.
                    let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
                    recorded
                        .started
                        .insert(call_id.clone(), (name.clone(), args));
                }
                RuntimeEvent::ToolCallCompleted { call_id, .. } => {
                    recorded.call_completed(call_id, workspace)
                }
                RuntimeEvent::ToolCallFailed { name, kind, .. } => {
                    recorded.failures.push(EventMatch {
                        kind: EventKind::ToolCallFailed,
                        payload: Some(json!({ "name": name, "kind": kind })),
                        text: None,
                    })
                }
                _ => {}
            }
        }
        recorded
    }

    /// The file a completed call wrote, deleted or read, by the arguments it started with.
    fn call_completed(&mut self, call_id: &str, workspace: &Path) {
        let Some((name, args)) = self.started.get(call_id) else {
            return;
        };
        let Some(rel) = args["path"].as_str().and_then(|a| relative(workspace, a)) else {
            return;
        };
        match name.as_str() {
            "write_file" => {
                if let Some(content) = args["content"].as_str() {
                    self.absent.retain(|a| a != &rel);
                    self.files.insert(rel, content.to_owned());
                }
            }
            "delete_path" => {
                self.files.remove(&rel);
                self.files.retain(|k, _| !k.starts_with(&format!("{rel}/")));
                self.absent.push(rel);
            }
            "read_file" => self.read.push(rel),
            _ => {}
        }
    }
}

/// A model turn as the scripted model plays it.
fn scripted_turn(text: &str, tool_calls: &[ToolCall], usage: Option<&Usage>) -> Value {
    let calls: Vec<Value> = tool_calls
        .iter()
        .map(|c| json!({ "id": c.id, "name": c.name, "arguments": c.arguments }))
        .collect();
    let mut turn = json!({ "text": text });
    if !calls.is_empty() {
        turn["tool_calls"] = Value::Array(calls);
    }
    if let Some(u) = usage {
        turn["usage"] = json!({
            "prompt_tokens": u.prompt_tokens,
            "completion_tokens": u.completion_tokens,
        });
    }
    turn
}

/// The person's answer to an approval, as the case gives it again.
fn answer(
    approved: bool,
    session_grant: bool,
    edited_arguments: &Option<Value>,
    note: &Option<String>,
) -> Answer {
    let edited = edited_arguments.clone().filter(|v| !v.is_null());
    let action = match (approved, session_grant, &edited) {
        (false, _, _) => Action::Reject,
        (true, _, Some(_)) => Action::Edit,
        (true, true, None) => Action::Session,
        (true, false, None) => Action::Approve,
    };
    Answer {
        action,
        arguments: edited,
        note: note.clone(),
        restart_before: false,
        wait_ms: 0,
        edit_files: Default::default(),
    }
}

/// The files the task read, as they are now in the workspace, when small and text.
fn setup_files(workspace: &Path, read: &[String]) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    for rel in read {
        let path = workspace.join(rel);
        let small =
            std::fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() <= MAX_SETUP_FILE);
        if small {
            if let Ok(text) = std::fs::read_to_string(&path) {
                files.insert(rel.clone(), text);
            }
        }
    }
    files
}

/// `raw` as a workspace-relative path, if it names something inside the workspace.
fn relative(workspace: &Path, raw: &str) -> Option<String> {
    let p = Path::new(raw);
    let rel = if p.is_absolute() {
        p.strip_prefix(workspace).ok()?.to_path_buf()
    } else {
        p.to_path_buf()
    };
    let s = rel.display().to_string();
    let s = s.trim_start_matches("./").to_owned();
    (!s.is_empty() && !s.split('/').any(|c| c == "..")).then_some(s)
}
