//! Starting `true` sandboxed vs unsandboxed: what confinement adds to every call.
//! Prints p50/p99; asserts nothing (target: ≤ 5 ms added at p50). The variants are
//! interleaved run by run so load from other processes on the machine hits them alike.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::path::Path;
use std::time::{Duration, Instant};

use pocketpilot_sandbox::{confine, Mode, SandboxPolicy};

const RUNS: usize = 300;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

async fn once(ws: &Path, how: Option<Mode>) -> Duration {
    let started = Instant::now();
    let mut cmd = tokio::process::Command::new("/bin/true");
    cmd.current_dir(ws);
    let guard =
        how.map(|mode| confine(&mut cmd, &SandboxPolicy::new(ws).mode(mode)).expect("confine"));
    let status = cmd.status().await.expect("spawn");
    assert!(status.success());
    drop(guard);
    started.elapsed()
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plain_ws = dir.path().join("ws");
    let git_ws = dir.path().join("repo");
    std::fs::create_dir(&plain_ws).expect("ws");
    std::fs::create_dir(&git_ws).expect("repo");
    std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&git_ws)
        .status()
        .expect("git init");
    println!("{}", pocketpilot_sandbox::probe().details());
    let variants: [(&str, &Path, Option<Mode>); 4] = [
        ("plain spawn of /bin/true", &plain_ws, None),
        ("supervisor only (Mode::Off)", &plain_ws, Some(Mode::Off)),
        (
            "sandboxed (+PID ns, own /proc)",
            &plain_ws,
            Some(Mode::Enforce),
        ),
        (
            "sandboxed, git repo (+.git mounts)",
            &git_ws,
            Some(Mode::Enforce),
        ),
    ];
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(RUNS); variants.len()];
    for _ in 0..RUNS {
        for (i, (_, ws, how)) in variants.iter().enumerate() {
            times[i].push(once(ws, *how).await);
        }
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut p50s = Vec::new();
    for (i, (label, _, _)) in variants.iter().enumerate() {
        times[i].sort();
        let (p50, p99) = (percentile(&times[i], 0.5), percentile(&times[i], 0.99));
        p50s.push(p50);
        println!(
            "{label:<34} p50 {:>7.3} ms   p99 {:>7.3} ms   ({RUNS} runs)",
            ms(p50),
            ms(p99)
        );
    }
    println!(
        "added at p50 over the plain spawn: supervisor {:.3} ms, sandbox with PID namespace {:.3} ms, sandbox + .git mounts {:.3} ms (target ≤ 5 ms)",
        ms(p50s[1].saturating_sub(p50s[0])),
        ms(p50s[2].saturating_sub(p50s[0])),
        ms(p50s[3].saturating_sub(p50s[0])),
    );
}
