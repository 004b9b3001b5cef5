use super::*;

fn wal_db(dir: &Path) -> (PathBuf, Connection) {
    let db = dir.join("s.db");
    let c = Connection::open(&db).unwrap();
    c.pragma_update(None, "journal_mode", "WAL").unwrap();
    c.execute_batch(
        "CREATE TABLE t (x TEXT);
         INSERT INTO t VALUES ('one');
         INSERT INTO t VALUES ('two');",
    )
    .unwrap();
    (db, c)
}

#[test]
fn the_wal_index_header_is_read_as_sqlite_wrote_it() {
    let dir = tempfile::tempdir().unwrap();
    let (db, c) = wal_db(dir.path());
    let h = index_header(&db).expect("a live WAL index has a whole header");
    let page_size: i64 = c.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
    let page_size = page_size as u64;
    assert_eq!(h.page_size, page_size);
    // Three commits (the table, two rows), one page each at least.
    assert!(h.max_frame >= 3, "{}", h.max_frame);
    let wal_len = std::fs::metadata(wal_path(&db)).unwrap().len();
    assert_eq!(
        wal_len,
        WAL_HEADER + h.max_frame * (FRAME_HEADER + page_size)
    );
    assert_eq!(lost_log(&db), None);
    assert_eq!(check(&db, 1).unwrap(), Health::Good { version: 0 });
}

#[test]
fn a_wal_shorter_than_its_index_is_damage_and_a_longer_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _c) = wal_db(dir.path());
    let wal = wal_path(&db);
    let len = std::fs::metadata(&wal).unwrap().len();
    // Frames past the last commit (a transaction that never committed) change nothing.
    let f = std::fs::OpenOptions::new().append(true).open(&wal).unwrap();
    f.set_len(len + 4096 + 24).unwrap();
    assert_eq!(lost_log(&db), None);
    f.set_len(len - 10).unwrap();
    let found = lost_log(&db).expect("a cut-off committed frame is found");
    assert!(found.contains("cut short"), "{found}");
}

#[test]
fn a_header_that_does_not_add_up_is_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _c) = wal_db(dir.path());
    let mut shm = std::fs::read(shm_path(&db)).unwrap();
    shm[16] ^= 0xff; // mxFrame of the first copy only
    let copy = dir.path().join("copy.db");
    std::fs::copy(&db, &copy).unwrap();
    std::fs::copy(wal_path(&db), wal_path(&copy)).unwrap();
    std::fs::write(shm_path(&copy), &shm).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(wal_path(&copy))
        .unwrap()
        .set_len(0)
        .unwrap();
    assert!(index_header(&copy).is_none());
    assert_eq!(lost_log(&copy), None);
}

#[test]
fn an_absent_or_empty_file_is_absent_and_text_is_damage() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x.db");
    assert_eq!(check(&db, 3).unwrap(), Health::Absent);
    std::fs::write(&db, b"").unwrap();
    assert_eq!(check(&db, 3).unwrap(), Health::Absent);
    std::fs::write(&db, b"not a database, only words".repeat(200)).unwrap();
    assert!(matches!(check(&db, 3).unwrap(), Health::Damaged { .. }));
}

#[test]
fn a_closed_store_is_checked_without_a_log_or_index_appearing_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    // A path a URI would misread unless encoded.
    let sub = dir.path().join("a dir?x=1#%");
    std::fs::create_dir(&sub).unwrap();
    let (db, c) = wal_db(&sub);
    c.execute_batch("PRAGMA user_version = 2").unwrap();
    drop(c);
    assert!(!wal_path(&db).exists() && !shm_path(&db).exists());
    assert_eq!(check(&db, 3).unwrap(), Health::Good { version: 2 });
    assert!(!wal_path(&db).exists(), "no -wal made by the check");
    assert!(!shm_path(&db).exists(), "no -shm made by the check");

    // Damaged: the table's page is noise.
    let mut bytes = std::fs::read(&db).unwrap();
    let page = usize::from(u16::from_be_bytes([bytes[16], bytes[17]]));
    bytes[page..page + 100].fill(0xA5);
    std::fs::write(&db, &bytes).unwrap();
    assert!(matches!(check(&db, 3).unwrap(), Health::Damaged { .. }));
    assert!(!wal_path(&db).exists() && !shm_path(&db).exists());
    assert_eq!(std::fs::read(&db).unwrap(), bytes);
}
