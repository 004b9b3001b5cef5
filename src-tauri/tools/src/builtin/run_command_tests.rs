use std::ffi::OsString;
use std::time::{Duration, Instant};

use serde_json::json;

use super::*;
use crate::builtin::test_support::Fixture;

/// Live (non-zombie) processes whose process group is `pgid`, read from /proc.
fn live_in_group(pgid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let fields: Vec<&str> = after.split_whitespace().collect();
        if fields.len() > 2 && fields[2] == pgid.to_string() && fields[0] != "Z" {
            out.push(pid);
        }
    }
    out
}

/// Waits up to 3 s for the group to be empty (signal delivery is asynchronous).
fn group_gone(pgid: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if live_in_group(pgid).is_empty() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// Starts a command that sleeps with a background sleeper in its group; returns the
/// running call and the group id.
async fn spawn_sleepers(
    f: &Fixture,
) -> (tokio::task::JoinHandle<Result<ToolOutput, ToolError>>, i32) {
    let ctx = f.ctx.clone();
    let call = tokio::spawn(async move {
        RunCommand
            .call(
                json!({"command": "echo $$ > pg.pid; sleep 30 & sleep 30"}),
                &ctx,
            )
            .await
    });
    (call, read_pid(f, "pg.pid").await)
}

async fn read_pid(f: &Fixture, name: &str) -> i32 {
    for _ in 0..100 {
        if let Ok(text) = std::fs::read_to_string(f.path(name)) {
            if let Ok(pid) = text.trim().parse() {
                return pid;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the command never wrote {name}");
}

#[tokio::test]
async fn reports_exit_code_and_both_streams() {
    let f = Fixture::new();
    let out = f
        .call(
            &RunCommand,
            json!({"command": "echo out; echo err >&2; exit 3"}),
        )
        .await
        .unwrap();
    assert_eq!(out.text, "exit code: 3\nout\nerr\n");
}

#[tokio::test]
async fn runs_in_the_workspace_and_effect_shows_exactly_that() {
    let f = Fixture::new();
    let out = f
        .call(&RunCommand, json!({"command": "pwd"}))
        .await
        .unwrap();
    assert_eq!(out.text, format!("exit code: 0\n{}\n", f.root().display()));
    assert_eq!(
        f.effect(&RunCommand, json!({"command": "ls -la"})).unwrap(),
        Effect::Command {
            command: "ls -la".into(),
            cwd: f.root().display().to_string()
        }
    );
}

#[tokio::test]
async fn secrets_are_absent_from_the_environment() {
    let mut f = Fixture::new();
    let env = |k: &str, v: &str| (OsString::from(k), OsString::from(v));
    f.ctx = f.ctx.clone().with_base_env(vec![
        env("PATH", "/usr/bin:/bin"),
        env("VISIBLE", "yes"),
        env("MY_API_KEY", "k1"),
        env("GITHUB_TOKEN", "t1"),
        env("POCKETPILOT_API_KEY", "p1"),
        env("DB_PASSWORD", "pw1"),
        env("aws_secret_access_key", "s1"),
        env("GOOGLE_APPLICATION_CREDENTIALS", "c1"),
    ]);
    let out = f
        .call(&RunCommand, json!({"command": "env"}))
        .await
        .unwrap();
    assert!(out.text.contains("VISIBLE=yes"), "{}", out.text);
    for secret in ["k1", "t1", "p1", "pw1", "s1", "c1"] {
        assert!(!out.text.contains(secret), "{secret} leaked:\n{}", out.text);
    }
}

#[test]
fn secret_names_are_recognised() {
    for name in [
        "OPENAI_API_KEY",
        "github_token",
        "POCKETPILOT_API_KEY",
        "X_SECRET",
        "PGPASSWORD",
    ] {
        assert!(is_secret_name(name.as_ref()), "{name}");
    }
    for name in ["PATH", "HOME", "LANG", "TERM"] {
        assert!(!is_secret_name(name.as_ref()), "{name}");
    }
}

#[tokio::test]
async fn output_is_capped_with_a_marker_keeping_head_and_tail() {
    let f = Fixture::new();
    let out = f
        .call(
            &RunCommand,
            json!({"command": "echo START; head -c 300000 /dev/zero | tr '\\0' a; echo; echo END"}),
        )
        .await
        .unwrap();
    assert!(
        out.text.len() < OUTPUT_CAP_BYTES + 200,
        "{}",
        out.text.len()
    );
    assert!(out.text.starts_with("exit code: 0\nSTART\n"));
    assert!(out.text.contains("[output truncated:"), "no marker");
    assert!(out.text.ends_with("END\n"));
}

#[tokio::test]
async fn timeout_kills_the_whole_group() {
    let f = Fixture::new();
    let started = Instant::now();
    let err = f
        .call(
            &RunCommand,
            json!({"command": "echo $$ > pg.pid; sleep 30 & sleep 30", "timeout_secs": 1}),
        )
        .await
        .unwrap_err();
    assert_eq!(err, ToolError::TimedOut(1));
    assert!(started.elapsed() < Duration::from_secs(10));
    let pgid = read_pid(&f, "pg.pid").await;
    assert!(group_gone(pgid), "left behind: {:?}", live_in_group(pgid));
}

#[tokio::test]
async fn cancel_kills_the_whole_group_and_leaves_no_orphan() {
    let f = Fixture::new();
    let (call, pgid) = spawn_sleepers(&f).await;
    assert!(!live_in_group(pgid).is_empty());
    f.ctx.cancel.cancel();
    let result = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("cancel must stop the call promptly")
        .unwrap();
    assert_eq!(result.unwrap_err(), ToolError::Cancelled);
    assert!(group_gone(pgid), "left behind: {:?}", live_in_group(pgid));
}

#[tokio::test]
async fn background_jobs_do_not_outlive_a_finished_command() {
    let f = Fixture::new();
    let started = Instant::now();
    let out = f
        .call(
            &RunCommand,
            json!({"command": "echo $$ > pg.pid; sleep 30 & echo started"}),
        )
        .await
        .unwrap();
    assert_eq!(out.text, "exit code: 0\nstarted\n");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "waited for the background job"
    );
    let pgid = read_pid(&f, "pg.pid").await;
    assert!(group_gone(pgid), "left behind: {:?}", live_in_group(pgid));
}

#[tokio::test]
async fn dropping_the_call_kills_the_group() {
    let f = Fixture::new();
    let (call, pgid) = spawn_sleepers(&f).await;
    call.abort();
    let _ = call.await;
    assert!(group_gone(pgid), "left behind: {:?}", live_in_group(pgid));
}

#[tokio::test]
async fn signal_death_is_reported() {
    let f = Fixture::new();
    let out = f
        .call(&RunCommand, json!({"command": "kill -TERM $$"}))
        .await
        .unwrap();
    assert!(
        out.text
            .starts_with("exit code: none (killed by signal 15)"),
        "{}",
        out.text
    );
}

#[tokio::test]
async fn bad_arguments_are_rejected() {
    let f = Fixture::new();
    for args in [
        json!({}),
        json!({"command": ""}),
        json!({"command": "   "}),
        json!({"command": "true", "timeout_secs": 0}),
        json!({"command": "true", "timeout_secs": MAX_TIMEOUT_SECS + 1}),
        json!({"command": "true", "cwd": "/"}),
        json!({"command": "x".repeat(70_000)}),
    ] {
        let err = f.call(&RunCommand, args.clone()).await.unwrap_err();
        assert_eq!(err.kind().as_str(), "invalid_arguments", "{err}");
    }
}
