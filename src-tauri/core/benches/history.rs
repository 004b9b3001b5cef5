//! Opening a session with a long history (figures, not a test):
//! `cargo bench -p pocketpilot-core --bench history`.
//!
//! For sessions of 1,000, 10,000 and 50,000 tasks (each a user and an assistant entry),
//! after reopening the store: the time to what the window loads first (the newest 50 tasks
//! and their entries, `Runtime::session_history`) and, for comparison, to load the whole
//! transcript in one query. The first should be flat in the history's size (index lookups),
//! the second linear. A second session of the same size sits in the same store, so the
//! figure is also flat in the *total* history size, not only this session's.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::ms;
use pocketpilot_core::ops;
use pocketpilot_core::store::{entries, tasks};
use pocketpilot_core::{NewTask, Runtime};
use pocketpilot_protocol::EntryKind;
use serde_json::json;

const SHOWN: u32 = 50;

fn fill(rt: &Arc<Runtime>, session: i64, count: usize) {
    let body =
        "lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor ".repeat(2);
    for chunk in (0..count).collect::<Vec<_>>().chunks(5_000) {
        rt.store_for_tests()
            .write(|tx| {
                for i in chunk {
                    let goal = format!("question {i}: {body}");
                    let task = tasks::insert(
                        tx,
                        &tasks::NewTask {
                            session_id: session,
                            goal: &goal,
                            trigger: pocketpilot_protocol::RunSource::Chat,
                            provider: None,
                            follow_up_of: None,
                            grants: &[],
                            mcp: &[],
                        },
                    )?;
                    entries::append(
                        tx,
                        session,
                        Some(task),
                        &EntryKind::User,
                        &json!({ "text": goal }),
                    )?;
                    entries::append(
                        tx,
                        session,
                        Some(task),
                        &EntryKind::Assistant,
                        &json!({ "text": format!("answer {i}: {body}"), "tool_calls": [] }),
                    )?;
                }
                Ok(())
            })
            .expect("fill");
    }
}

fn best_of<T>(n: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut out = None;
    for _ in 0..n {
        let t = Instant::now();
        let v = f();
        best = best.min(t.elapsed());
        out = Some(v);
    }
    (best, out.expect("ran"))
}

fn main() {
    println!(
        "history: open a session with N tasks (2N entries); the window loads the newest {SHOWN}"
    );
    println!(
        "{:>8} {:>10} {:>10} {:>24} {:>14}",
        "tasks", "entries", "db MiB", "newest 50 tasks ms", "load all ms"
    );
    for count in [1_000usize, 10_000, 50_000] {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).expect("ws");
        let data = dir.path().join("data");
        let mut sessions = Vec::new();
        {
            let rt = Runtime::open(&data).expect("open");
            for name in ["measured", "neighbour"] {
                let id = rt
                    .call(ops::CreateTask {
                        new: NewTask {
                            goal: name.into(),
                            workspace: Some(ws.clone()),
                            trigger: pocketpilot_protocol::RunSource::Cli,
                            provider: Some("scripted:/nonexistent".into()),
                            ..Default::default()
                        },
                    })
                    .expect("create");
                let session = rt.call(ops::GetTask { id }).expect("task").session_id;
                rt.call(ops::CancelTask { task_id: id }).expect("cancel");
                fill(&rt, session, count);
                sessions.push(session);
            }
        }
        let session = sessions[0];
        let db = std::fs::metadata(data.join("pocketpilot.db"))
            .map(|m| m.len())
            .unwrap_or(0)
            + std::fs::metadata(data.join("pocketpilot.db-wal"))
                .map(|m| m.len())
                .unwrap_or(0);
        // Cold-ish: a fresh runtime on the store, as when the app starts.
        let rt = Runtime::open(&data).expect("reopen");
        let t = Instant::now();
        let first = rt
            .call(ops::GetSessionHistory {
                session_id: session,
                tasks: SHOWN,
            })
            .expect("history");
        let first_cold = t.elapsed();
        assert_eq!(first.tasks.len(), SHOWN as usize);
        assert_eq!(first.entries.len(), 2 * SHOWN as usize);
        assert!(first.earlier);
        let (first_warm, _) = best_of(20, || {
            rt.call(ops::GetSessionHistory {
                session_id: session,
                tasks: SHOWN,
            })
            .expect("history")
        });
        let (all, v) = best_of(3, || {
            rt.call(ops::SessionEntries {
                session_id: session,
            })
            .expect("all")
        });
        assert_eq!(v.len(), count * 2 + 1, "the first goal and the tasks");
        println!(
            "{:>8} {:>10} {:>10.1} {:>14.3} ({:>7.3}) {:>14.1}",
            count,
            count * 2,
            db as f64 / (1024.0 * 1024.0),
            ms(first_cold),
            ms(first_warm),
            ms(all)
        );
    }
    println!("newest 50 tasks: cold (first query after open) and, in brackets, best of 20 warm");
}
