//! Cancel latency (figures, not a test): `cargo bench -p pocketpilot-core --bench cancel`.
//!
//! A scripted run starts a real command (`sleep 60`, sandboxed like any other) and waits on
//! it. The clock starts when the cancel is asked and stops when the command's process is
//! gone from `/proc` (its whole process group is killed). Two ways in:
//! - from this process (the window's Stop, `Runtime::cancel`): the run's cancellation token;
//! - from another process sharing the data directory (`pocketpilot cancel` beside the
//!   app): a second runtime on the same directory writes the request, and the run's process
//!   notices it through its one store watcher.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{report, write_json};
use pocketpilot_core::ops;
use pocketpilot_core::{NewTask, Runtime};
use serde_json::json;

const ROUNDS: usize = 15;

/// The pid of a `sleep` whose command line holds `marker`, once it runs.
async fn command_pid(marker: &str) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.starts_with("sleep ") && cmdline.contains(marker) {
                return pid;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the command {marker} never started"
        );
        // sleep: looking for the command's process; it has no event of its own here.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Until `/proc/PID` is gone (or a zombie: killed, not yet reaped by its parent).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z')),
    }
}

async fn one(rt: &Arc<Runtime>, other: Option<&Arc<Runtime>>, dir: &Path, i: usize) -> Duration {
    let ws = dir.join(format!("ws{i}"));
    std::fs::create_dir_all(&ws).unwrap();
    // A fraction of a second that no other command in the machine is likely to sleep.
    let marker = format!("60.{:04}", 1000 + i);
    let p = write_json(
        &dir.join(format!("s{i}.json")),
        &json!([
            { "tool_calls": [{ "name": "run_command", "arguments": { "command": format!("sleep {marker}") } }] },
            { "text": "never reached" }
        ]),
    );
    let id = rt
        .call(ops::CreateTask {
            new: NewTask {
                goal: "wait".into(),
                workspace: Some(ws),
                trigger: pocketpilot_protocol::RunSource::Cli,
                provider: Some(p),
                grants: vec![pocketpilot_protocol::Capability::SHELL_EXECUTE],
                ..Default::default()
            },
        })
        .unwrap();
    rt.call(ops::StartTask { task_id: id });
    let pid = command_pid(&marker).await;
    let t0 = Instant::now();
    match other {
        None => rt.call(ops::CancelTask { task_id: id }).unwrap(),
        Some(o) => o.call(ops::CancelTask { task_id: id }).unwrap(),
    }
    while !gone(pid) {
        // sleep: the /proc sampling interval (0.1 ms); a spinning loop would take one of
        // the two cores from the runtime being measured.
        std::thread::sleep(Duration::from_micros(100));
        if t0.elapsed() > Duration::from_secs(10) {
            panic!("the command outlived its cancel by 10 s");
        }
    }
    let took = t0.elapsed();
    tokio::time::timeout(
        Duration::from_secs(10),
        rt.call(ops::WaitSettled { task_id: id }),
    )
    .await
    .expect("the run settles")
    .unwrap();
    took
}

fn main() {
    let tokio = common::tokio();
    tokio.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let rt = Runtime::open(&data).unwrap();
        let other = Runtime::open(&data).unwrap();
        let mut here = Vec::new();
        let mut elsewhere = Vec::new();
        for i in 0..ROUNDS {
            here.push(one(&rt, None, dir.path(), i).await);
            elsewhere.push(one(&rt, Some(&other), dir.path(), ROUNDS + i).await);
        }
        println!("cancel: asked → the command's process gone ({ROUNDS} rounds each)");
        report("from this process (the window's Stop)", here);
        report("from another process (the store watcher)", elsewhere);
    });
}
