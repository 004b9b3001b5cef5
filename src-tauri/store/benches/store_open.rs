//! The store's checks and copies on a big store (figures, not a test):
//! `cargo bench -p pocketpilot-store --bench store_open`; writes bench-results/store-open.txt.
//!
//! A store of 10,000 tasks and 1,000,000 events (payloads the size of streamed text
//! deltas and tool results). Measured, with the file in the page cache (a second open; the
//! first after a boot reads it from disk as well):
//! - `PRAGMA quick_check` alone, and the whole `Store::open` that runs it;
//! - `PRAGMA integrity_check`, for comparison (not run at open);
//! - a backup: its time and size, and what a writer committing small writes meanwhile
//!   sees: its write latency during the copy against the same writer without one.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pocketpilot_store::{backup, health, Store, SCHEMA_VERSION};
use rusqlite::params;

const TASKS: i64 = 10_000;
const EVENTS_PER_TASK: i64 = 100;

fn ms(d: Duration) -> String {
    format!("{:9.1} ms", d.as_secs_f64() * 1e3)
}

fn fill(store: &Store) {
    let delta = serde_json_text(60);
    let result = serde_json_text(600);
    for chunk in 0..(TASKS / 500) {
        store
            .write(|tx| {
                let session: i64 = tx.query_row(
                    "INSERT INTO sessions (title, workspace, created_at, updated_at) VALUES ('s', '/w', 'now', 'now') RETURNING id",
                    [],
                    |r| r.get(0),
                )?;
                let mut task = tx.prepare_cached(
                    "INSERT INTO tasks (session_id, goal, trigger, status, created_at) VALUES (?1, 'a goal of a few words', 'chat', 'completed', 'now') RETURNING id",
                )?;
                let mut event = tx.prepare_cached(
                    "INSERT INTO task_events (task_id, sequence, type, payload, at) VALUES (?1, ?2, ?3, ?4, '2026-12-02T10:15:00.000Z')",
                )?;
                for _ in 0..500 {
                    let id: i64 = task.query_row(params![session], |r| r.get(0))?;
                    for seq in 1..=EVENTS_PER_TASK {
                        // Mostly text deltas, every tenth a tool's result.
                        let (kind, payload) = if seq % 10 == 0 {
                            ("tool_call_finished", &result)
                        } else {
                            ("assistant_delta", &delta)
                        };
                        event.execute(params![id, seq, kind, payload])?;
                    }
                }
                let _ = chunk;
                Ok(())
            })
            .unwrap();
    }
}

fn serde_json_text(n: usize) -> String {
    format!("{{\"text\":\"{}\"}}", "lorem ipsum ".repeat(n / 12))
}

fn percentile(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v.get(((v.len() as f64 - 1.0) * p) as usize)
        .copied()
        .unwrap_or_default()
}

/// Small writes, one after another, until `stop`; their latencies.
fn writer(store: Arc<Store>, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<Duration>> {
    std::thread::spawn(move || {
        let mut lat = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let t = Instant::now();
            store
                .write(|tx| {
                    tx.execute(
                        "INSERT INTO settings (key, value) VALUES ('bench', '1') ON CONFLICT(key) DO UPDATE SET value = value + 1",
                        [],
                    )?;
                    Ok(())
                })
                .unwrap();
            lat.push(t.elapsed());
        }
        lat
    })
}

fn line(out: &mut String, label: &str, lat: &mut [Duration]) {
    let n = lat.len();
    let p50 = percentile(lat, 0.5);
    let p99 = percentile(lat, 0.99);
    let max = lat.iter().max().copied().unwrap_or_default();
    let _ = writeln!(
        out,
        "{label:<44} p50 {}   p99 {}   max {}   (n={n})",
        ms(p50),
        ms(p99),
        ms(max)
    );
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let t = Instant::now();
    {
        let store = Store::open_in_dir(data).unwrap();
        fill(&store);
    }
    let filled = t.elapsed();
    let db = data.join(pocketpilot_store::DB_FILE);
    let size = std::fs::metadata(&db).unwrap().len();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# The store's checks and copies on a big store\n# cargo bench -p pocketpilot-store --bench store_open\n# {TASKS} tasks, {} events; file {:.0} MiB (filled in {:.1} s); the file in the page cache\n",
        TASKS * EVENTS_PER_TASK,
        size as f64 / 1_048_576.0,
        filled.as_secs_f64()
    );
    checks(data, &db, &mut out);
    copies(data, &db, size, &mut out);
    // The window's bench starts the app on this store (tests/e2e/bench_ui.py, BENCH_STORE).
    if let Some(keep) = std::env::var_os("STORE_OPEN_KEEP") {
        std::fs::copy(&db, &keep).unwrap();
        eprintln!("the store kept as {}", keep.to_string_lossy());
    }
    print!("{out}");
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench-results/store-open.txt");
    std::fs::write(&path, &out).unwrap();
    println!("written to {}", path.display());
}

/// `quick_check` alone and within `Store::open`, and `integrity_check` for comparison.
fn checks(data: &std::path::Path, db: &std::path::Path, out: &mut String) {
    let mut qc = Vec::new();
    let mut opens = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let h = health::check(db, SCHEMA_VERSION).unwrap();
        qc.push(t.elapsed());
        assert!(matches!(h, health::Health::Good { .. }), "{h:?}");
        let t = Instant::now();
        drop(Store::open_in_dir(data).unwrap());
        opens.push(t.elapsed());
    }
    line(out, "quick_check (health::check) at open", &mut qc);
    line(out, "Store::open (with the check)", &mut opens);
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let t = Instant::now();
    let r: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    let _ = writeln!(
        out,
        "{:<44} {}   ({r}; not run at open)",
        "integrity_check, for comparison",
        ms(t.elapsed())
    );
}

/// A backup alone, then with a writer committing meanwhile, and that writer's latencies
/// against the same writer without a backup.
fn copies(data: &std::path::Path, db: &std::path::Path, size: u64, out: &mut String) {
    let store = Arc::new(Store::open_in_dir(data).unwrap());
    let backups = data.join(backup::BACKUPS_DIR);
    let t = Instant::now();
    let lone = backup::take(db, &backups, chrono::Utc::now(), |_| {}).unwrap();
    let alone = t.elapsed();
    std::fs::remove_file(lone.path()).unwrap();

    // The writer alone, for as long as a copy takes.
    let stop = Arc::new(AtomicBool::new(false));
    let w = writer(store.clone(), stop.clone());
    std::thread::sleep(alone);
    stop.store(true, Ordering::Relaxed);
    let mut base = w.join().unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let w = writer(store.clone(), stop.clone());
    let t = Instant::now();
    let mut steps = 0;
    let file = backup::take(db, &backups, chrono::Utc::now(), |_| steps += 1).unwrap();
    let during_copy = t.elapsed();
    stop.store(true, Ordering::Relaxed);
    let mut during = w.join().unwrap();
    let _ = writeln!(
        out,
        "\n{:<44} {}   ({} steps of 1024 pages, then quick_check of the copy)",
        "backup, nothing else writing",
        ms(alone),
        steps
    );
    let _ = writeln!(
        out,
        "{:<44} {}   size {:.0} MiB (the store {:.0} MiB)",
        "backup, a writer committing meanwhile",
        ms(during_copy),
        file.bytes as f64 / 1_048_576.0,
        size as f64 / 1_048_576.0
    );
    line(out, "small writes, no backup running", &mut base);
    line(out, "small writes, during the backup", &mut during);
}
