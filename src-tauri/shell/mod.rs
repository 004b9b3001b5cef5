//! Layout:
//! - `command_list.rs`: the window's commands, declared once (bindings, app manifest).
//! - `commands.rs`: sessions, tasks, the inbox, approvals, the change feed.
//! - `context.rs`: the context meter, fresh contexts, "Compact now", "Fresh context".
//! - `models.rs`: the built-in model: its models, its server's state (pushed as an event),
//!   its settings.
//! - `settings.rs`: provider, API key (write-only), limits, environment overrides, policy.
//! - `triggers.rs`: webhooks, schedules, file watches, "pause all", MCP servers.
//! - `wire.rs`: the shell's own wire types (the error, the webview's narrower inputs, views
//!   joining what only the shell knows); the rest are core's types. `bindings.rs` exports
//!   them to TypeScript.
//! - `tray.rs`: tray icon and menu, notifications, hide-on-close while work is going on.
//! - `data.rs`: Settings → Data: backups of the store, "Back up now", "Restore…".
//! - `opening.rs`: the app's state from its first moment; the store opens beside the
//!   window's start, and calls that need it wait for it.
//! - `recovery.rs`: the screen for a store that cannot be opened (damaged, newer), and
//!   putting a backup back from it.
//! - `desktop.rs`: background start (`--background`), start at login, keep in tray, About.
//!
//! Every command is async and runs its core call on the blocking pool (`call`): core's
//! writes fsync, and neither the main thread nor the async workers wait for a disk.
mod bindings;
mod changes;
mod command_rules;
mod commands;
mod context;
mod data;
mod desktop;
mod export;
mod models;
mod opening;
mod plans;
mod recovery;
mod rules;
mod search;
mod settings;
mod theme;
mod tray;
mod triggers;
mod wire;

use std::process::ExitCode;
use std::sync::{Arc, Mutex, MutexGuard};

use pocketpilot_core::ops;
use pocketpilot_core::Runtime;
use pocketpilot_triggers::{HostOptions, TriggerHost};
use tauri::{Manager, WindowEvent};

pub use desktop::{about, run_desktop_hidden};
use opening::AppState;

/// Runs one core call on tokio's blocking pool (it keeps the runtime's context, so a call
/// that starts a run can spawn its worker) and maps its error. A call made while the store
/// is still opening waits for it.
async fn call<T, E>(
    state: &AppState,
    f: impl FnOnce(&Arc<Runtime>) -> Result<T, E> + Send + 'static,
) -> Result<T, wire::CommandError>
where
    T: Send + 'static,
    E: Into<wire::CommandError> + Send + 'static,
{
    let rt = state.runtime().await?;
    match tauri::async_runtime::spawn_blocking(move || f(&rt)).await {
        Ok(r) => r.map_err(Into::into),
        Err(e) => Err(wire::CommandError::new(
            pocketpilot_protocol::ErrorKind::Io,
            format!("the call did not finish: {e}"),
        )),
    }
}

/// Hands a path the runtime already checked to the desktop's default app (the opener
/// plugin: `xdg-open` and its kin on Linux).
fn open_in_desktop(
    app: &tauri::AppHandle,
    path: &std::path::Path,
) -> Result<(), wire::CommandError> {
    use tauri_plugin_opener::OpenerExt;
    app.opener()
        .open_path(path.to_string_lossy(), None::<&str>)
        .map_err(|e| {
            wire::CommandError::new(
                pocketpilot_protocol::ErrorKind::Io,
                format!("no app could open {}: {e}", path.display()),
            )
        })
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The single-instance name: one app per data directory (a test or a second profile with
/// its own `POCKETPILOT_DATA_DIR` is another instance).
fn instance_id(data_dir: &std::path::Path) -> String {
    // FNV-1a: stable across builds, unlike the std hasher.
    let hash = data_dir
        .to_string_lossy()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
    format!("app.pocketpilot.desktop.d{hash:016x}")
}

/// WebKitGTK settings for this app, applied before anything else runs (the web processes
/// inherit the environment; nothing else reads it concurrently this early). A value
/// already set in the environment wins, so each can be turned back on for a diagnosis.
///
/// The window is a document: no WebGL, 3D transforms or video. Everything GPU-related is
/// cost without benefit, and without a GPU (Xvfb, VMs, remote desktops) it is Mesa's
/// software rasteriser with libLLVM mapped into every process that touches EGL or GLX.
/// Measured with tests/e2e/bench_ui.py (`scripts/bench.sh --window`):
/// - No accelerated compositing: ~100 MB less in the web process, the first frame ~1 s
///   sooner (rAF waits for the GL setup), and no 50–300 ms frames while text changes.
/// - No DMA-BUF renderer (it serves compositing only), GTK without GL (its GLX visual
///   probe at display open loads the driver), and the render node named up front (WebKit
///   otherwise opens an EGL display in the app process just to ask it which device to
///   hand the web process): together, the app process never loads a GL driver: ~25 MB.
/// - JavaScriptCore without its JIT tiers: the bundle is small and event-driven; the
///   interpreter keeps up with 200 deltas/s (same bench) and the web process is ~8 MB
///   smaller without JIT code and its bookkeeping.
///
/// Returns the names it set: they are for the window only, and kept out of the commands
/// and MCP servers the agent starts.
#[cfg(target_os = "linux")]
fn webkit_env() -> Vec<std::ffi::OsString> {
    let defaults = [
        ("WEBKIT_DISABLE_COMPOSITING_MODE", "1".into()),
        ("WEBKIT_DISABLE_DMABUF_RENDERER", "1".into()),
        ("GDK_GL", "disable".into()),
        ("WEBKIT_WEB_RENDER_DEVICE_FILE", render_node()),
        ("JSC_useJIT", "0".into()),
    ];
    let mut set = Vec::new();
    for (key, value) in defaults {
        if std::env::var_os(key).is_none() {
            std::env::set_var(key, value);
            set.push(key.into());
        }
    }
    set
}

/// The first DRM render node, which is what WebKit picks on a single-GPU machine. Without
/// one (no GPU, or a container without /dev/dri) the conventional first name is given: the
/// web process cannot open it and falls back to its software path, as it would anyway.
#[cfg(target_os = "linux")]
fn render_node() -> std::ffi::OsString {
    std::fs::read_dir("/dev/dri")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("renderD"))
        })
        .min()
        .unwrap_or_else(|| "/dev/dri/renderD128".into())
        .into_os_string()
}

/// The app's work beside the window, once the store is open: the tray, the built-in model's
/// status, daily backups, interrupted runs resumed, the triggers.
fn start_services(handle: &tauri::AppHandle, runtime: Arc<Runtime>) {
    match tray::install(handle) {
        Ok(t) => {
            let _ = handle.state::<AppState>().tray.set(t);
        }
        Err(e) => tracing::warn!(error = %e, "no tray icon"),
    }
    tauri::async_runtime::spawn(models::forward_server_status(handle.clone()));
    // A copy of the store once a day while the app runs (`core::api::data`).
    tauri::async_runtime::spawn(runtime.clone().call(ops::KeepDailyBackups {}));
    let handle = handle.clone();
    tauri::async_runtime::spawn(async move {
        // Runs a crash or a quit interrupted go on; waiting approvals stay waiting.
        match runtime.call(ops::ResumeOnStart {}) {
            Ok((s, resumed)) if !s.is_empty() => {
                tracing::info!(sessions = ?s, resumed, "interrupted sessions at start")
            }
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "could not resume interrupted sessions"),
        }
        match TriggerHost::start(runtime.clone(), HostOptions::default()).await {
            Ok(host) => {
                *lock(&handle.state::<AppState>().triggers) = Some(host);
                // The webhook address is known now: the settings screen shows it.
                runtime.call(ops::AnnounceTriggers {});
            }
            Err(e) => tracing::warn!(error = %e, "triggers are not running"),
        }
        tray::refresh(&handle);
        tray::follow_changes(handle, runtime).await;
    });
}

// The last resort before any window exists: the terminal that started the app, if any.
#[allow(clippy::print_stderr)]
pub fn run_desktop() -> ExitCode {
    #[cfg(target_os = "linux")]
    pocketpilot_core::engine::agent_env::keep_from_agents(webkit_env());
    let data_dir = pocketpilot_core::config::data_dir();
    let _log = pocketpilot_core::logging::init(&data_dir);
    // "Restore…" in Settings → Data restarts the app: the backup goes back before the
    // store is opened again.
    let _ = pocketpilot_core::api::data::apply_pending_restore(&data_dir);
    // The store is opened (and checked: `quick_check` reads the whole file) beside the
    // window's start; the window draws at once, and its calls wait for the store
    // (`opening.rs`).
    let opening = {
        let data_dir = data_dir.clone();
        std::thread::spawn(move || Runtime::open(&data_dir))
    };
    let ipc = bindings::builder();
    let builder = tauri::Builder::default()
        // First: a second launch hands over to the running app and exits.
        .plugin(
            tauri_plugin_single_instance::Builder::new()
                .callback(|app, args, _cwd| desktop::second_launch(app, &args))
                .dbus_id(instance_id(&data_dir))
                .build(),
        )
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_notification::init())
        .plugin(tauri_plugin_opener::init())
        .manage(AppState::new(&data_dir));
    let result = builder
        .invoke_handler(ipc.invoke_handler())
        .setup(move |app| {
            let handle = app.handle().clone();
            desktop::show_unless_hidden(&handle);
            tauri::async_runtime::spawn(take_store(handle, opening, data_dir));
            Ok(())
        })
        .on_window_event(keep_in_tray_on_close)
        .build(tauri::generate_context!())
        .map(|app| {
            app.run(|_, event| {
                // The event loop may end the process without returning here: the
                // built-in model's server is stopped on the way out.
                if let tauri::RunEvent::Exit = event {
                    pocketpilot_core::engine::local_model::shutdown();
                }
            })
        });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pocketpilot: the window could not start: {e}");
            ExitCode::from(1)
        }
    }
}

/// Once the store `opening` opened, the app's services start and the calls waiting for it
/// go on; a store that cannot be opened gets the recovery screen, or ends the app.
// The last resort before any window exists: the terminal that started the app, if any.
#[allow(clippy::print_stderr)]
async fn take_store(
    handle: tauri::AppHandle,
    opening: std::thread::JoinHandle<Result<Arc<Runtime>, pocketpilot_core::RuntimeError>>,
    data_dir: std::path::PathBuf,
) {
    let opened = tauri::async_runtime::spawn_blocking(move || opening.join()).await;
    let state = handle.state::<AppState>();
    match opened {
        Ok(Ok(Ok(rt))) => {
            state.open(rt.clone());
            start_services(&handle, rt);
        }
        Ok(Ok(Err(e))) => match recovery::problem_of(&e, &data_dir) {
            // A damaged store, or one a newer build wrote: the recovery screen
            // (`recovery.rs`), even after a start at login, as the person has to choose;
            // nothing writes to it.
            Some(problem) => {
                tracing::error!(error = %e, "the store cannot be opened: the recovery screen");
                state.fail_with_problem(problem);
                tray::show_window(&handle);
            }
            None => {
                tracing::error!(error = %e, "the store cannot be opened");
                eprintln!("pocketpilot: {e}");
                state.fail(e.to_string());
                handle.exit(1);
            }
        },
        Ok(Err(_)) | Err(_) => {
            tracing::error!("opening the store did not finish");
            eprintln!("pocketpilot: opening the store did not finish");
            state.fail("opening the store did not finish".into());
            handle.exit(1);
        }
    }
}

/// Closing the window hides it when the app stays in the tray.
fn keep_in_tray_on_close(window: &tauri::Window, event: &WindowEvent) {
    if let WindowEvent::CloseRequested { api, .. } = event {
        let keep = window
            .try_state::<AppState>()
            .is_some_and(|state| tray::keep_in_tray(&state));
        if keep {
            api.prevent_close();
            let _ = window.hide();
        }
    }
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod wire_tests;

#[cfg(test)]
#[path = "bindings_tests.rs"]
mod bindings_tests;
