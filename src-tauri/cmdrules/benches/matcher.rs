//! What checking a command against the rules costs: a typical agent command, a 4 KB
//! chain of covered parts, a 4 KB command that asks early, and a denied one hidden in a
//! wrapper. Prints p50/p99 per check; asserts nothing (target: p99 ≤ 1 ms at 4 KB).
//! The cases are interleaved run by run so load from other processes hits them alike.
//! Beside the wall-clock time, the process's CPU time per check (a reader thread's
//! included: text other than plain words is read on one): on a shared machine the
//! wall-clock p99 is mostly the scheduler giving the core to another process.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::hint::black_box;
use std::time::{Duration, Instant};

use pocketpilot_cmdrules::{check, Rule, Verdict};

const RUNS: usize = 5_000;

/// A label, the command, and what its verdict must be.
type Case<'a> = (&'a str, &'a str, fn(&Verdict) -> bool);

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// This process's CPU time so far (all its threads).
fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Repeats `unit` joined by `sep` until the command is at least `bytes` long.
fn sized(unit: &str, sep: &str, bytes: usize) -> String {
    let mut out = String::from(unit);
    while out.len() < bytes {
        out.push_str(sep);
        out.push_str(unit);
    }
    out
}

fn main() {
    let rules =
        |texts: &[&str]| -> Vec<Rule> { texts.iter().map(|t| t.parse().unwrap()).collect() };
    let allow = rules(&[
        "cargo test *",
        "cargo clippy *",
        "cargo fmt *",
        "git status *",
        "git diff *",
        "git log *",
        "ls *",
        "cat *",
        "grep *",
        "timeout *",
    ]);
    let deny = rules(&["rm *", "git push *", "curl *", "sudo *"]);

    let typical = "cargo test -p pocketpilot-core --all-features -- --nocapture 2>&1".to_string();
    let long_covered = sized(
        "cargo test -p pocketpilot-core --lib engine::worker 2>&1 && git diff --stat",
        " && ",
        4096,
    );
    let long_asks = format!("{} $(whoami)", sized("cargo test -p core", " ", 4096));
    let hidden_deny = format!(
        "{} ; timeout 60 bash -c 'cargo test && rm -rf target'",
        sized("git log --oneline -5", " && ", 4000)
    );
    let cases: [Case; 4] = [
        ("typical command", &typical, |v| {
            matches!(v, Verdict::Covered { .. })
        }),
        ("4 KB chain, covered", &long_covered, |v| {
            matches!(v, Verdict::Covered { .. })
        }),
        ("4 KB, asks ($(…) at the end)", &long_asks, |v| {
            matches!(v, Verdict::Ask { .. })
        }),
        ("4 KB, denied in bash -c", &hidden_deny, |v| {
            matches!(v, Verdict::Denied { .. })
        }),
    ];

    let mut times = vec![Vec::with_capacity(RUNS); cases.len()];
    let mut cpu = vec![Vec::with_capacity(RUNS); cases.len()];
    for (_, command, expected) in &cases {
        assert!(
            expected(&check(command, &allow, &deny)),
            "unexpected verdict for {command:.60}"
        );
    }
    for _ in 0..RUNS {
        for (i, (_, command, _)) in cases.iter().enumerate() {
            let started = Instant::now();
            let cpu_started = thread_cpu();
            black_box(check(black_box(command), &allow, &deny));
            cpu[i].push(thread_cpu().saturating_sub(cpu_started));
            times[i].push(started.elapsed());
        }
    }
    println!(
        "check() with {} allow and {} deny rules, {RUNS} runs per case, interleaved:",
        allow.len(),
        deny.len()
    );
    for (i, (label, command, _)) in cases.iter().enumerate() {
        times[i].sort();
        cpu[i].sort();
        println!(
            "{label:<30} {:>5} bytes   p50 {:>8.1} µs   p99 {:>8.1} µs   max {:>8.1} µs   (CPU p50 {:>7.1} µs, p99 {:>7.1} µs)",
            command.len(),
            us(percentile(&times[i], 0.5)),
            us(percentile(&times[i], 0.99)),
            us(*times[i].last().unwrap()),
            us(percentile(&cpu[i], 0.5)),
            us(percentile(&cpu[i], 0.99)),
        );
    }
}
