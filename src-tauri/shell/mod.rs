mod commands;

use std::process::ExitCode;
use std::sync::Arc;

use pocketpilot_runtime::Runtime;

pub struct AppState {
    pub runtime: Arc<Runtime>,
}

pub fn run_desktop() -> ExitCode {
    let data_dir = pocketpilot_runtime::config::data_dir();
    let _log = pocketpilot_runtime::logging::init(&data_dir);
    let runtime = match Runtime::open(&data_dir) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("pocketpilot: {e}");
            return ExitCode::from(1);
        }
    };
    let result = tauri::Builder::default()
        .plugin(tauri_plugin_dialog::init())
        .manage(AppState { runtime })
        .invoke_handler(tauri::generate_handler![
            commands::list_sessions,
            commands::session_tasks,
            commands::session_entries,
            commands::get_task,
            commands::create_task,
            commands::task_events,
            commands::subscribe_task,
            commands::cancel_task,
            commands::pending_approvals,
            commands::resolve_approval,
        ])
        .run(tauri::generate_context!());
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pocketpilot: the window could not start: {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod wire_tests;
