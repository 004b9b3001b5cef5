//! Search on real SQLite files: what the triggers index, what a delete removes, and the
//! migration's backfill of entries written before the index existed.
use super::*;
use crate::{entries, sessions, tasks, Store};
use pocketpilot_protocol::{EntryKind, RunSource};
use serde_json::json;

fn session_with(store: &Store, title: &str, workspace: &str, said: &[(EntryKind, &str)]) -> i64 {
    let said: Vec<(EntryKind, String)> = said
        .iter()
        .map(|(k, t)| (k.clone(), t.to_string()))
        .collect();
    let (title, workspace) = (title.to_owned(), workspace.to_owned());
    store
        .write(move |tx| {
            let s = sessions::insert(tx, &title, &workspace)?;
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
            for (kind, text) in &said {
                let content = match kind {
                    EntryKind::ToolResult => {
                        json!({ "call_id": "c1", "text": text, "is_error": false })
                    }
                    _ => json!({ "text": text }),
                };
                entries::append(tx, s, Some(t), kind, &content)?;
            }
            Ok(s)
        })
        .unwrap()
}

fn found(store: &Store, typed: &str) -> Vec<SearchHit> {
    store.read(|c| search(c, typed, None, 50)).unwrap()
}

#[test]
fn a_word_from_a_tool_output_finds_its_session_with_the_line_marked() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_dir(dir.path()).unwrap();
    let build = session_with(
        &store,
        "Fix the build",
        "/w/a",
        &[
            (EntryKind::User, "make the tests pass"),
            (
                EntryKind::ToolResult,
                "running 3 tests\nerror[E0425]: cannot find value `frobnicate` in this scope",
            ),
            (EntryKind::Assistant, "Renamed it; the tests pass."),
        ],
    );
    let other = session_with(
        &store,
        "Other",
        "/w/b",
        &[(EntryKind::User, "write a poem")],
    );

    let hits = found(&store, "frobnicate");
    assert_eq!(hits.len(), 1, "{hits:?}");
    let hit = &hits[0];
    assert_eq!((hit.session_id, hit.kind.as_str()), (build, "tool_result"));
    assert_eq!(hit.session_title, "Fix the build");
    assert!(
        hit.snippet
            .contains(&format!("{MARK_START}frobnicate{MARK_END}")),
        "{:?}",
        hit.snippet
    );
    // A prefix while typing, any case; every word must be there.
    assert_eq!(found(&store, "FROBN").len(), 1);
    assert!(found(&store, "frobnicate poem").is_empty());
    assert_eq!(found(&store, "poem")[0].session_id, other);
    // Typed syntax is text, not an error.
    assert!(found(&store, "\"tests -pass NEAR(").is_empty());
    // The workspace filter.
    let in_b = store
        .read(|c| search(c, "tests", Some("/w/b"), 50))
        .unwrap();
    assert!(in_b.is_empty(), "{in_b:?}");
    let in_a = store
        .read(|c| search(c, "tests", Some("/w/a"), 50))
        .unwrap();
    assert_eq!(in_a.len(), 3, "newest first: {in_a:?}");
    assert!(in_a.windows(2).all(|w| w[0].entry_id > w[1].entry_id));

    // A deleted session's words are gone from the index with it.
    store.write(move |tx| sessions::delete(tx, build)).unwrap();
    assert!(found(&store, "frobnicate").is_empty());
}

#[test]
fn the_index_stays_consistent_with_the_entries() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_dir(dir.path()).unwrap();
    let s = session_with(
        &store,
        "t",
        "/w",
        &[
            (EntryKind::User, "alpha beta"),
            (EntryKind::System, "gamma is not indexed"),
        ],
    );
    assert!(
        found(&store, "gamma").is_empty(),
        "system entries are not searched"
    );
    store.write(move |tx| sessions::delete(tx, s)).unwrap();
    // FTS5's own check: the index matches its content exactly.
    store
        .write(|tx| {
            tx.execute(
                "INSERT INTO entry_search(entry_search) VALUES ('integrity-check')",
                [],
            )?;
            Ok(())
        })
        .unwrap();
}

#[test]
fn the_migration_indexes_the_entries_written_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_dir(dir.path()).unwrap();
    session_with(
        &store,
        "old",
        "/w",
        &[(EntryKind::Assistant, "the quokka answer")],
    );
    let migration = crate::schema::MIGRATIONS
        .iter()
        .find(|m| m.contains("CREATE VIRTUAL TABLE entry_search"))
        .expect("the search migration");
    // Back to the schema before the index, as a store of an older build has it, with its
    // entries; then the migration, as an upgrade runs it.
    store
        .write(move |tx| {
            tx.execute_batch(
                "DROP TRIGGER entry_search_insert; DROP TRIGGER entry_search_delete;
                 DROP TABLE entry_search; DROP VIEW entry_text;",
            )?;
            Ok(())
        })
        .unwrap();
    assert!(
        store.read(|c| search(c, "quokka", None, 5)).is_err(),
        "no index yet"
    );
    store
        .write(move |tx| {
            tx.execute_batch(migration)?;
            Ok(())
        })
        .unwrap();
    let hits = found(&store, "quokka");
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].session_title, "old");
}
