// A double-clicked app on Windows must not open a console window.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

use std::process::ExitCode;

#[allow(clippy::print_stderr)]
fn main() -> ExitCode {
    // Before anything else (no threads yet): secrets in our environment would be readable
    // by the commands the agent runs, through /proc.
    if let Err(reason) = pocketpilot_core::secret_env::relaunch_without_secrets() {
        eprintln!("pocketpilot: warning: {reason}");
    }
    // Any argument makes this the CLI; none opens the window. WebKit's WebDriver launches
    // the window with a lone `--automation`.
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    let window = args.is_empty() || (args.len() == 1 && args[0] == "--automation");
    if !window {
        return pocketpilot_cli::main_with(std::env::args_os());
    }
    pocketpilot_shell::run_desktop()
}
