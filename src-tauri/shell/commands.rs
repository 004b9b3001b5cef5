//! The chat commands. Each: take the state, call one runtime function, convert to the wire.
use tauri::ipc::Channel;
use tauri::State;

use super::wire::{
    Admitted, Approval, ApprovalAnswer, ChatTask, CommandError, SayInput, Session, SessionHistory,
    Submission, Task, TaskEvent,
};
use super::AppState;

type Result<T> = std::result::Result<T, CommandError>;

fn all<T, U: From<T>>(items: Vec<T>) -> Vec<U> {
    items.into_iter().map(U::from).collect()
}

#[tauri::command]
#[specta::specta]
pub fn list_sessions(state: State<'_, AppState>) -> Result<Vec<Session>> {
    Ok(all(state.runtime.sessions()?))
}

/// The newest `tasks` tasks of a session and their transcript entries.
#[tauri::command]
#[specta::specta]
pub fn session_history(
    state: State<'_, AppState>,
    session_id: i64,
    tasks: u32,
) -> Result<SessionHistory> {
    Ok(state.runtime.session_history(session_id, tasks)?.into())
}

#[tauri::command]
#[specta::specta]
pub fn get_task(state: State<'_, AppState>, task_id: i64) -> Result<Task> {
    Ok(state.runtime.task(task_id)?.into())
}

/// Starts a task in a new session. Async so that it runs on Tauri's tokio runtime:
/// `submit` spawns the run's worker there.
#[tauri::command]
#[specta::specta]
pub async fn create_task(state: State<'_, AppState>, task: ChatTask) -> Result<i64> {
    Ok(state.runtime.submit(&task.into())?)
}

/// Says something in a session: starts a run when it is idle, queues it (follow-up or
/// steer) while it is busy. Async for the same reason as `create_task`.
#[tauri::command]
#[specta::specta]
pub async fn say(state: State<'_, AppState>, input: SayInput) -> Result<Admitted> {
    Ok(state.runtime.say(&input.into())?.into())
}

/// The session's queued submissions, oldest first.
#[tauri::command]
#[specta::specta]
pub fn session_inbox(state: State<'_, AppState>, session_id: i64) -> Result<Vec<Submission>> {
    Ok(all(state.runtime.inbox(session_id)?))
}

/// Withdraws a queued submission; one already placed answers `not_queued`.
#[tauri::command]
#[specta::specta]
pub fn withdraw_submission(state: State<'_, AppState>, submission_id: i64) -> Result<Submission> {
    Ok(state.runtime.withdraw(submission_id)?.into())
}

#[tauri::command]
#[specta::specta]
pub fn task_events(state: State<'_, AppState>, task_id: i64) -> Result<Vec<TaskEvent>> {
    Ok(all(state.runtime.events(task_id)?))
}

/// Streams a task's events (replay after `after_sequence`, then live) until it ends.
#[tauri::command]
#[specta::specta]
pub async fn subscribe_task(
    state: State<'_, AppState>,
    task_id: i64,
    after_sequence: i64,
    on_event: Channel<TaskEvent>,
) -> Result<()> {
    let mut sub = state.runtime.subscribe(task_id, after_sequence)?;
    tauri::async_runtime::spawn(async move {
        while let Some(Ok(ev)) = sub.next().await {
            if on_event.send(ev.into()).is_err() {
                break;
            }
        }
    });
    Ok(())
}

#[tauri::command]
#[specta::specta]
pub fn cancel_task(state: State<'_, AppState>, task_id: i64) -> Result<()> {
    Ok(state.runtime.cancel(task_id)?)
}

#[tauri::command]
#[specta::specta]
pub fn pending_approvals(state: State<'_, AppState>) -> Result<Vec<Approval>> {
    Ok(all(state.runtime.pending_approvals()?))
}

/// Async for the same reason as `create_task`: the answer continues the run on a worker.
#[tauri::command]
#[specta::specta]
pub async fn resolve_approval(
    state: State<'_, AppState>,
    approval_id: i64,
    answer: ApprovalAnswer,
) -> Result<i64> {
    Ok(state.runtime.resolve_approval(approval_id, answer.into())?)
}
