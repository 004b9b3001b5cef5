//! The scan before and after a command on a 10,000-file workspace: nothing changed, then
//! 1, 10, 100 and 1,000 files changed; and the journal's size on disk against the bytes
//! changed. Prints figures (`bench-results/changes.txt`); asserts nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]
use std::fs;
use std::path::Path;
use std::time::Instant;

use pocketpilot_changes::diff::changes;
use pocketpilot_changes::scan::{scan, ScanOptions, Scope};
use pocketpilot_changes::BlobStore;

const FILES: usize = 10_000;
const ROUNDS: usize = 15;

fn make_workspace(root: &Path) {
    for i in 0..FILES {
        let dir = root.join(format!("src/m{:02}/d{:02}", i % 50, (i / 50) % 20));
        fs::create_dir_all(&dir).unwrap();
        let body = format!("// file {i}\n{}\n", "fn f() { let x = 1; }\n".repeat(20));
        fs::write(dir.join(format!("f{i}.rs")), body).unwrap();
    }
    // Ignored: never entered.
    fs::create_dir_all(root.join("target/debug")).unwrap();
    for i in 0..2000 {
        fs::write(root.join(format!("target/debug/o{i}")), "x").unwrap();
    }
}

fn du(dir: &Path) -> u64 {
    let mut total = 0;
    for e in fs::read_dir(dir).unwrap().flatten() {
        let m = e.metadata().unwrap();
        total += if m.is_dir() { du(&e.path()) } else { m.len() };
    }
    total
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let ws = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    make_workspace(ws.path());
    let blobs = BlobStore::open(data.path().join("blobs")).unwrap();
    let opts = ScanOptions::default();
    let t = Instant::now();
    let (mut index, stats) = scan(ws.path(), &Scope::Workspace, None, &blobs, &opts).unwrap();
    println!(
        "first scan (hash and keep everything): {} entries, {} files hashed, {:.0} ms",
        stats.entries,
        stats.hashed,
        t.elapsed().as_secs_f64() * 1e3
    );
    // Let the first scan's files age past the racy window.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let (i2, _) = scan(ws.path(), &Scope::Workspace, Some(&index), &blobs, &opts).unwrap();
    index = i2;
    println!("{FILES}-file workspace, before + after scans of one command, median of {ROUNDS}:");
    for changed in [0usize, 1, 10, 100, 1000] {
        let mut times = Vec::new();
        let mut hashed = 0;
        let mut journal = 0u64;
        let mut changed_bytes = 0u64;
        for round in 0..ROUNDS {
            let blobs_before = du(blobs.root());
            let t = Instant::now();
            let (pre, _) = scan(ws.path(), &Scope::Workspace, Some(&index), &blobs, &opts).unwrap();
            let mut bytes = 0u64;
            for k in 0..changed {
                let i = (k * 7919 + round) % FILES;
                let p = ws
                    .path()
                    .join(format!("src/m{:02}/d{:02}/f{i}.rs", i % 50, (i / 50) % 20));
                let body = format!("// file {i} round {round}\nchanged\n");
                bytes += body.len() as u64;
                fs::write(p, body).unwrap();
            }
            let t_cmd = t.elapsed();
            let (post, st) = scan(ws.path(), &Scope::Workspace, Some(&pre), &blobs, &opts).unwrap();
            let list = changes(&pre, &post);
            assert_eq!(list.len(), changed.min(list.len()));
            times.push((t.elapsed() - t_cmd).as_secs_f64() * 1e3);
            hashed = st.hashed;
            let rec = serde_json::to_vec(&list).unwrap().len() as u64;
            journal += du(blobs.root()) - blobs_before + rec;
            changed_bytes += bytes;
            index = post;
        }
        println!(
            "  {changed:>5} files changed: {:>6.1} ms (files hashed after: {hashed}); journal {:.1} KiB for {:.1} KiB changed per command",
            median(times),
            journal as f64 / ROUNDS as f64 / 1024.0,
            changed_bytes as f64 / ROUNDS as f64 / 1024.0
        );
    }
    let raw = index.to_bytes().unwrap().len();
    println!(
        "index of the workspace (kept once per changed pre-state): {:.0} KiB",
        raw as f64 / 1024.0
    );
}
