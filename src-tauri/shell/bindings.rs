//! The typed IPC: every command the window may call, exported with its payload types to
//! `ui/src/api/generated/bindings.ts`. `bindings_tests.rs` fails when that file is stale.
use tauri_specta::{collect_commands, Builder, ErrorHandlingMode};

use super::{commands, desktop, settings, triggers};

/// The window's commands. A new command goes here, in `src-tauri/build.rs` and (as
/// `allow-<name>`) in `capabilities/default.json`.
pub fn builder() -> Builder<tauri::Wry> {
    Builder::<tauri::Wry>::new()
        .commands(collect_commands![
            commands::list_sessions,
            commands::session_history,
            commands::get_task,
            commands::create_task,
            commands::say,
            commands::session_inbox,
            commands::withdraw_submission,
            commands::task_events,
            commands::subscribe_task,
            commands::cancel_task,
            commands::pending_approvals,
            commands::resolve_approval,
            settings::setup_status,
            settings::provider_settings,
            settings::set_provider_settings,
            settings::set_api_key,
            settings::delete_api_key,
            settings::api_key_stored,
            settings::test_connection,
            settings::limits,
            settings::set_limits,
            settings::policy_rules,
            settings::set_policy_rules,
            triggers::trigger_status,
            triggers::set_triggers_paused,
            triggers::list_webhooks,
            triggers::create_webhook,
            triggers::set_webhook_paused,
            triggers::delete_webhook,
            triggers::list_schedules,
            triggers::create_schedule,
            triggers::set_schedule_paused,
            triggers::delete_schedule,
            triggers::list_watches,
            triggers::create_watch,
            triggers::set_watch_paused,
            triggers::delete_watch,
            triggers::list_mcp_servers,
            triggers::add_mcp_server,
            triggers::delete_mcp_server,
            desktop::desktop_settings,
            desktop::set_start_at_login,
            desktop::set_keep_in_tray,
            desktop::about_app,
        ])
        // Commands reject with a `CommandError`; the UI's api module catches it.
        .error_handling(ErrorHandlingMode::Throw)
        // Ids and limits are well below 2^53.
        .dangerously_cast_bigints_to_number()
        // One type per payload: the UI reads what the shell writes and writes what it reads.
        .disable_serde_phases()
}
