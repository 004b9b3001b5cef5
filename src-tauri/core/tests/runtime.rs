//! The runtime end to end: real store, real worker, real tools, scripted model.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use pocketpilot_core::ops;
use pocketpilot_test_support as support;

use std::time::{Duration, Instant};

use pocketpilot_core::config::Limits;
use pocketpilot_core::{NewTask, RuntimeError, TaskStatus};
use serde_json::json;
use support::*;

#[tokio::test]
async fn create_returns_before_the_model_is_asked_anything() {
    let f = Fixture::new();
    let p = f.script("slow.json", json!([{ "text": "late", "delay_ms": 60_000 }]));
    let id = f.submit("say something", &p);
    // The id is back while the provider is still in its first delay: nothing answered yet.
    let task = f.rt.call(ops::GetTask { id }).unwrap();
    assert!(matches!(
        task.status,
        TaskStatus::Queued | TaskStatus::Running
    ));
    assert!(!f.kinds(id).contains(&"model_turn_completed".to_string()));
    assert_eq!(f.kinds(id)[0], "task_created");
    f.rt.call(ops::CancelTask { task_id: id }).unwrap();
    assert_eq!(f.settle(id).await, TaskStatus::Cancelled);
}

#[tokio::test]
async fn a_plain_answer_completes_with_events_in_order_and_the_stream_closes_only_on_the_terminal_event(
) {
    let f = Fixture::new();
    let p = f.script(
        "plain.json",
        json!([{ "text": "Hello from the model.", "chunk_size": 3 }]),
    );
    let id = f.submit("greet", &p);
    let events = drain(
        f.rt.call(ops::SubscribeTask {
            task_id: id,
            after_sequence: 0,
        })
        .unwrap(),
    )
    .await;
    let persisted: Vec<&str> = events
        .iter()
        .filter(|e| e.sequence > 0)
        .map(|e| e.kind().as_str())
        .collect();
    assert_eq!(
        persisted,
        [
            "task_created",
            "input_placed",
            "task_started",
            "model_turn_started",
            "model_turn_completed",
            "agent_completed",
            "task_completed"
        ]
    );
    // agent_completed did not close the stream: task_completed came after it.
    assert_eq!(events.last().unwrap().kind().as_str(), "task_completed");
    assert_eq!(deltas(&events), "Hello from the model.");
    let task = f.rt.call(ops::GetTask { id }).unwrap();
    assert_eq!(task.status, TaskStatus::Completed);
    assert_eq!(task.final_answer.as_deref(), Some("Hello from the model."));
    assert!(task.prompt_tokens > 0 && task.completion_tokens > 0);
    // A subscriber after the end gets the record, no deltas, and closes.
    let replay = drain(
        f.rt.call(ops::SubscribeTask {
            task_id: id,
            after_sequence: 0,
        })
        .unwrap(),
    )
    .await;
    assert_eq!(sequences(&replay), (1..=7).collect::<Vec<_>>());
    assert_eq!(deltas(&replay), "");
}

#[tokio::test]
async fn a_thousand_events_are_gapless_for_every_concurrent_subscriber() {
    let f = Fixture::with_limits(Limits {
        max_steps: 260,
        max_task_tokens: None,
        repeat_limit: 0,
        ..Limits::default()
    });
    std::fs::write(f.ws("a.txt"), "x").unwrap();
    let p = f.script(
        "loop.json",
        json!({ "repeat_last": true, "turns": [
            { "text": "looking", "tool_calls": [{ "name": "list_dir", "arguments": { "path": "." } }] }
        ]}),
    );
    let id = f.submit("loop", &p);
    // The step budget pauses the task; stopping it ends the record (and the streams).
    {
        let rt = f.rt.clone();
        tokio::spawn(async move {
            assert_eq!(
                rt.call(ops::WaitSettled { task_id: id }).await.unwrap(),
                TaskStatus::Paused
            );
            rt.call(ops::StopTask { task_id: id }).unwrap();
        });
    }
    let mut joins = Vec::new();
    for i in 0..6 {
        let rt = f.rt.clone();
        joins.push(tokio::spawn(async move {
            // sleep: staggers the subscribers over the run, so they join the record at different points.
            tokio::time::sleep(Duration::from_millis(i * 40)).await;
            drain(
                rt.call(ops::SubscribeTask {
                    task_id: id,
                    after_sequence: 0,
                })
                .unwrap(),
            )
            .await
        }));
    }
    // One more that joins from the middle of the record.
    let late = {
        let rt = f.rt.clone();
        tokio::spawn(async move {
            // sleep: this subscriber joins after the record has moved on, from its middle.
            tokio::time::sleep(Duration::from_millis(150)).await;
            drain(
                rt.call(ops::SubscribeTask {
                    task_id: id,
                    after_sequence: 100,
                })
                .unwrap(),
            )
            .await
        })
    };
    let mut counts = Vec::new();
    for j in joins {
        let events = j.await.unwrap();
        let seqs = sequences(&events);
        assert_eq!(seqs, (1..=seqs.len() as i64).collect::<Vec<_>>());
        assert_eq!(events.last().unwrap().kind().as_str(), "budget_exceeded");
        counts.push(seqs.len());
    }
    assert!(counts.iter().all(|c| *c == counts[0]));
    assert!(counts[0] > 1000, "only {} events", counts[0]);
    let late = sequences(&late.await.unwrap());
    assert_eq!(late, (101..=counts[0] as i64).collect::<Vec<_>>());
    let task = f.rt.call(ops::GetTask { id }).unwrap();
    assert_eq!(task.status, TaskStatus::BudgetExceeded);
    assert!(task.error.unwrap().contains("all 260 steps"));
}

#[tokio::test]
async fn a_subscriber_joining_mid_answer_gets_the_whole_text_exactly_once() {
    let f = Fixture::new();
    let text: String = (0..40).map(|i| format!("w{i} ")).collect();
    let p = f.script(
        "slow-text.json",
        json!([{ "text": text, "chunk_size": 4, "chunk_delay_ms": 15 }]),
    );
    let id = f.submit("talk", &p);
    let early = tokio::spawn(drain(
        f.rt.call(ops::SubscribeTask {
            task_id: id,
            after_sequence: 0,
        })
        .unwrap(),
    ));
    // Join once some text has streamed.
    let mut probe =
        f.rt.call(ops::SubscribeTask {
            task_id: id,
            after_sequence: 0,
        })
        .unwrap();
    let mut seen = 0;
    while seen < 5 {
        let ev = probe.next().await.unwrap().unwrap();
        if ev.kind().as_str() == "assistant_delta" {
            seen += 1;
        }
    }
    let mid = drain(
        f.rt.call(ops::SubscribeTask {
            task_id: id,
            after_sequence: 0,
        })
        .unwrap(),
    )
    .await;
    assert_eq!(deltas(&mid), text);
    assert_eq!(deltas(&early.await.unwrap()), text);
    // Deltas were coalesced: fewer messages than chunks, same text.
    let n = mid
        .iter()
        .filter(|e| e.kind().as_str() == "assistant_delta")
        .count();
    assert!(
        n < text.len() / 4,
        "{n} deltas for {} chunks",
        text.len() / 4
    );
}

#[tokio::test]
async fn the_step_limit_pauses_the_task_with_its_reason_and_stop_ends_it_budget_exceeded() {
    let f = Fixture::with_limits(Limits {
        max_steps: 3,
        repeat_limit: 0,
        ..Limits::default()
    });
    let p = f.script(
        "forever.json",
        json!({ "repeat_last": true, "turns": [
            { "tool_calls": [{ "name": "list_dir", "arguments": {} }] }
        ]}),
    );
    let id = f.submit("never stop", &p);
    assert_eq!(f.settle(id).await, TaskStatus::Paused);
    let task = f.rt.call(ops::GetTask { id }).unwrap();
    assert_eq!(task.step_count, 3);
    let pause = task.pause.unwrap();
    assert!(
        pause.message.contains("all 3 steps") && !pause.message.contains("POCKETPILOT_"),
        "{pause:?}"
    );
    assert_eq!(
        f.rt.call(ops::StopTask { task_id: id }).unwrap(),
        TaskStatus::BudgetExceeded
    );
    let last =
        f.rt.call(ops::TaskEvents { task_id: id })
            .unwrap()
            .pop()
            .unwrap();
    assert_eq!(last.kind().as_str(), "budget_exceeded");
    assert_eq!(last.payload()["budget"], "steps");
}

#[tokio::test]
async fn the_seconds_budget_pauses_the_task_and_stop_ends_it_budget_exceeded() {
    let f = Fixture::with_limits(Limits {
        max_task_seconds: 1,
        ..Limits::default()
    });
    let p = f.script(
        "stall.json",
        json!([{ "text": "never", "delay_ms": 60_000 }]),
    );
    let id = f.submit("wait", &p);
    assert_eq!(f.settle(id).await, TaskStatus::Paused);
    assert_eq!(
        f.rt.call(ops::StopTask { task_id: id }).unwrap(),
        TaskStatus::BudgetExceeded
    );
    let last =
        f.rt.call(ops::TaskEvents { task_id: id })
            .unwrap()
            .pop()
            .unwrap();
    assert_eq!(last.kind().as_str(), "budget_exceeded");
    assert_eq!(last.payload()["budget"], "seconds");
    assert!(last.payload()["reason"]
        .as_str()
        .unwrap()
        .contains("time budget of 1 seconds"));
}

#[tokio::test]
async fn the_token_budget_pauses_the_task_before_its_calls_run() {
    let f = Fixture::with_limits(Limits {
        max_task_tokens: Some(50),
        ..Limits::default()
    });
    let p = f.script(
        "hungry.json",
        json!([
            { "tool_calls": [{ "name": "list_dir", "arguments": {} }], "usage": { "prompt_tokens": 40, "completion_tokens": 30 } },
            { "text": "never reached" }
        ]),
    );
    let id = f.submit("spend", &p);
    assert_eq!(f.settle(id).await, TaskStatus::Paused);
    let last =
        f.rt.call(ops::TaskEvents { task_id: id })
            .unwrap()
            .pop()
            .unwrap();
    assert_eq!(last.kind().as_str(), "run_paused");
    assert_eq!(last.payload()["budget"], "tokens");
    assert!(!f.kinds(id).contains(&"tool_call_started".to_string()));
}

#[tokio::test]
async fn cancel_mid_stream_lands_cancelled_within_a_second() {
    let f = Fixture::new();
    let p = f.script(
        "long.json",
        json!([{ "text": "a".repeat(400), "chunk_size": 1, "chunk_delay_ms": 200 }]),
    );
    let id = f.submit("ramble", &p);
    let mut sub =
        f.rt.call(ops::SubscribeTask {
            task_id: id,
            after_sequence: 0,
        })
        .unwrap();
    loop {
        let ev = sub.next().await.unwrap().unwrap();
        if ev.kind().as_str() == "assistant_delta" {
            break;
        }
    }
    let asked = Instant::now();
    f.rt.call(ops::CancelTask { task_id: id }).unwrap();
    let status = tokio::time::timeout(
        Duration::from_secs(1),
        f.rt.call(ops::WaitSettled { task_id: id }),
    )
    .await
    .expect("not cancelled within a second")
    .unwrap();
    assert_eq!(status, TaskStatus::Cancelled);
    assert!(asked.elapsed() < Duration::from_secs(1));
    assert!(!f.kinds(id).contains(&"model_turn_completed".to_string()));
    // A cancelled task stays cancelled.
    assert!(matches!(
        f.rt.call(ops::CancelTask { task_id: id }),
        Err(RuntimeError::AlreadyEnded { .. })
    ));
}

#[tokio::test]
async fn a_failing_tool_is_an_observation_and_the_run_goes_on() {
    let f = Fixture::new();
    let p = f.script(
        "recover.json",
        json!([
            { "tool_calls": [{ "name": "read_file", "arguments": { "path": "missing.txt" } }] },
            { "tool_calls": [{ "name": "no_such_tool", "arguments": {} }] },
            { "tool_calls": [{ "name": "read_file", "arguments": "{not json" }] },
            { "text": "The file does not exist." }
        ]),
    );
    let id = f.submit("read it", &p);
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    let events = f.rt.call(ops::TaskEvents { task_id: id }).unwrap();
    let failures: Vec<String> = events
        .iter()
        .filter(|e| e.kind().as_str() == "tool_call_failed")
        .map(|e| e.payload()["kind"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(failures.len(), 3);
    assert_eq!(failures[1], "unknown_tool");
    assert_eq!(failures[2], "invalid_arguments");
    // The model was told: each failure is a tool result in the transcript.
    let session = f.rt.call(ops::GetTask { id }).unwrap().session_id;
    let results: Vec<_> =
        f.rt.call(ops::SessionEntries {
            session_id: session,
        })
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == pocketpilot_protocol::EntryKind::ToolResult)
        .collect();
    assert_eq!(results.len(), 3);
    assert!(results.iter().all(|r| r.content["is_error"] == true));
}

#[tokio::test]
async fn no_model_configured_fails_at_once_and_says_where_to_set_one() {
    let f = Fixture::new();
    // Nor the built-in model (this machine may have it: the real-model tier's cache).
    pocketpilot_core::engine::local_model::LocalSettings {
        enabled: false,
        ..Default::default()
    }
    .save(f.rt.store_for_tests())
    .unwrap();
    let id =
        f.rt.call(ops::SubmitTask {
            new: NewTask {
                goal: "anything".into(),
                workspace: Some(f.workspace.clone()),
                trigger: pocketpilot_protocol::RunSource::Cli,
                ..Default::default()
            },
        })
        .unwrap();
    assert_eq!(f.settle(id).await, TaskStatus::Failed);
    let task = f.rt.call(ops::GetTask { id }).unwrap();
    let error = task.error.unwrap();
    assert!(
        error.contains("No model is configured") && error.contains("pocketpilot provider set"),
        "{error}"
    );
    assert_eq!(f.kinds(id), ["task_created", "input_placed", "task_failed"]);
}

#[tokio::test]
async fn bad_input_is_a_clear_error_and_writes_nothing() {
    let f = Fixture::new();
    let p = f.script("x.json", json!([{ "text": "x" }]));
    let empty =
        f.rt.call(ops::SubmitTask {
            new: f.task("   ", &p),
        })
        .unwrap_err();
    assert_eq!(empty.kind().as_str(), "empty_goal");
    let mut t = f.task("go", &p);
    t.workspace = Some(f.dir.path().join("nope"));
    let err = f.rt.call(ops::SubmitTask { new: t.clone() }).unwrap_err();
    assert_eq!(err.kind().as_str(), "workspace");
    assert!(err.to_string().contains("does not exist"));
    let mut t = f.task("go", &p);
    t.session_id = Some(4242);
    assert_eq!(
        f.rt.call(ops::SubmitTask { new: t.clone() })
            .unwrap_err()
            .kind()
            .as_str(),
        "not_found"
    );
    assert_eq!(
        f.rt.call(ops::GetTask { id: 777 })
            .unwrap_err()
            .kind()
            .as_str(),
        "not_found"
    );
    assert!(f
        .rt
        .call(ops::SubscribeTask {
            task_id: 777,
            after_sequence: 0
        })
        .is_err());
    assert!(f.rt.call(ops::ListTasks { limit: 10 }).unwrap().is_empty());
    assert!(f.rt.call(ops::ListSessions {}).unwrap().is_empty());
}

#[tokio::test]
async fn a_follow_up_continues_the_session_with_its_context() {
    let f = Fixture::new();
    let p = f.script(
        "two.json",
        json!([{ "text": "first answer" }, { "text": "second answer" }]),
    );
    let first = f.submit("one", &p);
    assert_eq!(f.settle(first).await, TaskStatus::Completed);
    let session = f.rt.call(ops::GetTask { id: first }).unwrap().session_id;
    let second =
        f.rt.call(ops::SubmitTask {
            new: NewTask {
                goal: "two".into(),
                session_id: Some(session),
                follow_up_of: Some(first),
                trigger: pocketpilot_protocol::RunSource::Cli,
                provider: Some(p.clone()),
                ..Default::default()
            },
        })
        .unwrap();
    assert_eq!(f.settle(second).await, TaskStatus::Completed);
    let t = f.rt.call(ops::GetTask { id: second }).unwrap();
    // The scripted model played turn 2 because it saw turn 1 in the context.
    assert_eq!(t.final_answer.as_deref(), Some("second answer"));
    assert_eq!(t.follow_up_of, Some(first));
    let kinds: Vec<String> =
        f.rt.call(ops::SessionEntries {
            session_id: session,
        })
        .unwrap()
        .into_iter()
        .map(|e| e.kind.to_string())
        .collect();
    assert_eq!(kinds, ["user", "assistant", "user", "assistant"]);
}

#[tokio::test]
async fn a_long_session_opens_at_its_newest_tasks_with_only_their_entries() {
    let f = Fixture::new();
    let turns: Vec<_> = (1..=5)
        .map(|i| json!({ "text": format!("answer {i}") }))
        .collect();
    let p = f.script("five.json", json!(turns));
    let first = f.submit("goal 1", &p);
    assert_eq!(f.settle(first).await, TaskStatus::Completed);
    let session = f.rt.call(ops::GetTask { id: first }).unwrap().session_id;
    let mut ids = vec![first];
    for i in 2..=5 {
        let id =
            f.rt.call(ops::SubmitTask {
                new: NewTask {
                    goal: format!("goal {i}"),
                    session_id: Some(session),
                    follow_up_of: ids.last().copied(),
                    trigger: pocketpilot_protocol::RunSource::Cli,
                    provider: Some(p.clone()),
                    ..Default::default()
                },
            })
            .unwrap();
        assert_eq!(f.settle(id).await, TaskStatus::Completed);
        ids.push(id);
    }

    let h =
        f.rt.call(ops::GetSessionHistory {
            session_id: session,
            tasks: 2,
        })
        .unwrap();
    assert!(h.earlier, "three older tasks exist");
    assert_eq!(h.tasks.iter().map(|t| t.id).collect::<Vec<_>>(), ids[3..]);
    let texts: Vec<(Option<i64>, String)> = h
        .entries
        .iter()
        .map(|e| {
            (
                e.task_id,
                e.content["text"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        texts,
        [
            (Some(ids[3]), "goal 4".to_owned()),
            (Some(ids[3]), "answer 4".to_owned()),
            (Some(ids[4]), "goal 5".to_owned()),
            (Some(ids[4]), "answer 5".to_owned()),
        ]
    );

    // Asking for more than there is: everything, nothing earlier, the same entries as the
    // whole transcript's task entries.
    let all =
        f.rt.call(ops::GetSessionHistory {
            session_id: session,
            tasks: 50,
        })
        .unwrap();
    assert!(!all.earlier);
    assert_eq!(all.tasks.iter().map(|t| t.id).collect::<Vec<_>>(), ids);
    let whole: Vec<i64> =
        f.rt.call(ops::SessionEntries {
            session_id: session,
        })
        .unwrap()
        .into_iter()
        .filter(|e| e.task_id.is_some())
        .map(|e| e.id)
        .collect();
    assert_eq!(all.entries.iter().map(|e| e.id).collect::<Vec<_>>(), whole);
    assert!(
        !f.rt
            .call(ops::GetSessionHistory {
                session_id: session,
                tasks: 5
            })
            .unwrap()
            .earlier
    );
    assert!(f
        .rt
        .call(ops::GetSessionHistory {
            session_id: session + 1000,
            tasks: 5
        })
        .is_err());
}

#[tokio::test]
async fn a_running_task_whose_process_died_is_cancelled_at_once() {
    let f = Fixture::new();
    let p = f.script("slow.json", json!([{ "text": "x", "delay_ms": 60_000 }]));
    let id =
        f.rt.call(ops::CreateTask {
            new: f.task("orphan", &p),
        })
        .unwrap();
    // As if a process had started it and died: running, and nobody holds the session.
    f.rt.store_for_tests()
        .write(|tx| pocketpilot_core::store::tasks::set_status(tx, id, TaskStatus::Running))
        .unwrap();
    f.rt.call(ops::CancelTask { task_id: id }).unwrap();
    assert_eq!(
        f.rt.call(ops::GetTask { id }).unwrap().status,
        TaskStatus::Cancelled
    );
}

#[tokio::test]
async fn at_start_interrupted_work_is_resumed_or_left_for_the_person_as_set() {
    use pocketpilot_core::config::ResumeOnStart;
    let f = Fixture::new();
    let p = f.script("one.json", json!([{ "text": "resumed and answered" }]));
    let id =
        f.rt.call(ops::CreateTask {
            new: f.task("interrupted", &p),
        })
        .unwrap();
    // As if the process had died mid-run.
    f.rt.store_for_tests()
        .write(|tx| pocketpilot_core::store::tasks::set_status(tx, id, TaskStatus::Running))
        .unwrap();
    f.rt.call(ops::SetResumeOnStart {
        mode: ResumeOnStart::Ask,
    })
    .unwrap();
    let (waiting, resumed) = f.rt.call(ops::ResumeOnStart {}).unwrap();
    assert_eq!((waiting.len(), resumed), (1, false));
    // sleep: gives a wrongly resumed task time to start; that nothing resumes has no event to wait on.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        f.rt.call(ops::GetTask { id }).unwrap().status,
        TaskStatus::Running
    );

    f.rt.call(ops::SetResumeOnStart {
        mode: ResumeOnStart::Auto,
    })
    .unwrap();
    let (sessions, resumed) = f.rt.call(ops::ResumeOnStart {}).unwrap();
    assert_eq!((sessions.len(), resumed), (1, true));
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    let started = f.event(id, "task_started");
    assert_eq!(started.payload()["resumed"], true);
}

/// A worker frozen past its lease wakes to find another holder: each of its writes checks
/// the lease inside the write's own transaction, so nothing it records after the takeover
/// commits, however long it slept between its own check and the write.
#[tokio::test]
async fn a_write_of_a_run_whose_lease_moved_on_is_refused_inside_its_transaction() {
    use pocketpilot_core::engine::recorder::Claim;
    use pocketpilot_core::store::{leases, StoreError};
    let f = Fixture::new();
    let p = f.script("never.json", json!([{ "text": "unused" }]));
    let id =
        f.rt.call(ops::CreateTask {
            new: f.task("hold on", &p),
        })
        .unwrap();
    let session_id = f.rt.call(ops::GetTask { id }).unwrap().session_id;
    let pid = i64::from(std::process::id());
    f.rt.store_for_tests()
        .write(|tx| leases::acquire(tx, session_id, "old-holder", pid, 60_000).map(|_| ()))
        .unwrap();
    f.rt.recorder_for_tests().claim(
        id,
        Claim {
            session_id,
            holder: "old-holder".into(),
        },
    );
    let note = pocketpilot_core::RuntimeEvent::TaskCancelled {
        reason: "recorded by the holder".into(),
    };
    let before = f.kinds(id).len();
    // The takeover: the lease is someone else's now (the old holder's pid is alive, so
    // it is released first, as an expired lease would be).
    f.rt.store_for_tests()
        .write(|tx| {
            leases::release(tx, session_id, "old-holder")?;
            leases::acquire(tx, session_id, "new-holder", pid, 60_000).map(|_| ())
        })
        .unwrap();
    let refused = f.rt.recorder_for_tests().record(id, &note);
    assert!(
        matches!(refused, Err(StoreError::LeaseLost { session_id: s }) if s == session_id),
        "{refused:?}"
    );
    assert_eq!(f.kinds(id).len(), before, "nothing was recorded");
    // Without a claim (or with the holder's own), the same write commits: the refusal
    // came from the lease, not the event.
    f.rt.recorder_for_tests().release(id);
    f.rt.recorder_for_tests().record(id, &note).unwrap();
    assert_eq!(f.kinds(id).len(), before + 1);
}

#[tokio::test]
async fn a_failed_task_read_back_keeps_its_error_kind_and_sentence() {
    let f = Fixture::new();
    let bad_key = f.script(
        "auth.json",
        json!([{ "error": { "kind": "auth", "message": "401 invalid api key" } }]),
    );
    let failed = f.submit("say hi", &bad_key);
    assert_eq!(f.settle(failed).await, TaskStatus::Failed);
    let session = f.rt.call(ops::GetTask { id: failed }).unwrap().session_id;
    let fine = f.script("ok.json", json!([{ "text": "hi" }]));
    let ok =
        f.rt.call(ops::SubmitTask {
            new: (pocketpilot_core::api::service::NewTask {
                goal: "again".into(),
                session_id: Some(session),
                provider: Some(fine),
                ..Default::default()
            })
            .clone(),
        })
        .unwrap();
    assert_eq!(f.settle(ok).await, TaskStatus::Completed);

    let h =
        f.rt.call(ops::GetSessionHistory {
            session_id: session,
            tasks: 50,
        })
        .unwrap();
    assert_eq!(
        h.failures.len(),
        1,
        "only the failed task: {:?}",
        h.failures
    );
    let failure = &h.failures[0];
    assert_eq!(failure.task_id, failed);
    assert_eq!(failure.kind, pocketpilot_protocol::ErrorKind::ModelAuth);
    assert!(
        failure.summary.contains("did not accept the API key"),
        "{failure:?}"
    );
    assert!(failure.error.contains("401 invalid api key"), "{failure:?}");
}
