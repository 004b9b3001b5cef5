//! Starting `true` sandboxed vs unsandboxed: what confinement adds to every call, with
//! the git metadata work (finding every repository, the read-only mounts, the check after
//! the call) on a repository and on a workspace with 20 nested ones.
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

/// The whole call, and the check after it on its own.
async fn once(ws: &Path, how: Option<Mode>) -> (Duration, Duration) {
    let started = Instant::now();
    let mut cmd = tokio::process::Command::new("/bin/true");
    cmd.current_dir(ws);
    let guard =
        how.map(|mode| confine(&mut cmd, &SandboxPolicy::new(ws).mode(mode)).expect("confine"));
    let status = cmd.status().await.expect("spawn");
    assert!(status.success());
    let checked = Instant::now();
    if let Some(mut guard) = guard {
        assert!(guard.restore_git_metadata().is_empty());
    }
    let check = checked.elapsed();
    (started.elapsed(), check)
}

fn git(dir: &Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "b")
        .env("GIT_AUTHOR_EMAIL", "b@e")
        .env("GIT_COMMITTER_NAME", "b")
        .env("GIT_COMMITTER_EMAIL", "b@e")
        .status()
        .expect("git")
        .success();
    assert!(ok, "git {args:?}");
}

/// A repository with `nested` repositories under `vendor/`, each with a commit and a
/// few source files, so the walk has something to walk.
fn repo_with_nested(root: &Path, nested: usize) {
    std::fs::create_dir_all(root).expect("repo");
    git(root, &["init", "-q"]);
    for i in 0..nested {
        let lib = root.join(format!("vendor/lib{i}"));
        std::fs::create_dir_all(lib.join("src")).expect("lib");
        git(&lib, &["init", "-q"]);
        for f in 0..10 {
            std::fs::write(lib.join(format!("src/f{f}.rs")), "fn main() {}\n").expect("file");
        }
        git(&lib, &["add", "-A"]);
        git(&lib, &["commit", "-qm", "first"]);
    }
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plain_ws = dir.path().join("ws");
    let git_ws = dir.path().join("repo");
    std::fs::create_dir(&plain_ws).expect("ws");
    repo_with_nested(&git_ws, 0);
    let nested_ws = dir.path().join("nested");
    repo_with_nested(&nested_ws, 20);
    println!("{}", pocketpilot_sandbox::probe().details());
    let variants: [(&str, &Path, Option<Mode>); 5] = [
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
        (
            "sandboxed, repo + 20 nested repos",
            &nested_ws,
            Some(Mode::Enforce),
        ),
    ];
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(RUNS); variants.len()];
    let mut checks: Vec<Vec<Duration>> = vec![Vec::with_capacity(RUNS); variants.len()];
    for _ in 0..RUNS {
        for (i, (_, ws, how)) in variants.iter().enumerate() {
            let (call, check) = once(ws, *how).await;
            times[i].push(call);
            checks[i].push(check);
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
        "added at p50 over the plain spawn: supervisor {:.3} ms, sandbox with PID namespace {:.3} ms, sandbox + git metadata {:.3} ms, with 20 nested repos {:.3} ms (target ≤ 5 ms)",
        ms(p50s[1].saturating_sub(p50s[0])),
        ms(p50s[2].saturating_sub(p50s[0])),
        ms(p50s[3].saturating_sub(p50s[0])),
        ms(p50s[4].saturating_sub(p50s[0])),
    );
    for i in [3, 4] {
        checks[i].sort();
        println!(
            "check after the call, {:<24} p50 {:>7.3} ms   p99 {:>7.3} ms",
            variants[i].0.trim_start_matches("sandboxed, "),
            ms(percentile(&checks[i], 0.5)),
            ms(percentile(&checks[i], 0.99)),
        );
    }
}
