//! Many runs at once (figures, not a test): `cargo bench -p pocketpilot-core --bench concurrency`.
//!
//! 200 scripted runs in 200 sessions of one runtime, submitted together. Each run streams
//! a text in chunks, calls a tool (read_file of its own file), then answers. Prints the wall
//! time, the CPU time (getrusage), the peak RSS (VmHWM), runs per second, and checks that
//! there is no cross-talk: every run's live deltas, events and transcript hold its own
//! marker and no other run's.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{cpu_time, ms, status_kib, write_json};
use pocketpilot_core::ops;
use pocketpilot_core::{NewTask, Runtime, TaskStatus};
use serde_json::json;

const RUNS: usize = 200;

fn marker(i: usize) -> String {
    format!("mk{i:04}x")
}

/// Every marker mentioned in `text`.
fn markers(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(p) = rest.find("mk") {
        let cand = &rest[p..];
        if cand.len() >= 7
            && cand.as_bytes()[2..6].iter().all(u8::is_ascii_digit)
            && cand.as_bytes()[6] == b'x'
        {
            out.insert(cand[..7].to_owned());
        }
        rest = &rest[p + 2..];
    }
    out
}

fn main() {
    let tokio = common::tokio();
    tokio.block_on(async {
        let dir = tempfile::tempdir().expect("tempdir");
        let rt = Runtime::open(&dir.path().join("data")).expect("open");
        let specs = scripted_runs(dir.path());
        let rss_before = status_kib("VmRSS").unwrap_or(0);
        let cpu0 = cpu_time();
        let t0 = Instant::now();
        let mut ids = Vec::new();
        let mut subs = Vec::new();
        for (i, (ws, p, _)) in specs.iter().enumerate() {
            let id = rt
                .call(ops::SubmitTask { new: NewTask {
                    goal: format!("run {}", marker(i)),
                    workspace: Some(ws.clone()),
                    trigger: pocketpilot_protocol::RunSource::Cli,
                    provider: Some(p.clone()),
                    ..Default::default()
                } })
                .expect("submit");
            let mut sub = rt.call(ops::SubscribeTask { task_id: id, after_sequence: 0 }).expect("subscribe");
            subs.push(tokio::spawn(async move {
                let mut text = String::new();
                while let Some(ev) = sub.next().await {
                    let ev = ev.expect("event");
                    if ev.kind().as_str() == "assistant_delta" || ev.kind().as_str() == "stream_reset" {
                        if ev.kind().as_str() == "stream_reset" {
                            text.clear();
                        }
                        text.push_str(ev.payload()["text"].as_str().unwrap_or_default());
                    }
                }
                text
            }));
            ids.push(id);
        }
        let submitted = t0.elapsed();
        let mut live = Vec::new();
        for s in subs {
            live.push(tokio::time::timeout(Duration::from_secs(300), s).await.expect("stalled").expect("join"));
        }
        let wall = t0.elapsed();
        let cpu = cpu_time() - cpu0;
        let peak = status_kib("VmHWM").unwrap_or(0);

        let (completed, crosstalk) = check_runs(&rt, &ids, &live, &specs);
        println!("concurrency: {RUNS} scripted runs (stream 40 chunks, 1 tool call, answer), one runtime");
        println!("  submitted (ids back)      {:>10.1} ms", ms(submitted));
        println!("  wall time, all terminal   {:>10.1} ms   ({:.0} runs/s)", ms(wall), RUNS as f64 / wall.as_secs_f64());
        println!("  CPU time (user+sys)       {:>10.1} ms   ({:.2} ms per run)", ms(cpu), ms(cpu) / RUNS as f64);
        println!("  peak RSS (VmHWM)          {:>10.1} MiB  (RSS before {:.1} MiB)", peak as f64 / 1024.0, rss_before as f64 / 1024.0);
        println!("  completed                 {completed:>10} / {RUNS}");
        println!("  cross-talk                {:>10}", if crosstalk.is_empty() { "none".to_owned() } else { format!("{} problems", crosstalk.len()) });
        for c in crosstalk.iter().take(10) {
            println!("    {c}");
        }
        assert_eq!(completed, RUNS);
        assert!(crosstalk.is_empty(), "cross-talk between runs");
    });
}

/// For each run: its workspace (with a file of its own), its model script (a streamed
/// answer that reads the file, then a final answer) and the words it streams first.
fn scripted_runs(dir: &Path) -> Vec<(PathBuf, String, String)> {
    let mut specs = Vec::new();
    for i in 0..RUNS {
        let m = marker(i);
        let ws = dir.join(format!("ws{i}"));
        std::fs::create_dir_all(&ws).expect("ws");
        std::fs::write(ws.join("own.txt"), format!("file of {m}\n")).expect("file");
        let words: String = (0..40).map(|w| format!("{m} word{w} ")).collect();
        let p = write_json(
            &dir.join(format!("s{i}.json")),
            &json!([
                { "text": words, "chunk_size": 16, "chunk_delay_ms": 1,
                  "tool_calls": [{ "name": "read_file", "arguments": { "path": "own.txt" } }] },
                { "text": format!("answer of {m}"), "chunk_size": 4 }
            ]),
        );
        specs.push((ws, p, words));
    }
    specs
}

/// How many runs completed, and every place where one run's text shows another's marker
/// (its events, its transcript, its live deltas) or its live text is not its model's.
fn check_runs(
    rt: &Arc<Runtime>,
    ids: &[i64],
    live: &[String],
    specs: &[(PathBuf, String, String)],
) -> (usize, Vec<String>) {
    let mut completed = 0;
    let mut crosstalk = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let m = marker(i);
        let task = rt.call(ops::GetTask { id: *id }).expect("task");
        if task.status == TaskStatus::Completed {
            completed += 1;
        }
        let own: BTreeSet<String> = [m.clone()].into_iter().collect();
        let events: String = rt
            .call(ops::TaskEvents { task_id: *id })
            .expect("events")
            .iter()
            .map(|e| e.payload().to_string())
            .collect();
        let entries: String = rt
            .call(ops::SessionEntries {
                session_id: task.session_id,
            })
            .expect("entries")
            .iter()
            .map(|e| e.content.to_string())
            .collect();
        for (what, text) in [
            ("events", events),
            ("transcript", entries),
            ("live deltas", live[i].clone()),
        ] {
            let seen = markers(&text);
            if seen != own {
                crosstalk.push(format!("run {i} {what}: {seen:?}"));
            }
        }
        let expected_live = format!("{}answer of {m}", specs[i].2);
        if live[i] != expected_live {
            crosstalk.push(format!(
                "run {i}: live text differs from what its model said"
            ));
        }
    }
    (completed, crosstalk)
}
