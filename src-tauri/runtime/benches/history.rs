//! Opening a session with a long history (figures, not a test):
//! `cargo bench -p pocketpilot-runtime --bench history`.
//!
//! For sessions of 1,000, 10,000 and 50,000 turns (a turn = a user and an assistant entry),
//! after reopening the store: the time to the first page of 50 entries (what the window
//! shows first), to page back through all of it, and to load it in one query. The first
//! page should be flat in the history's size (an index range scan), the full load linear.
//! A second session of the same size sits in the same store, so the figure is also flat
//! in the *total* history size, not only this session's.
mod common;

use std::time::{Duration, Instant};

use common::ms;
use pocketpilot_runtime::store::entries;
use pocketpilot_runtime::{NewTask, Runtime};
use serde_json::json;

const PAGE: i64 = 50;

fn fill(rt: &Runtime, session: i64, turns: usize) {
    let body =
        "lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor ".repeat(2);
    for chunk in (0..turns).collect::<Vec<_>>().chunks(5_000) {
        rt.store
            .write(|tx| {
                for i in chunk {
                    entries::append(
                        tx,
                        session,
                        None,
                        "user",
                        &json!({ "text": format!("question {i}: {body}") }),
                    )?;
                    entries::append(
                        tx,
                        session,
                        None,
                        "assistant",
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
    println!("history: open a session with N turns (2N entries); page = {PAGE} entries");
    println!(
        "{:>8} {:>10} {:>14} {:>16} {:>18} {:>16}",
        "turns", "entries", "db MiB", "first page ms", "page through ms", "load all ms"
    );
    for turns in [1_000usize, 10_000, 50_000] {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).expect("ws");
        let data = dir.path().join("data");
        let mut sessions = Vec::new();
        {
            let rt = Runtime::open(&data).expect("open");
            for name in ["measured", "neighbour"] {
                let id = rt
                    .create_task(&NewTask {
                        goal: name.into(),
                        workspace: Some(ws.clone()),
                        trigger: "cli".into(),
                        provider: Some("scripted:/nonexistent".into()),
                        ..Default::default()
                    })
                    .expect("create");
                let session = rt.task(id).expect("task").session_id;
                rt.cancel(id).expect("cancel");
                fill(&rt, session, turns);
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
            .store
            .read(|c| entries::page(c, session, None, PAGE))
            .expect("page");
        let first_cold = t.elapsed();
        assert_eq!(first.len() as i64, PAGE);
        let (first_warm, _) = best_of(20, || {
            rt.store
                .read(|c| entries::page(c, session, None, PAGE))
                .expect("page")
        });
        let (through, n) = best_of(3, || {
            let mut before = None;
            let mut n = 0;
            loop {
                let page = rt
                    .store
                    .read(|c| entries::page(c, session, before, 500))
                    .expect("page");
                if page.is_empty() {
                    break n;
                }
                n += page.len();
                before = page.first().map(|e| e.id);
            }
        });
        assert_eq!(n, turns * 2 + 1, "the goal and the turns");
        let (all, v) = best_of(3, || rt.session_entries(session).expect("all"));
        assert_eq!(v.len(), turns * 2 + 1);
        println!(
            "{:>8} {:>10} {:>14.1} {:>8.3} ({:>5.3}) {:>18.1} {:>16.1}",
            turns,
            turns * 2,
            db as f64 / (1024.0 * 1024.0),
            ms(first_cold),
            ms(first_warm),
            ms(through),
            ms(all)
        );
    }
    println!("first page: cold (first query after open) and, in brackets, best of 20 warm");
}
