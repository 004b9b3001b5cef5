//! The settings screen's trigger and MCP commands: webhooks, schedules, file watches,
//! "pause all", and MCP servers. Each: one call into core or the triggers crate (on the
//! blocking pool), its error mapped. A change to a trigger definition wakes the running
//! trigger host ([`TriggerHost::reload`]) so that it takes effect at once, and is announced
//! on the change feed so that every view of it re-reads.
use pocketpilot_core::ops;
use pocketpilot_core::store::triggers::{Watch, Webhook};
use pocketpilot_protocol::NewMcpServer;
use pocketpilot_triggers::{self as trigger, cron, watch, webhook, Clock, SystemClock};
use tauri::{AppHandle, State};

use super::wire::{
    CommandError, CreatedWebhook, McpServer, NewSchedule, NewWatch, NewWebhook, Schedule,
    TriggerStatus,
};
use super::{call, lock, tray, AppState};

type Result<T> = std::result::Result<T, CommandError>;

/// After a successful change: wakes the trigger host (if it runs) to re-read the
/// definitions, and tells the window.
fn changed<T>(state: &AppState, r: Result<T>) -> Result<T> {
    if r.is_ok() {
        if let Some(host) = lock(&state.triggers).as_ref() {
            host.reload();
        }
        if let Some(rt) = state.opened() {
            rt.call(ops::AnnounceTriggers {});
        }
    }
    r
}

#[tauri::command]
#[specta::specta]
pub async fn trigger_status(state: State<'_, AppState>) -> Result<TriggerStatus> {
    let webhook_base = lock(&state.triggers)
        .as_ref()
        .and_then(|h| h.webhook_addr())
        .map(|a| format!("http://{a}"));
    let all_paused = call(&state, trigger::all_paused).await?;
    Ok(TriggerStatus {
        webhook_base,
        all_paused,
    })
}

/// "Pause all triggers" (the tray's switch, persisted).
#[tauri::command]
#[specta::specta]
pub async fn set_triggers_paused(
    app: AppHandle,
    state: State<'_, AppState>,
    paused: bool,
) -> Result<()> {
    let r = call(&state, move |rt| {
        if paused {
            trigger::pause_all(rt)
        } else {
            trigger::resume_all(rt)
        }
    })
    .await;
    let r = changed(&state, r);
    tray::refresh(&app);
    r
}

// ---------------------------------------------------------------------------- webhooks

#[tauri::command]
#[specta::specta]
pub async fn list_webhooks(state: State<'_, AppState>) -> Result<Vec<Webhook>> {
    call(&state, webhook::list).await
}

/// Creates a hook; its token is in the answer and never again.
#[tauri::command]
#[specta::specta]
pub async fn create_webhook(
    state: State<'_, AppState>,
    hook: NewWebhook,
) -> Result<CreatedWebhook> {
    let r = call(&state, move |rt| {
        webhook::create(rt, hook.name.trim(), hook.workspace.as_ref(), None)
            .map(CreatedWebhook::from)
    })
    .await;
    changed(&state, r)
}

#[tauri::command]
#[specta::specta]
pub async fn set_webhook_paused(
    state: State<'_, AppState>,
    name: String,
    paused: bool,
) -> Result<()> {
    let r = call(&state, move |rt| webhook::set_paused(rt, &name, paused)).await;
    changed(&state, r)
}

#[tauri::command]
#[specta::specta]
pub async fn delete_webhook(state: State<'_, AppState>, name: String) -> Result<()> {
    let r = call(&state, move |rt| webhook::delete(rt, &name)).await;
    changed(&state, r)
}

// --------------------------------------------------------------------------- schedules

/// A schedule and when it fires next by this machine's clock.
fn with_next_fire(schedule: pocketpilot_core::store::triggers::Schedule) -> Schedule {
    let next_fire =
        cron::next_fire(&schedule, SystemClock::default().now()).map(|t| t.to_rfc3339());
    Schedule {
        schedule,
        next_fire,
    }
}

#[tauri::command]
#[specta::specta]
pub async fn list_schedules(state: State<'_, AppState>) -> Result<Vec<Schedule>> {
    let all = call(&state, cron::list).await?;
    Ok(all.into_iter().map(with_next_fire).collect())
}

#[tauri::command]
#[specta::specta]
pub async fn create_schedule(
    state: State<'_, AppState>,
    schedule: NewSchedule,
) -> Result<Schedule> {
    let r = call(&state, move |rt| {
        cron::create(rt, &schedule.into(), SystemClock::default().now())
    })
    .await;
    changed(&state, r).map(with_next_fire)
}

#[tauri::command]
#[specta::specta]
pub async fn set_schedule_paused(state: State<'_, AppState>, id: i64, paused: bool) -> Result<()> {
    let r = call(&state, move |rt| cron::set_paused(rt, id, paused)).await;
    changed(&state, r)
}

#[tauri::command]
#[specta::specta]
pub async fn delete_schedule(state: State<'_, AppState>, id: i64) -> Result<()> {
    let r = call(&state, move |rt| cron::delete(rt, id)).await;
    changed(&state, r)
}

// ----------------------------------------------------------------------------- watches

#[tauri::command]
#[specta::specta]
pub async fn list_watches(state: State<'_, AppState>) -> Result<Vec<Watch>> {
    call(&state, watch::list).await
}

#[tauri::command]
#[specta::specta]
pub async fn create_watch(state: State<'_, AppState>, watch: NewWatch) -> Result<Watch> {
    let r = call(&state, move |rt| watch::create(rt, &watch.into())).await;
    changed(&state, r)
}

#[tauri::command]
#[specta::specta]
pub async fn set_watch_paused(state: State<'_, AppState>, id: i64, paused: bool) -> Result<()> {
    let r = call(&state, move |rt| watch::set_paused(rt, id, paused)).await;
    changed(&state, r)
}

#[tauri::command]
#[specta::specta]
pub async fn delete_watch(state: State<'_, AppState>, id: i64) -> Result<()> {
    let r = call(&state, move |rt| watch::delete(rt, id)).await;
    changed(&state, r)
}

// ------------------------------------------------------------------------- MCP servers

/// Every configured server; runs pick theirs up when they start (no reload needed).
#[tauri::command]
#[specta::specta]
pub async fn list_mcp_servers(state: State<'_, AppState>) -> Result<Vec<McpServer>> {
    let all = call(&state, |rt| rt.call(ops::ListMcpServers {})).await?;
    Ok(all.into_iter().map(McpServer::from).collect())
}

/// Adds (or replaces, by name and workspace) a server; core validates it and stores its
/// workspace as the canonical path.
#[tauri::command]
#[specta::specta]
pub async fn add_mcp_server(state: State<'_, AppState>, server: NewMcpServer) -> Result<McpServer> {
    call(&state, move |rt| {
        rt.call(ops::AddMcpServer { new: server })
            .map(McpServer::from)
    })
    .await
}

/// Deletes a server by its name and workspace as listed (`None`: the global one).
#[tauri::command]
#[specta::specta]
pub async fn delete_mcp_server(
    state: State<'_, AppState>,
    name: String,
    workspace: Option<String>,
) -> Result<()> {
    call(&state, move |rt| {
        rt.call(ops::DeleteMcpServer {
            name: name.to_string(),
            workspace: workspace.as_deref().map(|s| s.to_string()),
        })
    })
    .await
}
