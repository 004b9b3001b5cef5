//! Stores written by earlier PocketPilot builds, opened by this one. Each fixture in
//! `tests/fixtures/stores/` is a database an old binary made through a scripted session
//! (`scripts/make-store-fixture.sh`) and, beside it, what that binary printed about it.
//! Here today's binary opens a copy (migrating it), runs the same commands, and every
//! field the old one printed must read the same: every session, task, final answer,
//! tool call, approval, queued item, trigger, memory, change and cost.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::{text, Harness};

/// Values that are not data the store kept but what a build works out when asked; an old
/// build's figure is not today's.
const COMPUTED: &[(&str, &str, &str)] = &[
    (
        "session show",
        "context",
        "the context budget is worked out from today's prompt and model window",
    ),
    (
        "usage",
        "today",
        "the totals of the current UTC day, which moves on",
    ),
];

/// Fixtures today's binary does not read right yet, and why. Each is still checked: while
/// it has problems they are not reported; once it has none, the test fails until it is
/// taken off this list, so that from then on it is held like every other.
const AWAITING_REPAIR: &[(&str, &str)] = &[];

/// Schema versions with no fixture, and why (one no commit on main ever had, because the
/// next migration landed with it). Every other version below today's must have one: a new
/// migration adds the fixture of the version before it.
const NO_FIXTURE: &[(i64, &str)] = &[(
    12,
    "command rules (12) and full-text search (13) reached main in one commit",
)];

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stores")
}

struct Fixture {
    version: i64,
    /// Its files' stem: `v3`, `v9-61ff95f`.
    name: String,
    db: PathBuf,
    blobs: PathBuf,
    meta: Value,
}

fn fixtures() -> Vec<Fixture> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(fixtures_dir()).unwrap() {
        let path = e.unwrap().path();
        if path.extension().and_then(|x| x.to_str()) != Some("json") {
            continue;
        }
        let meta: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let version = meta["schema_version"].as_i64().unwrap();
        // `v<N>`, or `v<N>-<commit>` for a shape another build gave the same number.
        let stem = path.file_stem().unwrap().to_str().unwrap().to_owned();
        let number = stem.split('-').next().unwrap();
        assert_eq!(
            number,
            format!("v{version}"),
            "{} records schema version {version}",
            path.display()
        );
        out.push(Fixture {
            version,
            name: stem.clone(),
            db: fixtures_dir().join(format!("{stem}.db")),
            blobs: fixtures_dir().join(format!("{stem}.blobs")),
            meta,
        });
    }
    out.sort_by(|a, b| (a.version, &a.name).cmp(&(b.version, &b.name)));
    out
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Where `new` differs from what `old` printed: each of `old`'s fields must be in `new`
/// with the same value; lists must have the same items in the same order.
fn differences(command: &str, old: &Value, new: &Value, path: &str, out: &mut Vec<String>) {
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            for (k, ov) in o {
                if COMPUTED
                    .iter()
                    .any(|(c, key, _)| command.starts_with(c) && key == k && !path.contains('['))
                {
                    continue;
                }
                match n.get(k) {
                    Some(nv) => differences(command, ov, nv, &format!("{path}.{k}"), out),
                    None => out.push(format!("{command}: {path}.{k} is gone (was {ov})")),
                }
            }
        }
        (Value::Array(o), Value::Array(n)) if o.len() == n.len() => {
            for (i, (ov, nv)) in o.iter().zip(n).enumerate() {
                differences(command, ov, nv, &format!("{path}[{i}]"), out);
            }
        }
        (Value::Array(o), Value::Array(n)) => out.push(format!(
            "{command}: {path} has {} items, was {}",
            n.len(),
            o.len()
        )),
        // The recording went through jq, which writes 6.0 as 6: a number is its value.
        (Value::Number(o), Value::Number(n)) if o.as_f64() == n.as_f64() => {}
        _ if old == new => {}
        _ => out.push(format!("{command}: {path} is {new}, was {old}")),
    }
}

/// A store's schema, one line per column (name, type, NOT NULL, default, key), per index
/// and per table's own SQL constraints, in an order that does not depend on history.
fn shape(data: &Path) -> Result<Vec<String>, pocketpilot_store::StoreError> {
    let store = pocketpilot_store::Store::open_in_dir(data)?;
    let mut lines: Vec<String> = store.read(|c| {
        let mut out = vec![format!(
            "user_version {}",
            c.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))?
        )];
        let mut tables = c.prepare(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
        )?;
        let tables: Vec<(String, String)> = tables
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        for (table, sql) in tables {
            let mut cols = c.prepare(&format!("PRAGMA table_xinfo(\"{table}\")"))?;
            let cols: Vec<String> = cols
                .query_map([], |r| {
                    Ok(format!(
                        "column {table}.{} {} notnull={} default={:?} pk={}",
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, i64>(3)?,
                        r.get::<_, Option<String>>(4)?,
                        r.get::<_, i64>(5)?
                    ))
                })?
                .collect::<Result<_, _>>()?;
            out.extend(cols);
            // CHECK, UNIQUE and REFERENCES clauses live only in the table's SQL.
            for clause in sql.split(['\n', ',']).map(str::trim) {
                let upper = clause.to_uppercase();
                if ["CHECK", "UNIQUE", "REFERENCES", "WITHOUT ROWID"]
                    .iter()
                    .any(|k| upper.contains(k))
                {
                    out.push(format!(
                        "constraint {table}: {}",
                        clause.split_whitespace().collect::<Vec<_>>().join(" ")
                    ));
                }
            }
        }
        let mut idx = c.prepare(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL",
        )?;
        let idx: Vec<String> = idx
            .query_map([], |r| {
                Ok(format!(
                    "index {}: {}",
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" ")
                ))
            })?
            .collect::<Result<_, _>>()?;
        out.extend(idx);
        Ok(out)
    })?;
    lines.sort();
    Ok(lines)
}

fn fresh_shape() -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    shape(dir.path()).unwrap()
}

fn outputs<'a>(meta: &'a Value, first: &str) -> impl Iterator<Item = &'a Value> + 'a {
    let first = first.to_owned();
    meta["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(move |o| o["args"][0] == first.as_str())
}

#[test]
fn every_old_store_opens_and_reads_as_its_own_build_printed_it() {
    let fixtures = fixtures();
    assert!(
        !fixtures.is_empty(),
        "no fixture in {}",
        fixtures_dir().display()
    );
    let mut report = Vec::new();
    for f in &fixtures {
        let problems = check(f);
        match AWAITING_REPAIR.iter().find(|(n, _)| *n == f.name) {
            Some((_, why)) => assert!(
                !problems.is_empty(),
                "{} opens and reads the same now ({why}): take it off AWAITING_REPAIR",
                f.name
            ),
            None => report.extend(problems.into_iter().map(|p| format!("{}: {p}", f.name))),
        }
    }
    assert!(report.is_empty(), "{}", report.join("\n"));
}

/// Opens a copy of the fixture with today's binary; says where it does not read as the
/// old build printed it, or does not have today's shape once migrated.
fn check(f: &Fixture) -> Vec<String> {
    let mut problems = Vec::new();
    let h = Harness::new(&[]);
    let data = h.data();
    std::fs::create_dir_all(&data).unwrap();
    // A copy: the fixture itself is never opened for writing.
    std::fs::copy(&f.db, data.join("pocketpilot.db")).unwrap();
    if f.blobs.is_dir() {
        copy_tree(&f.blobs, &data.join("blobs"));
    }
    for o in f.meta["outputs"].as_array().unwrap() {
        let args: Vec<&str> = o["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        let command = args.join(" ");
        let out = h.output(&args);
        if !out.status.success() {
            problems.push(format!(
                "`{command}` exited {:?}: {}",
                out.status.code(),
                text(&out.stderr)
            ));
            continue;
        }
        match serde_json::from_slice::<Value>(&out.stdout) {
            Ok(new) => differences(&command, &o["output"], &new, "", &mut problems),
            Err(e) => problems.push(format!("`{command}` printed no JSON: {e}")),
        }
    }
    // Migrated, it has today's shape: the same tables, columns, constraints and indexes
    // as a store made today (a migration edited after it shipped would otherwise live on
    // unseen in the stores made before the edit).
    match shape(&data) {
        Ok(migrated) => {
            let fresh = fresh_shape();
            for line in fresh.iter().filter(|l| !migrated.contains(l)) {
                problems.push(format!("migrated, it lacks {line}"));
            }
            for line in migrated.iter().filter(|l| !fresh.contains(l)) {
                problems.push(format!("migrated, it has {line}; a fresh store does not"));
            }
        }
        Err(e) => problems.push(format!("it does not open: {e}")),
    }
    problems
}

/// The fixtures hold what they are for, so that the comparison above has something to
/// compare: two sessions, three tasks, two of them answered, three tool calls, a pending
/// approval, and, where the build could list them, a queued item, a schedule, a webhook,
/// memories and changes.
#[test]
fn every_fixture_holds_the_content_it_is_made_for() {
    for f in fixtures() {
        let v = &f.name;
        let m = &f.meta;
        let sessions = outputs(m, "sessions").next().unwrap();
        assert_eq!(sessions["output"].as_array().unwrap().len(), 2, "{v}");
        let tasks = &outputs(m, "tasks").next().unwrap()["output"];
        assert_eq!(tasks.as_array().unwrap().len(), 3, "{v}");
        let answers = tasks
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["final_answer"].is_string())
            .count();
        assert_eq!(answers, 2, "{v}: two answered tasks");
        let calls: usize = outputs(m, "show")
            .map(|s| {
                s["output"]["events"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|e| e["type"] == "tool_call_started")
                    .count()
            })
            .sum();
        assert_eq!(calls, 3, "{v}: three tool calls ran");
        let approvals = &outputs(m, "approvals").next().unwrap()["output"];
        assert_eq!(
            approvals.as_array().unwrap().len(),
            1,
            "{v}: one pending approval"
        );
        let nonempty = |first: &str| {
            outputs(m, first).any(|o| {
                o["output"].as_array().is_some_and(|a| !a.is_empty())
                    || o["output"]["files"]
                        .as_array()
                        .is_some_and(|a| !a.is_empty())
            })
        };
        // What the build could list, it listed with something in it.
        for first in ["inbox", "cron", "hooks", "memory", "changes"] {
            if outputs(m, first).next().is_some() {
                assert!(nonempty(first), "{v}: `{first}` shows something");
            }
        }
    }
}

#[test]
fn every_earlier_schema_version_has_a_fixture() {
    let have: Vec<i64> = fixtures().iter().map(|f| f.version).collect();
    let newest: i64 = fresh_shape()[..]
        .iter()
        .find_map(|l| l.strip_prefix("user_version "))
        .unwrap()
        .parse()
        .unwrap();
    for v in 1..newest {
        let excused = NO_FIXTURE.iter().any(|(n, _)| *n == v);
        assert!(
            have.contains(&v) || excused,
            "no fixture for schema version {v}: make one from the newest commit that had it \
             with scripts/make-store-fixture.sh (README in {}), or, if no commit on main ever \
             had it (two migrations landed together), list it in NO_FIXTURE",
            fixtures_dir().display()
        );
    }
}
