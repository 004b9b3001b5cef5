//! The app as a desktop citizen: started hidden in the tray (`pocketpilot --background`,
//! what the autostart entry runs), start at login, keep running in the tray when the
//! window closes, and the About view. The logic is the runtime's (`autostart`, `about`,
//! shared with the CLI); these commands only take the state and convert.
use std::sync::atomic::{AtomicBool, Ordering};

use pocketpilot_core::about::{About, Build};
use pocketpilot_core::autostart::{AutostartError, BACKGROUND_FLAG};
use serde::Serialize;
use specta::Type;
use tauri::{AppHandle, Manager, State, WebviewWindowBuilder};

use super::wire::CommandError;
use super::{tray, AppState};

type Result<T> = std::result::Result<T, CommandError>;

/// Set once, before the window exists, when the app was started with `--background`.
static HIDDEN: AtomicBool = AtomicBool::new(false);

/// The window's label (the default of a tauri.conf.json window).
const WINDOW: &str = "main";

/// The build's identity for `--version` and the About view; the commit comes from the
/// build script (`src-tauri/build_commit.rs`), `unknown` outside a git checkout.
pub fn about() -> About {
    About::collect(Build {
        version: env!("CARGO_PKG_VERSION"),
        commit: option_env!("POCKETPILOT_GIT_COMMIT"),
    })
}

/// Starts the app with its window created hidden: the tray icon, the triggers and
/// recovery run as usual; the window appears only when asked for (tray, second launch).
pub fn run_desktop_hidden() -> std::process::ExitCode {
    HIDDEN.store(true, Ordering::SeqCst);
    super::run_desktop()
}

/// In `setup`: the window is made and shown unless this is a background start.
pub fn show_unless_hidden(app: &AppHandle) {
    if !HIDDEN.load(Ordering::SeqCst) {
        tray::show_window(app);
    }
}

/// Makes the window from its tauri.conf.json entry if it does not exist yet. The entry
/// says `create: false` (a background start holds no web view, and so none of WebKit's
/// web and network processes, ~130 MB, until the window is asked for) and `visible:
/// false` (it appears when shown, never half-drawn).
pub fn ensure_window(app: &AppHandle) {
    if app.get_webview_window(WINDOW).is_some() {
        return;
    }
    let Some(config) = app.config().app.windows.iter().find(|w| w.label == WINDOW) else {
        tracing::error!("tauri.conf.json has no `{WINDOW}` window");
        return;
    };
    // Two requests at once (the tray and a second launch): the later build finds the
    // label taken and fails harmlessly.
    match WebviewWindowBuilder::from_config(app, config).and_then(|b| b.build()) {
        Ok(window) => super::theme::follow_gtk(&window),
        Err(e) => tracing::warn!(error = %e, "could not make the window"),
    }
}

/// A second launch handed over to this instance. From the menu or a double-click it
/// brings the window forward; a second background start (the login session starting the
/// entry while the app already runs) changes nothing.
pub fn second_launch(app: &AppHandle, args: &[String]) {
    if !args.iter().skip(1).any(|a| a == BACKGROUND_FLAG) {
        tray::show_window(app);
    }
}

pub use pocketpilot_core::autostart::DesktopSettings;

/// The About view.
#[derive(Debug, Clone, Serialize, Type)]
pub struct AboutInfo {
    pub version: String,
    pub commit: String,
    pub data_dir: String,
    pub log_dir: String,
    pub keychain: String,
    pub sandbox: String,
}

impl From<AutostartError> for CommandError {
    fn from(e: AutostartError) -> Self {
        Self::new(pocketpilot_protocol::ErrorKind::Io, e)
    }
}

impl From<pocketpilot_core::autostart::DesktopError> for CommandError {
    fn from(e: pocketpilot_core::autostart::DesktopError) -> Self {
        Self::new(e.kind(), e)
    }
}

#[tauri::command]
#[specta::specta]
pub async fn desktop_settings(state: State<'_, AppState>) -> Result<DesktopSettings> {
    super::call(&state, |rt| rt.desktop_settings()).await
}

/// Writes (with this binary's path) or removes the autostart entry.
#[tauri::command]
#[specta::specta]
pub async fn set_start_at_login(state: State<'_, AppState>, on: bool) -> Result<DesktopSettings> {
    super::call(&state, move |rt| rt.set_start_at_login(on)).await
}

#[tauri::command]
#[specta::specta]
pub async fn set_keep_in_tray(state: State<'_, AppState>, on: bool) -> Result<DesktopSettings> {
    super::call(&state, move |rt| rt.set_keep_in_tray(on)).await
}

#[tauri::command]
#[specta::specta]
/// Async: the keychain check is a D-Bus round trip, kept off the main thread.
pub async fn about_app() -> AboutInfo {
    let a = about();
    AboutInfo {
        version: a.version,
        commit: a.commit,
        data_dir: a.data_dir.display().to_string(),
        log_dir: a.log_dir.display().to_string(),
        keychain: a.keychain,
        sandbox: a.sandbox,
    }
}
