//! Search on the real binary: a tool's output committed by a run that is then killed with
//! SIGKILL is found after the store is opened again (its WAL recovered), naming the session
//! and entry; the index answers from the same commit as the entry, so nothing is missing.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod support;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{kill9, Harness};

/// The hits of `pocketpilot search WORD --json`.
fn hits(h: &Harness, word: &str) -> Vec<Value> {
    h.json(&["search", word, "--json"])
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn an_entry_committed_before_a_kill_is_found_after_recovery() {
    let h = Harness::new(&[]);
    let ws = h.ws().display().to_string();
    assert!(h
        .output(&["policy", "allow", "shell", "--workspace", &ws])
        .status
        .success());
    // The word exists only in the command's output (`$((6*7))`): the request and the
    // answer never say it, so a hit is the tool output's.
    let script = h.dir.path().join("script.json");
    std::fs::write(
        &script,
        json!({ "turns": [
            { "text": "Running it.", "tool_calls": [
                { "name": "run_command", "arguments": { "command": "echo quokka$((6*7))zed" } }
            ] },
            // The run waits here, with the tool's result committed, until it is killed.
            { "text": "never said", "delay_ms": 600_000 }
        ]})
        .to_string(),
    )
    .unwrap();
    let provider = format!("scripted:{}", script.display());
    let mut run = h
        .cmd(&[
            "run",
            "--workspace",
            &ws,
            "--goal",
            "print the word",
            "--provider",
            &provider,
        ])
        .spawn()
        .unwrap();

    // Wait for the committed tool result, as another process sees it.
    let started = Instant::now();
    let before = loop {
        let found = hits(&h, "quokka42zed");
        if !found.is_empty() {
            break found;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the tool's output never became searchable"
        );
    };
    kill9(&mut run);

    let tasks = h.json(&["tasks", "--json"]);
    let task = &tasks.as_array().unwrap()[0];
    let after = hits(&h, "quokka42zed");
    assert_eq!(after.len(), 1, "{after:?}");
    let hit = &after[0];
    assert_eq!(hit["kind"], "tool_result", "{hit}");
    assert_eq!(hit["session_id"], task["session_id"], "{hit} {task}");
    assert_eq!(hit["task_id"], task["id"], "{hit} {task}");
    assert_eq!(hit["entry_id"], before[0]["entry_id"]);
    assert!(
        hit["snippet"]
            .as_str()
            .unwrap()
            .contains("\u{2}quokka42zed\u{3}"),
        "{hit}"
    );
    // The words of the run's request are there too, and the line the CLI prints names
    // where the hit is.
    assert_eq!(hits(&h, "print word").len(), 1);
    let out = h.output(&["search", "quokka42zed"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("session {}", task["session_id"])) && text.contains("[quokka42zed]"),
        "{text}"
    );
}
