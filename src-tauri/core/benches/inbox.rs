//! Durable submissions while a run streams (figures, not a test):
//! `cargo bench -p pocketpilot-core --bench inbox [-- stream|size]`.
//!
//! One run streams a long answer; meanwhile `say` (a follow-up into the busy session's
//! inbox, committed before it returns) is called in a loop. Prints submissions per second,
//! the latency of each `say`, and whether the stream kept flowing (deltas received during
//! the submissions, the longest gap between them).
//!
//! Then admission's cost against the session's size: `say` into a busy session that is
//! new, and into one holding 6,000 settled submissions over 3,000 earlier tasks. The two
//! figures should be close: admission reads what it needs by index.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod common;

use std::time::{Duration, Instant};

use common::{ms, report, write_json};
use pocketpilot_core::event::EventKind;
use pocketpilot_core::inbox::{Say, Submit, WhenBusy};
use pocketpilot_core::store::{sessions, submissions, tasks};
use pocketpilot_core::{NewTask, Runtime, TaskStatus};
use pocketpilot_protocol::{SubmissionKind, SubmissionMode, SubmissionStatus};
use serde_json::json;

const SUBMISSIONS: usize = 2_000;
/// Settled submissions (and half as many earlier tasks) in the "large" session.
const HISTORY: usize = 6_000;
/// `say`s measured into each session of the size comparison.
const SAMPLES: usize = 200;

/// `cargo bench --bench inbox -- size` (or `-- stream`) runs one part only.
fn main() {
    // Above the default cap of 1,000 queued per session: these parts measure admission and
    // the stream, not the refusal (set before any thread starts).
    std::env::set_var("POCKETPILOT_MAX_QUEUED", (2 * HISTORY).to_string());
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wanted = |part: &str| only.is_empty() || only.iter().any(|o| o == part);
    if wanted("stream") {
        streaming();
    }
    if wanted("size") {
        by_session_size();
    }
}

/// A busy session: one running task (no worker: nothing answers), after `history`
/// settled submissions over `history / 2` completed tasks. Written straight to the store.
fn busy_session(rt: &Runtime, ws: &str, history: usize) -> i64 {
    rt.store
        .write(|tx| {
            let session = sessions::insert(tx, "bench", ws)?;
            let new_task = |status: &[TaskStatus]| -> pocketpilot_core::store::Result<i64> {
                let id = tasks::insert(
                    tx,
                    &tasks::NewTask {
                        session_id: session,
                        goal: "earlier",
                        trigger: "cli",
                        provider: None,
                        follow_up_of: None,
                        grants: &[],
                        mcp: &[],
                    },
                )?;
                for s in status {
                    tasks::set_status(tx, id, *s)?;
                }
                Ok(id)
            };
            for i in 0..history {
                if i % 2 == 0 {
                    new_task(&[TaskStatus::Running, TaskStatus::Completed])?;
                }
                submissions::insert(
                    tx,
                    &submissions::NewSubmission {
                        session_id: session,
                        kind: SubmissionKind::Input,
                        mode: Some(SubmissionMode::FollowUp),
                        status: SubmissionStatus::Done,
                        request_id: None,
                        content: &json!({ "text": format!("earlier {i}") }),
                    },
                )?;
            }
            new_task(&[TaskStatus::Running])?;
            Ok(session)
        })
        .expect("seed the session")
}

fn by_session_size() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    let rt = Runtime::open(&dir.path().join("data")).expect("open");
    let ws = ws.to_str().expect("utf-8");
    let small = busy_session(&rt, ws, 0);
    let large = busy_session(&rt, ws, HISTORY);
    println!("admission by session size: {SAMPLES} follow-ups said to a busy session");
    for (name, session) in [("new session", small), ("6,000 submissions", large)] {
        let mut samples = Vec::with_capacity(SAMPLES);
        for i in 0..SAMPLES {
            let t = Instant::now();
            let a = rt
                .say(&Submit {
                    session_id: session,
                    say: Say::Input {
                        text: format!("follow-up {i}"),
                        when_busy: WhenBusy::FollowUp,
                        reject_if_idle: false,
                    },
                    request_id: Some(format!("req-{i}")),
                    provider: None,
                    trigger: None,
                    grants: Vec::new(),
                    mcp: None,
                })
                .expect("say");
            samples.push(t.elapsed());
            assert_eq!(a.submission.status, SubmissionStatus::Queued);
        }
        report(&format!("  say into a {name}"), samples);
    }
}

fn streaming() {
    let tokio = common::tokio();
    tokio.block_on(async {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).expect("ws");
        let rt = Runtime::open(&dir.path().join("data")).expect("open");
        let text = "streaming ".repeat(3_000);
        let p = write_json(
            &dir.path().join("s.json"),
            &json!([{ "text": text, "chunk_size": 10, "chunk_delay_ms": 2 }]),
        );
        let id = rt
            .submit(&NewTask {
                goal: "talk for a while".into(),
                workspace: Some(ws),
                trigger: "cli".into(),
                provider: Some(p),
                ..Default::default()
            })
            .expect("submit");
        let session = rt.task(id).expect("task").session_id;
        // Watch the stream: when deltas arrive and the longest silence between them.
        let mut sub = rt.subscribe(id, 0).expect("subscribe");
        let watcher = tokio::spawn(async move {
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
        });
        // Let it start streaming.
        while rt
            .events(id)
            .expect("events")
            .iter()
            .all(|e| e.kind() != EventKind::ModelTurnStarted)
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;

        // `say` commits durably; its real callers (the window's commands, the webhook's
        // handlers) run it on the blocking pool, off the async workers the stream uses.
        let t0 = Instant::now();
        let caller = rt.clone();
        let samples = tokio::task::spawn_blocking(move || {
            let mut samples = Vec::with_capacity(SUBMISSIONS);
            for i in 0..SUBMISSIONS {
                let t = Instant::now();
                let a = caller
                    .say(&Submit {
                        session_id: session,
                        say: Say::Input {
                            text: format!("follow-up {i}"),
                            when_busy: WhenBusy::FollowUp,
                            reject_if_idle: false,
                        },
                        request_id: Some(format!("req-{i}")),
                        provider: None,
                        trigger: None,
                        grants: Vec::new(),
                        mcp: None,
                    })
                    .expect("say");
                samples.push(t.elapsed());
                assert_eq!(a.submission.status, SubmissionStatus::Queued);
            }
            samples
        })
        .await
        .expect("caller");
        let elapsed = t0.elapsed();
        let t1 = Instant::now();
        let busy = rt.is_busy(session).expect("busy");
        let queued = rt.inbox(session).expect("inbox").len();
        rt.cancel(id).expect("cancel");
        let times = watcher.await.expect("watcher");
        let during: Vec<&Instant> = times.iter().filter(|t| **t >= t0 && **t <= t1).collect();
        let max_gap = during
            .windows(2)
            .map(|w| w[1].duration_since(*w[0]))
            .max()
            .unwrap_or_default();
        println!("inbox: {SUBMISSIONS} durable follow-ups said to a session while its run streams");
        println!(
            "  throughput                {:>10.0} submissions/s ({:.1} ms for all)",
            SUBMISSIONS as f64 / elapsed.as_secs_f64(),
            ms(elapsed)
        );
        report("  say latency (durable commit)", samples);
        println!(
            "  still streaming after     {:>10}",
            if busy { "yes" } else { "no" }
        );
        println!("  queued in the inbox       {queued:>10}");
        println!(
            "  deltas during the burst   {:>10}   longest gap {:.1} ms",
            during.len(),
            ms(max_gap)
        );
        assert_eq!(queued, SUBMISSIONS);
    });
}
