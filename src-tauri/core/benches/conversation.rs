//! Per-request runtime CPU against the length of the session (issue 26; figures, not a
//! test): `cargo bench -p pocketpilot-core --bench conversation`.
//!
//! A session of N stored entries (10, 1,000, 10,000) as a long session leaves them:
//! person, call, result, answer, over and over, older turns summarised by a compaction
//! every 40 entries, so the model's view is the same size whatever N is (it has to fit the
//! window). A run on it calls a tool every step (a small file read) until its step budget
//! ends it. The process's CPU time (getrusage) is taken around two such runs, of 5 and 45
//! requests, each on its own copy of the session: their difference over 40 is the CPU of
//! one more request (the run's start excluded), and the shorter run's rest is the start.
//! The model is the scripted one, in process, answering at once: the figure is the
//! runtime's own work per request (the view, its plan, the records, the tool call).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]
mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::{cpu_time, ms, write_json};
use pocketpilot_core::config::{Limits, LIMITS_KEY};
use pocketpilot_core::ops;
use pocketpilot_core::store::{compactions, entries, settings};
use pocketpilot_core::{NewTask, Runtime, TaskStatus};
use pocketpilot_protocol::{EntryKind, RunSource};
use serde_json::json;

const SIZES: [usize; 3] = [10, 1_000, 10_000];
const SHORT: u32 = 5;
const LONG: u32 = 45;
/// Entries between two compactions.
const SUMMARISED_EVERY: usize = 40;

/// Appends `n` entries to `session` (see the module doc).
fn fill(rt: &Arc<Runtime>, session: i64, task: i64, n: usize) {
    rt.store_for_tests()
        .write(|c| {
            let mut kept: Vec<i64> = Vec::new();
            for i in 0..n {
                let (kind, content) = match i % 4 {
                    0 => (EntryKind::User, json!({ "text": format!("question {i}") })),
                    1 => (
                        EntryKind::Assistant,
                        json!({ "text": "Reading.", "tool_calls": [{ "id": format!("old_{i}"),
                            "name": "read_file", "arguments": "{\"path\":\"notes.txt\"}" }] }),
                    ),
                    2 => (
                        EntryKind::ToolResult,
                        json!({ "call_id": format!("old_{}", i - 1), "text": "some notes" }),
                    ),
                    _ => (
                        EntryKind::Assistant,
                        json!({ "text": format!("answer {i}") }),
                    ),
                };
                kept.push(entries::append(c, session, Some(task), &kind, &content)?);
                // At the end of a turn, so a call and its result go together.
                if i % 4 == 3 && kept.len() >= SUMMARISED_EVERY {
                    let content = json!({ "text": "Earlier questions, answered.",
                        "replaces": kept, "placed_at": kept[0] });
                    kept = vec![compactions::append(c, session, Some(task), &content)?];
                }
            }
            Ok(())
        })
        .unwrap();
}

/// A session of `n` entries, and the CPU of a run of `steps` requests on it.
async fn run(rt: &Arc<Runtime>, dir: &Path, n: usize, steps: u32) -> (Duration, u64) {
    let ws = dir.join(format!("ws-{n}-{steps}"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("notes.txt"), "some notes\n").unwrap();
    let quick = write_json(&dir.join("quick.json"), &json!([{ "text": "Hello." }]));
    let first = rt
        .call(ops::SubmitTask {
            new: NewTask {
                goal: "start".into(),
                workspace: Some(ws),
                trigger: RunSource::Cli,
                provider: Some(quick),
                ..Default::default()
            },
        })
        .unwrap();
    rt.call(ops::WaitSettled { task_id: first }).await.unwrap();
    let session = rt.call(ops::GetTask { id: first }).unwrap().session_id;
    fill(rt, session, first, n);
    let limits = Limits {
        max_steps: steps,
        repeat_limit: 0,
        ..Limits::default()
    };
    rt.store_for_tests()
        .write(|c| settings::set(c, LIMITS_KEY, &limits))
        .unwrap();
    let calls = write_json(
        &dir.join("calls.json"),
        &json!({ "context_window": 32768, "repeat_last": true, "turns": [
            { "text": "Reading.", "tool_calls": [
                { "name": "read_file", "arguments": { "path": "notes.txt" } } ] } ] }),
    );
    let before = rt
        .call(ops::ContextTurns {
            session_id: session,
        })
        .unwrap()
        .len();
    let t0 = cpu_time();
    let id = rt
        .call(ops::SubmitTask {
            new: NewTask {
                goal: "read the notes again and again".into(),
                session_id: Some(session),
                trigger: RunSource::Cli,
                provider: Some(calls),
                ..Default::default()
            },
        })
        .unwrap();
    let status = rt.call(ops::WaitSettled { task_id: id }).await.unwrap();
    let cpu = cpu_time() - t0;
    assert_eq!(status, TaskStatus::Paused, "the step budget ends the run");
    let requests = (rt
        .call(ops::ContextTurns {
            session_id: session,
        })
        .unwrap()
        .len()
        - before) as u64;
    assert_eq!(requests, u64::from(steps));
    (cpu, requests)
}

fn main() {
    let tokio = common::tokio();
    tokio.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let rt = Runtime::open(&dir.path().join("data")).unwrap();
        // Warm up (the first run loads what every later run shares).
        run(&rt, dir.path(), 10, SHORT).await;
        println!("per-request runtime CPU (user+sys, this process) against the session's length");
        println!("entries   one more request   run start   ({SHORT}- and {LONG}-request runs)");
        let mut per = Vec::new();
        for n in SIZES {
            let (short, _) = run(&rt, dir.path(), n, SHORT).await;
            let (long, _) = run(&rt, dir.path(), n, LONG).await;
            let one = (long.saturating_sub(short)) / (LONG - SHORT);
            let start = short.saturating_sub(one * SHORT);
            per.push(ms(one));
            println!("{n:>7}   {:>12.3} ms   {:>8.2} ms", ms(one), ms(start));
        }
        let (lo, hi) = per
            .iter()
            .fold((f64::MAX, 0f64), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
        println!(
            "largest / smallest per request: {:.2}x (target: within 2x)",
            hi / lo
        );
    });
}
