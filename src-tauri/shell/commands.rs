//! The chat commands. Each: one call into core (on the blocking pool, see `call`), its
//! error mapped to a `CommandError`.
use pocketpilot_core::engine::feed::Change;
use pocketpilot_core::engine::inbox::Admitted;
use pocketpilot_core::ops;
use pocketpilot_core::store::{approvals::Approval, Session, StoredEvent, Submission, Task};
use pocketpilot_core::SessionHistory;
use tauri::ipc::Channel;
use tauri::State;

use super::wire::{ApprovalAnswer, ChatTask, CommandError, SayInput};
use super::{call, AppState};

type Result<T> = std::result::Result<T, CommandError>;

#[tauri::command]
#[specta::specta]
pub async fn list_sessions(state: State<'_, AppState>) -> Result<Vec<Session>> {
    call(&state, |rt| rt.call(ops::ListSessions {})).await
}

/// Renames a session; answers it as stored.
#[tauri::command]
#[specta::specta]
pub async fn rename_session(
    state: State<'_, AppState>,
    session_id: i64,
    title: String,
) -> Result<Session> {
    call(&state, move |rt| {
        rt.call(ops::RenameSession {
            session_id,
            title: title.to_string(),
        })
    })
    .await
}

/// Deletes a session and everything in it; refused (`session_active`) while one of its
/// tasks is open. The change feed tells every view (`session_deleted`).
#[tauri::command]
#[specta::specta]
pub async fn delete_session(state: State<'_, AppState>, session_id: i64) -> Result<()> {
    call(&state, move |rt| {
        rt.call(ops::DeleteSession { session_id }).map(|_| ())
    })
    .await
}

/// The newest `tasks` tasks of a session and their transcript entries.
#[tauri::command]
#[specta::specta]
pub async fn session_history(
    state: State<'_, AppState>,
    session_id: i64,
    tasks: u32,
) -> Result<SessionHistory> {
    call(&state, move |rt| {
        rt.call(ops::GetSessionHistory { session_id, tasks })
    })
    .await
}

#[tauri::command]
#[specta::specta]
pub async fn get_task(state: State<'_, AppState>, task_id: i64) -> Result<Task> {
    call(&state, move |rt| rt.call(ops::GetTask { id: task_id })).await
}

/// Starts a task in a new session (in plan mode when asked); the run's worker is spawned
/// on Tauri's tokio runtime.
#[tauri::command]
#[specta::specta]
pub async fn create_task(state: State<'_, AppState>, task: ChatTask) -> Result<i64> {
    let plan = task.plan;
    call(&state, move |rt| {
        let new = task.into();
        if plan {
            rt.call(ops::SubmitPlanning { new })
        } else {
            rt.call(ops::SubmitTask { new })
        }
    })
    .await
}

/// Says something in a session: starts a run when it is idle, queues it (follow-up or
/// steer) while it is busy.
#[tauri::command]
#[specta::specta]
pub async fn say(state: State<'_, AppState>, input: SayInput) -> Result<Admitted> {
    call(&state, move |rt| {
        rt.call(ops::Say {
            submit: input.into(),
        })
    })
    .await
}

/// The session's queued submissions, oldest first.
#[tauri::command]
#[specta::specta]
pub async fn session_inbox(state: State<'_, AppState>, session_id: i64) -> Result<Vec<Submission>> {
    call(&state, move |rt| rt.call(ops::GetInbox { session_id })).await
}

/// Withdraws a queued submission; one already placed answers `not_queued`.
#[tauri::command]
#[specta::specta]
pub async fn withdraw_submission(
    state: State<'_, AppState>,
    submission_id: i64,
) -> Result<Submission> {
    call(&state, move |rt| rt.call(ops::Withdraw { submission_id })).await
}

#[tauri::command]
#[specta::specta]
pub async fn task_events(state: State<'_, AppState>, task_id: i64) -> Result<Vec<StoredEvent>> {
    call(&state, move |rt| rt.call(ops::TaskEvents { task_id })).await
}

/// Streams a task's events (replay after `after_sequence`, then live) until it ends.
#[tauri::command]
#[specta::specta]
pub async fn subscribe_task(
    state: State<'_, AppState>,
    task_id: i64,
    after_sequence: i64,
    on_event: Channel<StoredEvent>,
) -> Result<()> {
    let mut sub = call(&state, move |rt| {
        rt.call(ops::SubscribeTask {
            task_id,
            after_sequence,
        })
    })
    .await?;
    tauri::async_runtime::spawn(async move {
        while let Some(Ok(ev)) = sub.next().await {
            if on_event.send(ev).is_err() {
                break;
            }
        }
    });
    Ok(())
}

/// Pushes every change the window shows (tasks, inboxes, approvals, triggers, and
/// `refresh` for another process's commits) until the window drops the channel.
#[tauri::command]
#[specta::specta]
pub async fn follow_changes(state: State<'_, AppState>, on_change: Channel<Change>) -> Result<()> {
    let mut changes = state.runtime().await?.call(ops::WatchFeed {});
    tauri::async_runtime::spawn(async move {
        while let Some(change) = changes.next().await {
            if on_change.send(change).is_err() {
                break;
            }
        }
    });
    Ok(())
}

#[tauri::command]
#[specta::specta]
pub async fn cancel_task(state: State<'_, AppState>, task_id: i64) -> Result<()> {
    call(&state, move |rt| rt.call(ops::CancelTask { task_id })).await
}

/// Continues a paused task with more budget and, optionally, a steer (issue 19).
#[tauri::command]
#[specta::specta]
pub async fn continue_task(
    state: State<'_, AppState>,
    task_id: i64,
    raise: pocketpilot_protocol::Raise,
    steer: Option<String>,
) -> Result<()> {
    call(&state, move |rt| {
        rt.call(ops::ContinueTask {
            task_id,
            raise,
            steer,
            by: "window".into(),
        })
    })
    .await
}

/// What a paused task's card says and proposes: what ran out, how much was used, and
/// the raise (the budget again).
#[tauri::command]
#[specta::specta]
pub async fn pause_offer(
    state: State<'_, AppState>,
    task_id: i64,
) -> Result<pocketpilot_core::policy::pause::PauseOffer> {
    call(&state, move |rt| rt.call(ops::GetPauseOffer { task_id })).await
}

/// Stops a paused task: `budget_exceeded`, or `cancelled` after repetition.
#[tauri::command]
#[specta::specta]
pub async fn stop_task(
    state: State<'_, AppState>,
    task_id: i64,
) -> Result<pocketpilot_protocol::TaskStatus> {
    call(&state, move |rt| rt.call(ops::StopTask { task_id })).await
}

/// What a task and its session cost, turn by turn (issue 19).
#[tauri::command]
#[specta::specta]
pub async fn task_cost(
    state: State<'_, AppState>,
    task_id: i64,
) -> Result<pocketpilot_core::policy::cost::TaskCost> {
    call(&state, move |rt| rt.call(ops::GetTaskCost { task_id })).await
}

#[tauri::command]
#[specta::specta]
pub async fn pending_approvals(state: State<'_, AppState>) -> Result<Vec<Approval>> {
    call(&state, |rt| rt.call(ops::PendingApprovals {})).await
}

/// The answer continues the run on a worker.
#[tauri::command]
#[specta::specta]
pub async fn resolve_approval(
    state: State<'_, AppState>,
    approval_id: i64,
    answer: ApprovalAnswer,
) -> Result<i64> {
    call(&state, move |rt| {
        rt.call(ops::ResolveApproval {
            approval_id,
            answer: answer.into(),
        })
    })
    .await
}
