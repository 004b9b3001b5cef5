//! The settings screen's trigger and MCP commands: webhooks, schedules, file watches,
//! "pause all", and MCP servers. Each: take the state, call one runtime function, convert
//! to the wire. A change to a trigger definition wakes the running trigger host
//! ([`TriggerHost::reload`]) so that it takes effect at once.
use pocketpilot_core::mcp::McpConfigError;
use pocketpilot_protocol::ErrorKind;
use pocketpilot_triggers::{self as trigger, cron, watch, webhook, Clock, SystemClock};
use tauri::{AppHandle, State};

use super::wire::{
    CommandError, CreatedWebhook, McpServer, NewMcpServer, NewSchedule, NewWatch, NewWebhook,
    Schedule, TriggerStatus, Watch, Webhook,
};
use super::{lock, tray, AppState};

type Result<T> = std::result::Result<T, CommandError>;

fn all<T, U: From<T>>(items: Vec<T>) -> Vec<U> {
    items.into_iter().map(U::from).collect()
}

/// Wakes the trigger host (if it runs) to re-read the definitions, then passes `r` on.
fn reloaded<T>(state: &AppState, r: Result<T>) -> Result<T> {
    if r.is_ok() {
        if let Some(host) = lock(&state.triggers).as_ref() {
            host.reload();
        }
    }
    r
}

#[tauri::command]
#[specta::specta]
pub fn trigger_status(state: State<'_, AppState>) -> Result<TriggerStatus> {
    let webhook_base = lock(&state.triggers)
        .as_ref()
        .and_then(|h| h.webhook_addr())
        .map(|a| format!("http://{a}"));
    Ok(TriggerStatus {
        webhook_base,
        all_paused: trigger::all_paused(&state.runtime)?,
    })
}

/// "Pause all triggers" (the tray's switch, persisted).
#[tauri::command]
#[specta::specta]
pub fn set_triggers_paused(app: AppHandle, state: State<'_, AppState>, paused: bool) -> Result<()> {
    let r = if paused {
        trigger::pause_all(&state.runtime)
    } else {
        trigger::resume_all(&state.runtime)
    };
    let r = reloaded(&state, r.map_err(CommandError::from));
    tray::refresh(&app);
    r
}

// ---------------------------------------------------------------------------- webhooks

#[tauri::command]
#[specta::specta]
pub fn list_webhooks(state: State<'_, AppState>) -> Result<Vec<Webhook>> {
    Ok(all(webhook::list(&state.runtime)?))
}

/// Creates a hook; its token is in the answer and never again.
#[tauri::command]
#[specta::specta]
pub fn create_webhook(state: State<'_, AppState>, hook: NewWebhook) -> Result<CreatedWebhook> {
    let r = webhook::create(
        &state.runtime,
        hook.name.trim(),
        hook.workspace.as_ref(),
        None,
    );
    reloaded(&state, r.map(Into::into).map_err(Into::into))
}

#[tauri::command]
#[specta::specta]
pub fn set_webhook_paused(state: State<'_, AppState>, name: String, paused: bool) -> Result<()> {
    let r = webhook::set_paused(&state.runtime, &name, paused);
    reloaded(&state, r.map_err(Into::into))
}

#[tauri::command]
#[specta::specta]
pub fn delete_webhook(state: State<'_, AppState>, name: String) -> Result<()> {
    let r = webhook::delete(&state.runtime, &name);
    reloaded(&state, r.map_err(Into::into))
}

// --------------------------------------------------------------------------- schedules

#[tauri::command]
#[specta::specta]
pub fn list_schedules(state: State<'_, AppState>) -> Result<Vec<Schedule>> {
    let now = SystemClock::default().now();
    Ok(cron::list(&state.runtime)?
        .into_iter()
        .map(|s| {
            let next = cron::next_fire(&s, now).map(|t| t.to_rfc3339());
            Schedule::of(s, next)
        })
        .collect())
}

#[tauri::command]
#[specta::specta]
pub fn create_schedule(state: State<'_, AppState>, schedule: NewSchedule) -> Result<Schedule> {
    let now = SystemClock::default().now();
    let r = cron::create(&state.runtime, &schedule.into(), now).map(|s| {
        let next = cron::next_fire(&s, now).map(|t| t.to_rfc3339());
        Schedule::of(s, next)
    });
    reloaded(&state, r.map_err(Into::into))
}

#[tauri::command]
#[specta::specta]
pub fn set_schedule_paused(state: State<'_, AppState>, id: i64, paused: bool) -> Result<()> {
    let r = cron::set_paused(&state.runtime, id, paused);
    reloaded(&state, r.map_err(Into::into))
}

#[tauri::command]
#[specta::specta]
pub fn delete_schedule(state: State<'_, AppState>, id: i64) -> Result<()> {
    let r = cron::delete(&state.runtime, id);
    reloaded(&state, r.map_err(Into::into))
}

// ----------------------------------------------------------------------------- watches

#[tauri::command]
#[specta::specta]
pub fn list_watches(state: State<'_, AppState>) -> Result<Vec<Watch>> {
    Ok(all(watch::list(&state.runtime)?))
}

#[tauri::command]
#[specta::specta]
pub fn create_watch(state: State<'_, AppState>, watch: NewWatch) -> Result<Watch> {
    let r = watch::create(&state.runtime, &watch.into());
    reloaded(&state, r.map(Into::into).map_err(Into::into))
}

#[tauri::command]
#[specta::specta]
pub fn set_watch_paused(state: State<'_, AppState>, id: i64, paused: bool) -> Result<()> {
    let r = watch::set_paused(&state.runtime, id, paused);
    reloaded(&state, r.map_err(Into::into))
}

#[tauri::command]
#[specta::specta]
pub fn delete_watch(state: State<'_, AppState>, id: i64) -> Result<()> {
    let r = watch::delete(&state.runtime, id);
    reloaded(&state, r.map_err(Into::into))
}

// ------------------------------------------------------------------------- MCP servers

/// Every configured server; runs pick theirs up when they start (no reload needed).
#[tauri::command]
#[specta::specta]
pub fn list_mcp_servers(state: State<'_, AppState>) -> Result<Vec<McpServer>> {
    let servers =
        pocketpilot_core::mcp::list(&state.runtime.store).map_err(McpConfigError::from)?;
    Ok(all(servers))
}

/// Adds (or replaces, by name and workspace) a server. A workspace is stored as its
/// canonical path, the form sessions carry.
#[tauri::command]
#[specta::specta]
pub fn add_mcp_server(state: State<'_, AppState>, server: NewMcpServer) -> Result<McpServer> {
    let mut stored = server.into_stored()?;
    if let Some(w) = stored.workspace.take() {
        let real = std::fs::canonicalize(&w).map_err(|_| {
            CommandError::new(
                ErrorKind::Workspace,
                format!("the workspace {w} does not exist"),
            )
        })?;
        stored.workspace = Some(real.display().to_string());
    }
    pocketpilot_core::mcp::add(&state.runtime.store, stored.clone())?;
    Ok(stored.into())
}

/// Deletes a server by its name and workspace as listed (`None`: the global one).
#[tauri::command]
#[specta::specta]
pub fn delete_mcp_server(
    state: State<'_, AppState>,
    name: String,
    workspace: Option<String>,
) -> Result<()> {
    Ok(pocketpilot_core::mcp::delete(
        &state.runtime.store,
        &name,
        workspace.as_deref(),
    )?)
}
