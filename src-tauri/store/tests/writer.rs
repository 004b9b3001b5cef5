//! The writer's group commit, against real SQLite files.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use pocketpilot_protocol::{RunSource, RuntimeEvent};
use pocketpilot_store::{events, sessions, tasks, Store, StoreError};

fn open() -> (tempfile::TempDir, Arc<Store>) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open_in_dir(dir.path()).unwrap());
    (dir, store)
}

fn new_task(store: &Store) -> i64 {
    store
        .write(|tx| {
            let s = sessions::insert(tx, "s", "/w")?;
            tasks::insert(
                tx,
                &tasks::NewTask {
                    session_id: s,
                    goal: "g",
                    trigger: RunSource::Cli,
                    provider: None,
                    follow_up_of: None,
                    grants: &[],
                    mcp: &[],
                },
            )
        })
        .unwrap()
}

fn turn(step: u32) -> RuntimeEvent {
    RuntimeEvent::ModelTurnStarted { step }
}

/// Holds the writer thread inside a write until the returned sender is used (or dropped),
/// so that what is submitted meanwhile queues up for the next group.
fn hold_writer(store: &Store) -> (mpsc::Sender<()>, impl std::future::Future<Output = ()>) {
    let (entered_tx, entered_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let gate = store.write_async(move |_tx| {
        let _ = entered_tx.send(());
        let _ = release_rx.recv();
        Ok::<_, StoreError>(())
    });
    entered_rx.recv().unwrap();
    (release_tx, async move { gate.await.unwrap() })
}

fn wait_queued(store: &Store, n: usize) {
    while store.writer_stats().queued < n {
        // sleep: the poll interval of the wait for the writer's queue (its stats have no notification).
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn titles(store: &Store) -> BTreeSet<String> {
    store
        .read(|c| Ok(sessions::list(c)?.into_iter().map(|s| s.title).collect()))
        .unwrap()
}

#[test]
fn writes_ready_together_from_many_threads_commit_as_one_group() {
    let (_dir, store) = open();
    let task = new_task(&store);
    let (release, gate) = hold_writer(&store);
    let before = store.writer_stats();
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let store = store.clone();
            std::thread::spawn(move || {
                store.write_queued(move |tx| events::append(tx, task, &turn(i)), |_| {})
            })
        })
        .collect();
    wait_queued(&store, 8);
    drop(release);
    futures_lite_block_on(gate);
    let mut sequences: Vec<i64> = threads
        .into_iter()
        .map(|t| t.join().unwrap().unwrap().sequence)
        .collect();
    sequences.sort();
    assert_eq!(sequences, (1..=8).collect::<Vec<_>>());
    let after = store.writer_stats();
    // The held write's group, then one group for the eight: two commits, two fsyncs.
    assert_eq!(after.groups - before.groups, 2, "{before:?} → {after:?}");
    assert_eq!(after.writes - before.writes, 9);
}

#[test]
fn sequences_stay_gapless_under_concurrent_writers() {
    let (_dir, store) = open();
    let tasks = [new_task(&store), new_task(&store)];
    let before = store.writer_stats();
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let store = store.clone();
            std::thread::spawn(move || {
                for n in 0..100u32 {
                    let task = tasks[(i + n as usize) % 2];
                    if n % 2 == 0 {
                        store
                            .write_queued(move |tx| events::append(tx, task, &turn(n)), |_| {})
                            .unwrap();
                    } else {
                        // The borrowed, on-this-thread path shares the sequence too.
                        let ev = turn(n);
                        store.write(|tx| events::append(tx, task, &ev)).unwrap();
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    for task in tasks {
        let seqs: Vec<i64> = store
            .read(|c| events::list_after(c, task, 0))
            .unwrap()
            .iter()
            .map(|e| e.sequence)
            .collect();
        assert_eq!(seqs, (1..=400).collect::<Vec<_>>(), "task {task}");
    }
    let after = store.writer_stats();
    assert_eq!(after.writes - before.writes, 800);
}

#[test]
fn one_failing_closure_rolls_back_only_its_own_part_of_the_group() {
    let (_dir, store) = open();
    let (release, gate) = hold_writer(&store);
    let before = store.writer_stats();
    let a = store.write_async(|tx| sessions::insert(tx, "a", "/w"));
    let b = store.write_async(|tx| {
        sessions::insert(tx, "b", "/w")?;
        Err::<i64, _>(StoreError::Invalid("b changed its mind".into()))
    });
    let c = store.write_async(|tx| sessions::insert(tx, "c", "/w"));
    drop(release);
    futures_lite_block_on(gate);
    assert!(futures_lite_block_on(a).is_ok());
    let err = futures_lite_block_on(b).unwrap_err();
    assert!(matches!(err, StoreError::Invalid(_)), "{err}");
    assert!(futures_lite_block_on(c).is_ok());
    assert_eq!(
        titles(&store),
        ["a", "c"].into_iter().map(String::from).collect()
    );
    let after = store.writer_stats();
    assert_eq!(after.groups - before.groups, 2, "a, b and c were one group");
}

#[test]
fn a_reader_never_sees_part_of_a_group() {
    let (_dir, store) = open();
    let (release, gate) = hold_writer(&store);
    let (inside_tx, inside_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let first = store.write_async(|tx| sessions::insert(tx, "first", "/w"));
    let second = store.write_async(move |tx| {
        let id = sessions::insert(tx, "second", "/w")?;
        // "first" is written (in this group, not yet committed): let the reader look.
        let _ = inside_tx.send(());
        let _ = go_rx.recv();
        Ok::<_, StoreError>(id)
    });
    drop(release);
    futures_lite_block_on(gate);
    inside_rx.recv().unwrap();
    assert!(titles(&store).is_empty(), "half a group was visible");
    drop(go_tx);
    futures_lite_block_on(first).unwrap();
    futures_lite_block_on(second).unwrap();
    assert_eq!(
        titles(&store),
        ["first", "second"].into_iter().map(String::from).collect()
    );
}

#[test]
fn a_full_database_is_an_error_and_loses_nothing_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_dir(dir.path()).unwrap();
    let mut acked = Vec::new();
    for i in 0..20 {
        acked.push(
            store
                .write(|tx| sessions::insert(tx, &format!("kept {i}"), "/w"))
                .unwrap(),
        );
    }
    // What a full disk does to SQLite (SQLITE_FULL), without filling one: the file may
    // not grow by another page.
    store
        .write(|tx| {
            let pages: i64 = tx.query_row("PRAGMA page_count", [], |r| r.get(0))?;
            tx.query_row(&format!("PRAGMA max_page_count = {pages}"), [], |_| Ok(()))?;
            Ok(())
        })
        .unwrap();
    let big = "x".repeat(1 << 20);
    let mut outcomes = Vec::new();
    for i in 0..10 {
        let title = if i % 3 == 0 {
            big.clone()
        } else {
            format!("new {i}")
        };
        outcomes.push((
            title.clone(),
            store.write_async(move |tx| sessions::insert(tx, &title, "/w")),
        ));
    }
    let mut refused = 0;
    for (title, fut) in outcomes {
        match futures_lite_block_on(fut) {
            Ok(id) => acked.push(id),
            Err(e) => {
                refused += 1;
                assert!(
                    title.len() > 100 || matches!(e, StoreError::NotCommitted(_)),
                    "{e}"
                );
            }
        }
    }
    assert!(
        refused >= 4,
        "the large writes did not fit: {refused} refused"
    );
    drop(store);
    // Everything acknowledged is on disk, read back by a fresh process' worth of store.
    let again = Store::open_in_dir(dir.path()).unwrap();
    for id in &acked {
        again.read(|c| sessions::get(c, *id)).unwrap();
    }
    // And the store still writes once there is room (max_page_count is per connection).
    again.write(|tx| sessions::insert(tx, &big, "/w")).unwrap();
}

#[test]
fn an_async_write_does_not_block_a_current_thread_runtime() {
    let (_dir, store) = open();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let ticks = Arc::new(AtomicUsize::new(0));
    rt.block_on(async {
        let t = ticks.clone();
        let ticker = tokio::spawn(async move {
            loop {
                // sleep: the ticker is the runtime's heartbeat: it ticks only while the runtime is not blocked.
                tokio::time::sleep(Duration::from_millis(1)).await;
                t.fetch_add(1, Ordering::SeqCst);
            }
        });
        tokio::task::yield_now().await;
        let t = ticks.clone();
        // The write waits (like a long fsync) until the runtime's timer has ticked: were the
        // write holding the runtime's only thread, the timer could never fire.
        let seen = store
            .write_async(move |_tx| {
                let start = t.load(Ordering::SeqCst);
                for _ in 0..10_000 {
                    if t.load(Ordering::SeqCst) >= start + 5 {
                        return Ok(true);
                    }
                    // sleep: the write holds the writer thread for real time, during which the ticker must go on ticking.
                    std::thread::sleep(Duration::from_millis(1));
                }
                Ok::<_, StoreError>(false)
            })
            .await
            .unwrap();
        ticker.abort();
        assert!(seen, "the runtime stood still while the write waited");
    });
}

#[test]
fn after_commit_hooks_see_the_commit_and_run_in_commit_order() {
    let (_dir, store) = open();
    let task = new_task(&store);
    let (seen_tx, seen_rx) = mpsc::channel();
    let mut futs = Vec::new();
    for i in 0..50 {
        let reader = store.clone();
        let seen = seen_tx.clone();
        futs.push(store.write_async_then(
            move |tx| events::append(tx, task, &turn(i)),
            move |ev| {
                let committed = reader.read(|c| events::list_after(c, task, ev.sequence - 1));
                let _ = seen.send((ev.sequence, committed.map(|v| v.len()).unwrap_or(0)));
            },
        ));
    }
    for f in futs {
        futures_lite_block_on(f).unwrap();
    }
    drop(seen_tx);
    let seen: Vec<(i64, usize)> = seen_rx.iter().collect();
    let order: Vec<i64> = seen.iter().map(|s| s.0).collect();
    assert_eq!(
        order,
        (1..=50).collect::<Vec<_>>(),
        "hooks out of commit order"
    );
    assert!(
        seen.iter().all(|s| s.1 >= 1),
        "a hook ran before its commit was visible"
    );
}

/// Waits for a future on this thread (the store's futures need no runtime).
fn futures_lite_block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}
