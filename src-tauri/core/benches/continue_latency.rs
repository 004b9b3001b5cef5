//! Continue latency (figures, not a test): `cargo bench -p pocketpilot-core --bench continue_latency`.
//!
//! A scripted run uses its one step on a tool call and pauses for its step budget. The
//! clock starts when Continue is asked (`Runtime::continue_task`, what the window's
//! Continue calls) and stops when the run's next model request goes out: its
//! `model_turn_started` event, recorded as the request is sent, seen by a subscriber as the
//! window sees it. The request itself (the scripted model answers at once) is not in it.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{report, write_json};
use pocketpilot_core::config::Limits;
use pocketpilot_core::ops;
use pocketpilot_core::{NewTask, Runtime, TaskStatus};
use pocketpilot_protocol::{EventKind, Raise};
use serde_json::json;

const ROUNDS: usize = 50;

async fn settled(rt: &Arc<Runtime>, id: i64) -> TaskStatus {
    tokio::time::timeout(
        Duration::from_secs(30),
        rt.call(ops::WaitSettled { task_id: id }),
    )
    .await
    .expect("the run settles")
    .unwrap()
}

async fn one(rt: &Arc<Runtime>, dir: &Path, i: usize) -> Duration {
    let ws = dir.join(format!("ws{i}"));
    std::fs::create_dir_all(&ws).unwrap();
    let p = write_json(
        &dir.join(format!("s{i}.json")),
        &json!([
            { "tool_calls": [{ "name": "list_dir", "arguments": { "path": "." } }] },
            { "text": "Listed." }
        ]),
    );
    let id = rt
        .call(ops::CreateTask {
            new: NewTask {
                goal: "list the folder".into(),
                workspace: Some(ws),
                trigger: pocketpilot_protocol::RunSource::Cli,
                provider: Some(p),
                ..Default::default()
            },
        })
        .unwrap();
    rt.call(ops::StartTask { task_id: id });
    assert_eq!(settled(rt, id).await, TaskStatus::Paused);
    let last = rt
        .call(ops::TaskEvents { task_id: id })
        .unwrap()
        .last()
        .map_or(0, |e| e.sequence);
    let mut sub = rt
        .call(ops::SubscribeTask {
            task_id: id,
            after_sequence: last,
        })
        .unwrap();
    let t0 = Instant::now();
    let raise = Raise {
        steps: 1,
        ..Default::default()
    };
    rt.call(ops::ContinueTask {
        task_id: id,
        raise,
        steer: None,
        by: "bench".into(),
    })
    .unwrap();
    let took = loop {
        let ev = tokio::time::timeout(Duration::from_secs(10), sub.next())
            .await
            .expect("an event within 10 s")
            .expect("the subscription is open")
            .unwrap();
        if ev.kind() == EventKind::ModelTurnStarted {
            break t0.elapsed();
        }
    };
    assert_eq!(settled(rt, id).await, TaskStatus::Completed);
    took
}

fn main() {
    let tokio = common::tokio();
    tokio.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let rt = Runtime::open(&dir.path().join("data")).unwrap();
        rt.call(ops::SetLimits {
            limits: Limits {
                max_steps: 1,
                ..Default::default()
            },
        })
        .unwrap();
        let mut samples = Vec::new();
        for i in 0..ROUNDS {
            samples.push(one(&rt, dir.path(), i).await);
        }
        println!("continue: Continue asked → the run's next model request sent ({ROUNDS} rounds)");
        report(
            "from Runtime::continue_task (the window's Continue)",
            samples,
        );
    });
}
