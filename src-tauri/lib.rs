//! The desktop shell: wiring between the window and core. Each command is async and makes
//! one core call (on the blocking pool) and maps its error; validation, keychain and path
//! logic live in core. Besides the commands it owns the window's own concerns: the tray
//! and notifications, hide-on-close, the single-instance lock, WebKit's environment, the
//! trigger host's lifetime, and bridging core's task events and change feed onto Tauri
//! channels. The command list is `shell/command_list.rs`.
#![deny(clippy::print_stdout, clippy::print_stderr)]
mod shell;

pub use shell::run_desktop;
pub use shell::{about, run_desktop_hidden};
