//! Plan mode in the window: the composer's toggle (the session's setting), the plan card
//! (a session's plans; approve, edit then approve, reject). Each: one call into core, its
//! error mapped.
use pocketpilot_core::ops;
use pocketpilot_protocol::{Plan, PlanContent, RunSource};
use tauri::State;

use super::wire::CommandError;
use super::{call, AppState};

type Result<T> = std::result::Result<T, CommandError>;

/// The plans of a session, oldest first, with their ticked steps.
#[tauri::command]
#[specta::specta]
pub async fn session_plans(state: State<'_, AppState>, session_id: i64) -> Result<Vec<Plan>> {
    call(&state, move |rt| rt.call(ops::SessionPlans { session_id })).await
}

/// Approves a task's plan (as edited, when given) and starts the run that carries it out;
/// answers that run's task.
#[tauri::command]
#[specta::specta]
pub async fn approve_plan(
    state: State<'_, AppState>,
    task_id: i64,
    edited: Option<PlanContent>,
) -> Result<i64> {
    call(&state, move |rt| {
        rt.call(ops::ApprovePlan {
            task_id,
            edited: edited.as_ref().cloned(),
            by: RunSource::Chat,
        })
    })
    .await
}

/// Rejects a task's plan: nothing of it runs.
#[tauri::command]
#[specta::specta]
pub async fn reject_plan(
    state: State<'_, AppState>,
    task_id: i64,
    reason: Option<String>,
) -> Result<Plan> {
    call(&state, move |rt| {
        rt.call(ops::RejectPlan {
            task_id,
            reason: reason.as_deref().map(|s| s.to_string()),
        })
    })
    .await
}

#[tauri::command]
#[specta::specta]
pub async fn session_plan_mode(state: State<'_, AppState>, session_id: i64) -> Result<bool> {
    call(&state, move |rt| {
        rt.call(ops::GetSessionPlanMode { session_id })
    })
    .await
}

/// Every run of the session plans first (`on`), or acts.
#[tauri::command]
#[specta::specta]
pub async fn set_session_plan_mode(
    state: State<'_, AppState>,
    session_id: i64,
    on: bool,
) -> Result<()> {
    call(&state, move |rt| {
        rt.call(ops::SetSessionPlanMode { session_id, on })
    })
    .await
}
