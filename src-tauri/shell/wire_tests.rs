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
