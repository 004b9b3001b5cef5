//! Runtime figures (not tests): `cargo bench -p pocketpilot-core --bench core`.
//! Prints create-task acknowledgement latency (a durable SQLite commit), persisted event
//! appends per second, and live delta fan-out latency to 10 subscribers.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pocketpilot_core::engine::recorder::Recorder;
use pocketpilot_core::ops;
use pocketpilot_core::{NewTask, Runtime, RuntimeEvent};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn report(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    println!(
        "{name:<44} p50 {:>9.3} ms   p99 {:>9.3} ms   max {:>9.3} ms   (n={})",
        percentile(&samples, 0.5).as_secs_f64() * 1e3,
        percentile(&samples, 0.99).as_secs_f64() * 1e3,
        samples.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
        samples.len()
    );
}

fn main() {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio");
    tokio.block_on(async {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).expect("ws");
        let rt = Runtime::open(&dir.path().join("data")).expect("open");
        let first = create_task_acks(&rt, &ws);
        event_appends(&rt, first);
        grouped_appends(&rt, &ws).await;
        burst_appends(&rt, &ws).await;
        reads_while_writing(&rt, first);
        delta_fan_out(&rt, &ws).await;
    });
}

/// 1. create-task acknowledgement: persisted `queued` with its session, entry and event.
fn create_task_acks(rt: &Arc<Runtime>, ws: &Path) -> i64 {
    let mut samples = Vec::new();
    let first = rt
        .call(ops::CreateTask {
            new: NewTask {
                goal: "warm up".into(),
                workspace: Some(ws.to_path_buf()),
                trigger: pocketpilot_protocol::RunSource::Cli,
                ..Default::default()
            },
        })
        .expect("create");
    // Each in a new session: a session holds one unfinished task at a time.
    for i in 0..500 {
        let t = Instant::now();
        rt.call(ops::CreateTask {
            new: NewTask {
                goal: format!("goal {i}"),
                workspace: Some(ws.to_path_buf()),
                trigger: pocketpilot_protocol::RunSource::Cli,
                ..Default::default()
            },
        })
        .expect("create");
        samples.push(t.elapsed());
    }
    report("create_task ack (durable commit, new session)", samples);
    first
}

/// 2. persisted event appends.
fn event_appends(rt: &Arc<Runtime>, first: i64) {
    let n = 3000;
    let t = Instant::now();
    for step in 0..n {
        rt.recorder_for_tests()
            .record(first, &RuntimeEvent::ModelTurnStarted { step })
            .expect("record");
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{:<44} {:>9.0} events/s   ({n} events in {:.2} s, synchronous=FULL)",
        "persisted event appends",
        n as f64 / secs,
        secs
    );
}

/// 2a. the same appends when bursts are ready: many runs emit at once, and the
/// writer commits what is queued as one group (one fsync at synchronous=FULL).
async fn grouped_appends(rt: &Arc<Runtime>, ws: &Path) {
    for (runs, per_run, sync_callers) in [(256usize, 200u32, false), (64, 500, true)] {
        let mut tasks = Vec::new();
        for i in 0..runs {
            tasks.push(
                rt.call(ops::CreateTask {
                    new: NewTask {
                        goal: format!("burst {i}"),
                        workspace: Some(ws.to_path_buf()),
                        trigger: pocketpilot_protocol::RunSource::Cli,
                        ..Default::default()
                    },
                })
                .expect("create"),
            );
        }
        let before = rt.store_for_tests().writer_stats();
        let t = Instant::now();
        let mut handles = Vec::new();
        for task in tasks {
            let recorder = rt.recorder_for_tests().clone();
            handles.push(tokio::spawn(async move {
                for step in 0..per_run {
                    let ev = RuntimeEvent::ModelTurnStarted { step };
                    if sync_callers {
                        // What the agent's sink does: a blocking record, in
                        // block_in_place on this multi-thread runtime.
                        recorder.record(task, &ev).expect("record");
                    } else {
                        recorder.record_async(task, ev).await.expect("record");
                    }
                }
            }));
        }
        for h in handles {
            h.await.expect("join");
        }
        let secs = t.elapsed().as_secs_f64();
        let after = rt.store_for_tests().writer_stats();
        let n = runs as u64 * per_run as u64;
        let groups = after.groups - before.groups;
        println!(
            "{:<44} {:>9.0} events/s   ({n} events in {:.2} s, {groups} commits, {:.0} events per fsync, synchronous=FULL)",
            format!(
                "persisted events, {runs} runs at once ({})",
                if sync_callers { "record" } else { "record_async" }
            ),
            n as f64 / secs,
            secs,
            n as f64 / groups.max(1) as f64,
        );
    }
}

/// 2a'. a burst API: each run hands over 20 events at once (one write each).
async fn burst_appends(rt: &Arc<Runtime>, ws: &Path) {
    let runs = 64usize;
    let (bursts, size) = (40u32, 20u32);
    let mut tasks = Vec::new();
    for i in 0..runs {
        tasks.push(
            rt.call(ops::CreateTask {
                new: NewTask {
                    goal: format!("bursts {i}"),
                    workspace: Some(ws.to_path_buf()),
                    trigger: pocketpilot_protocol::RunSource::Cli,
                    ..Default::default()
                },
            })
            .expect("create"),
        );
    }
    let before = rt.store_for_tests().writer_stats();
    let t = Instant::now();
    let mut handles = Vec::new();
    for task in tasks {
        let recorder = rt.recorder_for_tests().clone();
        handles.push(tokio::spawn(async move {
            for b in 0..bursts {
                let burst: Vec<RuntimeEvent> = (0..size)
                    .map(|k| RuntimeEvent::ModelTurnStarted { step: b * size + k })
                    .collect();
                recorder.record_burst(task, &burst).expect("burst");
            }
        }));
    }
    for h in handles {
        h.await.expect("join");
    }
    let secs = t.elapsed().as_secs_f64();
    let groups = rt.store_for_tests().writer_stats().groups - before.groups;
    let n = (runs as u32 * bursts * size) as f64;
    println!(
        "{:<44} {:>9.0} events/s   ({n} events in {:.2} s, {groups} commits, {:.0} events per fsync, synchronous=FULL)",
        format!("persisted events, {runs} runs, bursts of {size}"),
        n / secs,
        secs,
        n / groups.max(1) as f64,
    );
}

/// 2b. what the window reads (counts, a session's newest tasks) while a run commits
/// events, each with its fsync: reads have their own connections and never queue
/// behind a write.
fn reads_while_writing(rt: &Arc<Runtime>, first: i64) {
    let session = rt
        .call(ops::GetTask { id: first })
        .expect("task")
        .session_id;
    let writing = std::sync::atomic::AtomicBool::new(true);
    let reads = std::thread::scope(|scope| {
        scope.spawn(|| {
            for step in 0..1500 {
                rt.recorder_for_tests()
                    .record(first, &RuntimeEvent::ModelTurnStarted { step })
                    .expect("record");
            }
            writing.store(false, std::sync::atomic::Ordering::Release);
        });
        let mut samples = Vec::new();
        while writing.load(std::sync::atomic::Ordering::Acquire) {
            let t = Instant::now();
            rt.call(ops::GetCounts {}).expect("counts");
            rt.call(ops::GetSessionHistory {
                session_id: session,
                tasks: 50,
            })
            .expect("history");
            samples.push(t.elapsed());
        }
        samples
    });
    report("window reads while events are committed", reads);
}

/// 3. delta fan-out to 10 subscribers, raw (no coalescing) and with the 30 ms window.
async fn delta_fan_out(rt: &Arc<Runtime>, ws: &Path) {
    for window in [Duration::ZERO, Duration::from_millis(30)] {
        let recorder = Recorder::new(rt.store_for_tests().clone(), window);
        let task = rt
            .call(ops::CreateTask {
                new: NewTask {
                    goal: "fan out".into(),
                    workspace: Some(ws.to_path_buf()),
                    trigger: pocketpilot_protocol::RunSource::Cli,
                    ..Default::default()
                },
            })
            .expect("create");
        let sent: Arc<std::sync::Mutex<Vec<Instant>>> = Arc::default();
        let mut subs = Vec::new();
        for _ in 0..10 {
            let mut sub = recorder.subscribe(task, 0).expect("subscribe");
            let sent = sent.clone();
            subs.push(tokio::spawn(async move {
                let mut lat = Vec::new();
                let mut received = 0usize;
                while let Some(Ok(ev)) = sub.next().await {
                    if ev.kind().as_str() == "assistant_delta" {
                        let now = Instant::now();
                        // Each delta carries the count of single-char chunks it holds.
                        let n = ev.payload()["text"].as_str().unwrap_or_default().len();
                        let times = sent.lock().unwrap_or_else(|p| p.into_inner());
                        for i in received..received + n {
                            if let Some(t) = times.get(i) {
                                lat.push(now.duration_since(*t));
                            }
                        }
                        received += n;
                    }
                }
                lat
            }));
        }
        for _ in 0..2000 {
            sent.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(Instant::now());
            recorder.delta(task, "x");
            tokio::time::sleep(Duration::from_micros(500)).await;
        }
        tokio::time::sleep(window + Duration::from_millis(50)).await;
        recorder
            .record(
                task,
                &RuntimeEvent::TaskCancelled {
                    reason: "bench".into(),
                },
            )
            .expect("end");
        let mut all = Vec::new();
        for s in subs {
            all.extend(s.await.expect("join"));
        }
        report(
            &format!(
                "delta fan-out to 10 subscribers, window {} ms",
                window.as_millis()
            ),
            all,
        );
    }
}
