//! Recovering a store after a crash (figures, not a test):
//! `cargo bench -p pocketpilot-core --bench recovery`.
//!
//! 1,000 sessions, each with a run that crashed right after committing a tool call's
//! intent (half `read_file`, re-run on resume; half `write_file`, reported interrupted).
//! The runtime is dropped and reopened; prints the time for `resume_all` to return and for
//! every task to reach a terminal state, and checks the outcome of each kind.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{ms, write_json};
use pocketpilot_core::ops;
use pocketpilot_core::store::tasks;
use pocketpilot_core::{NewTask, Runtime, RuntimeEvent, TaskStatus};
use pocketpilot_model::ToolCall;
use serde_json::json;

const TASKS: usize = 1_000;

fn main() {
    let tokio = common::tokio();
    tokio.block_on(async {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = dir.path().join("data");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).expect("ws");
        std::fs::write(ws.join("notes.txt"), "notes\n").expect("notes");
        let p = write_json(
            &dir.path().join("s.json"),
            &json!([{ "text": "(crashed turn)" }, { "text": "recovered" }]),
        );
        let t_setup = Instant::now();
        let ids = interrupted_tasks(&data, &ws, &p);
        let setup = t_setup.elapsed();

        let t0 = Instant::now();
        let rt = Runtime::open(&data).expect("reopen");
        let opened = t0.elapsed();
        let sessions = rt.call(ops::ResumeAll {}).expect("resume_all");
        let returned = t0.elapsed();
        wait_all_terminal(&rt).await;
        let all = t0.elapsed();
        let (reran, interrupted, completed) = outcomes(&rt, &ids);
        let written = (0..TASKS)
            .filter(|i| ws.join(format!("out{i}.txt")).exists())
            .count();
        println!(
            "recovery: {TASKS} tasks interrupted mid tool call (setup {:.0} ms)",
            ms(setup)
        );
        println!("  reopen the store          {:>10.1} ms", ms(opened));
        println!(
            "  resume_all returned       {:>10.1} ms   ({} sessions)",
            ms(returned),
            sessions.len()
        );
        println!(
            "  all terminal              {:>10.1} ms   ({:.0} tasks/s)",
            ms(all),
            TASKS as f64 / all.as_secs_f64()
        );
        println!("  completed                 {completed:>10} / {TASKS}");
        println!("  reads re-run              {reran:>10} / {}", TASKS / 2);
        println!(
            "  writes interrupted        {interrupted:>10} / {}   (files written: {written})",
            TASKS / 2
        );
        assert_eq!(completed, TASKS);
        assert_eq!((reran, interrupted, written), (TASKS / 2, TASKS / 2, 0));
    });
}

/// [`TASKS`] tasks recorded as a crash leaves them, each in the middle of one tool call:
/// a read (safe to run again) for even ones, a write for odd ones.
fn interrupted_tasks(data: &Path, ws: &Path, p: &str) -> Vec<i64> {
    let mut ids = Vec::new();
    let rt = Runtime::open(data).expect("open");
    for i in 0..TASKS {
        let id = rt
            .call(ops::CreateTask {
                new: NewTask {
                    goal: format!("task {i}"),
                    workspace: Some(ws.to_path_buf()),
                    trigger: pocketpilot_protocol::RunSource::Cli,
                    provider: Some(p.to_owned()),
                    ..Default::default()
                },
            })
            .expect("create");
        let (name, args, cap, safe) = if i % 2 == 0 {
            ("read_file", json!({ "path": "notes.txt" }), "fs:read", true)
        } else {
            (
                "write_file",
                json!({ "path": format!("out{i}.txt"), "content": "x" }),
                "fs:write",
                false,
            )
        };
        let call = ToolCall {
            id: "call_1".into(),
            name: name.into(),
            arguments: args.to_string(),
        };
        for ev in [
            RuntimeEvent::TaskStarted {
                provider: p.to_owned(),
                resumed: false,
            },
            RuntimeEvent::ModelTurnStarted { step: 1 },
            RuntimeEvent::ModelTurnCompleted {
                step: 1,
                text: String::new(),
                tool_calls: vec![call.clone()],
                finish_reason: Some("tool_calls".into()),
                usage: None,
                cached_prompt_tokens: None,
                model: None,
                cost_usd: None,
            },
            RuntimeEvent::ToolCallStarted {
                step: 1,
                call_id: call.id.clone(),
                name: name.into(),
                arguments: call.arguments.clone(),
                capability: Some(cap.into()),
                replay_safe: safe,
                decision: pocketpilot_protocol::Decision::Allow,
                decision_source: pocketpilot_protocol::DecisionSource::User,
            },
        ] {
            rt.recorder_for_tests().record(id, &ev).expect("record");
        }
        ids.push(id);
    }
    ids
}

/// Until no task is running or queued (ten minutes at most).
async fn wait_all_terminal(rt: &Arc<Runtime>) {
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let left = rt
            .store_for_tests()
            .read(|c| {
                Ok(tasks::with_status(c, TaskStatus::Running)?.len()
                    + tasks::with_status(c, TaskStatus::Queued)?.len())
            })
            .expect("count");
        if left == 0 || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// How many of `ids` re-ran their read, had their write interrupted, and completed.
fn outcomes(rt: &Arc<Runtime>, ids: &[i64]) -> (usize, usize, usize) {
    let (mut reran, mut interrupted, mut completed) = (0, 0, 0);
    for id in ids {
        let kinds: Vec<(String, serde_json::Value)> = rt
            .call(ops::TaskEvents { task_id: *id })
            .expect("events")
            .into_iter()
            .map(|e| (e.kind().as_str().to_owned(), e.payload()))
            .collect();
        if kinds
            .iter()
            .any(|(k, p)| k == "tool_call_completed" && p["name"] == "read_file")
        {
            reran += 1;
        }
        if kinds
            .iter()
            .any(|(k, p)| k == "tool_call_failed" && p["kind"] == "interrupted")
        {
            interrupted += 1;
        }
        if rt.call(ops::GetTask { id: *id }).expect("task").status == TaskStatus::Completed {
            completed += 1;
        }
    }
    (reran, interrupted, completed)
}
