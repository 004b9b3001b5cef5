//! Each command: take the state, call one runtime function, map the error.
use std::path::PathBuf;

use pocketpilot_runtime::recorder::TaskEvent;
use pocketpilot_runtime::store::{Approval, Entry, Session, Task};
use pocketpilot_runtime::{ApprovalAnswer, NewTask, RuntimeError};
use serde::{Deserialize, Serialize};
use tauri::ipc::Channel;
use tauri::State;

use super::AppState;

/// What the UI receives on failure: a stable kind to branch on and a message to show.
#[derive(Debug, Serialize)]
pub struct CommandError {
    kind: String,
    message: String,
}

impl From<RuntimeError> for CommandError {
    fn from(e: RuntimeError) -> Self {
        Self {
            kind: e.kind().into(),
            message: e.to_string(),
        }
    }
}

type Result<T> = std::result::Result<T, CommandError>;

#[tauri::command]
pub fn list_sessions(state: State<'_, AppState>) -> Result<Vec<Session>> {
    Ok(state.runtime.sessions()?)
}

#[tauri::command]
pub fn session_tasks(state: State<'_, AppState>, session_id: i64) -> Result<Vec<Task>> {
    Ok(state.runtime.session_tasks(session_id)?)
}

#[tauri::command]
pub fn session_entries(state: State<'_, AppState>, session_id: i64) -> Result<Vec<Entry>> {
    Ok(state.runtime.session_entries(session_id)?)
}

#[tauri::command]
pub fn get_task(state: State<'_, AppState>, task_id: i64) -> Result<Task> {
    Ok(state.runtime.task(task_id)?)
}

/// What the window may ask for when it starts a task. The provider and any capability
/// grants are not the webview's to choose: the provider comes from the app's settings
/// (`POCKETPILOT_PROVIDER` for demos and tests) and grants only from approval answers.
#[derive(Debug, Deserialize)]
pub struct ChatTask {
    goal: String,
    workspace: Option<PathBuf>,
    session_id: Option<i64>,
    follow_up_of: Option<i64>,
}

impl From<ChatTask> for NewTask {
    fn from(t: ChatTask) -> Self {
        NewTask {
            goal: t.goal,
            workspace: t.workspace,
            session_id: t.session_id,
            follow_up_of: t.follow_up_of,
            trigger: "chat".into(),
            provider: pocketpilot_runtime::config::default_provider_spec(),
            grants: Vec::new(),
        }
    }
}

/// Async so that it runs on Tauri's tokio runtime: `submit` spawns the run's worker there.
#[tauri::command]
pub async fn create_task(state: State<'_, AppState>, task: ChatTask) -> Result<i64> {
    Ok(state.runtime.submit(&task.into())?)
}

#[tauri::command]
pub fn task_events(state: State<'_, AppState>, task_id: i64) -> Result<Vec<TaskEvent>> {
    Ok(state.runtime.events(task_id)?)
}

/// Streams a task's events (replay after `after_sequence`, then live) until it ends.
#[tauri::command]
pub async fn subscribe_task(
    state: State<'_, AppState>,
    task_id: i64,
    after_sequence: i64,
    on_event: Channel<TaskEvent>,
) -> Result<()> {
    let mut sub = state.runtime.subscribe(task_id, after_sequence)?;
    tauri::async_runtime::spawn(async move {
        while let Some(Ok(ev)) = sub.next().await {
            if on_event.send(ev).is_err() {
                break;
            }
        }
    });
    Ok(())
}

#[tauri::command]
pub fn cancel_task(state: State<'_, AppState>, task_id: i64) -> Result<()> {
    Ok(state.runtime.cancel(task_id)?)
}

#[tauri::command]
pub fn pending_approvals(state: State<'_, AppState>) -> Result<Vec<Approval>> {
    Ok(state.runtime.pending_approvals()?)
}

/// Async for the same reason as `create_task`: the answer continues the run on a worker.
#[tauri::command]
pub async fn resolve_approval(
    state: State<'_, AppState>,
    approval_id: i64,
    mut answer: ApprovalAnswer,
) -> Result<i64> {
    answer.by = "window".into();
    Ok(state.runtime.resolve_approval(approval_id, answer)?)
}
