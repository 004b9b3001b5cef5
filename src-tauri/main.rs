// A double-clicked app on Windows must not open a console window.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

use std::process::ExitCode;

fn main() -> ExitCode {
    // Any argument makes this the CLI; none opens the window.
    if std::env::args_os().len() > 1 {
        return pocketpilot_runtime::cli::main_with(std::env::args_os());
    }
    pocketpilot_shell::run_desktop()
}
