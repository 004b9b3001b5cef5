//! One conversation per run (issue 26): a run reads its session once and keeps the view,
//! extended as entries are committed. Here every request of real scripted sessions (a
//! 4,096-token window, so they compact) has its kept view compared with a fresh read of
//! the store, the way each request was made before: follow-ups, a steer placed mid-run, a
//! rewind, compactions, a call answered by a person, and calls left open by a crash.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::sync::Arc;
use std::time::Duration;

use pocketpilot_core::engine::context::checks;
use pocketpilot_core::engine::inbox::{Say, Submit, WhenBusy};
use pocketpilot_core::ops;
use pocketpilot_core::store::{entries, leases};
use pocketpilot_core::{ApprovalAnswer, NewTask, Runtime, TaskStatus};
use pocketpilot_protocol::{Capability, EntryKind};
use pocketpilot_test_support::Fixture;
use serde_json::{json, Value};

/// A long answer, so that a few turns fill the window.
fn long(what: &str) -> String {
    format!(
        "{what}: {}",
        "the quick brown fox jumps over the lazy dog; ".repeat(20)
    )
}

/// Turns that alternate: a call to the tools (a file read, and a command that takes a
/// moment so a steer can arrive during it), then an answer. A later task picks up where
/// the transcript stands, so some tasks call tools and some answer at once.
fn script(turns: usize) -> Value {
    let turns: Vec<Value> = (0..turns)
        .map(|i| match i % 2 {
            0 => json!({ "text": long(&format!("looking {i}")), "tool_calls": [
                { "name": "read_file", "arguments": { "path": "notes.txt" } },
                { "name": "run_command", "arguments": { "command": "sleep 0.3" } } ] }),
            _ => json!({ "text": long(&format!("answer {i}")) }),
        })
        .collect();
    json!({ "context_window": 4096, "repeat_last": true, "turns": turns,
            "summary": { "text": "Earlier: files read and questions answered about a fox." } })
}

fn task(f: &Fixture, goal: &str, provider: &str, session: Option<i64>) -> NewTask {
    NewTask {
        session_id: session,
        grants: vec![Capability::SHELL_EXECUTE],
        ..f.task(goal, provider)
    }
}

/// Every request of `session` so far was compared and none differed; how many there were.
fn all_compared_equal(rt: &Arc<Runtime>, session: i64) -> u64 {
    let found = checks::found(rt.store_for_tests().path(), session);
    assert!(
        found.differing.is_empty(),
        "{}",
        found.differing.join("\n\n")
    );
    found.compared
}

/// Waits for the first event of `kind` in `task`.
async fn until_event(rt: &Arc<Runtime>, task: i64, kind: &str) {
    let mut sub = rt
        .call(ops::SubscribeTask {
            task_id: task,
            after_sequence: 0,
        })
        .unwrap();
    let seen = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(ev) = sub.next().await {
            if ev.unwrap().kind().as_str() == kind {
                return true;
            }
        }
        false
    })
    .await
    .expect("the event came within 30 s");
    assert!(seen, "task {task} ended without {kind}");
}

/// Waits for the first model turn after a steer was placed (at `post_tools`) in `task`.
async fn until_steer_answered(rt: &Arc<Runtime>, task: i64) {
    let mut sub = rt
        .call(ops::SubscribeTask {
            task_id: task,
            after_sequence: 0,
        })
        .unwrap();
    let mut placed = false;
    let answered = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(ev) = sub.next().await {
            let ev = ev.unwrap();
            match ev.kind().as_str() {
                "input_placed" if ev.payload()["boundary"] != "final" => placed = true,
                "model_turn_completed" if placed => return true,
                _ => {}
            }
        }
        false
    })
    .await
    .expect("the steer was answered within 30 s");
    assert!(answered, "task {task} ended before answering the steer");
}

#[tokio::test]
async fn follow_ups_a_steer_compactions_and_a_rewind_keep_the_view_of_a_fresh_read() {
    checks::compare_every_request();
    let f = Fixture::new();
    std::fs::write(f.ws("notes.txt"), long("notes").repeat(3)).unwrap();
    let p = f.script("s.json", script(400));
    let first =
        f.rt.call(ops::SubmitTask {
            new: task(&f, "Goal one", &p, None),
        })
        .unwrap();
    let session = f.rt.call(ops::GetTask { id: first }).unwrap().session_id;
    assert_eq!(f.settle(first).await, TaskStatus::Completed);
    // A run that only calls tools, until the person stops it.
    let tools_only = f.script(
        "t.json",
        json!({ "context_window": 4096, "repeat_last": true, "turns": [ script(1)["turns"][0] ] }),
    );
    let mut goals = Vec::new();
    for i in 2..=10 {
        let p = if i == 4 { &tools_only } else { &p };
        let id = f.rt.call(ops::SubmitTask {
            new: task(&f, &format!("Question {i}"), p, Some(session)),
        });
        let id = id.unwrap();
        if i == 4 {
            // A steer while the run's command runs: placed after the tools, mid-run.
            until_event(&f.rt, id, "tool_call_started").await;
            f.rt.call(ops::Say {
                submit: Submit {
                    session_id: session,
                    say: Say::Input {
                        text: "A steer: keep it short.".into(),
                        when_busy: WhenBusy::Steer,
                        reject_if_idle: false,
                    },
                    request_id: None,
                    provider: None,
                    trigger: None,
                    grants: Vec::new(),
                    mcp: None,
                },
            })
            .unwrap();
            // The steer is answered by the run's next request; then the person stops it.
            until_steer_answered(&f.rt, id).await;
            f.rt.call(ops::CancelTask { task_id: id }).unwrap();
            f.settle(id).await;
        }
        let settled = f.settle(id).await;
        assert!(settled.is_terminal() || i == 4, "{settled:?}");
        goals.push(id);
        if i == 7 {
            // Back to before question 6: its turns are set aside, never sent again.
            let at =
                f.rt.call(ops::SessionEntries {
                    session_id: session,
                })
                .unwrap()
                .into_iter();
            let at = at
                .filter(|e| e.kind == EntryKind::User && e.task_id == Some(goals[4]))
                .map(|e| e.id)
                .next()
                .unwrap();
            f.rt.call(ops::Rewind {
                session_id: session,
                to_entry: at,
                opts: Default::default(),
            })
            .unwrap();
        }
    }
    let stored =
        f.rt.call(ops::SessionEntries {
            session_id: session,
        })
        .unwrap();
    let steered = stored
        .iter()
        .any(|e| e.kind == EntryKind::User && e.content["text"] == "A steer: keep it short.");
    assert!(steered, "the steer joined the conversation");
    assert!(
        stored.iter().any(|e| e.rewound_by.is_some()),
        "the rewind set turns aside"
    );
    let compactions =
        f.rt.call(ops::ListCompactions {
            session_id: session,
        })
        .unwrap()
        .len();
    assert!(compactions >= 1, "the session never compacted");
    let requests =
        f.rt.call(ops::ContextTurns {
            session_id: session,
        })
        .unwrap()
        .len() as u64;
    // At least one per task, more where tools were called.
    assert!(requests > 10, "{requests} requests");
    assert_eq!(all_compared_equal(&f.rt, session), requests);
}

#[tokio::test]
async fn a_call_answered_by_a_person_is_finished_on_the_kept_view() {
    checks::compare_every_request();
    let f = Fixture::new();
    let p = f.script(
        "w.json",
        json!({ "context_window": 4096, "turns": [
            { "text": "Writing.", "tool_calls": [
                { "name": "write_file", "arguments": { "path": "a.txt", "content": "hi\n" } },
                { "name": "read_file", "arguments": { "path": "a.txt" } } ] },
            { "text": "Done." } ] }),
    );
    let id = f.submit("write a.txt", &p);
    assert_eq!(f.settle(id).await, TaskStatus::WaitingApproval);
    let a = f.rt.call(ops::PendingApprovals {}).unwrap().remove(0);
    let yes = ApprovalAnswer {
        approve: true,
        by: "test".into(),
        ..Default::default()
    };
    f.answer(a.id, yes);
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    let session = f.rt.call(ops::GetTask { id }).unwrap().session_id;
    // The approved write, then the read it was left with, each answered once.
    let results: Vec<String> =
        f.rt.call(ops::SessionEntries {
            session_id: session,
        })
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == EntryKind::ToolResult)
        .map(|e| e.content["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results[1].contains("hi"), "{results:?}");
    assert_eq!(all_compared_equal(&f.rt, session), 2);
}

/// A process that dies during a command leaves the call open (started in the journal,
/// no result) and its session's lease behind. Here the process is a tokio runtime shut
/// down mid-call, and the lease row it left is removed as a dead holder's would be
/// passed over; a second runtime on the same data directory resumes the session.
#[test]
fn calls_left_open_by_a_crash_are_finished_on_the_kept_view() {
    checks::compare_every_request();
    let f = Fixture::new();
    let p = f.script(
        "c.json",
        json!({ "context_window": 4096, "turns": [
            { "text": "Reading.", "tool_calls": [
                { "name": "read_file", "arguments": { "path": "notes.txt" } },
                { "name": "run_command", "arguments": { "command": "sleep 5" } },
                { "name": "read_file", "arguments": { "path": "notes.txt" } } ] },
            { "text": "Done after the crash." } ] }),
    );
    std::fs::write(f.ws("notes.txt"), "some notes\n").unwrap();
    let crashed = tokio::runtime::Runtime::new().unwrap();
    let id = crashed.block_on(async {
        let id =
            f.rt.call(ops::SubmitTask {
                new: task(&f, "read then wait", &p, None),
            })
            .unwrap();
        // The command is the second call: the crash comes once it has started.
        let mut sub =
            f.rt.call(ops::SubscribeTask {
                task_id: id,
                after_sequence: 0,
            })
            .unwrap();
        let mut started = 0;
        while started < 2 {
            let ev = sub.next().await.unwrap().unwrap();
            started += usize::from(ev.kind().as_str() == "tool_call_started");
        }
        id
    });
    crashed.shutdown_background();
    let session = f.rt.call(ops::GetTask { id }).unwrap().session_id;
    assert_eq!(
        f.rt.call(ops::GetTask { id }).unwrap().status,
        TaskStatus::Running
    );
    f.rt.store_for_tests()
        .write(|c| {
            let (holder, _) = leases::holder(c, session)?.expect("the crashed run's lease");
            leases::release(c, session, &holder)
        })
        .unwrap();
    let resumed = tokio::runtime::Runtime::new().unwrap();
    resumed.block_on(async {
        let rt = Runtime::open(&f.data_dir).unwrap();
        assert_eq!(rt.call(ops::ResumeAll {}).unwrap(), [session]);
        let settled = tokio::time::timeout(
            Duration::from_secs(30),
            rt.call(ops::WaitSettled { task_id: id }),
        );
        assert_eq!(settled.await.unwrap().unwrap(), TaskStatus::Completed);
        let stored = rt
            .store_for_tests()
            .read(|c| entries::list(c, session))
            .unwrap()
            .into_iter()
            .filter(|e| e.kind == EntryKind::ToolResult)
            .count();
        assert_eq!(stored, 3, "each open call answered once");
    });
    // The request before the crash, and the one after.
    assert_eq!(all_compared_equal(&f.rt, session), 2);
}
