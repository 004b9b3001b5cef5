//! The crash harness: the real `pocketpilot` binary, a scripted model with slow tools,
//! SIGKILL at random moments, restart, and the invariants that must survive:
//! - no accepted submission is lost;
//! - no non-replay-safe tool runs twice (each call appends its own marker line);
//! - after the last resume every task is terminal or waiting for a person;
//! - event sequences stay gapless.
//!
//! `POCKETPILOT_CRASH_KILLS` sets the number of kills (default 50; a soak: 2000).
//! `POCKETPILOT_CRASH_SEED` replays a run (the seed is printed).
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod support;
use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use support::{kill9, Harness};

use serde_json::{json, Value};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*: enough to spread kill times; the seed makes a run repeatable.
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo)
    }
}

fn script(path: &Path) {
    // Turn 2k: a slow command that appends its own marker (not replay-safe);
    // turn 2k+1: an answer. A resumed run asks for the turn its transcript is at.
    let mut turns = Vec::new();
    for k in 0..400 {
        turns.push(json!({ "text": format!("step {k}"), "chunk_size": 3, "chunk_delay_ms": 5,
            "tool_calls": [
                { "name": "list_dir", "arguments": {} },
                { "name": "run_command", "arguments": { "command": format!("echo m{k} >> markers.txt; sleep 0.15") } }
            ] }));
        turns.push(json!({ "text": format!("answer {k}"), "chunk_size": 4, "chunk_delay_ms": 10 }));
    }
    std::fs::write(path, json!({ "turns": turns }).to_string()).unwrap();
}

#[test]
fn killed_at_random_moments_nothing_is_lost_or_done_twice() {
    let kills: u64 = std::env::var("POCKETPILOT_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let seed: u64 = std::env::var("POCKETPILOT_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    println!("crash harness: {kills} kills, POCKETPILOT_CRASH_SEED={seed}");
    let mut rng = Rng(seed);
    let h = Harness::new(&[("POCKETPILOT_MAX_AGENT_STEPS", "50")]);
    let script_path = h.dir.path().join("script.json");
    script(&script_path);
    let ws = h.ws().display().to_string();
    let provider = format!("scripted:{}", script_path.display());
    assert!(h
        .output(&["policy", "allow", "shell", "--workspace", &ws])
        .status
        .success());

    let mut accepted: Vec<i64> = Vec::new();
    let mut session: Option<i64> = None;
    let started = Instant::now();
    for i in 0..kills {
        let mut child = match session {
            None => h
                .cmd(&[
                    "run",
                    "--workspace",
                    &ws,
                    "--goal",
                    "begin",
                    "--provider",
                    &provider,
                ])
                .spawn()
                .unwrap(),
            Some(_) => h.cmd(&["resume"]).spawn().unwrap(),
        };
        if session.is_none() {
            let t0 = Instant::now();
            while session.is_none() {
                let sessions = h.json(&["sessions", "--json"]);
                session = sessions
                    .as_array()
                    .and_then(|a| a.first())
                    .and_then(|s| s["id"].as_i64());
                assert!(
                    t0.elapsed() < Duration::from_secs(10),
                    "no session appeared"
                );
            }
        }
        let s = session.unwrap_or_default().to_string();
        // Talk to the session while it works (or lies dead). A submission counts as
        // accepted once `say` has printed it; a `say` that found the session idle works it
        // itself, and is killed like any other worker.
        let mut talker = None;
        if i % 2 == 0 {
            let text = format!("follow-up {i}");
            let mut args = vec!["say", s.as_str(), text.as_str(), "--json"];
            if i % 4 == 0 {
                args.push("--steer");
            }
            let mut c = h.cmd(&args).stdout(Stdio::piped()).spawn().unwrap();
            let stdout = c.stdout.take().unwrap();
            let first = serde_json::Deserializer::from_reader(stdout)
                .into_iter::<Value>()
                .next();
            if let Some(Ok(v)) = first {
                accepted.push(v["submission"]["id"].as_i64().unwrap());
            }
            talker = Some(c);
        }
        // sleep: the kill lands at a random point of the run; the spread is the test.
        std::thread::sleep(Duration::from_millis(rng.range(20, 450)));
        kill9(&mut child);
        if let Some(mut t) = talker {
            kill9(&mut t);
        }
    }
    // Recover until nothing is left to resume.
    for _ in 0..400 {
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
    println!("crash harness: {} s", started.elapsed().as_secs());

    let s = session.unwrap().to_string();
    let shown = h.json(&["session", "show", &s, "--json"]);
    let subs: HashMap<i64, Value> = shown["submissions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["id"].as_i64().unwrap(), v.clone()))
        .collect();
    for id in &accepted {
        let sub = subs
            .get(id)
            .unwrap_or_else(|| panic!("accepted submission {id} was lost"));
        assert_ne!(
            sub["status"], "placed",
            "submission {id} placed in a run that ended without settling it: {sub}"
        );
    }
    let markers = std::fs::read_to_string(h.ws().join("markers.txt")).unwrap_or_default();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for line in markers.lines() {
        *counts.entry(line).or_default() += 1;
    }
    let twice: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        twice.is_empty(),
        "a non-replay-safe call ran twice: {twice:?}"
    );
    let tasks = h.json(&["tasks", "--json", "--limit", "100000"]);
    for t in tasks.as_array().unwrap() {
        let status = t["status"].as_str().unwrap();
        assert!(
            !matches!(status, "queued" | "running"),
            "task {} left {status} after recovery",
            t["id"]
        );
        let shown = h.json(&["show", &t["id"].to_string(), "--json"]);
        let seqs: Vec<i64> = shown["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["sequence"].as_i64().unwrap())
            .collect();
        assert_eq!(
            seqs,
            (1..=seqs.len() as i64).collect::<Vec<_>>(),
            "task {} has a gap",
            t["id"]
        );
    }
    let interrupted = tasks
        .as_array()
        .unwrap()
        .iter()
        .map(|t| h.json(&["show", &t["id"].to_string(), "--json"]))
        .flat_map(|s| s["events"].as_array().unwrap().clone())
        .filter(|e| e["type"] == "tool_call_failed" && e["payload"]["kind"] == "interrupted")
        .count();
    println!(
        "crash harness: {} tasks, {} accepted submissions, {} markers, {} interrupted calls reported",
        tasks.as_array().unwrap().len(),
        accepted.len(),
        counts.len(),
        interrupted
    );
}

/// Turn 1 runs call `c1`; turn 2 repeats the id `c1` for a slow command that is killed
/// while it runs. Resuming finds that second call interrupted (it is not replay-safe, so
/// the model is told and it never runs twice), whatever the first call with the id did.
#[test]
fn a_reused_call_id_killed_while_it_runs_is_found_interrupted() {
    let h = Harness::new(&[("POCKETPILOT_MAX_AGENT_STEPS", "50")]);
    let ws = h.ws().display().to_string();
    let script_path = h.dir.path().join("reuse.json");
    let turns = json!([
        { "tool_calls": [{ "id": "c1", "name": "run_command", "arguments": { "command": "echo first >> marks.txt" } }] },
        { "tool_calls": [{ "id": "c1", "name": "run_command", "arguments": { "command": "echo second >> marks.txt; sleep 30" } }] },
        { "text": "Done." }
    ]);
    std::fs::write(&script_path, turns.to_string()).unwrap();
    let provider = format!("scripted:{}", script_path.display());
    assert!(h
        .output(&["policy", "allow", "shell", "--workspace", &ws])
        .status
        .success());
    let mut child = h
        .cmd(&[
            "run",
            "--workspace",
            &ws,
            "--goal",
            "reuse",
            "--provider",
            &provider,
        ])
        .spawn()
        .unwrap();
    let marks = h.ws().join("marks.txt");
    let t0 = Instant::now();
    while !std::fs::read_to_string(&marks)
        .unwrap_or_default()
        .contains("second")
    {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the second call never ran"
        );
        // sleep: the poll interval of the bounded wait for the second call to run.
        std::thread::sleep(Duration::from_millis(50));
    }
    kill9(&mut child);
    let out = h.output(&["resume"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tasks = h.json(&["tasks", "--json"]);
    let id = tasks[0]["id"].as_i64().unwrap().to_string();
    let shown = h.json(&["show", &id, "--json"]);
    assert_eq!(shown["task"]["status"], "completed", "{shown}");
    let failed: Vec<&Value> = shown["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "tool_call_failed")
        .collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0]["payload"]["kind"], "interrupted");
    assert_eq!(
        std::fs::read_to_string(&marks).unwrap(),
        "first\nsecond\n",
        "the interrupted call ran again"
    );
}
