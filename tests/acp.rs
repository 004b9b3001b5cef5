//! `pocketpilot acp` driven by a real third-party client: the `agent-client-protocol`
//! Python SDK (PyPI, in `.venv-test`: run `tests/setup-python.sh`) runs
//! `tests/acp_client.py` against the real binary over stdio, on a store of its own,
//! with the scripted model. The script writes what the client saw; this test checks it
//! and what the store holds afterwards (the runs are ordinary PocketPilot runs).
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use support::Harness;

fn python() -> PathBuf {
    support::test_venv("python", "POCKETPILOT_TEST_PYTHON")
}

fn updates<'a>(step: &'a Value, kind: &str) -> Vec<&'a Value> {
    step["updates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .collect()
}

fn chunks_text(step: &Value) -> String {
    updates(step, "agent_message_chunk")
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap())
        .collect()
}

#[test]
fn the_python_sdk_drives_a_session_through_approvals_a_kill_and_a_cancel() {
    let h = Harness::new(&[]);
    let script = h.dir.path().join("script.json");
    std::fs::write(
        &script,
        json!([
            { "tool_calls": [{ "name": "write_file", "arguments": { "path": "notes.txt", "content": "one\n" } }] },
            { "text": "Done writing.", "chunk_size": 3 },
            { "tool_calls": [{ "name": "edit_file", "arguments": { "path": "notes.txt",
                "edits": [{ "old_text": "one", "new_text": "two" }] } }] },
            { "text": "Edited." },
            { "text": "Still here.", "chunk_size": 4 },
            { "tool_calls": [{ "name": "run_command", "arguments": { "command": "echo hi" } }] },
            { "text": "Ran once." },
            { "tool_calls": [{ "name": "run_command", "arguments": { "command": "echo hi" } }] },
            { "text": "Ran again." },
            { "text": "x".repeat(200), "chunk_size": 1, "chunk_delay_ms": 100 }
        ])
        .to_string(),
    )
    .unwrap();
    let report = h.dir.path().join("report.json");
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp_client.py");
    let out = Command::new(python())
        .arg(&client)
        .arg(env!("CARGO_BIN_EXE_pocketpilot"))
        .arg(h.ws())
        .arg(&script)
        .arg(&report)
        .env("POCKETPILOT_DATA_DIR", h.dir.path().join("data"))
        .env("HOME", h.dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the client failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();

    assert_eq!(seen["initialize"]["protocolVersion"], 1);
    assert_eq!(seen["initialize"]["agentCapabilities"]["loadSession"], true);
    let session = seen["session"].as_str().unwrap();

    // 1. The write asked: a pending edit with its diff, three options; allowed once.
    let p1 = &seen["prompt1"];
    assert_eq!(p1["stop"], "end_turn");
    let asked = &p1["permissions"][0];
    assert_eq!(asked["tool_call"]["kind"], "edit");
    assert_eq!(asked["tool_call"]["status"], "pending");
    let diff = &asked["tool_call"]["content"][0];
    assert_eq!(diff["type"], "diff");
    assert_eq!(diff["newText"], "one\n");
    assert!(diff["path"].as_str().unwrap().ends_with("ws/notes.txt"));
    let kinds: Vec<&str> = asked["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["allow_once", "allow_always", "reject_once"]);
    let call = updates(p1, "tool_call");
    assert_eq!(call.len(), 1);
    assert_eq!(call[0]["kind"], "edit");
    let statuses: Vec<&str> = updates(p1, "tool_call_update")
        .iter()
        .filter_map(|u| u["status"].as_str())
        .collect();
    assert_eq!(statuses, ["in_progress", "completed"]);
    assert_eq!(chunks_text(p1), "Done writing.");

    // 2. Unanswered by the client: pending in PocketPilot, approved from elsewhere, and
    // the run went on; the edit's diff had the file's text before and after.
    let pending = seen["pending_while_unanswered"].as_array().unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0]["status"], "pending");
    let p2 = &seen["prompt2"];
    assert_eq!(p2["stop"], "end_turn");
    let edit = updates(p2, "tool_call");
    assert_eq!(edit[0]["content"][0]["oldText"], "one\n");
    assert_eq!(edit[0]["content"][0]["newText"], "two\n");
    assert_eq!(chunks_text(p2), "Edited.");
    assert_eq!(
        std::fs::read_to_string(h.ws().join("notes.txt")).unwrap(),
        "two\n"
    );

    // 3. After kill -9, a new agent replays the session's turns and prompts on.
    assert_eq!(seen["killed_returncode"], -9);
    let replay: Vec<(String, String)> = seen["load"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["sessionUpdate"].as_str().unwrap().to_owned(),
                u["content"]["text"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected = [
        ("user_message_chunk", "write notes"),
        ("agent_message_chunk", "Done writing."),
        ("user_message_chunk", "write more"),
        ("agent_message_chunk", "Edited."),
    ];
    assert_eq!(
        replay,
        expected
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect::<Vec<_>>()
    );
    assert_eq!(seen["prompt3"]["stop"], "end_turn");
    assert_eq!(chunks_text(&seen["prompt3"]), "Still here.");

    // 4. "Always allow" on a command kept a rule for the workspace: asked once only.
    let always = &seen["always"];
    assert_eq!(always["stop"], "end_turn");
    let asked = &always["permissions"][0];
    assert_eq!(asked["tool_call"]["kind"], "execute");
    assert!(
        asked["options"][1]["name"]
            .as_str()
            .unwrap()
            .contains("Always allow `echo hi"),
        "{asked}"
    );
    assert_eq!(chunks_text(always), "Ran once.");
    let again = &seen["again"];
    assert_eq!(again["stop"], "end_turn");
    assert!(again["permissions"].as_array().unwrap().is_empty());
    let ran = updates(again, "tool_call");
    assert_eq!(ran[0]["kind"], "execute");
    assert_eq!(chunks_text(again), "Ran again.");

    // 5. session/cancel cancelled the slow run after its first chunk.
    let p4 = &seen["prompt4"];
    assert_eq!(p4["stop"], "cancelled");
    assert!(!chunks_text(p4).is_empty());

    // Ordinary runs of one session in the store, as the window's history shows them.
    let tasks = h.json(&["tasks", "--json"]);
    let tasks = tasks.as_array().unwrap();
    let statuses: Vec<&str> = tasks
        .iter()
        .rev()
        .map(|t| t["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        [
            "completed",
            "completed",
            "completed",
            "completed",
            "completed",
            "cancelled"
        ]
    );
    assert!(tasks
        .iter()
        .all(|t| t["session_id"].as_i64() == session.parse().ok()));
    let sessions = h.json(&["sessions", "--json"]);
    assert_eq!(sessions.as_array().unwrap().len(), 1);
    assert!(h
        .json(&["approvals", "--json"])
        .as_array()
        .unwrap()
        .is_empty());
}

/// Runs `tests/acp_client.py` with `mode` (e.g. `--files`) on `script`; what it saw.
fn client_report(h: &Harness, script: &Value, mode: &[&str]) -> Value {
    let script_file = h.dir.path().join("script.json");
    std::fs::write(&script_file, script.to_string()).unwrap();
    let report = h.dir.path().join("report.json");
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp_client.py");
    let out = Command::new(python())
        .arg(&client)
        .arg(env!("CARGO_BIN_EXE_pocketpilot"))
        .arg(h.ws())
        .arg(&script_file)
        .arg(&report)
        .args(mode)
        .env("POCKETPILOT_DATA_DIR", h.dir.path().join("data"))
        .env("HOME", h.dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the client failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap()
}

/// What the call's `tool_call_update` said it returned.
fn call_output(step: &Value) -> String {
    updates(step, "tool_call_update")
        .iter()
        .find_map(|u| u["rawOutput"].as_str())
        .unwrap_or_else(|| panic!("no output in {step}"))
        .to_owned()
}

#[test]
fn an_editor_that_offers_its_files_gets_the_reads_and_the_approved_writes() {
    let h = Harness::new(&[]);
    let notes = h.ws().join("notes.txt");
    std::fs::write(&notes, "on disk\n").unwrap();
    let seen = client_report(
        &h,
        &json!([
            { "tool_calls": [{ "name": "read_file", "arguments": { "path": "notes.txt" } }] },
            { "text": "Read." },
            { "tool_calls": [{ "name": "write_file", "arguments": { "path": "notes.txt", "content": "written by the agent\n" } }] },
            { "text": "Written." },
            { "tool_calls": [{ "name": "read_file", "arguments": { "path": "notes.txt" } }] },
            { "text": "Read again." }
        ]),
        &["--files"],
    );
    let notes_path = notes.display().to_string();

    // The read asked the editor, and the agent got its unsaved buffer, not the disk.
    let read = &seen["read"];
    assert_eq!(read["stop"], "end_turn");
    assert_eq!(read["reads"].as_array().unwrap().len(), 1);
    assert_eq!(read["reads"][0]["path"], notes_path.as_str());
    assert_eq!(call_output(read), "unsaved text in the editor\n");

    // The write asked the person first (PocketPilot's approval, with its diff), then went
    // to the editor; the disk holds it too, so commands and undo see it.
    let write = &seen["write"];
    assert_eq!(write["stop"], "end_turn");
    assert_eq!(write["permissions"].as_array().unwrap().len(), 1);
    assert_eq!(
        write["writes"],
        json!([{ "path": notes_path, "content": "written by the agent\n" }])
    );
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "written by the agent\n"
    );

    // Turned off (`--editor-files off`): the disk is read and the editor is not asked.
    let off = &seen["read_off"];
    assert_eq!(off["stop"], "end_turn");
    assert!(off["reads"].as_array().unwrap().is_empty());
    assert_eq!(call_output(off), "written by the agent\n");

    // The change journal recorded the editor's write: undo brings the disk's text back.
    let tasks = h.json(&["tasks", "--json"]);
    let write_task = tasks
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["goal"] == "write notes")
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    let undo = h.output(&["undo", &write_task.to_string()]);
    assert!(
        undo.status.success(),
        "{}",
        String::from_utf8_lossy(&undo.stderr)
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "on disk\n");
}
