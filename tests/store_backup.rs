//! The person's store through the real binary: `backup now|list|restore`, a damaged store
//! refused with its own exit code and the exact command that puts the newest backup back,
//! `doctor` saying so, a store from a newer build refused untouched naming the backup that
//! fits, a restore refused while `serve` has the store open, and `serve`'s daily backup.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::Harness;

const EXIT_USAGE: i32 = 2;
const EXIT_BUSY: i32 = 6;
const EXIT_STORE: i32 = 12;

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn data(h: &Harness) -> PathBuf {
    h.dir.path().join("data")
}

fn db(h: &Harness) -> PathBuf {
    data(h).join("pocketpilot.db")
}

/// A finished task answering `answer`; its id.
fn task(h: &Harness, goal: &str, answer: &str) -> i64 {
    let script = h.dir.path().join(format!("{goal}.json"));
    std::fs::write(&script, json!([{ "text": answer }]).to_string()).unwrap();
    let ws = h.ws().display().to_string();
    let provider = format!("scripted:{}", script.display());
    let out = h.output(&[
        "run",
        "--workspace",
        &ws,
        "--goal",
        goal,
        "--provider",
        &provider,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let tasks = h.json(&["tasks", "--json"]);
    tasks
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["goal"] == goal)
        .unwrap()["id"]
        .as_i64()
        .unwrap()
}

fn answer(h: &Harness, id: i64) -> Value {
    h.json(&["show", &id.to_string(), "--json"])["task"]["final_answer"].clone()
}

fn backups(h: &Harness) -> Vec<Value> {
    h.json(&["backup", "list", "--json"])
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn a_damaged_store_is_refused_with_its_own_code_and_the_newest_backup_brings_it_back() {
    let h = Harness::new(&[]);
    let kept = task(&h, "first", "The answer is 42.");
    let out = h.output(&["backup", "now"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let list = backups(&h);
    assert_eq!(list.len(), 1, "{list:?}");
    let name = list[0]["name"].as_str().unwrap().to_owned();
    assert!(name.starts_with("store-v"), "{name}");
    let lost = task(&h, "second", "Written after the backup.");

    // The disk filled mid-write: the file's last pages are zeros.
    let mut bytes = std::fs::read(db(&h)).unwrap();
    let len = bytes.len();
    bytes[len - 6 * 4096..].fill(0);
    std::fs::write(db(&h), &bytes).unwrap();

    refused_until_restored(&h, &name, (kept, "The answer is 42."), lost);
}

/// The store's files as they are now (main, `-wal`, `-shm`; those that exist).
fn store_files(h: &Harness) -> Vec<(String, Vec<u8>)> {
    ["pocketpilot.db", "pocketpilot.db-wal", "pocketpilot.db-shm"]
        .iter()
        .filter_map(|f| Some((f.to_string(), std::fs::read(data(h).join(f)).ok()?)))
        .collect()
}

/// A damaged store: every command is refused with its own code and the command that puts
/// backup `name` back, `doctor` says so, nothing writes to any of its files, a restore
/// asks first, and once confirmed it moves the files aside byte for byte and brings back
/// the backup's state: task `kept` with its answer, not task `lost`.
fn refused_until_restored(h: &Harness, name: &str, kept: (i64, &str), lost: i64) {
    let damaged = store_files(h);
    for args in [&["tasks"][..], &["run", "--goal", "x"], &["backup", "now"]] {
        let out = h.output(args);
        let err = text(&out.stderr);
        assert_eq!(code(&out), EXIT_STORE, "{args:?}: {err}");
        assert!(err.contains("is damaged"), "{err}");
        assert!(
            err.contains(&format!("pocketpilot backup restore {name}")),
            "{err}"
        );
    }
    let doctor = h.output(&["doctor"]);
    let report = text(&doctor.stdout);
    assert_eq!(code(&doctor), EXIT_STORE, "{report}");
    assert!(report.contains("store: DAMAGED"), "{report}");
    assert!(
        report.contains(&format!("pocketpilot backup restore {name}")),
        "{report}"
    );
    let unchanged = |what: &str| {
        let now = store_files(h);
        let names = |f: &[(String, Vec<u8>)]| -> Vec<(String, usize)> {
            f.iter().map(|(n, b)| (n.clone(), b.len())).collect()
        };
        assert_eq!(names(&now), names(&damaged), "{what}");
        assert!(now == damaged, "{what}: the bytes changed");
    };
    unchanged("nothing wrote to it");

    // Not on a terminal and without --yes: asked nothing, changed nothing.
    let out = h.output(&["backup", "restore", name]);
    assert_eq!(code(&out), EXIT_USAGE, "{}", text(&out.stderr));
    unchanged("a restore not confirmed");

    let out = h.output(&["backup", "restore", name, "--yes"]);
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    assert!(said.contains("moved to"), "{said}");
    let aside: Vec<PathBuf> = std::fs::read_dir(data(h).join("damaged"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(aside.len(), 1);
    for (file, bytes) in &damaged {
        let kept_aside = std::fs::read(aside[0].join(file)).unwrap();
        assert!(&kept_aside == bytes, "{file} kept as it was");
    }

    assert_eq!(answer(h, kept.0), kept.1);
    let gone = h.output(&["show", &lost.to_string(), "--json"]);
    assert_eq!(
        code(&gone),
        EXIT_USAGE,
        "the task after the backup is not there"
    );
    let doctor = text(&h.output(&["doctor"]).stdout);
    assert!(doctor.contains("store: whole"), "{doctor}");
}

/// The page that holds the root of `table`'s b-tree (1-based), read from a copy so the
/// store itself is not opened.
fn root_page(h: &Harness, table: &str) -> usize {
    let copy = h.dir.path().join("schema-probe.db");
    std::fs::copy(db(h), &copy).unwrap();
    let c = rusqlite::Connection::open(&copy).unwrap();
    let page: i64 = c
        .query_row(
            "SELECT rootpage FROM sqlite_schema WHERE type = 'table' AND name = ?1",
            [table],
            |r| r.get(0),
        )
        .unwrap();
    drop(c);
    std::fs::remove_file(&copy).unwrap();
    usize::try_from(page).unwrap()
}

#[test]
fn a_torn_page_is_found_at_open_nothing_writes_and_the_newest_backup_brings_it_back() {
    let h = Harness::new(&[]);
    let kept = task(&h, "first", "The answer is 42.");
    let out = h.output(&["backup", "now"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let name = backups(&h)[0]["name"].as_str().unwrap().to_owned();
    let lost = task(&h, "second", "Written after the backup.");

    // A torn write: power went while the page of the tasks table's root was written, and
    // only its first two sectors are the new bytes (here, noise); the rest is the old page.
    let mut bytes = std::fs::read(db(&h)).unwrap();
    let page_size = usize::from(u16::from_be_bytes([bytes[16], bytes[17]]));
    let at = (root_page(&h, "tasks") - 1) * page_size;
    assert!(at + page_size < bytes.len(), "a page inside the file");
    let mut noise: u32 = 0x9E37_79B9;
    for b in &mut bytes[at..at + 1024] {
        noise ^= noise << 13;
        noise ^= noise >> 17;
        noise ^= noise << 5;
        *b = noise.to_le_bytes()[0];
    }
    std::fs::write(db(&h), &bytes).unwrap();

    refused_until_restored(&h, &name, (kept, "The answer is 42."), lost);
}

#[test]
fn a_write_ahead_log_cut_short_after_a_crash_is_found_and_the_newest_backup_brings_it_back() {
    let h = Harness::new(&[]);
    let kept = task(&h, "first", "kept");
    // `serve` keeps the store open, so what the next task commits stays in the log until a
    // checkpoint; killed, it leaves the log and its index behind, as a crash does.
    let mut serve = h
        .cmd(&["serve", "--port", "0"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut status = BufReader::new(serve.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("listening") {
        line.clear();
        assert!(status.read_line(&mut line).unwrap() > 0, "serve ended");
    }
    let dir = data(&h).join("backups");
    wait_for("the daily backup", Duration::from_secs(30), || {
        std::fs::read_dir(&dir).is_ok_and(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().ends_with(".db"))
        })
    });
    let name = backups(&h)[0]["name"].as_str().unwrap().to_owned();
    let lost = task(&h, "second", "lost");
    support::kill9(&mut serve);

    // The log lost its tail (a copy that missed it, a disk that dropped it): one frame of
    // those its index says were committed is left.
    let wal = data(&h).join("pocketpilot.db-wal");
    let log = std::fs::read(&wal).unwrap();
    assert!(data(&h).join("pocketpilot.db-shm").exists(), "the index");
    let page_size = u32::from_be_bytes([log[8], log[9], log[10], log[11]]) as usize;
    let one_frame = 32 + 24 + page_size;
    assert!(
        log.len() > 2 * one_frame,
        "the second task is in the log: {} bytes",
        log.len()
    );
    std::fs::write(&wal, &log[..one_frame]).unwrap();

    refused_until_restored(&h, &name, (kept, "kept"), lost);
}

#[test]
fn a_store_from_a_newer_build_is_refused_untouched_naming_the_backup_that_fits() {
    let h = Harness::new(&[]);
    task(&h, "first", "one");
    assert!(h.output(&["backup", "now"]).status.success());
    let fits = backups(&h)[0].clone();
    // What a newer build leaves: a higher schema version in the header (offset 60).
    let mut bytes = std::fs::read(db(&h)).unwrap();
    bytes[60..64].copy_from_slice(&999u32.to_be_bytes());
    std::fs::write(db(&h), &bytes).unwrap();

    let out = h.output(&["tasks"]);
    let err = text(&out.stderr);
    assert_eq!(code(&out), EXIT_STORE, "{err}");
    let supported = fits["schema_version"].as_i64().unwrap();
    assert!(
        err.contains(&format!("schema 999, this build knows up to {supported}")),
        "{err}"
    );
    assert!(err.contains(fits["name"].as_str().unwrap()), "{err}");
    assert_eq!(std::fs::read(db(&h)).unwrap(), bytes);
}

fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !done() {
        assert!(t0.elapsed() < limit, "{what}: not within {limit:?}");
        // sleep: the poll interval of a bounded wait for a file another process writes.
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn stop(mut child: Child) {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let _ = child.wait();
}

#[test]
fn serve_makes_the_daily_backup_and_a_restore_is_refused_while_serve_has_the_store_open() {
    let h = Harness::new(&[]);
    let kept = task(&h, "first", "kept");
    let mut serve = h
        .cmd(&["serve", "--port", "0"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // `serve` says it listens once it has the store open.
    let mut status = BufReader::new(serve.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("listening") {
        line.clear();
        assert!(status.read_line(&mut line).unwrap() > 0, "serve ended");
    }
    // No backup yet: the first daily one is due at once.
    let dir = data(&h).join("backups");
    wait_for("the daily backup", Duration::from_secs(30), || {
        std::fs::read_dir(&dir).is_ok_and(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().ends_with(".db"))
        })
    });
    let name = backups(&h)[0]["name"].as_str().unwrap().to_owned();
    let before = std::fs::read(db(&h)).unwrap();
    let out = h.output(&["backup", "restore", &name, "--yes"]);
    let err = text(&out.stderr);
    assert_eq!(code(&out), EXIT_BUSY, "{err}");
    assert!(
        err.contains("in use") && err.contains("quit it first"),
        "{err}"
    );
    assert_eq!(std::fs::read(db(&h)).unwrap(), before);
    stop(serve);

    let out = h.output(&["backup", "restore", &name, "--yes"]);
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    assert!(said.contains("is kept as"), "{said}");
    assert_eq!(answer(&h, kept), "kept");
    // The replaced store is a backup now, beside the one restored.
    assert_eq!(backups(&h).len(), 2);
    assert!(Path::new(&dir.join(&name)).exists());
}
