//! Issue 13: kill -9 during compactions. The real `pocketpilot` binary works a session
//! whose scripted model declares a 4,096-token window and writes its summaries slowly;
//! it is killed at random moments, also while a summary is being written, and resumed.
//! After each kill the store holds the old view or the new one, never half: every
//! compaction entry has its `context_compacted` event and every such event its entry.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]
mod support;
use std::time::Duration;
use support::{kill9, Harness};

use serde_json::{json, Value};

/// The summaries each compaction entry stands for, and those each event says were
/// written: the same multiset, or a compaction was half done.
fn check_whole(h: &Harness, session: &str) -> usize {
    let shown = h.json(&["session", "show", session, "--json"]);
    let mut from_entries: Vec<Value> = shown["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "compaction")
        .map(|e| e["content"]["replaces"].clone())
        .collect();
    let mut from_events: Vec<Value> = Vec::new();
    for t in shown["tasks"].as_array().unwrap() {
        let id = t["id"].as_i64().unwrap().to_string();
        let task = h.json(&["show", &id, "--json"]);
        for e in task["events"].as_array().unwrap() {
            let p = &e["payload"];
            if e["type"] == "context_compacted"
                && !p["summary"].is_null()
                && !p["summarised"].as_array().unwrap().is_empty()
            {
                from_events.push(p["summarised"].clone());
            }
        }
    }
    let key = |v: &Value| v.to_string();
    from_entries.sort_by_key(key);
    from_events.sort_by_key(key);
    assert_eq!(from_entries, from_events, "a compaction was half recorded");
    assert_eq!(
        shown["compactions"].as_array().unwrap().len(),
        from_entries.len()
    );
    from_entries.len()
}

#[test]
fn killed_during_compactions_the_view_is_old_or_new_never_half() {
    let h = Harness::new(&[]);
    let script_path = h.dir.path().join("script.json");
    let answer = format!(
        "Answer: {}",
        "the quick brown fox jumps over the lazy dog; ".repeat(25)
    );
    std::fs::write(
        &script_path,
        json!({
            "context_window": 4096,
            "repeat_last": true,
            "turns": [ { "text": answer } ],
            "summary": { "text": "Several long answers about a fox.", "delay_ms": 800 }
        })
        .to_string(),
    )
    .unwrap();
    let ws = h.ws().display().to_string();
    let provider = format!("scripted:{}", script_path.display());
    let out = h.output(&[
        "run",
        "--workspace",
        &ws,
        "--goal",
        "Always answer in French.",
        "--provider",
        &provider,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sessions = h.json(&["sessions", "--json"]);
    let session = sessions[0]["id"].as_i64().unwrap().to_string();
    let mut seed: u64 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    println!("context crash: seed {seed}");
    let mut kills = 0;
    for i in 0..16 {
        let text = format!("question {i}");
        let mut child = h.cmd(&["say", &session, &text]).spawn().unwrap();
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // Most of a turn is the slow summary once the view is full: a kill in 50..1,000 ms
        // lands before, inside or after it.
        // sleep: the kill lands at a random point of the turn; the spread is the test.
        std::thread::sleep(Duration::from_millis(50 + seed % 950));
        if child.try_wait().unwrap().is_none() {
            kill9(&mut child);
            kills += 1;
        }
        check_whole(&h, &session);
        for _ in 0..20 {
            let out = h.output(&["resume"]);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            if String::from_utf8_lossy(&out.stderr).contains("nothing to resume") {
                break;
            }
        }
        check_whole(&h, &session);
    }
    // After all that, a short message still gets an answer.
    let out = h.output(&["say", &session, "hi"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let compactions = check_whole(&h, &session);
    let shown = h.json(&["session", "show", &session, "--json"]);
    let tasks = shown["tasks"].as_array().unwrap();
    let last = tasks.iter().max_by_key(|t| t["id"].as_i64()).unwrap();
    assert_eq!(last["status"], "completed", "{last}");
    for t in tasks {
        assert!(
            ["completed", "failed", "cancelled"].contains(&t["status"].as_str().unwrap()),
            "{t}"
        );
    }
    println!(
        "context crash: {kills} kills, {compactions} compactions, {} tasks",
        tasks.len()
    );
    assert!(compactions >= 1);
    assert!(kills >= 1);
}
