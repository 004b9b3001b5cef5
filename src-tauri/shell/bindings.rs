//! The typed IPC: every command the window may call, exported with its payload types to
//! `ui/src/api/generated/bindings.ts`. `bindings_tests.rs` fails when that file is stale,
//! or when `capabilities/default.json` does not allow exactly these commands.
use tauri_specta::{collect_commands, Builder, ErrorHandlingMode};

use super::{
    changes, command_rules, commands, context, data, desktop, export, models, plans, recovery,
    rules, search, settings, triggers,
};

macro_rules! window_commands {
    ($($module:ident::$command:ident),* $(,)?) => {
        /// The commands' names, as the app manifest (build.rs) and capabilities list them.
        #[cfg(test)]
        pub const COMMANDS: &[&str] = &[$(stringify!($command)),*];

        fn collected() -> tauri_specta::Commands<tauri::Wry> {
            collect_commands![$($module::$command),*]
        }
    };
}
include!("command_list.rs");

pub fn builder() -> Builder<tauri::Wry> {
    Builder::<tauri::Wry>::new()
        .commands(collected())
        // Commands reject with a `CommandError`; the UI's api module catches it.
        .error_handling(ErrorHandlingMode::Throw)
        // Ids and limits are well below 2^53.
        .dangerously_cast_bigints_to_number()
        // One type per payload: the UI reads what the shell writes and writes what it reads.
        .disable_serde_phases()
}
