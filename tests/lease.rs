//! A worker that loses its session's lease stops: the real `pocketpilot` binary, a scripted
//! model whose tool calls run commands that mark their start and end in a file, SIGSTOP
//! for longer than the lease's TTL, `pocketpilot resume` taking the session over, SIGCONT.
//!
//! Invariants: exactly one process records the rest of the run (events gapless, each call
//! answered once, each step asked once) and no two commands ran at the same time.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod support;

use std::collections::HashMap;
use std::process::Child;
use std::time::{Duration, Instant};

use serde_json::json;
use support::{kill9, signal, Harness};

const TTL_MS: u64 = 1_500;
const COMMANDS: usize = 6;

fn wait_exit(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        // sleep: the poll interval of the bounded wait for the child to exit.
        std::thread::sleep(Duration::from_millis(50));
    }
    kill9(child);
    None
}

/// (name, start ns, end ns) of each command, from the marks file.
fn intervals(marks: &str) -> Vec<(String, u128, u128)> {
    let mut starts: HashMap<String, u128> = HashMap::new();
    let mut ends: HashMap<String, u128> = HashMap::new();
    for line in marks.lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        if let [what, name, at] = parts[..] {
            let at: u128 = at.parse().unwrap();
            let into = if what == "start" {
                &mut starts
            } else {
                &mut ends
            };
            assert!(into.insert(name.to_owned(), at).is_none(), "{line} twice");
        }
    }
    let mut out: Vec<(String, u128, u128)> = starts
        .into_iter()
        .map(|(name, s)| {
            // A command killed before its end mark counts as running until now.
            let e = ends.get(&name).copied().unwrap_or(u128::MAX);
            (name, s, e)
        })
        .collect();
    out.sort_by_key(|(_, s, _)| *s);
    out
}

#[test]
fn a_worker_stopped_past_its_lease_stops_on_waking_and_records_nothing_more() {
    let h = Harness::new(&[("POCKETPILOT_LEASE_TTL_MS", &TTL_MS.to_string())]);
    let mut turns = Vec::new();
    for k in 0..COMMANDS {
        let command = format!(
            "echo start c{k} $(date +%s%N) >> marks.txt; sleep 0.4; echo end c{k} $(date +%s%N) >> marks.txt"
        );
        turns.push(json!({ "text": format!("step {k}"),
            "tool_calls": [{ "name": "run_command", "arguments": { "command": command } }] }));
    }
    turns.push(json!({ "text": "all done" }));
    let provider = h.script("script.json", json!({ "turns": turns }));
    let ws = h.wss();
    h.ok(&["policy", "allow", "shell", "--workspace", &ws]);

    let mut first = h
        .cmd(&[
            "run",
            "--workspace",
            &ws,
            "--goal",
            "mark",
            "--provider",
            &provider,
        ])
        .spawn()
        .unwrap();
    let marks = h.ws().join("marks.txt");
    let t0 = Instant::now();
    while !std::fs::read_to_string(&marks)
        .unwrap_or_default()
        .contains("start c0")
    {
        assert!(t0.elapsed() < Duration::from_secs(30), "no command started");
        // sleep: the poll interval of the bounded wait for the first command to start.
        std::thread::sleep(Duration::from_millis(10));
    }
    // Mid-command: the worker stops; its command (its own process group) finishes alone.
    signal(first.id(), libc::SIGSTOP);
    // sleep: the stopped worker's lease must expire (TTL_MS on the wall clock) before another may take the task.
    std::thread::sleep(Duration::from_millis(TTL_MS + 700));
    let mut resumer = h.cmd(&["resume"]).spawn().unwrap();
    // Wake the first worker while the new holder is at work.
    // sleep: the new holder must be at work when the old worker wakes; that moment has no event outside the processes.
    std::thread::sleep(Duration::from_millis(700));
    signal(first.id(), libc::SIGCONT);
    let resumed = wait_exit(&mut resumer, Duration::from_secs(60)).expect("resume never ended");
    assert!(resumed.success());
    // Checked last: a worker that went on would rather show in what it recorded.
    let first_ended = wait_exit(&mut first, Duration::from_secs(30));

    let task = h.json(&["tasks", "--json"])[0]["id"].as_i64().unwrap();
    let shown = h.json(&["show", &task.to_string(), "--json"]);
    assert_eq!(shown["task"]["status"], "completed", "{shown}");
    let events = shown["events"].as_array().unwrap();
    let seqs: Vec<i64> = events
        .iter()
        .map(|e| e["sequence"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, (1..=seqs.len() as i64).collect::<Vec<_>>(), "a gap");
    let mut answered: HashMap<String, usize> = HashMap::new();
    let mut steps: HashMap<i64, usize> = HashMap::new();
    let mut started = 0;
    for ev in events {
        match ev["type"].as_str().unwrap() {
            "tool_call_completed" | "tool_call_failed" => {
                *answered
                    .entry(ev["payload"]["call_id"].as_str().unwrap().to_owned())
                    .or_default() += 1;
            }
            "model_turn_started" => {
                *steps
                    .entry(ev["payload"]["step"].as_i64().unwrap())
                    .or_default() += 1;
            }
            "task_started" => started += 1,
            _ => {}
        }
    }
    assert_eq!(started, 2, "the first worker and the one that took over");
    assert!(
        answered.values().all(|n| *n == 1),
        "a call was answered twice: {answered:?}"
    );
    assert!(
        steps.values().all(|n| *n == 1),
        "a step was asked twice: {steps:?}"
    );
    let interrupted = events
        .iter()
        .filter(|e| e["type"] == "tool_call_failed" && e["payload"]["kind"] == "interrupted")
        .count();
    assert_eq!(interrupted, 1, "the stopped worker's call is reported once");

    let runs = intervals(&std::fs::read_to_string(&marks).unwrap());
    for w in runs.windows(2) {
        assert!(
            w[1].1 >= w[0].2,
            "{} started while {} was running: {runs:?}",
            w[1].0,
            w[0].0
        );
    }
    assert!(runs.len() >= COMMANDS, "{runs:?}");
    assert!(first_ended.is_some(), "the first run never ended");
}
