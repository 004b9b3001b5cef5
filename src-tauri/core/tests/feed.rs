//! The change feed the window follows: this process's inbox changes are announced, and a
//! commit by another process sharing the data directory (the CLI) arrives as `Refresh`,
//! and this process's own commits never do.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::time::Duration;

use pocketpilot_core::engine::feed::{Change, Changes};
use pocketpilot_core::engine::inbox::{Say, Submit, WhenBusy};
use pocketpilot_core::engine::watch::FALLBACK_POLL;
use pocketpilot_core::ops;
use pocketpilot_core::Runtime;
use pocketpilot_test_support::Fixture;

fn said(session_id: i64, text: &str) -> Submit {
    Submit {
        session_id,
        say: Say::Input {
            text: text.into(),
            when_busy: WhenBusy::FollowUp,
            reject_if_idle: false,
        },
        request_id: None,
        provider: None,
        trigger: Some(pocketpilot_protocol::RunSource::Cli),
        grants: Vec::new(),
        mcp: None,
    }
}

/// The first change `pick` accepts, within 5 s.
async fn first(changes: &mut Changes, pick: impl Fn(&Change) -> bool) -> Change {
    tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            let c = changes.next().await.expect("the feed ended");
            if pick(&c) {
                return c;
            }
        }
    })
    .await
    .expect("no such change within 5 s")
}

#[tokio::test]
async fn a_say_here_is_announced_and_a_say_from_another_process_arrives_as_a_refresh() {
    let f = Fixture::new();
    // A queued task (no run in this process) keeps the session busy: says are queued.
    let task =
        f.rt.call(ops::CreateTask {
            new: f.task("first", "scripted:/nowhere"),
        })
        .unwrap();
    let session = f.rt.call(ops::GetTask { id: task }).unwrap().session_id;
    let mut changes = f.rt.call(ops::WatchFeed {});

    f.say(said(session, "from the window")).unwrap();
    let c = first(&mut changes, |c| matches!(c, Change::Inbox { .. })).await;
    assert_eq!(
        c,
        Change::Inbox {
            session_id: session
        }
    );

    // This process's own commits never cost the window a full re-read: more says here,
    // and no `Refresh` over two looks at the store.
    for i in 0..5 {
        f.say(said(session, &format!("again {i}"))).unwrap();
    }
    // sleep: a quiet window (two of the watcher's fallback looks) in which no Refresh may come; absence has no event to wait on.
    let quiet = tokio::time::sleep(FALLBACK_POLL * 2 + Duration::from_millis(200));
    tokio::pin!(quiet);
    loop {
        tokio::select! {
            _ = &mut quiet => break,
            c = changes.next() => assert_ne!(c.expect("the feed ended"), Change::Refresh),
        }
    }

    // "The CLI", another process with its own store, writes: the window is told.
    let cli = Runtime::open(&f.data_dir).unwrap();
    cli.call(ops::Say {
        submit: said(session, "from the CLI"),
    })
    .unwrap();
    assert_eq!(first(&mut changes, |_| true).await, Change::Refresh);
    assert_eq!(
        f.rt.call(ops::GetInbox {
            session_id: session
        })
        .unwrap()
        .len(),
        7
    );
}

#[tokio::test]
async fn a_task_change_names_its_session() {
    let f = Fixture::new();
    let mut changes = f.rt.call(ops::WatchFeed {});
    let task =
        f.rt.call(ops::CreateTask {
            new: f.task("first", "scripted:/nowhere"),
        })
        .unwrap();
    let session = f.rt.call(ops::GetTask { id: task }).unwrap().session_id;
    let c = first(&mut changes, |c| matches!(c, Change::Task { .. })).await;
    assert!(matches!(
        c,
        Change::Task { task_id, session_id: Some(s), .. } if task_id == task && s == session
    ));
}
