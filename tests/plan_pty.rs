//! `pocketpilot run --plan` on a real terminal: the plan is shown and asked about, approved
//! with `y`; the run carrying it out prints each step as it is ticked and the checklist at
//! the end; a command beyond the plan asks, and `w` approves it keeping the suggested rule
//! for the workspace.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod support;
use std::io::Write;
use std::process::{Command, Stdio};

use support::pty::{follow, openpty, wait_for};

use serde_json::json;

#[test]
fn a_plan_approved_at_the_terminal_ticks_its_steps_and_w_keeps_a_rule() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let script = dir.path().join("script.json");
    let call =
        |name: &str, arguments: serde_json::Value| json!({ "name": name, "arguments": arguments });
    std::fs::write(
        &script,
        json!([
            { "tool_calls": [call("submit_plan", json!({
                "steps": ["Write notes.txt", "Create a.txt"], "files": ["notes.txt"], "commands": []
            }))] },
            { "tool_calls": [
                call("write_file", json!({ "path": "notes.txt", "content": "notes\n" })),
                call("plan_step_done", json!({ "step": 1 }))
            ] },
            { "tool_calls": [
                call("run_command", json!({ "command": "touch a.txt" })),
                call("plan_step_done", json!({ "step": 2 }))
            ] },
            { "text": "All done." }
        ])
        .to_string(),
    )
    .unwrap();
    let data = dir.path().join("data");
    let (mut controller, terminal) = openpty();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pocketpilot"))
        .args(["run", "--plan", "--workspace"])
        .arg(&ws)
        .args(["--goal", "write the notes", "--provider"])
        .arg(format!("scripted:{}", script.display()))
        .env("POCKETPILOT_DATA_DIR", &data)
        .env("HOME", dir.path())
        .env("TERM", "xterm")
        .stdin(Stdio::from(terminal.try_clone().unwrap()))
        .stdout(Stdio::from(terminal.try_clone().unwrap()))
        .stderr(Stdio::from(terminal))
        .spawn()
        .unwrap();
    let seen = follow(&controller);
    wait_for(&seen, "[ ] 2. Create a.txt");
    wait_for(&seen, "Approve the plan?");
    assert!(
        !ws.join("notes.txt").exists(),
        "nothing written before the approval"
    );
    controller.write_all(b"y\n").unwrap();
    wait_for(&seen, "[x] 1. Write notes.txt");
    wait_for(&seen, "always allow `touch *` in this workspace");
    controller.write_all(b"w\n").unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    wait_for(&seen, "All done.");
    wait_for(&seen, "[x] 2. Create a.txt");
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        "notes\n"
    );
    assert!(ws.join("a.txt").exists());
    let listed = Command::new(env!("CARGO_BIN_EXE_pocketpilot"))
        .args(["policy", "list", "--json", "--workspace"])
        .arg(&ws)
        .env("POCKETPILOT_DATA_DIR", &data)
        .env("HOME", dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let rules: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(rules[0]["rule"], "touch *", "{rules}");
    assert_eq!(rules[0]["session_id"], serde_json::Value::Null);
}
