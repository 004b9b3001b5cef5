//! Damage on disk, found at open and undone by a restore: a torn page, a zero-filled
//! tail, a write-ahead log cut short. Real SQLite files, damaged the way disks and
//! copies damage them; the damaged files are compared byte for byte before and after.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::path::{Path, PathBuf};

use chrono::Utc;
use pocketpilot_store::backup::{self, Kept};
use pocketpilot_store::health;
use pocketpilot_store::lock::Exclusive;
use pocketpilot_store::{sessions, Store, StoreError, DB_FILE};
use std::hash::{Hash, Hasher};

const PAGE: usize = 4096;

/// Every session's title, oldest first.
fn titles(store: &Store) -> Vec<String> {
    store
        .read(|c| {
            let mut s = c.prepare("SELECT title FROM sessions ORDER BY id")?;
            let rows = s.query_map([], |r| r.get(0))?;
            Ok(rows.collect::<Result<Vec<String>, _>>()?)
        })
        .unwrap()
}

fn add(store: &Store, prefix: &str, n: usize) {
    let filler = "lorem ipsum ".repeat(40);
    for i in 0..n {
        store
            .write(|tx| sessions::insert(tx, &format!("{prefix} {i} {filler}"), "/w"))
            .unwrap();
    }
}

fn wal(db: &Path) -> PathBuf {
    PathBuf::from(format!("{}-wal", db.display()))
}

fn shm(db: &Path) -> PathBuf {
    PathBuf::from(format!("{}-shm", db.display()))
}

/// A store with a backup of its last good state, and some later work after it.
/// Returns the titles the backup holds.
fn store_with_backup(data: &Path) -> (Store, Vec<String>) {
    let store = Store::open_in_dir(data).unwrap();
    add(&store, "good", 300);
    let good = titles(&store);
    backup::take(
        store.path(),
        &data.join(backup::BACKUPS_DIR),
        Utc::now(),
        |_| {},
    )
    .unwrap();
    add(&store, "later", 20);
    (store, good)
}

/// A digest of the database file and of its log (a missing log and an empty one hold the
/// same: no frame; a read-only look may leave an empty one).
fn files(db: &Path) -> (u64, usize, u64) {
    let digest = |b: &[u8]| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        b.hash(&mut h);
        h.finish()
    };
    let main = std::fs::read(db).unwrap();
    let log = std::fs::read(wal(db)).unwrap_or_default();
    (digest(&main), main.len(), digest(&log))
}

/// Opening the damaged store is refused as damage, names the newest backup, and leaves
/// the file and its log as they were; restoring that backup brings back its content and
/// moves the damaged files aside, as they were.
fn refused_then_restored(data: &Path, good: &[String]) {
    let db = data.join(DB_FILE);
    let before = files(&db);
    let err = Store::open_in_dir(data)
        .err()
        .expect("a damaged store is refused");
    let StoreError::Damaged {
        backup: Some(newest),
        ..
    } = &err
    else {
        panic!("{err}");
    };
    assert_eq!(files(&db), before, "the failed open wrote to the store");
    // Refused again, the same way: the first look changed nothing it relies on.
    assert!(matches!(
        Store::open_in_dir(data),
        Err(StoreError::Damaged { .. })
    ));
    assert_eq!(files(&db), before);

    let lock = Exclusive::try_take(&db)
        .unwrap()
        .expect("nobody has it open");
    let supported = newest_version(newest);
    let done = backup::restore(&db, newest, supported, &lock, Utc::now()).unwrap();
    drop(lock);
    let Kept::SetAside { dir } = &done.kept else {
        panic!("{:?}", done.kept)
    };
    let aside = Path::new(dir).join(DB_FILE);
    assert_eq!(
        files(&aside),
        before,
        "the damaged files are kept as they were"
    );
    let store = Store::open_in_dir(data).unwrap();
    assert_eq!(titles(&store), good);
}

fn newest_version(p: &Path) -> i64 {
    backup::parse_name(p.file_name().unwrap().to_str().unwrap())
        .unwrap()
        .0
}

#[test]
fn a_torn_page_is_found_at_open_and_the_backup_brings_back_the_last_good_state() {
    let dir = tempfile::tempdir().unwrap();
    let (store, good) = store_with_backup(dir.path());
    drop(store);
    let db = dir.path().join(DB_FILE);
    let mut bytes = std::fs::read(&db).unwrap();
    let pages = bytes.len() / PAGE;
    assert!(pages > 40, "{pages} pages");
    // A page write that landed halfway: its second half is what the disk held before
    // (here, bytes of no page at all). The sessions, written last, fill the last pages;
    // a page an empty table's index holds alone would have nothing in its second half.
    let torn = pages * 3 / 4;
    let mut x: u32 = 0x9e37_79b9;
    for b in &mut bytes[torn * PAGE + PAGE / 2..(torn + 1) * PAGE] {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        *b = x as u8;
    }
    std::fs::write(&db, &bytes).unwrap();
    refused_then_restored(dir.path(), &good);
}

#[test]
fn a_zero_filled_tail_is_found_at_open_and_the_backup_brings_back_the_last_good_state() {
    let dir = tempfile::tempdir().unwrap();
    let (store, good) = store_with_backup(dir.path());
    drop(store);
    let db = dir.path().join(DB_FILE);
    let mut bytes = std::fs::read(&db).unwrap();
    // The disk filled (or lost power) after the file grew but before its blocks were
    // written: the length is right and the last pages are zeros.
    let len = bytes.len();
    bytes[len - 8 * PAGE..].fill(0);
    std::fs::write(&db, &bytes).unwrap();
    refused_then_restored(dir.path(), &good);
}

/// What the disk holds after the store's process was killed: the files copied while the
/// store is open, after its last commit (a commit is fsynced before it is answered).
fn crash_image(from: &Store, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    let db = from.path();
    let target = to.join(DB_FILE);
    std::fs::copy(db, &target).unwrap();
    std::fs::copy(wal(db), wal(&target)).unwrap();
    std::fs::copy(shm(db), shm(&target)).unwrap();
}

#[test]
fn a_wal_cut_short_after_a_crash_is_found_at_open_and_the_backup_brings_back_the_last_good_state() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("live");
    let (store, good) = store_with_backup(&live);
    let crashed = dir.path().join("crashed");
    crash_image(&store, &crashed);
    // The image opens whole as it is: a crash loses nothing committed.
    let copy = dir.path().join("whole");
    crash_image(&store, &copy);
    let whole = titles(&store);
    assert_eq!(titles(&Store::open_in_dir(&copy).unwrap()), whole);

    std::fs::create_dir_all(crashed.join(backup::BACKUPS_DIR)).unwrap();
    for b in backup::list(&live.join(backup::BACKUPS_DIR)).unwrap() {
        std::fs::copy(b.path(), crashed.join(backup::BACKUPS_DIR).join(&b.name)).unwrap();
    }
    let w = wal(&crashed.join(DB_FILE));
    let len = std::fs::metadata(&w).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&w)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    refused_then_restored(&crashed, &good);
}

/// What is not detectable, and what the person then gets: a log cut short with its index
/// gone too (a copy that took the database and part of its log) opens without a word,
/// and holds the transactions that the remaining log still has whole: an earlier state,
/// never a torn one.
#[test]
fn a_wal_cut_short_without_its_index_opens_at_an_earlier_committed_state() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("live");
    let (store, _good) = store_with_backup(&live);
    let all = titles(&store);
    let crashed = dir.path().join("crashed");
    crash_image(&store, &crashed);
    let db = crashed.join(DB_FILE);
    std::fs::remove_file(shm(&db)).unwrap();
    let len = std::fs::metadata(wal(&db)).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(wal(&db))
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    assert!(matches!(
        health::check(&db, i64::MAX).unwrap(),
        health::Health::Good { .. }
    ));
    let reopened = Store::open_in_dir(&crashed).unwrap();
    let kept = titles(&reopened);
    assert!(kept.len() < all.len(), "the cut-off commits are gone");
    assert_eq!(kept, all[..kept.len()], "a prefix of what was committed");
}

#[test]
fn a_restore_is_refused_while_the_store_is_open_and_keeps_a_whole_store_as_a_backup() {
    let dir = tempfile::tempdir().unwrap();
    let (store, good) = store_with_backup(dir.path());
    let db = dir.path().join(DB_FILE);
    assert!(
        Exclusive::try_take(&db).unwrap().is_none(),
        "open elsewhere"
    );
    let now_titles = titles(&store);
    drop(store);
    let lock = Exclusive::try_take(&db).unwrap().unwrap();
    let backups = dir.path().join(backup::BACKUPS_DIR);
    let newest = backup::list(&backups).unwrap().remove(0);
    let done =
        backup::restore(&db, newest.path(), newest.schema_version, &lock, Utc::now()).unwrap();
    drop(lock);
    let Kept::Backup { file } = &done.kept else {
        panic!("{:?}", done.kept)
    };
    assert!(
        !wal(&db).exists(),
        "no log of the replaced store is left to replay"
    );
    assert_eq!(titles(&Store::open_in_dir(dir.path()).unwrap()), good);
    // The store it replaced is a backup itself, and restoring it brings it all back.
    let lock = Exclusive::try_take(&db).unwrap().unwrap();
    backup::restore(&db, file.path(), file.schema_version, &lock, Utc::now()).unwrap();
    drop(lock);
    assert_eq!(titles(&Store::open_in_dir(dir.path()).unwrap()), now_titles);
    // Nothing was deleted: the backup restored first is still there.
    assert!(newest.path().exists());
}
