//! Admission's cost against the session's size (figures, not a test):
//! `cargo bench -p pocketpilot-core --bench inbox`.
//!
//! `say` into a busy session that is new, and into one holding 6,000 settled submissions
//! over 3,000 earlier tasks. The two figures should be close: admission reads what it
//! needs by index. (Submissions while a run streams, and the stream's longest gap, are the
//! `delta_gap` bench.)
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod common;

use std::sync::Arc;
use std::time::Instant;

use common::report;
use pocketpilot_core::engine::inbox::{Say, Submit, WhenBusy};
use pocketpilot_core::ops;
use pocketpilot_core::store::{sessions, submissions, tasks};
use pocketpilot_core::{Runtime, TaskStatus};
use pocketpilot_protocol::{SubmissionKind, SubmissionMode, SubmissionStatus};
use serde_json::json;

/// Settled submissions (and half as many earlier tasks) in the "large" session.
const HISTORY: usize = 6_000;
/// `say`s measured into each session of the size comparison.
const SAMPLES: usize = 200;

fn main() {
    // Above the default cap of 1,000 queued per session: the large session holds 6,000
    // (set before any thread starts).
    std::env::set_var("POCKETPILOT_MAX_QUEUED", (2 * HISTORY).to_string());
    by_session_size();
}

/// A busy session: one running task (no worker: nothing answers), after `history`
/// settled submissions over `history / 2` completed tasks. Written straight to the store.
fn busy_session(rt: &Arc<Runtime>, ws: &str, history: usize) -> i64 {
    rt.store_for_tests()
        .write(|tx| {
            let session = sessions::insert(tx, "bench", ws)?;
            let new_task = |status: &[TaskStatus]| -> pocketpilot_core::store::Result<i64> {
                let id = tasks::insert(
                    tx,
                    &tasks::NewTask {
                        session_id: session,
                        goal: "earlier",
                        trigger: pocketpilot_protocol::RunSource::Cli,
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
                .call(ops::Say {
                    submit: Submit {
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
                    },
                })
                .expect("say");
            samples.push(t.elapsed());
            assert_eq!(a.submission.status, SubmissionStatus::Queued);
        }
        report(&format!("  say into a {name}"), samples);
    }
}
