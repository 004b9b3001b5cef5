//! The desktop shell: a thin layer that hands the window's requests to the runtime and
//! bridges the runtime's live events onto Tauri channels. No business logic lives here.
#![deny(clippy::print_stdout, clippy::print_stderr)]
mod shell;

pub use shell::run_desktop;
pub use shell::{about, run_desktop_hidden};
