//! The UI's copy of the wire constants is generated from the runtime and must not drift.
//! Regenerate with `POCKETPILOT_UPDATE_BINDINGS=1 cargo test -p pocketpilot wire`.
use std::path::PathBuf;

fn generated_terminal_events() -> String {
    let list = pocketpilot_core::TERMINAL_EVENTS
        .iter()
        .map(|e| format!("  \"{e}\",\n"))
        .collect::<String>();
    format!(
        "// Generated from pocketpilot_core::TERMINAL_EVENTS by src-tauri/shell/wire_tests.rs.\n\
         // Do not edit: run `POCKETPILOT_UPDATE_BINDINGS=1 cargo test -p pocketpilot wire`.\n\
         export const TERMINAL_EVENTS = [\n{list}] as const;\n"
    )
}

#[test]
fn ui_terminal_events_are_generated_from_the_runtime() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("ui/src/api/generated/terminal.ts");
    let expected = generated_terminal_events();
    if std::env::var_os("POCKETPILOT_UPDATE_BINDINGS").is_some() {
        std::fs::write(&path, &expected).expect("write the generated bindings");
    }
    let actual = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        actual,
        expected,
        "{} is stale: run POCKETPILOT_UPDATE_BINDINGS=1 cargo test -p pocketpilot wire",
        path.display()
    );
}

#[test]
fn an_mcp_form_becomes_a_stored_server_the_runtime_validates() {
    use super::wire::NewMcpServer;
    use pocketpilot_mcp::McpTransport;
    let form = |command: Option<&str>, url: Option<&str>| NewMcpServer {
        name: " files ".into(),
        workspace: Some("  ".into()),
        command: command.map(Into::into),
        args: vec!["-y".into(), "server".into()],
        env: vec![("DEBUG".into(), "1".into())],
        url: url.map(Into::into),
        capability: Some(" ".into()),
        allow_read_only: true,
        startup_timeout_secs: None,
        call_timeout_secs: Some(5),
    };
    let stored = form(Some("npx"), None)
        .into_stored()
        .expect("a stdio server");
    assert_eq!(
        stored.workspace, None,
        "a blank workspace means every workspace"
    );
    assert_eq!(stored.config.name, "files");
    assert_eq!(stored.config.capability, None);
    assert_eq!(stored.config.call_timeout_secs, 5);
    assert_eq!(stored.config.startup_timeout_secs, 30);
    assert!(stored.config.allow_read_only);
    assert_eq!(
        stored.config.transport,
        McpTransport::Stdio {
            command: "npx".into(),
            args: vec!["-y".into(), "server".into()],
            env: vec![("DEBUG".into(), "1".into())],
        }
    );
    stored.config.validate().expect("valid");

    let http = form(None, Some(" http://127.0.0.1:3001/mcp "))
        .into_stored()
        .expect("an HTTP server");
    assert_eq!(
        http.config.transport,
        McpTransport::Http {
            url: "http://127.0.0.1:3001/mcp".into()
        }
    );
    for (command, url) in [(None, None), (Some("npx"), Some("http://x"))] {
        let e = form(command, url)
            .into_stored()
            .expect_err("one of the two");
        assert_eq!(e.kind, pocketpilot_protocol::ErrorKind::InvalidConfig);
    }
}
