//! Full-text search over a big store (figures, not a test):
//! `cargo bench -p pocketpilot-store --bench search`; writes bench-results/search.txt.
//!
//! 10,000 sessions of 100 entries each (1,000,000 entries: the person's words, answers and
//! tool output of a few hundred bytes, words drawn from a 20,000-word vocabulary with a
//! Zipf-like skew, so some words are in most entries and some in a handful), written
//! through `entries::append` and so through the index's triggers. Then each kind of query a
//! person types, many times over, newest hits first, 30 per answer (as the sidebar asks):
//! p50 / p95 / max per kind. The index keeps 2- and 3-letter prefixes (`prefix = '2 3'`):
//! without them a word being typed (`ca*`) merges every word it starts, and a short,
//! common one took ~180 ms here; with them it reads one list, like a whole word.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use pocketpilot_protocol::{EntryKind, RunSource};
use pocketpilot_store::{entries, search, sessions, tasks, Store};
use serde_json::json;

const SESSIONS: usize = 10_000;
const ENTRIES_PER_SESSION: usize = 100;
const VOCABULARY: u64 = 20_000;
const RUNS: usize = 200;

/// A small deterministic generator (xorshift): the same store every run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// A word id, small ids far more often than large ones.
    fn word(&mut self) -> u64 {
        let r = (self.next() % 1_000_000) as f64 / 1_000_000.0;
        ((VOCABULARY as f64).powf(r) as u64).min(VOCABULARY - 1)
    }
}

fn word(id: u64) -> String {
    // Pronounceable, distinct: two letters per base-26 digit.
    let mut n = id;
    let mut s = String::from("w");
    loop {
        s.push((b'a' + (n % 26) as u8) as char);
        n /= 26;
        if n == 0 {
            break;
        }
    }
    s
}

fn text(rng: &mut Rng, words: usize) -> String {
    (0..words)
        .map(|_| word(rng.word()))
        .collect::<Vec<_>>()
        .join(" ")
}

fn fill(store: &Store) -> Duration {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let started = Instant::now();
    for chunk in 0..(SESSIONS / 100) {
        let mut batch = Vec::with_capacity(100 * ENTRIES_PER_SESSION);
        for s in 0..100 {
            let n = chunk * 100 + s;
            for e in 0..ENTRIES_PER_SESSION {
                let (kind, words) = match e % 4 {
                    0 => (EntryKind::User, 12),
                    1 | 3 => (EntryKind::Assistant, 40),
                    _ => (EntryKind::ToolResult, 80),
                };
                let mut t = text(&mut rng, words);
                // A word only one session's tool output has, to look for later.
                if e == 2 && n == SESSIONS / 2 {
                    t.push_str(" frobnicate");
                }
                batch.push((s, kind, t));
            }
        }
        store
            .write(move |tx| {
                let mut ids = Vec::new();
                for s in 0..100 {
                    let ws = format!("/home/p/project{}", (chunk * 100 + s) % 20);
                    let sid = sessions::insert(tx, "a session", &ws)?;
                    let tid = tasks::insert(
                        tx,
                        &tasks::NewTask {
                            session_id: sid,
                            goal: "a goal",
                            trigger: RunSource::Chat,
                            provider: None,
                            follow_up_of: None,
                            grants: &[],
                            mcp: &[],
                        },
                    )?;
                    ids.push((sid, tid));
                }
                for (s, kind, t) in &batch {
                    let (sid, tid) = ids[*s];
                    let content = match kind {
                        EntryKind::ToolResult => {
                            json!({ "call_id": "c", "text": t, "is_error": false })
                        }
                        _ => json!({ "text": t }),
                    };
                    entries::append(tx, sid, Some(tid), kind, &content)?;
                }
                Ok(())
            })
            .unwrap();
    }
    started.elapsed()
}

fn percentile(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:7.2} ms", d.as_secs_f64() * 1e3)
}

type Query = Box<dyn FnMut(&mut Rng) -> String>;

/// Each kind of query a person types: (label, a generator of the text).
fn kinds() -> Vec<(&'static str, Query)> {
    vec![
        ("a common word (in most entries)", Box::new(|_| word(1))),
        (
            "a mid-frequency word",
            Box::new(|r| word(200 + r.next() % 200)),
        ),
        (
            "a rare word",
            Box::new(|r| word(VOCABULARY - 1 - r.next() % 2000)),
        ),
        (
            "two words",
            Box::new(|r| format!("{} {}", word(r.word()), word(r.word()))),
        ),
        (
            "a prefix being typed (3 letters)",
            Box::new(|r| word(700 + r.next() % 5000)[..3].to_string()),
        ),
        (
            "one session's tool output",
            Box::new(|_| "frobnicate".to_string()),
        ),
        ("no match", Box::new(|_| "zzzqqq".to_string())),
    ]
}

/// `RUNS` queries from `gen` (in `workspace` when given): one line of figures.
fn measure(
    store: &Store,
    label: &str,
    workspace: impl Fn(usize) -> Option<String>,
    gen: &mut Query,
) -> String {
    let mut rng = Rng(42);
    let mut lat = Vec::with_capacity(RUNS);
    let mut hits = 0;
    for i in 0..RUNS {
        let q = gen(&mut rng);
        let ws = workspace(i);
        let t = Instant::now();
        let found = store
            .read(|c| search::search(c, &q, ws.as_deref(), 30))
            .unwrap();
        lat.push(t.elapsed());
        hits += found.len();
    }
    let max = *lat.iter().max().unwrap();
    format!(
        "  {label:<36} p50 {}  p95 {}  max {}  ({:.1} hits/query)",
        ms(percentile(&mut lat, 0.5)),
        ms(percentile(&mut lat, 0.95)),
        ms(max),
        hits as f64 / RUNS as f64
    )
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_dir(dir.path()).unwrap();
    let filled = fill(&store);
    let db = std::fs::metadata(dir.path().join(pocketpilot_store::DB_FILE))
        .map(|m| m.len())
        .unwrap_or(0);
    let index: i64 = store
        .read(|c| {
            Ok(c.query_row(
                "SELECT sum(length(block)) FROM entry_search_data",
                [],
                |r| r.get(0),
            )?)
        })
        .unwrap_or(-1);
    let entries = SESSIONS * ENTRIES_PER_SESSION;
    let mut out = String::new();
    writeln!(out, "search over {SESSIONS} sessions / {entries} entries (cargo bench -p pocketpilot-store --bench search)").unwrap();
    writeln!(
        out,
        "written through entries::append and the index's triggers in {:.1} s ({:.0} entries/s); store {:.0} MiB, of which the index {:.0} MiB",
        filled.as_secs_f64(),
        entries as f64 / filled.as_secs_f64(),
        db as f64 / 1_048_576.0,
        index as f64 / 1_048_576.0
    )
    .unwrap();
    writeln!(
        out,
        "{RUNS} queries each, 30 hits newest first (as the sidebar asks), snippets included:"
    )
    .unwrap();
    for (label, mut gen) in kinds() {
        writeln!(out, "{}", measure(&store, label, |_| None, &mut gen)).unwrap();
    }
    // One workspace of 20: the filter is applied along the index's newest-first walk.
    let mut any: Query = Box::new(|r| word(r.word()));
    let one_workspace = |i: usize| Some(format!("/home/p/project{}", i % 20));
    writeln!(
        out,
        "{}",
        measure(
            &store,
            "any word, one workspace of 20",
            one_workspace,
            &mut any
        )
    )
    .unwrap();
    print!("{out}");
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench-results/search.txt");
    std::fs::write(path, out).unwrap();
}
