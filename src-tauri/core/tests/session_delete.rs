//! Deleting a session (issue 20): every row of it goes in one write, on a real SQLite file;
//! other sessions, triggers and memories keep theirs; an open task refuses it.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use pocketpilot_changes::BlobStore;
use pocketpilot_core::ops;
use pocketpilot_core::store::{leases, memories};
use pocketpilot_core::{ApprovalAnswer, NewTask, TaskStatus};
use pocketpilot_protocol::{Change, ErrorKind};
use pocketpilot_test_support::Fixture;
use serde_json::json;

/// The columns through which a row belongs to a session or to one of its tasks.
const OWNER_COLUMNS: &[&str] = &["session_id", "task_id", "last_task_id", "follow_up_of"];

/// Every table that has one of `OWNER_COLUMNS`, with those columns: read from the schema,
/// so a table added later is checked too.
fn owned_tables(f: &Fixture) -> BTreeMap<String, Vec<String>> {
    f.rt.store_for_tests()
        .read(|c| {
            let mut stmt =
                c.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")?;
            let names: Vec<String> = stmt
                .query_map([], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            let mut out = BTreeMap::new();
            for t in names {
                let mut cols = c.prepare(&format!("PRAGMA table_info({t})"))?;
                let cols: Vec<String> = cols
                    .query_map([], |r| r.get::<_, String>(1))?
                    .collect::<Result<_, _>>()?;
                let owners: Vec<String> = cols
                    .into_iter()
                    .filter(|c| OWNER_COLUMNS.contains(&c.as_str()))
                    .collect();
                if !owners.is_empty() {
                    out.insert(t, owners);
                }
            }
            Ok(out)
        })
        .unwrap()
}

/// Rows per table that belong to `session` (by its id or one of its tasks' ids).
fn rows_of(f: &Fixture, session: i64, tasks: &[i64]) -> BTreeMap<String, i64> {
    let ids = tasks
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let mut out = BTreeMap::new();
    for (table, cols) in owned_tables(f) {
        let clause = cols
            .iter()
            .map(|c| {
                if c == "session_id" {
                    format!("{c} = {session}")
                } else {
                    format!("{c} IN ({ids})")
                }
            })
            .collect::<Vec<_>>()
            .join(" OR ");
        let n: i64 =
            f.rt.store_for_tests()
                .read(|c| {
                    Ok(c.query_row(
                        &format!("SELECT count(*) FROM {table} WHERE {clause}"),
                        [],
                        |r| r.get(0),
                    )?)
                })
                .unwrap();
        out.insert(table, n);
    }
    let n: i64 =
        f.rt.store_for_tests()
            .read(|c| {
                Ok(c.query_row(
                    "SELECT count(*) FROM sessions WHERE id = ?1",
                    [session],
                    |r| r.get(0),
                )?)
            })
            .unwrap();
    out.insert("sessions".into(), n);
    out
}

fn count(f: &Fixture, sql: &str) -> i64 {
    f.rt.store_for_tests()
        .read(|c| Ok(c.query_row(sql, [], |r| r.get(0))?))
        .unwrap()
}

fn approve() -> ApprovalAnswer {
    ApprovalAnswer {
        approve: true,
        by: "test".into(),
        ..Default::default()
    }
}

/// Runs `goal` (in a new session unless `session` names one), approving every write.
async fn run_approving(f: &Fixture, new: NewTask) -> i64 {
    let id = f.rt.call(ops::SubmitTask { new: new.clone() }).unwrap();
    loop {
        match f.settle(id).await {
            TaskStatus::WaitingApproval => {
                let pending = f.rt.call(ops::PendingApprovals {}).unwrap();
                let a = pending.iter().find(|a| a.task_id == id).unwrap();
                f.answer(a.id, approve());
            }
            TaskStatus::Completed => return id,
            other => panic!("task {id} ended {other}"),
        }
    }
}

fn writes(f: &Fixture, name: &str, files: &[(&str, &str)]) -> String {
    let calls: Vec<_> = files
        .iter()
        .map(|(p, c)| json!({ "name": "write_file", "arguments": { "path": p, "content": c } }))
        .collect();
    f.script(
        name,
        // A declared window: the run keeps its context figures (`context_turns`).
        json!({ "context_window": 100000, "turns": [
            { "text": "Writing.", "tool_calls": calls, "usage": { "prompt_tokens": 100, "completion_tokens": 10 } },
            { "text": "Done.", "usage": { "prompt_tokens": 120, "completion_tokens": 5 } }
        ] }),
    )
}

/// A script for the next run of a session whose first run had two model turns (the
/// scripted model plays the turn after the answers already in the transcript).
fn later_reply(f: &Fixture, name: &str, text: &str) -> String {
    f.script(
        name,
        json!([{ "text": "-" }, { "text": "-" }, { "text": text }]),
    )
}

fn blob_path(f: &Fixture, file: &str) -> std::path::PathBuf {
    let hash = BlobStore::hash_file(&f.ws(file)).unwrap();
    BlobStore::open(f.data_dir.join("blobs"))
        .unwrap()
        .path_of(&hash)
        .unwrap()
}

/// Kept contents are spared for an hour after they were kept (a snapshot in progress may
/// name them next); these are made to look older, as after a real session's life.
fn age_blobs(f: &Fixture) {
    let old = SystemTime::now() - Duration::from_secs(2 * 3600);
    for (name, _, _) in BlobStore::open(f.data_dir.join("blobs"))
        .unwrap()
        .list()
        .unwrap()
    {
        let p = f.data_dir.join("blobs").join(&name[..2]).join(&name[2..]);
        std::fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
}

#[tokio::test]
async fn deleting_a_session_removes_every_row_and_blob_of_it_and_nothing_else() {
    let f = Fixture::new();
    // Session A writes a file of its own and one whose content session B also keeps.
    let a_script = writes(
        &f,
        "a.json",
        &[("only-a.txt", "only in a\n"), ("shared-a.txt", "shared\n")],
    );
    let a1 = run_approving(&f, f.task("Write two files", &a_script)).await;
    let a = f.rt.call(ops::GetTask { id: a1 }).unwrap().session_id;
    let mut follow = f.task("Once more", &later_reply(&f, "a2.json", "Again."));
    follow.session_id = Some(a);
    follow.workspace = None;
    follow.follow_up_of = Some(a1); // a link inside the session, deleted with it
    let a2 = run_approving(&f, follow).await;
    // Session B follows up a task of A's and keeps the shared content too.
    let b_script = writes(&f, "b.json", &[("shared-b.txt", "shared\n")]);
    let mut b_new = f.task("Write the shared file", &b_script);
    b_new.follow_up_of = Some(a1);
    let b1 = run_approving(&f, b_new).await;
    let b = f.rt.call(ops::GetTask { id: b1 }).unwrap().session_id;
    assert_ne!(a, b);
    let only_a = blob_path(&f, "only-a.txt");
    let shared = blob_path(&f, "shared-b.txt");
    assert!(only_a.is_file() && shared.is_file());

    // Rows elsewhere that point at A's tasks: a schedule's and a watch's last run, a
    // trigger run, a memory the person kept; and a lease A's worker left behind.
    let ws = f.workspace.display().to_string();
    f.rt.store_for_tests()
        .write(|c| {
            c.execute(
                "INSERT INTO schedules (expr, workspace, goal, last_task_id, created_at) VALUES ('@daily', ?1, 'tidy', ?2, '2026-01-01T00:00:00Z')",
                (&ws, a1),
            )?;
            c.execute(
                "INSERT INTO watches (pattern, workspace, goal, last_task_id, created_at) VALUES ('*.md', ?1, 'read', ?2, '2026-01-01T00:00:00Z')",
                (&ws, a2),
            )?;
            c.execute(
                "INSERT INTO trigger_runs (kind, trigger_id, outcome, task_id, at) VALUES ('cron', 1, 'fired', ?1, '2026-01-01T00:00:00Z')",
                [a1],
            )?;
            memories::add(c, pocketpilot_protocol::MemoryScope::Workspace, Some(&ws), "use tabs", Some(a1))?;
            leases::acquire(c, a, "gone-process", 999_999_999, 1)?;
            Ok(())
        })
        .unwrap();

    let a_tasks = [a1, a2];
    let before_a = rows_of(&f, a, &a_tasks);
    for table in [
        "sessions",
        "tasks",
        "task_events",
        "entries",
        "submissions",
        "tool_calls",
        "approvals",
        "context_turns",
        "turn_costs",
        "change_sets",
        "session_leases",
        "schedules",
        "watches",
        "trigger_runs",
        "memories",
    ] {
        assert!(
            before_a[table] > 0,
            "the fixture has no {table} row of session A: {before_a:?}"
        );
    }
    let before_b = rows_of(&f, b, &[b1]);
    age_blobs(&f);

    let mut feed = f.rt.call(ops::WatchFeed {});
    let deleted = f.rt.call(ops::DeleteSession { session_id: a }).unwrap();
    // The window hears of it through the change feed.
    let heard = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(c) = feed.next().await {
            if c == (Change::SessionDeleted { session_id: a }) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(heard.ok(), Some(true), "no session_deleted change");
    assert_eq!(deleted.session.id, a);
    assert_eq!(deleted.tasks, 2);
    assert!(deleted.blobs >= 1, "{deleted:?}");

    let after_a = rows_of(&f, a, &a_tasks);
    assert!(
        after_a.values().all(|n| *n == 0),
        "rows of the deleted session remain: {after_a:?}"
    );
    assert_eq!(
        rows_of(&f, b, &[b1]),
        before_b,
        "session B lost or gained rows"
    );
    assert_eq!(
        f.rt.call(ops::GetSession { session_id: a })
            .unwrap_err()
            .kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        f.rt.call(ops::GetTask { id: a1 }).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    let listed: Vec<i64> =
        f.rt.call(ops::ListSessions {})
            .unwrap()
            .iter()
            .map(|s| s.id)
            .collect();
    assert_eq!(listed, vec![b]);
    // B's follow-up link is cut; the triggers and the memory stay, only without A's task.
    assert_eq!(
        f.rt.call(ops::GetTask { id: b1 }).unwrap().follow_up_of,
        None
    );
    assert_eq!(
        count(
            &f,
            "SELECT count(*) FROM schedules WHERE last_task_id IS NULL"
        ),
        1
    );
    assert_eq!(
        count(
            &f,
            "SELECT count(*) FROM watches WHERE last_task_id IS NULL"
        ),
        1
    );
    assert_eq!(
        count(
            &f,
            "SELECT count(*) FROM trigger_runs WHERE task_id IS NULL"
        ),
        1
    );
    assert_eq!(
        count(
            &f,
            "SELECT count(*) FROM memories WHERE text = 'use tabs' AND task_id IS NULL"
        ),
        1
    );
    // The content only A kept is gone; the content B still names stays.
    assert!(
        !only_a.exists(),
        "a blob only the deleted session named is still kept"
    );
    assert!(shared.is_file(), "a blob another session names was removed");
    // B is whole: its change can still be reviewed and its session runs on.
    assert_eq!(
        f.rt.call(ops::SessionTasks { session_id: b })
            .unwrap()
            .len(),
        1
    );
    let mut more = f.task("Carry on", &later_reply(&f, "b2.json", "On."));
    more.session_id = Some(b);
    more.workspace = None;
    run_approving(&f, more).await;
    // The workspace takes new sessions, as a trigger's next run would start one.
    run_approving(
        &f,
        f.task(
            "Fresh start",
            &f.script("c.json", json!([{ "text": "New." }])),
        ),
    )
    .await;
    assert_eq!(f.rt.call(ops::ListSessions {}).unwrap().len(), 2);
    assert_eq!(
        count(&f, "SELECT count(*) FROM pragma_foreign_key_check"),
        0,
        "the delete left a dangling reference"
    );
}

#[tokio::test]
async fn a_session_with_an_open_task_is_refused_and_loses_nothing() {
    let f = Fixture::new();
    let script = writes(&f, "w.json", &[("w.txt", "w\n")]);
    let waiting = f.submit("Write w", &script);
    assert_eq!(f.settle(waiting).await, TaskStatus::WaitingApproval);
    let session = f.rt.call(ops::GetTask { id: waiting }).unwrap().session_id;
    let before = rows_of(&f, session, &[waiting]);

    let err =
        f.rt.call(ops::DeleteSession {
            session_id: session,
        })
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::SessionActive);
    let text = err.to_string();
    assert!(
        text.contains(&format!("task {waiting} is waiting for an approval"))
            && text.contains("stop"),
        "{text}"
    );
    assert_eq!(rows_of(&f, session, &[waiting]), before);

    // A queued task (created, not started) refuses it too.
    let idle = f.submit("Say hi", &f.script("hi.json", json!([{ "text": "Hi." }])));
    assert_eq!(f.settle(idle).await, TaskStatus::Completed);
    let other = f.rt.call(ops::GetTask { id: idle }).unwrap().session_id;
    let mut queued = f.task("Again", &f.script("hi2.json", json!([{ "text": "Hi." }])));
    queued.session_id = Some(other);
    queued.workspace = None;
    let q =
        f.rt.call(ops::CreateTask {
            new: queued.clone(),
        })
        .unwrap();
    assert_eq!(
        f.rt.call(ops::DeleteSession { session_id: other })
            .unwrap_err()
            .kind(),
        ErrorKind::SessionActive
    );
    f.rt.call(ops::CancelTask { task_id: q }).unwrap();
    f.rt.call(ops::DeleteSession { session_id: other }).unwrap();

    // Stopped, the first one can go.
    f.rt.call(ops::CancelTask { task_id: waiting }).unwrap();
    assert_eq!(f.settle(waiting).await, TaskStatus::Cancelled);
    f.rt.call(ops::DeleteSession {
        session_id: session,
    })
    .unwrap();
    assert!(rows_of(&f, session, &[waiting]).values().all(|n| *n == 0));
    assert!(f.rt.call(ops::ListSessions {}).unwrap().is_empty());
    assert_eq!(
        f.rt.call(ops::DeleteSession {
            session_id: session
        })
        .unwrap_err()
        .kind(),
        ErrorKind::NotFound
    );
}
