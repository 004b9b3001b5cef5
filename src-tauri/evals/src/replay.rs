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

use pocketpilot_protocol::{EventKind, RuntimeEvent};
use serde_json::{json, Value};

use super::case::{Action, Answer, Case, EventMatch, Expect, ExpectApproval, Setup};
use super::EvalError;
use pocketpilot_core::service::Runtime;

/// Files larger than this are not copied into a case's setup.
const MAX_SETUP_FILE: u64 = 64 * 1024;

pub fn case_from_task(rt: &Runtime, task_id: i64) -> Result<Case, EvalError> {
    let task = rt.task(task_id)?;
    let session = rt.session(task.session_id)?;
    let workspace = Path::new(&session.workspace);
    let events = rt.events(task_id)?;

    let mut turns: Vec<Value> = Vec::new();
    let mut approvals: Vec<Answer> = Vec::new();
    let mut asked: Vec<ExpectApproval> = Vec::new();
    let mut failures: Vec<EventMatch> = Vec::new();
    let mut files: BTreeMap<String, String> = BTreeMap::new();
    let mut absent: Vec<String> = Vec::new();
    let mut read: Vec<String> = Vec::new();
    // Arguments of each started call, by call id: what actually ran (edits included).
    let mut started: BTreeMap<String, (String, Value)> = BTreeMap::new();

    for ev in &events {
        match &ev.event {
            RuntimeEvent::ModelTurnCompleted {
                text,
                tool_calls,
                usage,
                ..
            } => {
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
                turns.push(turn);
            }
            RuntimeEvent::ApprovalRequired { name, .. } => asked.push(ExpectApproval {
                tool: name.clone(),
                effect: None,
            }),
            RuntimeEvent::ApprovalResolved {
                approved,
                session_grant,
                edited_arguments,
                note,
                ..
            } => {
                let edited = edited_arguments.clone().filter(|v| !v.is_null());
                let action = match (approved, session_grant, &edited) {
                    (false, _, _) => Action::Reject,
                    (true, _, Some(_)) => Action::Edit,
                    (true, true, None) => Action::Session,
                    (true, false, None) => Action::Approve,
                };
                approvals.push(Answer {
                    action,
                    arguments: edited,
                    note: note.clone(),
                    restart_before: false,
                    wait_ms: 0,
                    edit_files: Default::default(),
                });
            }
            RuntimeEvent::ToolCallStarted {
                call_id,
                name,
                arguments,
                ..
            } => {
                // Arguments the guard refused never ran; they leave no file to expect.
                let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
                started.insert(call_id.clone(), (name.clone(), args));
            }
            RuntimeEvent::ToolCallCompleted { call_id, .. } => {
                let Some((name, args)) = started.get(call_id) else {
                    continue;
                };
                let Some(rel) = args["path"].as_str().and_then(|a| relative(workspace, a)) else {
                    continue;
                };
                match name.as_str() {
                    "write_file" => {
                        if let Some(content) = args["content"].as_str() {
                            absent.retain(|a| a != &rel);
                            files.insert(rel, content.to_owned());
                        }
                    }
                    "delete_path" => {
                        files.remove(&rel);
                        files.retain(|k, _| !k.starts_with(&format!("{rel}/")));
                        absent.push(rel);
                    }
                    "read_file" => read.push(rel),
                    _ => {}
                }
            }
            RuntimeEvent::ToolCallFailed { name, kind, .. } => failures.push(EventMatch {
                kind: EventKind::ToolCallFailed,
                payload: Some(json!({ "name": name, "kind": kind })),
                text: None,
            }),
            _ => {}
        }
    }
    if turns.is_empty() {
        return Err(EvalError::NothingToReplay(task_id));
    }

    let mut setup_files = BTreeMap::new();
    for rel in read {
        let path = workspace.join(&rel);
        let small =
            std::fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() <= MAX_SETUP_FILE);
        if small {
            if let Ok(text) = std::fs::read_to_string(&path) {
                setup_files.insert(rel, text);
            }
        }
    }
    let rules = rt.policy_rules(&session.workspace)?;
    let policy = (!rules.allow.is_empty() || !rules.deny.is_empty()).then_some(rules);
    let limits = serde_json::to_value(rt.limits()?).ok();
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
        setup: Setup {
            files: setup_files,
            limits,
            policy,
            grants: task.grants.clone(),
            ..Setup::default()
        },
        script: json!({ "turns": turns }),
        pauses: Vec::new(),
        approvals,
        inbox: Vec::new(),
        crash: None,
        start: None,
        undo: Vec::new(),
        expect: Expect {
            status: Some(task.status),
            answer_contains: answer.into_iter().collect(),
            files,
            absent,
            approvals: Some(asked),
            events: failures,
            ..Expect::default()
        },
        timeout_secs: None,
    })
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
