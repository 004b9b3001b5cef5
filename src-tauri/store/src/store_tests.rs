use super::*;
use pocketpilot_protocol::{Capability, RunSource, SessionMode, WireName};

fn temp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[test]
fn opens_migrates_and_reopens() {
    let dir = temp();
    let store = Store::open_in_dir(dir.path()).unwrap();
    let version: i64 = store
        .read(|c| Ok(c.query_row("PRAGMA user_version", [], |r| r.get(0))?))
        .unwrap();
    assert_eq!(version, schema::MIGRATIONS.len() as i64);
    let mode: String = store
        .read(|c| Ok(c.query_row("PRAGMA journal_mode", [], |r| r.get(0))?))
        .unwrap();
    assert_eq!(mode, "wal");
    let fk: i64 = store
        .read(|c| Ok(c.query_row("PRAGMA foreign_keys", [], |r| r.get(0))?))
        .unwrap();
    assert_eq!(fk, 1);
    let id = store.write(|tx| sessions::insert(tx, "t", "/w")).unwrap();
    drop(store);
    let again = Store::open_in_dir(dir.path()).unwrap();
    assert_eq!(again.read(|c| sessions::get(c, id)).unwrap().title, "t");
}

#[test]
fn a_file_that_is_not_a_database_is_reported_and_left_alone() {
    let dir = temp();
    let path = dir.path().join(DB_FILE);
    let garbage = b"this is not sqlite at all, just some bytes that happen to be here".repeat(100);
    std::fs::write(&path, &garbage).unwrap();
    let err = Store::open_in_dir(dir.path()).err().expect("must refuse");
    assert!(matches!(err, StoreError::Damaged { .. }), "{err}");
    assert!(
        err.to_string().contains("Nothing was written to it"),
        "{err}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), garbage);
}

#[test]
fn a_newer_schema_is_refused_untouched() {
    let dir = temp();
    let path = dir.path().join(DB_FILE);
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch("CREATE TABLE future (x); PRAGMA user_version = 99;")
            .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let err = Store::open_in_dir(dir.path()).err().expect("must refuse");
    assert!(
        matches!(err, StoreError::NewerSchema { found: 99, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("newer PocketPilot"));
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn an_unwritable_data_directory_is_a_clear_error() {
    let dir = temp();
    let file = dir.path().join("plain-file");
    std::fs::write(&file, "x").unwrap();
    // A data directory below a regular file can never be created, even as root.
    let err = Store::open_in_dir(&file.join("data"))
        .err()
        .expect("must fail");
    assert!(matches!(err, StoreError::DataDir { .. }), "{err}");
    assert!(err.to_string().contains("not usable"));
}

#[test]
fn event_sequences_are_gapless_per_task() {
    let dir = temp();
    let store = Store::open_in_dir(dir.path()).unwrap();
    let (a, b) = store
        .write(|tx| {
            let s = sessions::insert(tx, "s", "/w")?;
            let new = |goal| tasks::NewTask {
                session_id: s,
                goal,
                trigger: RunSource::Cli,
                provider: None,
                follow_up_of: None,
                grants: &[],
                mcp: &[],
            };
            Ok((tasks::insert(tx, &new("a"))?, tasks::insert(tx, &new("b"))?))
        })
        .unwrap();
    for i in 0..50 {
        let task = if i % 3 == 0 { b } else { a };
        store
            .write(|tx| {
                let ev = pocketpilot_protocol::RuntimeEvent::ModelTurnStarted { step: i };
                events::append(tx, task, &ev)
            })
            .unwrap();
    }
    for task in [a, b] {
        let seqs: Vec<i64> = store
            .read(|c| events::list_after(c, task, 0))
            .unwrap()
            .iter()
            .map(|e| e.sequence)
            .collect();
        assert_eq!(seqs, (1..=seqs.len() as i64).collect::<Vec<_>>());
    }
}

#[test]
fn illegal_status_changes_are_errors_and_change_nothing() {
    let dir = temp();
    let store = Store::open_in_dir(dir.path()).unwrap();
    let id = store
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
        .unwrap();
    use pocketpilot_protocol::task::TaskStatus::*;
    store
        .write(|tx| tasks::set_status(tx, id, Running))
        .unwrap();
    store
        .write(|tx| tasks::set_status(tx, id, Completed))
        .unwrap();
    let err = store
        .write(|tx| tasks::set_status(tx, id, Running))
        .unwrap_err();
    assert!(err
        .to_string()
        .contains("cannot go from completed to running"));
    assert_eq!(store.read(|c| tasks::get(c, id)).unwrap().status, Completed);
    assert!(matches!(
        store.write(|tx| tasks::set_status(tx, 999, Running)),
        Err(StoreError::NotFound { .. })
    ));
}

#[test]
fn a_store_from_the_first_release_is_migrated_with_its_data() {
    let dir = temp();
    let path = dir.path().join(DB_FILE);
    {
        // The database as the first schema left it, with a session and an entry in it.
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch(schema::MIGRATIONS[0]).unwrap();
        c.execute_batch(
            "PRAGMA user_version = 1;
             INSERT INTO sessions (id, title, workspace, created_at, updated_at)
                 VALUES (1, 'old', '/w', 'then', 'then');
             INSERT INTO entries (session_id, task_id, kind, content, created_at)
                 VALUES (1, NULL, 'user', '{\"text\":\"kept\"}', 'then');",
        )
        .unwrap();
    }
    let store = Store::open_in_dir(dir.path()).unwrap();
    let (version, index): (i64, i64) = store
        .read(|c| {
            Ok((
                c.query_row("PRAGMA user_version", [], |r| r.get(0))?,
                c.query_row(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'entries_task'",
                    [],
                    |r| r.get(0),
                )?,
            ))
        })
        .unwrap();
    assert_eq!(version, schema::MIGRATIONS.len() as i64);
    assert_eq!(index, 1);
    let kept = store.read(|c| entries::list(c, 1)).unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].content["text"], "kept");
}

#[test]
fn reads_do_not_wait_for_a_write_in_progress_and_see_only_commits() {
    let dir = temp();
    let store = std::sync::Arc::new(Store::open_in_dir(dir.path()).unwrap());
    let before = store
        .write(|tx| sessions::insert(tx, "committed", "/w"))
        .unwrap();
    let (seen_tx, seen_rx) = std::sync::mpsc::channel();
    let inside = store
        .write(|tx| {
            let inside = sessions::insert(tx, "in progress", "/w")?;
            // Another thread reads while this write holds the writer: with one shared
            // connection it would wait for this closure, which waits for it (a deadlock,
            // caught by the timeout below rather than hanging the suite).
            let reader = store.clone();
            std::thread::spawn(move || {
                let titles = reader.read(|c| {
                    Ok(sessions::list(c)?
                        .into_iter()
                        .map(|s| s.title)
                        .collect::<Vec<_>>())
                });
                let _ = seen_tx.send(titles);
            });
            let titles = seen_rx
                .recv_timeout(std::time::Duration::from_secs(30))
                .expect("the read finished while the write was open");
            assert_eq!(
                titles.unwrap(),
                ["committed"],
                "no uncommitted row is visible"
            );
            Ok(inside)
        })
        .unwrap();
    let after = store.read(|c| Ok((sessions::get(c, before)?, sessions::get(c, inside)?)));
    let (a, b) = after.unwrap();
    assert_eq!(
        (a.title.as_str(), b.title.as_str()),
        ("committed", "in progress")
    );
}

#[test]
fn closing_the_store_checkpoints_the_wal_into_the_database_file() {
    let dir = temp();
    let store = Store::open_in_dir(dir.path()).unwrap();
    store
        .write(|tx| sessions::insert(tx, "kept", "/w"))
        .unwrap();
    // A reader is open (idle in the pool) when the store closes.
    store.read(sessions::list).unwrap();
    drop(store);
    let wal = dir.path().join(format!("{DB_FILE}-wal"));
    assert!(
        std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0) == 0,
        "the WAL was left with commits in it"
    );
    // The database file alone holds the data.
    let c = rusqlite::Connection::open(dir.path().join(DB_FILE)).unwrap();
    let title: String = c
        .query_row("SELECT title FROM sessions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(title, "kept");
}

#[test]
fn a_row_that_does_not_parse_is_an_error_naming_its_table_row_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_dir(dir.path()).unwrap();
    let task = store
        .write(|tx| {
            let s = sessions::insert(tx, "t", "/ws")?;
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
        .unwrap();
    // What a bad disk or a hand edit leaves: a status nobody knows, grants that are not JSON,
    // an event whose payload does not fit its kind.
    store
        .write(|tx| {
            tx.execute("UPDATE tasks SET grants = 'not json' WHERE id = ?1", [task])?;
            tx.execute(
                "INSERT INTO task_events (task_id, sequence, type, payload, at) VALUES (?1, 2, 'planning', '{}', 'now')",
                [task],
            )?;
            tx.execute(
                "INSERT INTO task_events (task_id, sequence, type, payload, at) VALUES (?1, 1, 'task_failed', '{\"nope\":1}', 'now')",
                [task],
            )?;
            Ok(())
        })
        .unwrap();
    let err = store.read(|c| tasks::get(c, task)).unwrap_err();
    assert!(
        matches!(&err, StoreError::CorruptRow(r) if r.table == "tasks" && r.column == "grants" && r.id == task.to_string()),
        "{err}"
    );
    let err = store.read(|c| events::list_after(c, task, 0)).unwrap_err();
    assert!(
        matches!(&err, StoreError::CorruptRow(r) if r.table == "task_events" && r.column == "payload"),
        "{err}"
    );
    let err = store.read(|c| events::list_after(c, task, 1)).unwrap_err();
    assert!(
        matches!(&err, StoreError::CorruptRow(r) if r.column == "type"),
        "{err}"
    );
    assert!(err.to_string().contains("planning"), "{err}");
}

#[test]
fn session_modes_round_trip_as_their_names_and_a_bad_one_is_a_corrupt_row() {
    let dir = temp();
    let store = Store::open_in_dir(dir.path()).unwrap();
    let s = store.write(|tx| sessions::insert(tx, "t", "/ws")).unwrap();
    let read = |store: &Store| store.read(|c| sessions::get(c, s)).unwrap();
    let fresh = read(&store);
    assert_eq!(
        (fresh.steering_mode, fresh.follow_up_mode),
        (SessionMode::OneAtATime, SessionMode::OneAtATime)
    );
    store
        .write(|tx| sessions::set_modes(tx, s, None, Some(SessionMode::All)))
        .unwrap();
    let set = read(&store);
    assert_eq!(
        (set.steering_mode, set.follow_up_mode),
        (SessionMode::OneAtATime, SessionMode::All)
    );
    store
        .write(|tx| sessions::set_modes(tx, s, Some(SessionMode::All), None))
        .unwrap();
    assert_eq!(read(&store).steering_mode, SessionMode::All);
    // The column keeps the names the database always held.
    let stored: (String, String) = store
        .read(|c| {
            Ok(c.query_row(
                "SELECT steering_mode, follow_up_mode FROM sessions WHERE id = ?1",
                [s],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?)
        })
        .unwrap();
    assert_eq!(stored, ("all".to_owned(), "all".to_owned()));
    store
        .write(|tx| {
            tx.execute(
                "UPDATE sessions SET follow_up_mode = 'sometimes' WHERE id = ?1",
                [s],
            )?;
            Ok(())
        })
        .unwrap();
    let err = store.read(|c| sessions::get(c, s)).unwrap_err();
    assert!(
        matches!(&err, StoreError::CorruptRow(r) if r.table == "sessions" && r.column == "follow_up_mode" && r.id == s.to_string()),
        "{err}"
    );
    assert!(err.to_string().contains("sometimes"), "{err}");
    assert!(matches!(
        store.read(sessions::list).unwrap_err(),
        StoreError::CorruptRow(_)
    ));
}

#[test]
fn a_task_keeps_its_source_and_grants_as_names_and_a_bad_source_is_a_corrupt_row() {
    let dir = temp();
    let store = Store::open_in_dir(dir.path()).unwrap();
    let grants = [Capability::SHELL_EXECUTE, "mcp:files:*".parse().unwrap()];
    let ids: Vec<(RunSource, i64)> = store
        .write(|tx| {
            let s = sessions::insert(tx, "t", "/ws")?;
            RunSource::ALL
                .iter()
                .map(|&trigger| {
                    let new = tasks::NewTask {
                        session_id: s,
                        goal: "g",
                        trigger,
                        provider: None,
                        follow_up_of: None,
                        grants: &grants,
                        mcp: &[],
                    };
                    Ok((trigger, tasks::insert(tx, &new)?))
                })
                .collect()
        })
        .unwrap();
    assert_eq!(ids.len(), 6);
    for &(trigger, id) in &ids {
        let task = store.read(|c| tasks::get(c, id)).unwrap();
        assert_eq!(
            (task.trigger, task.grants.as_slice()),
            (trigger, &grants[..])
        );
        let stored: (String, String) = store
            .read(|c| {
                Ok(c.query_row(
                    "SELECT trigger, grants FROM tasks WHERE id = ?1",
                    [id],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )?)
            })
            .unwrap();
        assert_eq!(
            stored,
            (
                trigger.as_str().to_owned(),
                r#"["shell:execute","mcp:files:*"]"#.to_owned()
            )
        );
    }
    let (_, id) = ids[0];
    store
        .write(|tx| tasks::add_grant(tx, id, &Capability::NET_NETWORK))
        .unwrap();
    store
        .write(|tx| tasks::add_grant(tx, id, &Capability::SHELL_EXECUTE))
        .unwrap();
    assert_eq!(
        store.read(|c| tasks::get(c, id)).unwrap().grants,
        [
            Capability::SHELL_EXECUTE,
            "mcp:files:*".parse().unwrap(),
            Capability::NET_NETWORK
        ]
    );
    store
        .write(|tx| {
            tx.execute(
                "UPDATE tasks SET trigger = 'carrier-pigeon' WHERE id = ?1",
                [id],
            )?;
            Ok(())
        })
        .unwrap();
    let err = store.read(|c| tasks::get(c, id)).unwrap_err();
    assert!(
        matches!(&err, StoreError::CorruptRow(r) if r.table == "tasks" && r.column == "trigger" && r.id == id.to_string()),
        "{err}"
    );
    assert!(err.to_string().contains("carrier-pigeon"), "{err}");
    let (_, other) = ids[1];
    store
        .write(|tx| {
            tx.execute(
                "UPDATE tasks SET grants = '[\"fs: write\"]' WHERE id = ?1",
                [other],
            )?;
            Ok(())
        })
        .unwrap();
    let err = store.read(|c| tasks::get(c, other)).unwrap_err();
    assert!(
        matches!(&err, StoreError::CorruptRow(r) if r.column == "grants"),
        "{err}"
    );
}

/// Issue 19's migration rebuilds `tasks` (for the `paused` status): a database made
/// before it keeps its tasks, events and references, and takes the new status.
#[test]
fn the_paused_migration_keeps_existing_tasks_and_their_references() {
    use pocketpilot_protocol::task::TaskStatus;
    let dir = temp();
    let path = dir.path().join(DB_FILE);
    let before = schema::MIGRATIONS.len() - 1;
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        for sql in &schema::MIGRATIONS[..before] {
            c.execute_batch(sql).unwrap();
        }
        c.pragma_update(None, "user_version", before as i64)
            .unwrap();
        c.execute_batch(
            "INSERT INTO sessions (id, title, workspace, created_at, updated_at) VALUES (1, 't', '/w', 'x', 'x');
             INSERT INTO tasks (id, session_id, goal, trigger, status, step_count, created_at) VALUES (5, 1, 'old goal', 'cli', 'waiting_approval', 2, 'x');
             INSERT INTO task_events (task_id, sequence, type, payload, at) VALUES (5, 1, 'task_created', '{}', 'x');",
        )
        .unwrap();
    }
    let store = Store::open_in_dir(dir.path()).unwrap();
    let task = store.read(|c| tasks::get(c, 5)).unwrap();
    assert_eq!(
        (task.goal.as_str(), task.status, task.step_count),
        ("old goal", TaskStatus::WaitingApproval, 2)
    );
    assert_eq!(task.extra, tasks::Extra::default());
    assert!(task.pause.is_none());
    let fk: i64 = store
        .read(|c| Ok(c.query_row("PRAGMA foreign_keys", [], |r| r.get(0))?))
        .unwrap();
    assert_eq!(fk, 1, "foreign keys are back on after the rebuild");
    store
        .write(|tx| {
            tasks::set_status(tx, 5, TaskStatus::Running)?;
            tasks::set_status(tx, 5, TaskStatus::Paused)?;
            Ok(())
        })
        .unwrap();
    assert_eq!(
        store
            .read(|c| tasks::open_for_session(c, 1))
            .unwrap()
            .map(|t| t.id),
        Some(5),
        "a paused task keeps its session busy"
    );
    // The reference from events to the rebuilt table still holds.
    let err = store.write(|tx| {
        Ok(tx.execute(
            "INSERT INTO task_events (task_id, sequence, type, payload, at) VALUES (99, 1, 'x', '{}', 'x')",
            [],
        )?)
    });
    assert!(err.is_err(), "a row naming no task is refused");
}

/// A call id the model reuses in a later step (issue 15) is a new call: its change set
/// joins the first one's instead of replacing it, so undo still has both (issue 16).
#[test]
fn a_reused_call_id_keeps_each_runs_change_set() {
    use change_sets::NewSet;
    use pocketpilot_protocol::changes::{ChangeSetKind, ChangeSetStatus};
    let dir = temp();
    let store = Store::open_in_dir(dir.path()).unwrap();
    let (session, task) = store
        .write(|tx| {
            let s = sessions::insert(tx, "s", "/w")?;
            let t = tasks::insert(
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
            )?;
            Ok((s, t))
        })
        .unwrap();
    let set = |pre: &'static str| {
        move |tx: &rusqlite::Transaction<'_>| {
            change_sets::insert(
                tx,
                &NewSet {
                    session_id: session,
                    task_id: task,
                    call_id: Some("call_1"),
                    kind: ChangeSetKind::Call,
                    status: ChangeSetStatus::Pending,
                    workspace: "/w",
                    scope: "workspace",
                    pre_index: Some(pre),
                    changes: &[],
                    reverts: &[],
                },
            )
        }
    };
    let first = store.write(set("pre-1")).unwrap();
    let second = store.write(set("pre-2")).unwrap();
    let sets = store
        .read(|c| change_sets::of_task(c, task, ChangeSetKind::Call))
        .unwrap();
    assert_eq!(
        sets.iter().map(|s| s.id).collect::<Vec<_>>(),
        vec![first, second]
    );
    let newest = store
        .read(|c| change_sets::of_call(c, task, "call_1"))
        .unwrap()
        .unwrap();
    assert_eq!(newest.id, second);
}

#[test]
fn only_the_lease_holder_records_or_forgets_a_runs_process() {
    let dir = temp();
    let store = Store::open_in_dir(dir.path()).unwrap();
    let session = store.write(|tx| sessions::insert(tx, "t", "/w")).unwrap();
    let p = processes::RecordedProcess {
        task_id: 1,
        pid: 4242,
        started: 777,
        boot_id: "boot".into(),
    };
    let pid = i64::from(std::process::id());
    assert!(store
        .write(|tx| leases::acquire(tx, session, "a", pid, 60_000))
        .unwrap());
    assert!(store
        .write(|tx| processes::record(tx, session, "a", &p))
        .unwrap());
    // "b" takes the session over (the lease expired): "a" can neither add nor remove.
    store
        .write(|tx| {
            tx.execute("UPDATE session_leases SET expires_at = 0", [])?;
            Ok(())
        })
        .unwrap();
    assert!(store
        .write(|tx| leases::acquire(tx, session, "b", pid, 60_000))
        .unwrap());
    let other = processes::RecordedProcess {
        pid: 4343,
        ..p.clone()
    };
    assert!(!store
        .write(|tx| processes::record(tx, session, "a", &other))
        .unwrap());
    store
        .write(|tx| processes::forget(tx, session, "a", p.pid, p.started))
        .unwrap();
    let left = store.read(|c| processes::for_session(c, session)).unwrap();
    assert_eq!(left, vec![p.clone()]);
    store
        .write(|tx| processes::forget_all(tx, session, "b", &left))
        .unwrap();
    assert!(store
        .read(|c| processes::for_session(c, session))
        .unwrap()
        .is_empty());
    // A deleted session takes its rows with it.
    assert!(store
        .write(|tx| processes::record(tx, session, "b", &p))
        .unwrap());
    store.write(|tx| sessions::delete(tx, session)).unwrap();
    assert!(store
        .read(|c| processes::for_session(c, session))
        .unwrap()
        .is_empty());
}
