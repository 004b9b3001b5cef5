//! What compaction costs and what it buys (figures, not a test):
//! `cargo bench -p pocketpilot-core --bench compaction`; writes bench-results/compaction.txt.
//!
//! A 200-turn session (one task per person message, each answered at length by a scripted
//! model declaring a 4,096-token window; summaries answered at once, so the figure is the
//! runtime's own cost): the wall time of a turn with a compaction against one without, and
//! the size of every request (the runtime's estimate, the budget): it must stay flat under
//! the budget however long the session grows.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]
mod common;

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{ms, percentile};
use pocketpilot_core::ops;
use pocketpilot_core::{NewTask, Runtime};
use serde_json::json;

const TURNS: usize = 200;

fn main() {
    let rt_tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let provider = scripted_model(dir.path());
    let rt = Runtime::open(&dir.path().join("data")).unwrap();
    let (mut plain, mut compacting, session, ids) =
        rt_tokio.block_on(timed_turns(&rt, &ws, &provider));
    let turns = rt
        .call(ops::ContextTurns {
            session_id: session,
        })
        .unwrap();
    let compactions = rt
        .call(ops::ListCompactions {
            session_id: session,
        })
        .unwrap()
        .len();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "compaction bench: {TURNS} turns, window 4096, scripted model (summary at once)"
    );
    plain.sort();
    compacting.sort();
    let line = |name: &str, s: &[Duration]| {
        format!(
            "{name:<34} p50 {:>8.2} ms  p95 {:>8.2} ms  (n={})",
            ms(percentile(s, 0.5)),
            ms(percentile(s, 0.95)),
            s.len()
        )
    };
    let _ = writeln!(out, "{}", line("turn without compaction", &plain));
    let _ = writeln!(out, "{}", line("turn with a compaction", &compacting));
    let _ = writeln!(
        out,
        "time a compaction adds (p50)      {:>8.2} ms",
        ms(percentile(&compacting, 0.5)) - ms(percentile(&plain, 0.5))
    );
    let failed = ids
        .iter()
        .filter(|id| {
            rt.call(ops::GetTask { id: **id }).unwrap().status
                != pocketpilot_core::TaskStatus::Completed
        })
        .count();
    let _ = writeln!(
        out,
        "compactions: {compactions}; requests: {}; tasks not completed: {failed}",
        turns.len()
    );
    write_request_sizes(&mut out, &turns);
    print!("{out}");
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench-results/compaction.txt");
    std::fs::write(&path, &out).unwrap();
    println!("written to {}", path.display());
}

/// A scripted model with a small window that answers at length, and summarises at once.
fn scripted_model(dir: &Path) -> String {
    let script = dir.join("script.json");
    let answer = format!(
        "Answer: {}",
        "the quick brown fox jumps over the lazy dog; ".repeat(25)
    );
    std::fs::write(
        &script,
        json!({ "context_window": 4096, "repeat_last": true, "turns": [ { "text": answer } ],
                "summary": { "text": "Several long answers about a fox." } })
        .to_string(),
    )
    .unwrap();
    format!("scripted:{}", script.display())
}

/// [`TURNS`] questions in one session, each its own task: the time of each turn, those
/// without a compaction apart from those with one; the session; the tasks.
async fn timed_turns(
    rt: &Arc<Runtime>,
    ws: &Path,
    provider: &str,
) -> (Vec<Duration>, Vec<Duration>, i64, Vec<i64>) {
    let mut plain: Vec<Duration> = Vec::new();
    let mut compacting: Vec<Duration> = Vec::new();
    let mut session = None;
    let mut ids = Vec::new();
    for i in 0..TURNS {
        let task = NewTask {
            goal: format!("question {i}: tell me more"),
            workspace: Some(ws.to_path_buf()),
            session_id: session,
            trigger: pocketpilot_protocol::RunSource::Cli,
            provider: Some(provider.to_owned()),
            ..Default::default()
        };
        let t0 = Instant::now();
        let id = rt.call(ops::SubmitTask { new: task.clone() }).unwrap();
        rt.call(ops::WaitSettled { task_id: id }).await.unwrap();
        let took = t0.elapsed();
        session = Some(rt.call(ops::GetTask { id }).unwrap().session_id);
        ids.push(id);
        let compacted = rt
            .call(ops::TaskEvents { task_id: id })
            .unwrap()
            .iter()
            .any(|e| e.kind().as_str() == "context_compacted");
        if compacted {
            compacting.push(took);
        } else {
            plain.push(took);
        }
    }
    (plain, compacting, session.unwrap(), ids)
}

/// The estimate of each request, by rows of 20, and whether it stayed flat and under the
/// budget.
fn write_request_sizes(out: &mut String, turns: &[pocketpilot_protocol::ContextTurn]) {
    let budget = turns.iter().map(|t| t.budget).max().unwrap_or(0);
    let max = turns.iter().map(|t| t.estimate).max().unwrap_or(0);
    let _ = writeln!(
        out,
        "request size (estimate, tokens) by turn, budget {budget}, max {max}:"
    );
    for chunk in turns.chunks(20) {
        let first = chunk[0].id;
        let row: Vec<String> = chunk.iter().map(|t| t.estimate.to_string()).collect();
        let _ = writeln!(out, "  from request {first:>4}: {}", row.join(" "));
    }
    let last50: Vec<u32> = turns.iter().rev().take(50).map(|t| t.estimate).collect();
    let first50: Vec<u32> = turns.iter().take(50).map(|t| t.estimate).collect();
    let mean = |v: &[u32]| v.iter().map(|x| f64::from(*x)).sum::<f64>() / v.len().max(1) as f64;
    let _ = writeln!(
        out,
        "mean request: first 50 turns {:.0} tokens, last 50 turns {:.0} tokens (flat, never above the budget: {})",
        mean(&first50),
        mean(&last50),
        max <= budget
    );
}
