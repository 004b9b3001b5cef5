//! The tray: running/waiting counts, Open, Pause/Resume triggers, Quit; native
//! notifications when a task needs a person or ends; whether closing the window only
//! hides it (while runs or triggers are active, the app lives on in the tray).
use std::sync::Arc;
use std::time::Duration;

use pocketpilot_core::ops;
use pocketpilot_core::Runtime;
use pocketpilot_protocol::{Change, EventKind};
use pocketpilot_triggers as trigger;
use tauri::image::Image;
use tauri::menu::{Menu, MenuEvent, MenuItem, PredefinedMenuItem};
use tauri::tray::{TrayIcon, TrayIconBuilder};
use tauri::{AppHandle, Manager, Wry};
use tauri_plugin_notification::NotificationExt;

use super::AppState;

const TRAY_ICON: &[u8] = include_bytes!("../../icons/tray.png");

pub struct Tray {
    icon: TrayIcon<Wry>,
    status: MenuItem<Wry>,
    pause: MenuItem<Wry>,
}

pub fn install(app: &AppHandle) -> tauri::Result<Tray> {
    let status = MenuItem::with_id(app, "status", "No tasks running", false, None::<&str>)?;
    let open = MenuItem::with_id(app, "open", "Open PocketPilot", true, None::<&str>)?;
    let pause = MenuItem::with_id(app, "pause", "Pause triggers", true, None::<&str>)?;
    let quit = MenuItem::with_id(app, "quit", "Quit PocketPilot", true, None::<&str>)?;
    let sep = PredefinedMenuItem::separator(app)?;
    let menu = Menu::with_items(app, &[&status, &sep, &open, &pause, &quit])?;
    let icon = TrayIconBuilder::with_id("main")
        .icon(Image::from_bytes(TRAY_ICON)?)
        .tooltip("PocketPilot")
        .menu(&menu)
        .on_menu_event(on_menu)
        .build(app)?;
    Ok(Tray {
        icon,
        status,
        pause,
    })
}

fn on_menu(app: &AppHandle, event: MenuEvent) {
    match event.id.as_ref() {
        "open" => show_window(app),
        "pause" => toggle_triggers(app),
        "quit" => quit(app),
        _ => {}
    }
}

pub fn show_window(app: &AppHandle) {
    // Not made yet after a background start.
    super::desktop::ensure_window(app);
    if let Some(w) = app.get_webview_window("main") {
        let _ = w.unminimize();
        let _ = w.show();
        let _ = w.set_focus();
    }
}

/// The tray's "pause all" switch. The write runs on the blocking pool: a menu handler runs
/// on the main thread, which must not wait for an fsync.
fn toggle_triggers(app: &AppHandle) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let Some(rt) = app.state::<AppState>().opened().cloned() else {
            return;
        };
        let switching = rt.clone();
        let switched =
            tauri::async_runtime::spawn_blocking(move || match trigger::all_paused(&switching) {
                Ok(true) => trigger::resume_all(&switching),
                Ok(false) => trigger::pause_all(&switching),
                Err(e) => Err(e),
            })
            .await;
        match switched {
            Ok(Ok(())) => {
                let state = app.state::<AppState>();
                if let Some(host) = super::lock(&state.triggers).as_ref() {
                    host.reload();
                }
                rt.call(ops::AnnounceTriggers {});
            }
            Ok(Err(e)) => tracing::error!(error = %e, "could not switch the triggers"),
            Err(e) => tracing::error!(error = %e, "the triggers switch did not finish"),
        }
        refresh(&app);
    });
}

/// Stops the trigger host (requests in flight finish), then exits. Runs still going are
/// interrupted and resumed at the next start.
fn quit(app: &AppHandle) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let host = app.state::<AppState>().take_trigger_host();
        if let Some(host) = host {
            let _ = tokio::time::timeout(Duration::from_secs(3), host.shutdown()).await;
        }
        app.exit(0);
    });
}

/// Whether closing the window should only hide it: the person asked for that always, a run
/// is going or waiting for a person, or a trigger may start one.
pub fn keep_in_tray(state: &AppState) -> bool {
    // Before the store is open nothing runs yet, and nothing says to stay.
    let Some(rt) = state.opened() else {
        return false;
    };
    // The person's "keep running in the tray when the window closes" (Settings).
    if rt.call(ops::GetKeepInTray {}).unwrap_or(false) {
        return true;
    }
    let busy = rt
        .call(ops::GetCounts {})
        .map(|c| c.running + c.waiting_approval + c.paused > 0)
        .unwrap_or(false);
    busy || (state.has_trigger_host() && triggers_armed(rt))
}

fn triggers_armed(rt: &Arc<Runtime>) -> bool {
    if trigger::all_paused(rt).unwrap_or(true) {
        return false;
    }
    let hooks = trigger::webhook::list(rt).map(|v| v.iter().any(|h| !h.paused));
    let crons = trigger::cron::list(rt).map(|v| v.iter().any(|s| !s.paused));
    let watches = trigger::watch::list(rt).map(|v| v.iter().any(|w| !w.paused));
    [hooks, crons, watches]
        .into_iter()
        .any(|r| r.unwrap_or(false))
}

/// Updates the counts (menu, tooltip, and the label next to the icon) and the pause label.
pub fn refresh(app: &AppHandle) {
    let state = app.state::<AppState>();
    let Some(tray) = state.tray() else { return };
    let Some(rt) = state.opened() else { return };
    let counts = match rt.call(ops::GetCounts {}) {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(error = %e, "could not count tasks for the tray");
            return;
        }
    };
    let text = if counts.running == 0 && counts.waiting_approval == 0 && counts.paused == 0 {
        "No tasks running".to_owned()
    } else if counts.paused == 0 {
        format!(
            "{} running · {} waiting for approval",
            counts.running, counts.waiting_approval
        )
    } else {
        format!(
            "{} running · {} waiting for approval · {} paused, needs you",
            counts.running, counts.waiting_approval, counts.paused
        )
    };
    let _ = tray.status.set_text(&text);
    let _ = tray.icon.set_tooltip(Some(format!("PocketPilot — {text}")));
    // Next to the icon (Linux panels, the macOS menu bar): the counts while there are any.
    let parts: Vec<String> = [
        (counts.running, "running"),
        (counts.waiting_approval + counts.paused, "waiting"),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    let _ = tray
        .icon
        .set_title((!parts.is_empty()).then(|| parts.join(" · ")));
    let paused = trigger::all_paused(rt).unwrap_or(false);
    let _ = tray.pause.set_text(if paused {
        "Resume triggers"
    } else {
        "Pause triggers"
    });
}

/// Follows the runtime's change feed, the window's own: refreshes the tray and notifies.
/// What another process commits (a CLI run, a trigger paused from the CLI) arrives as a
/// `Refresh` when the store watcher sees it; nothing runs on a timer. Runs until the
/// runtime's feed closes.
pub async fn follow_changes(app: AppHandle, rt: Arc<Runtime>) {
    let mut changes = rt.call(ops::WatchFeed {});
    while let Some(change) = changes.next().await {
        match change {
            // The task's own change follows, and refreshes.
            Change::Approvals { .. } => continue,
            Change::Task { task_id, event, .. } => notify(&app, &rt, task_id, event),
            _ => {}
        }
        refresh(&app);
    }
}

fn notify(app: &AppHandle, rt: &Arc<Runtime>, task_id: i64, event: EventKind) {
    use pocketpilot_protocol::PauseReason;
    let paused_for = || {
        rt.call(ops::GetTask { id: task_id })
            .ok()
            .and_then(|t| t.pause)
    };
    let title = match event {
        EventKind::ApprovalRequired => "A task needs your approval",
        EventKind::RunPaused => match paused_for().map(|p| p.reason) {
            Some(PauseReason::Repetition) => "A task is paused: the agent is repeating itself",
            Some(PauseReason::DiskFull) => "A task is paused: the disk is full",
            _ => "A task is paused: a budget ran out",
        },
        EventKind::TaskCompleted => "Task finished",
        EventKind::TaskFailed => "Task failed",
        EventKind::BudgetExceeded => "Task stopped: budget exceeded",
        _ => return,
    };
    let focused = app
        .get_webview_window("main")
        .map(|w| w.is_visible().unwrap_or(false) && w.is_focused().unwrap_or(false))
        .unwrap_or(false);
    if focused {
        tracing::debug!(task_id = task_id, kind = %event, "no notification: the window has focus");
        return;
    }
    let goal = rt
        .call(ops::GetTask { id: task_id })
        .map(|t| t.goal)
        .unwrap_or_default();
    let body = format!(
        "Task {}: {}",
        task_id,
        goal.chars().take(120).collect::<String>()
    );
    if let Err(e) = app.notification().builder().title(title).body(body).show() {
        tracing::warn!(error = %e, "could not show a notification");
    }
}
