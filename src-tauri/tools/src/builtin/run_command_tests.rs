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
        // sleep: the poll interval of the bounded wait for the group to die (signal delivery is asynchronous).
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
    let inner = read_pid(f, "pg.pid").await;
    (call, outer_pid(inner, "pg.pid"))
}

/// The pid /proc shows for the running shell that wrote `$$` = `inner` (its pid in the
/// sandbox's own PID namespace, when there is one): the last `NSpid` entry is the
/// innermost pid, and its command line names the file it wrote.
fn outer_pid(inner: i32, wrote: &str) -> i32 {
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if !String::from_utf8_lossy(&cmdline).contains(wrote) {
            continue;
        }
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let innermost = status
            .lines()
            .find_map(|l| l.strip_prefix("NSpid:"))
            .and_then(|ids| ids.split_whitespace().last())
            .and_then(|id| id.parse::<i32>().ok());
        if innermost == Some(inner) {
            return pid;
        }
    }
    panic!("no running shell wrote {wrote}");
}

async fn read_pid(f: &Fixture, name: &str) -> i32 {
    for _ in 0..100 {
        if let Ok(text) = std::fs::read_to_string(f.path(name)) {
            if let Ok(pid) = text.trim().parse() {
                return pid;
            }
        }
        // sleep: the poll interval of the bounded wait for the command to write its pid.
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

// --- the OS sandbox (issue 14). Each test also runs the command with the sandbox
// explicitly off, to show the test would fail without it.

/// A fixture whose HOME (with a canary) is the outside dir and whose app data dir, with a
/// stand-in database, is forbidden.
fn sandboxed() -> Fixture {
    assert!(
        pocketpilot_sandbox::probe().is_sandboxed(),
        "{}",
        pocketpilot_sandbox::probe().details()
    );
    let mut f = Fixture::new();
    let data = f.outside().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("pocketpilot.db"), "DB-ROW-SECRET").unwrap();
    std::fs::write(f.outside().join("canary.txt"), "HOME-CANARY").unwrap();
    let mut env: Vec<(OsString, OsString)> =
        std::env::vars_os().filter(|(k, _)| k != "HOME").collect();
    env.push(("HOME".into(), f.outside().into()));
    env.push(("DB".into(), data.join("pocketpilot.db").into()));
    f.ctx.forbidden = vec![data];
    f.ctx = f.ctx.clone().with_base_env(env);
    f
}

fn unsandboxed(f: &Fixture) -> Fixture {
    let mut g = Fixture::new();
    g.ctx = f.ctx.clone();
    g.ctx.sandbox.mode = crate::SandboxMode::Off;
    g
}

#[tokio::test]
async fn sandbox_keeps_home_and_the_app_database_unreadable() {
    let f = sandboxed();
    let args = json!({"command": "cat \"$HOME/canary.txt\" \"$DB\""});
    let out = f.call(&RunCommand, args.clone()).await.unwrap();
    assert!(!out.text.contains("HOME-CANARY"), "{}", out.text);
    assert!(!out.text.contains("DB-ROW-SECRET"), "{}", out.text);
    assert!(
        out.text.contains("[blocked by the sandbox: access to "),
        "{}",
        out.text
    );
    let control = unsandboxed(&f).call(&RunCommand, args).await.unwrap();
    assert!(control.text.contains("HOME-CANARY") && control.text.contains("DB-ROW-SECRET"));
}

#[tokio::test]
async fn sandbox_keeps_writes_in_the_workspace_and_says_so() {
    let f = sandboxed();
    let target = f.outside().join("escaped");
    let cmd = format!(
        "ln -sf '{}' link; echo x > link; echo y > '{}'; echo ok > mine",
        target.display(),
        target.display()
    );
    let out = f
        .call(&RunCommand, json!({ "command": cmd }))
        .await
        .unwrap();
    assert!(!target.exists(), "{}", out.text);
    assert_eq!(f.read("mine"), "ok\n");
    assert!(
        out.text.contains(&format!(
            "[blocked by the sandbox: access to {}",
            target.display()
        )),
        "{}",
        out.text
    );
    unsandboxed(&f)
        .call(&RunCommand, json!({ "command": cmd }))
        .await
        .unwrap();
    assert!(target.exists());
}

#[tokio::test]
async fn sandbox_network_follows_the_grant() {
    let f = sandboxed();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let cmd = format!(
        "/usr/bin/python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5); print('CONNECTED')\""
    );
    let out = f
        .call(&RunCommand, json!({ "command": cmd }))
        .await
        .unwrap();
    assert!(!out.text.contains("CONNECTED"), "{}", out.text);
    assert!(
        out.text.contains("[blocked by the sandbox: network"),
        "{}",
        out.text
    );
    let mut granted = Fixture::new();
    granted.ctx = f.ctx.clone();
    granted.ctx.sandbox.network = true;
    let out = granted
        .call(&RunCommand, json!({ "command": cmd }))
        .await
        .unwrap();
    assert!(out.text.contains("CONNECTED"), "{}", out.text);
}

#[tokio::test]
async fn sandbox_kills_detached_children_when_the_call_ends() {
    let f = sandboxed();
    let late = f.path("late");
    let cmd = format!(
        "setsid -f sh -c 'sleep 2; echo x > {0}'; (sh -c 'sleep 2; echo y >> {0}' &); echo started",
        late.display()
    );
    let out = f
        .call(&RunCommand, json!({ "command": cmd }))
        .await
        .unwrap();
    assert_eq!(out.text, "exit code: 0\nstarted\n");
    // sleep: the detached children write 2 s after the call; real time must pass for a survivor to show.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert!(!late.exists(), "a detached child outlived the call");
}

#[tokio::test]
async fn sandbox_passes_named_variables_only() {
    let mut f = sandboxed();
    let mut env = f.ctx.base_env.clone().unwrap();
    env.push(("NPM_TOKEN".into(), "npm-passed".into()));
    env.push(("OTHER_TOKEN".into(), "other-hidden".into()));
    env.push((
        "REPO_URL".into(),
        "https://u:pw-hidden@git.example/x".into(),
    ));
    f.ctx = f.ctx.clone().with_base_env(env);
    f.ctx.sandbox.env_pass = vec!["NPM_TOKEN".into()];
    let out = f
        .call(&RunCommand, json!({"command": "env"}))
        .await
        .unwrap();
    assert!(out.text.contains("NPM_TOKEN=npm-passed"), "{}", out.text);
    assert!(!out.text.contains("other-hidden") && !out.text.contains("pw-hidden"));
}

#[tokio::test]
async fn sandbox_unavailable_fails_the_call_unless_explicitly_off() {
    let mut f = sandboxed();
    // A deny path inside the workspace cannot be honoured: the call must not run.
    f.ctx.forbidden.push(f.path("data"));
    std::fs::create_dir(f.path("data")).unwrap();
    let err = f
        .call(&RunCommand, json!({"command": "echo ran > ran"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind().as_str(), "failed");
    assert!(err.to_string().contains("cannot sandbox"), "{err}");
    assert!(!f.path("ran").exists());
}

/// Issue 15: a command cannot make a workspace name for an outside file under the OS
/// sandbox; made without it, the read tools still refuse the link.
#[tokio::test]
async fn sandbox_refuses_a_hard_link_to_an_outside_file_and_read_refuses_one_made_without() {
    let f = sandboxed();
    let secret = f.outside().join("canary.txt");
    let cmd = format!("ln '{}' hl.txt; echo done", secret.display());
    let out = f
        .call(&RunCommand, json!({ "command": cmd }))
        .await
        .unwrap();
    assert!(!f.path("hl.txt").exists(), "{}", out.text);
    assert!(out.text.contains("done"), "{}", out.text);
    unsandboxed(&f)
        .call(&RunCommand, json!({ "command": cmd }))
        .await
        .unwrap();
    assert!(f.path("hl.txt").exists(), "the control made no link");
    let err = f
        .call(
            &crate::builtin::read_file::ReadFile,
            json!({"path": "hl.txt"}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind().as_str(), "path_rejected", "{err}");
}

// --- a watched run: each command's process is recorded before the command runs.

/// A watch that records what it is told; `refuse` makes it fail every record.
#[derive(Default)]
struct Recording {
    refuse: bool,
    /// The marker file, and whether it existed when the process was being recorded.
    marker: std::path::PathBuf,
    ran_before_recorded: std::sync::Mutex<Vec<bool>>,
    started: std::sync::Mutex<Vec<u32>>,
    ended: std::sync::Mutex<Vec<u32>>,
}

impl ProcessWatch for Recording {
    fn started(&self, pid: u32) -> Result<(), NotRecorded> {
        // sleep: an ungated command would have written its marker by now; the gated one
        // cannot have (the check below is meaningful only with that time given).
        std::thread::sleep(Duration::from_millis(200));
        self.ran_before_recorded
            .lock()
            .unwrap()
            .push(self.marker.exists());
        self.started.lock().unwrap().push(pid);
        if self.refuse {
            return Err(NotRecorded("the lease is lost".into()));
        }
        Ok(())
    }
    fn ended(&self, pid: u32) {
        self.ended.lock().unwrap().push(pid);
    }
}

async fn watched_call(
    f: &Fixture,
    watch: std::sync::Arc<Recording>,
) -> Result<ToolOutput, ToolError> {
    let args = json!({"command": "echo ran > ran.txt; read x; echo \"stdin:[$x]\""});
    PROCESS_WATCH.scope(watch, f.call(&RunCommand, args)).await
}

#[tokio::test]
async fn a_watched_command_runs_only_once_its_process_is_recorded() {
    let f = Fixture::new();
    let watch = std::sync::Arc::new(Recording {
        marker: f.path("ran.txt"),
        ..Recording::default()
    });
    let out = watched_call(&f, watch.clone()).await.unwrap();
    // The command ran, with stdin empty as ever (the gate is not its stdin).
    assert!(out.text.starts_with("exit code: 0"), "{}", out.text);
    assert!(out.text.contains("stdin:[]"), "{}", out.text);
    assert_eq!(f.read("ran.txt"), "ran\n");
    assert_eq!(*watch.ran_before_recorded.lock().unwrap(), vec![false]);
    let started = watch.started.lock().unwrap().clone();
    assert_eq!(started.len(), 1);
    assert_eq!(*watch.ended.lock().unwrap(), started);
}

#[tokio::test]
async fn a_command_whose_process_cannot_be_recorded_never_runs() {
    let f = Fixture::new();
    let watch = std::sync::Arc::new(Recording {
        refuse: true,
        marker: f.path("ran.txt"),
        ..Recording::default()
    });
    let err = watched_call(&f, watch.clone()).await.unwrap_err();
    assert!(
        matches!(&err, ToolError::Failed(m) if m.contains("could not be recorded")),
        "{err:?}"
    );
    // The supervisor has been waited for: nothing of the call runs any more.
    assert!(!f.path("ran.txt").exists());
    assert_eq!(*watch.ran_before_recorded.lock().unwrap(), vec![false]);
    assert!(watch.ended.lock().unwrap().is_empty());
}
