// A double-clicked app on Windows must not open a console window.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

use std::io::Write;
use std::process::ExitCode;

#[allow(clippy::print_stderr)]
fn main() -> ExitCode {
    // Before anything else (no threads yet): secrets in our environment would be readable
    // by the commands the agent runs, through /proc.
    if let Err(reason) = pocketpilot_core::policy::secret_env::relaunch_without_secrets() {
        eprintln!("pocketpilot: warning: {reason}");
    }
    // issue 14: private files from the first write (umask 077), not dumpable, the sandbox
    // probed once, an existing install's data/config/log dirs tightened.
    for problem in
        pocketpilot_core::policy::confinement::at_start(&pocketpilot_core::config::data_dir())
    {
        eprintln!("pocketpilot: warning: {problem}");
    }
    // Any argument makes this the CLI; none opens the window. WebKit's WebDriver launches
    // the window with a lone `--automation`.
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    // `--version` alone: the version, the commit, where the data and logs are, the
    // keychain and sandbox status (one block, also in Settings → About).
    if args.len() == 1 && (args[0] == "--version" || args[0] == "-V") {
        // A closed stdout (`| head -1`) is not an error worth a panic.
        let _ = writeln!(std::io::stdout(), "{}", pocketpilot_shell::about());
        return ExitCode::SUCCESS;
    }
    // What the autostart entry runs: the app with its window hidden, in the tray.
    if args.len() == 1 && args[0] == pocketpilot_core::autostart::BACKGROUND_FLAG {
        return pocketpilot_shell::run_desktop_hidden();
    }
    let window = args.is_empty() || (args.len() == 1 && args[0] == "--automation");
    let code = if window {
        pocketpilot_shell::run_desktop()
    } else {
        pocketpilot_cli::main_with(std::env::args_os())
    };
    // The built-in model's server goes with the app (a kill -9 is covered by the
    // server's parent-death signal).
    pocketpilot_core::engine::local_model::shutdown();
    code
}
