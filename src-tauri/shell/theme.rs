//! "System" appearance from the GTK theme (issue 20). On Linux the window library answers
//! the window theme from the settings portal only, and light without one, as WebKitGTK's
//! `prefers-color-scheme` does; so a dark GTK theme on a desktop without a portal never
//! reached the window. Once the window exists its GTK settings are read (on the main
//! thread, where GTK lives) and, when they say dark (`pocketpilot_core::appearance`) while
//! the window theme says light, the window theme is set to dark. The UI reads the window
//! theme (`getCurrentWindow().theme()`, `onThemeChanged`) while the person's choice is System.
use tauri::WebviewWindow;

pub fn follow_gtk(window: &WebviewWindow) {
    #[cfg(target_os = "linux")]
    {
        let w = window.clone();
        if let Err(e) = window.run_on_main_thread(move || apply_gtk(&w)) {
            tracing::warn!(error = %e, "could not read the GTK theme");
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = window;
}

#[cfg(target_os = "linux")]
fn apply_gtk(w: &WebviewWindow) {
    use gtk::prelude::GtkSettingsExt;
    let Some(settings) = gtk::Settings::default() else {
        return;
    };
    let name = settings.gtk_theme_name();
    let env = std::env::var("GTK_THEME").ok();
    let dark = pocketpilot_core::appearance::gtk_is_dark(
        settings.is_gtk_application_prefer_dark_theme(),
        name.as_deref(),
        env.as_deref(),
    );
    tracing::info!(dark, theme = ?name.as_deref(), gtk_theme = ?env, "GTK appearance");
    if dark && matches!(w.theme(), Ok(tauri::Theme::Light)) {
        if let Err(e) = w.set_theme(Some(tauri::Theme::Dark)) {
            tracing::warn!(error = %e, "could not set the window theme");
        }
    }
}
