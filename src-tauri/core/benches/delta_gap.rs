//! The stream keeps flowing while submissions arrive (figures, not a test):
//! `cargo bench -p pocketpilot-core --bench delta_gap`.
//!
//! One run streams a long answer (coalesced into deltas by the 30 ms window); meanwhile
//! 2,000 durable follow-ups are said into its busy session — first from one caller, then
//! from 8 callers at once. Prints the longest gap between two deltas the subscriber received
//! during each burst (target: at most the window + 5 ms), the submissions' latency, and the
//! group commits that answered them.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{ms, report, write_json};
use pocketpilot_core::engine::inbox::{Say, Submit, WhenBusy};
use pocketpilot_core::event::EventKind;
use pocketpilot_core::ops;
use pocketpilot_core::{NewTask, Runtime};
use pocketpilot_protocol::SubmissionStatus;
use serde_json::json;

const SUBMISSIONS: usize = 2_000;

fn follow_up(session: i64, i: usize) -> Submit {
    Submit {
        session_id: session,
        say: Say::Input {
            text: format!("follow-up {i}"),
            when_busy: WhenBusy::FollowUp,
            reject_if_idle: false,
        },
        request_id: Some(format!("req-{session}-{i}")),
        provider: None,
        trigger: None,
        grants: Vec::new(),
        mcp: None,
    }
}

/// When each delta of task `id` reached a subscriber, until its stream ends.
fn delta_times(rt: &Arc<Runtime>, id: i64) -> tokio::task::JoinHandle<Vec<Instant>> {
    let mut sub = rt
        .call(ops::SubscribeTask {
            task_id: id,
            after_sequence: 0,
        })
        .expect("subscribe");
    tokio::spawn(async move {
        let mut times = Vec::new();
        while let Some(ev) = sub.next().await {
            if ev
                .map(|e| e.kind() == EventKind::AssistantDelta)
                .unwrap_or(false)
            {
                times.push(Instant::now());
            }
        }
        times
    })
}

/// Until task `id`'s model turn has started and streamed for a while.
async fn wait_for_the_stream(rt: &Arc<Runtime>, id: i64) {
    while rt
        .call(ops::TaskEvents { task_id: id })
        .expect("events")
        .iter()
        .all(|e| e.kind() != EventKind::ModelTurnStarted)
    {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// [`SUBMISSIONS`] follow-ups said into `session` by `callers` callers at once; the
/// latency of each.
async fn say_follow_ups(rt: &Arc<Runtime>, session: i64, callers: usize) -> Vec<Duration> {
    let mut clients = Vec::new();
    for c in 0..callers {
        let rt = rt.clone();
        // `say` commits durably, so its real callers (the window's commands, the webhook's
        // handlers) call it on the blocking pool, never on the async workers the stream uses.
        clients.push(tokio::task::spawn_blocking(move || {
            let mut samples = Vec::new();
            for i in (c..SUBMISSIONS).step_by(callers) {
                let t = Instant::now();
                let a = rt
                    .call(ops::Say {
                        submit: follow_up(session, i).clone(),
                    })
                    .expect("say");
                samples.push(t.elapsed());
                assert_eq!(a.submission.status, SubmissionStatus::Queued);
            }
            samples
        }));
    }
    let mut samples = Vec::new();
    for c in clients {
        samples.extend(c.await.expect("client"));
    }
    samples
}

async fn burst(rt: &Arc<Runtime>, dir: &Path, name: &str, callers: usize) {
    let ws = dir.join(format!("ws-{callers}"));
    std::fs::create_dir_all(&ws).expect("ws");
    let text = "streaming ".repeat(4_000);
    let p = write_json(
        &dir.join(format!("s-{callers}.json")),
        &json!([{ "text": text, "chunk_size": 10, "chunk_delay_ms": 2 }]),
    );
    let id = rt
        .call(ops::SubmitTask {
            new: NewTask {
                goal: "talk for a while".into(),
                workspace: Some(ws),
                trigger: pocketpilot_protocol::RunSource::Cli,
                provider: Some(p),
                ..Default::default()
            },
        })
        .expect("submit");
    let session = rt.call(ops::GetTask { id }).expect("task").session_id;
    let watcher = delta_times(rt, id);
    wait_for_the_stream(rt, id).await;

    let before = rt.store_for_tests().writer_stats();
    let t0 = Instant::now();
    let samples = say_follow_ups(rt, session, callers).await;
    let elapsed = t0.elapsed();
    let t1 = Instant::now();
    let groups = rt.store_for_tests().writer_stats().groups - before.groups;
    let busy = rt
        .call(ops::IsBusy {
            session_id: session,
        })
        .expect("busy");
    let queued = rt
        .call(ops::GetInbox {
            session_id: session,
        })
        .expect("inbox")
        .len();
    rt.call(ops::CancelTask { task_id: id }).expect("cancel");
    let times = watcher.await.expect("watcher");
    let during: Vec<&Instant> = times.iter().filter(|t| **t >= t0 && **t <= t1).collect();
    let max_gap = during
        .windows(2)
        .map(|w| w[1].duration_since(*w[0]))
        .max()
        .unwrap_or_default();
    println!(
        "delta gap: {SUBMISSIONS} durable follow-ups {name} while a run streams (window 30 ms)"
    );
    println!(
        "  throughput                {:>10.0} submissions/s ({:.1} ms for all, {groups} commits)",
        SUBMISSIONS as f64 / elapsed.as_secs_f64(),
        ms(elapsed)
    );
    report("  say latency (durable commit)", samples);
    println!(
        "  deltas during the burst   {:>10}   longest gap {:.1} ms   (still streaming after: {})",
        during.len(),
        ms(max_gap),
        if busy { "yes" } else { "no" }
    );
    assert!(busy, "the stream ended during the burst: make it longer");
    assert_eq!(queued, SUBMISSIONS);
}

fn main() {
    // Above the default cap of 1,000 queued per session: the burst measures the stream, not
    // the refusal (set before any thread starts).
    std::env::set_var("POCKETPILOT_MAX_QUEUED", (2 * SUBMISSIONS).to_string());
    let tokio = common::tokio();
    tokio.block_on(async {
        let dir = tempfile::tempdir().expect("tempdir");
        let rt = Runtime::open(&dir.path().join("data")).expect("open");
        burst(&rt, dir.path(), "from one caller", 1).await;
        burst(&rt, dir.path(), "from 8 callers at once", 8).await;
    });
}
