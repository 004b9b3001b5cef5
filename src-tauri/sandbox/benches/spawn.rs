//! Starting `true` sandboxed vs unsandboxed: what confinement adds to every call.
//! Prints p50/p99; asserts nothing (target: ≤ 5 ms added at p50).
use std::time::{Duration, Instant};

use pocketpilot_sandbox::{confine, Mode, SandboxPolicy};

const RUNS: usize = 300;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

async fn run(label: &str, ws: &std::path::Path, how: Option<Mode>) -> Duration {
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let started = Instant::now();
        let mut cmd = tokio::process::Command::new("/bin/true");
        cmd.current_dir(ws);
        let guard =
            how.map(|mode| confine(&mut cmd, &SandboxPolicy::new(ws).mode(mode)).expect("confine"));
        let status = cmd.status().await.expect("spawn");
        assert!(status.success());
        drop(guard);
        times.push(started.elapsed());
    }
    times.sort();
    let p50 = percentile(&times, 0.5);
    let p99 = percentile(&times, 0.99);
    println!(
        "{label:<34} p50 {:>7.3} ms   p99 {:>7.3} ms   ({RUNS} runs)",
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3
    );
    p50
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).expect("ws");
    println!("{}", pocketpilot_sandbox::probe().details());
    let plain = run("plain spawn of /bin/true", &ws, None).await;
    let off = run("supervisor only (Mode::Off)", &ws, Some(Mode::Off)).await;
    let on = run("sandboxed (Landlock+seccomp)", &ws, Some(Mode::Enforce)).await;
    std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&ws)
        .status()
        .expect("git init");
    let git = run("sandboxed, git repo (mount ns)", &ws, Some(Mode::Enforce)).await;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "added at p50: supervisor {:.3} ms, sandbox {:.3} ms, sandbox + .git mounts {:.3} ms (target ≤ 5 ms)",
        ms(off.saturating_sub(plain)),
        ms(on.saturating_sub(plain)),
        ms(git.saturating_sub(plain)),
    );
}
