// The app manifest lists the window's commands so that capabilities/default.json decides
// which of them the webview may call: without it every command would be allowed.
const COMMANDS: &[&str] = &[
    "list_sessions",
    "session_history",
    "get_task",
    "create_task",
    "say",
    "session_inbox",
    "withdraw_submission",
    "task_events",
    "subscribe_task",
    "cancel_task",
    "pending_approvals",
    "resolve_approval",
    "setup_status",
    "provider_settings",
    "set_provider_settings",
    "set_api_key",
    "delete_api_key",
    "api_key_stored",
    "test_connection",
    "limits",
    "set_limits",
    "policy_rules",
    "set_policy_rules",
    "trigger_status",
    "set_triggers_paused",
    "list_webhooks",
    "create_webhook",
    "set_webhook_paused",
    "delete_webhook",
    "list_schedules",
    "create_schedule",
    "set_schedule_paused",
    "delete_schedule",
    "list_watches",
    "create_watch",
    "set_watch_paused",
    "delete_watch",
    "list_mcp_servers",
    "add_mcp_server",
    "delete_mcp_server",
    "desktop_settings",
    "set_start_at_login",
    "set_keep_in_tray",
    "about_app",
];

#[path = "build_commit.rs"]
mod build_commit;

fn main() {
    build_commit::emit();
    tauri_build::try_build(
        tauri_build::Attributes::new()
            .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS)),
    )
    .unwrap_or_else(|e| panic!("tauri build step failed: {e}"));
}
