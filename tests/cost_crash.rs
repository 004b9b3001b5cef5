//! Cost figures survive SIGKILL (issue 19): the real `pocketpilot` binary runs a scripted
//! model that reports usage, is killed at random moments and resumed; after each kill the
//! recorded cost is at least what it was, and at the end it is exactly the known price of
//! every model turn that was recorded — one per request that was answered, none twice.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod support;
use std::time::Duration;
use support::Harness;

use serde_json::json;

impl Harness {
    /// (recorded model turns, their summed cost from the events) over every task.
    fn recorded(&self) -> (u64, f64) {
        let mut turns = 0;
        let mut cost = 0.0;
        for t in self.json(&["tasks", "--json"]).as_array().unwrap() {
            let shown = self.json(&["show", &t["id"].to_string(), "--json"]);
            for e in shown["events"].as_array().unwrap() {
                if e["type"] == "model_turn_completed" {
                    turns += 1;
                    cost += e["payload"]["cost_usd"].as_f64().unwrap();
                }
            }
        }
        (turns, cost)
    }
}

impl Harness {
    fn wait_for_a_task(&self) {
        let started = std::time::Instant::now();
        while self
            .json(&["tasks", "--json"])
            .as_array()
            .is_none_or(|t| t.is_empty())
        {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the run made no task within 60 s"
            );
            // sleep: the poll interval of a bounded wait for another process's commit.
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// $1000 per million in and out, 600 + 400 tokens a turn: each turn costs exactly $1.
const TURN_USD: f64 = 1.0;

#[test]
fn cost_figures_survive_kill_9_and_count_each_answered_request_once() {
    let h = Harness::new(&[
        ("POCKETPILOT_MAX_AGENT_STEPS", "200"),
        ("POCKETPILOT_REPEAT_LIMIT", "0"),
    ]);
    let mut turns = Vec::new();
    for k in 0..60 {
        turns.push(json!({ "text": format!("step {k}"), "delay_ms": 40,
            "tool_calls": [{ "name": "list_dir", "arguments": { "path": "." } }],
            "usage": { "prompt_tokens": 600, "completion_tokens": 400 } }));
    }
    turns.push(
        json!({ "text": "done", "usage": { "prompt_tokens": 600, "completion_tokens": 400 } }),
    );
    let script = h.dir.path().join("script.json");
    std::fs::write(&script, json!({ "turns": turns }).to_string()).unwrap();
    let set = h.output(&[
        "prices",
        "set",
        "scripted:*",
        "--input",
        "1000",
        "--output",
        "1000",
    ]);
    assert!(
        set.status.success(),
        "{}",
        String::from_utf8_lossy(&set.stderr)
    );
    let ws = h.ws().display().to_string();
    let provider = format!("scripted:{}", script.display());

    let mut last_total = 0.0;
    for i in 0..8u64 {
        let mut child = if i == 0 {
            h.cmd(&[
                "run",
                "--workspace",
                &ws,
                "--goal",
                "count",
                "--provider",
                &provider,
            ])
            .spawn()
            .unwrap()
        } else {
            h.cmd(&["resume"]).spawn().unwrap()
        };
        if i == 0 {
            // A kill before the task exists leaves nothing to resume: on a loaded machine
            // the first process can take longer than the spread to get that far.
            h.wait_for_a_task();
        }
        // sleep: the kill lands at a varying point of the run; the spread is the test.
        std::thread::sleep(Duration::from_millis(150 + (i * 97) % 300));
        // SAFETY: sending SIGKILL to our own child process.
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGKILL);
        }
        let _ = child.wait();
        let total = h.json(&["usage", "--json"])["total"]["cost_usd"]
            .as_f64()
            .unwrap();
        assert!(
            total >= last_total,
            "cost went from {last_total} to {total} after a kill"
        );
        last_total = total;
    }
    for _ in 0..100 {
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
    let usage = h.json(&["usage", "--json"]);
    let (turns, event_cost) = h.recorded();
    let rows = usage["total"]["turns"].as_u64().unwrap();
    let total = usage["total"]["cost_usd"].as_f64().unwrap();
    println!("cost crash: {turns} turns recorded, ${total}");
    assert_eq!(rows, turns, "one cost row per recorded model turn");
    assert!(
        (total - turns as f64 * TURN_USD).abs() < 1e-9,
        "{total} for {turns} turns"
    );
    assert!((total - event_cost).abs() < 1e-9);
    assert!(turns >= 61, "the task ran to its answer: {turns} turns");
    let task = h.json(&["tasks", "--json"])[0].clone();
    assert_eq!(task["status"], "completed", "{task}");
}
