use chrono::TimeZone;

use super::*;
use crate::{schema, sessions, Store, StoreError, DB_FILE};

fn at(day: u32, hour: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, day, hour, 15, 0).unwrap()
}

fn titles(c: &Connection) -> Vec<String> {
    let mut s = c.prepare("SELECT title FROM sessions ORDER BY id").unwrap();
    s.query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn open_ro(p: &Path) -> Connection {
    Connection::open_with_flags(p, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap()
}

#[test]
fn names_carry_version_and_time_and_parse_back() {
    let name = file_name(11, at(2, 10));
    assert_eq!(name, "store-v11-20261102T101500Z.db");
    assert_eq!(parse_name(&name), Some((11, at(2, 10))));
    assert_eq!(
        parse_name("store-v3-20261102T101500Z-2.db"),
        Some((3, at(2, 10)))
    );
    for other in [
        "store-v11-20261102T101500Z.db.partial",
        "store-v11-20261102T101500Z-.db",
        "store-vX-20261102T101500Z.db",
        "pocketpilot.db",
        "store-v11-2026110.db",
    ] {
        assert_eq!(parse_name(other), None, "{other}");
    }
}

/// A database file at schema `version` holding one session titled `title`.
fn source(dir: &Path, name: &str, version: i64, title: &str) -> PathBuf {
    let p = dir.join(name);
    let c = Connection::open(&p).unwrap();
    c.execute_batch(schema::MIGRATIONS[0]).unwrap();
    c.pragma_update(None, "user_version", version).unwrap();
    c.execute(
        "INSERT INTO sessions (title, workspace, created_at, updated_at) VALUES (?1, '/w', 'then', 'then')",
        [title],
    )
    .unwrap();
    p
}

#[test]
fn retention_keeps_the_newest_of_each_day_and_of_each_schema_version() {
    let dir = tempfile::tempdir().unwrap();
    let backups = dir.path().join(BACKUPS_DIR);
    let v3 = source(dir.path(), "v3.db", 3, "old");
    let v4 = source(dir.path(), "v4.db", 4, "new");
    // Schema 3 on the 1st and 2nd, then schema 4 twice a day from the 3rd to the 12th.
    take(&v3, &backups, at(1, 9), |_| {}).unwrap();
    take(&v3, &backups, at(2, 9), |_| {}).unwrap();
    for day in 3..=12 {
        take(&v4, &backups, at(day, 8), |_| {}).unwrap();
        take(&v4, &backups, at(day, 20), |_| {}).unwrap();
    }
    // Two in one second do not overwrite each other.
    let twin = take(&v4, &backups, at(12, 20), |_| {}).unwrap();
    assert_eq!(twin.name, "store-v4-20261112T201500Z-2.db");
    assert_eq!(list(&backups).unwrap().len(), 23);

    let removed = prune(&backups, BackupSettings { keep_daily: 3 }).unwrap();
    let kept: Vec<String> = list(&backups)
        .unwrap()
        .into_iter()
        .map(|b| b.name)
        .collect();
    assert_eq!(
        kept,
        [
            "store-v4-20261112T201500Z-2.db",
            "store-v4-20261111T201500Z.db",
            "store-v4-20261110T201500Z.db",
            // The newest copy an older build (schema 3) can open.
            "store-v3-20261102T091500Z.db",
        ]
    );
    assert_eq!(removed.len(), 19);
    // What is kept is a whole copy of its source.
    assert_eq!(titles(&open_ro(&backups.join(&kept[3]))), ["old"]);
    assert_eq!(verify(&backups.join(&kept[0]), 4).unwrap(), 4);
    // The default keeps a week.
    assert_eq!(BackupSettings::default().keep_daily, 7);
}

#[test]
fn no_backup_starts_without_room_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let src = source(dir.path(), "s.db", 1, "x");
    let free = free_space(dir.path()).unwrap();
    assert!(free > 0);
    let err = ensure_room(dir.path(), free).unwrap_err();
    assert!(matches!(err, BackupError::NoSpace { .. }), "{err}");
    assert!(err.to_string().contains("MB free"), "{err}");
    // With room, the copy is made and no `.partial` is left beside it.
    take(&src, &dir.path().join("b"), at(1, 1), |_| {}).unwrap();
    let names: Vec<_> = std::fs::read_dir(dir.path().join("b"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["store-v1-20261101T011500Z.db"]);
}

#[test]
fn a_backup_while_the_writer_writes_neither_blocks_it_nor_sees_its_later_writes() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_dir(dir.path()).unwrap();
    let filler = "x".repeat(3000);
    // ~12 MiB: a dozen steps of the copy.
    store
        .write(|tx| {
            for i in 0..4000 {
                sessions::insert(tx, &format!("before {i} {filler}"), "/w")?;
            }
            Ok(())
        })
        .unwrap();
    let backups = dir.path().join(BACKUPS_DIR);
    let mut during = 0;
    let file = take(store.path(), &backups, at(5, 5), |step| {
        assert!(step.remaining > 0 && step.remaining < step.total);
        // A write committed while the copy holds its snapshot: the writer is not blocked.
        store
            .write(|tx| sessions::insert(tx, &format!("during {during}"), "/w"))
            .unwrap();
        during += 1;
    })
    .unwrap();
    assert!(during >= 2, "the copy took {during} steps");
    let copied = titles(&open_ro(file.path()));
    assert_eq!(copied.len(), 4000);
    assert!(copied.iter().all(|t| t.starts_with("before ")));
    let live = store.read(|c| Ok(titles(c))).unwrap();
    assert_eq!(live.len(), 4000 + during);
    // A single file that an older build can open as it is.
    assert!(!health::wal_path(file.path()).exists());
    assert_eq!(file.schema_version, schema::MIGRATIONS.len() as i64);
}

#[test]
fn a_migration_that_fails_halfway_leaves_the_old_version_and_a_backup_the_old_build_opens() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join(DB_FILE);
    let n = schema::MIGRATIONS.len();
    // The build before the newest migration makes a store and writes to it.
    let old = &schema::MIGRATIONS[..n - 2];
    {
        let store = Store::open_with(&db, old).unwrap();
        store
            .write(|tx| sessions::insert(tx, "kept", "/w"))
            .unwrap();
    }
    // The next build knows two more: the first real one runs, then the second fails
    // after doing part of its work (a real migration, then a statement that cannot run).
    let failing = format!(
        "{}\nCREATE TABLE half_done (x INTEGER); INSERT INTO no_such_table VALUES (1);",
        schema::MIGRATIONS[n - 1]
    );
    let mut newer: Vec<&str> = schema::MIGRATIONS[..n - 1].to_vec();
    newer.push(&failing);
    let err = Store::open_with(&db, &newer)
        .err()
        .expect("the migration fails");
    assert!(matches!(err, StoreError::Sqlite(_)), "{err}");
    let c = open_ro(&db);
    let version: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(
        version,
        (n - 2) as i64,
        "the store stays at its old version"
    );
    let half: i64 = c
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name = 'half_done'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(half, 0, "nothing of the failed migrations is left");
    drop(c);
    // The copy made before it is named with the old version and opens in the old build.
    let backups = list(&dir.path().join(BACKUPS_DIR)).unwrap();
    assert_eq!(backups.len(), 1);
    assert_eq!(backups[0].schema_version, (n - 2) as i64);
    let from_backup = Store::open_with(backups[0].path(), old).unwrap();
    assert_eq!(from_backup.read(|c| Ok(titles(c))).unwrap(), ["kept"]);
    drop(from_backup);
    // And the store itself still opens in the old build, its data there.
    let again = Store::open_with(&db, old).unwrap();
    assert_eq!(again.read(|c| Ok(titles(c))).unwrap(), ["kept"]);
}

#[test]
fn a_newer_store_is_refused_untouched_naming_the_backup_this_build_opens() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join(DB_FILE);
    let n = schema::MIGRATIONS.len();
    let old = &schema::MIGRATIONS[..n - 1];
    drop(Store::open_with(&db, old).unwrap());
    // The newer build migrates (and keeps a copy at the old version first).
    drop(Store::open(&db).unwrap());
    let bytes = std::fs::read(&db).unwrap();
    let err = Store::open_with(&db, old).err().expect("refused");
    let StoreError::NewerSchema {
        found,
        supported,
        backup: Some(b),
        ..
    } = &err
    else {
        panic!("{err}");
    };
    assert_eq!((*found, *supported), (n as i64, n as i64 - 1));
    assert!(
        b.file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with(&format!("store-v{}-", n - 1)),
        "{}",
        b.display()
    );
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("schema {n}")) && msg.contains(&b.display().to_string()),
        "{msg}"
    );
    assert_eq!(std::fs::read(&db).unwrap(), bytes);
    // (A read-only look may leave an empty log beside it: no frame, nothing to replay.)
    let wal = std::fs::metadata(health::wal_path(&db))
        .map(|m| m.len())
        .ok();
    assert!(wal.is_none_or(|l| l == 0), "{wal:?}");
}

#[test]
fn no_upgrade_runs_when_its_backup_cannot_be_made() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join(DB_FILE);
    let n = schema::MIGRATIONS.len();
    drop(Store::open_with(&db, &schema::MIGRATIONS[..n - 1]).unwrap());
    // Where the copies go is taken by a file: the copy fails.
    std::fs::write(dir.path().join(BACKUPS_DIR), b"in the way").unwrap();
    let err = Store::open(&db)
        .err()
        .expect("no upgrade without its backup");
    assert!(
        matches!(err, StoreError::NotMigrated { from, to, .. } if from == n as i64 - 1 && to == n as i64),
        "{err}"
    );
    let c = open_ro(&db);
    let version: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, n as i64 - 1);
}
