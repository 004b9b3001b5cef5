//! The `pocketpilot` binary end to end: real processes, a real store in a temp data
//! directory, the scripted model. Exit codes are part of the contract.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{code, text, Harness};

fn run_args<'a>(ws: &'a str, goal: &'a str, provider: &'a str) -> Vec<&'a str> {
    vec![
        "run",
        "--workspace",
        ws,
        "--goal",
        goal,
        "--provider",
        provider,
    ]
}

#[test]
fn run_streams_the_answer_and_exits_zero() {
    let e = Harness::new(&[]);
    let p = e.script(
        "a.json",
        json!([{ "text": "The answer is 42.", "chunk_size": 2 }]),
    );
    let ws = e.ws().display().to_string();
    let out = e.output(&run_args(&ws, "what is it", &p));
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "The answer is 42.");

    let tasks = e.json(&["tasks", "--json"]);
    let id = tasks[0]["id"].as_i64().unwrap();
    assert_eq!(tasks[0]["status"], "completed");
    let shown = e.json(&["show", &id.to_string(), "--json"]);
    assert_eq!(shown["task"]["final_answer"], "The answer is 42.");
    let seqs: Vec<i64> = shown["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["sequence"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, (1..=seqs.len() as i64).collect::<Vec<_>>());
    assert_eq!(
        shown["events"].as_array().unwrap().last().unwrap()["type"],
        "task_completed"
    );
    let human = e.output(&["show", &id.to_string()]);
    assert!(text(&human.stdout).contains("final answer: The answer is 42."));
}

#[test]
fn json_mode_prints_every_event_as_a_line() {
    let e = Harness::new(&[]);
    let p = e.script("a.json", json!([{ "text": "hi" }]));
    let ws = e.ws().display().to_string();
    let mut args = run_args(&ws, "hi", &p);
    args.push("--json");
    let out = e.output(&args);
    assert_eq!(code(&out), 0);
    let kinds: Vec<String> = text(&out.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(kinds.first().unwrap(), "task_created");
    assert_eq!(kinds.last().unwrap(), "task_completed");
    assert!(kinds.contains(&"assistant_delta".to_string()));
}

#[test]
fn exit_codes_follow_the_terminal_status() {
    let e = Harness::new(&[]);
    let ws = e.ws().display().to_string();
    let failing = e.script(
        "f.json",
        json!([{ "error": { "kind": "auth", "message": "bad key" } }]),
    );
    let out = e.output(&run_args(&ws, "fail", &failing));
    assert_eq!(code(&out), 1);
    assert!(
        text(&out.stderr).contains("failed"),
        "{}",
        text(&out.stderr)
    );

    let slow = e.script("s.json", json!([{ "text": "late", "delay_ms": 60000 }]));
    let out = e
        .command(&run_args(&ws, "wait", &slow))
        .env("POCKETPILOT_MAX_TASK_SECONDS", "1")
        .output()
        .unwrap();
    // A budget that runs out pauses the task (exit 9); stopping it ends it budget_exceeded.
    assert_eq!(code(&out), 9, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("pocketpilot raise 2"),
        "{}",
        text(&out.stderr)
    );
    let stopped = e.output(&["stop", "2"]);
    assert_eq!(code(&stopped), 5, "{}", text(&stopped.stderr));
    assert!(text(&stopped.stdout).contains("budget_exceeded"));

    let looping = e.script(
        "l.json",
        json!({ "repeat_last": true, "turns": [{ "tool_calls": [{ "name": "list_dir", "arguments": {} }] }] }),
    );
    let out = e
        .command(&run_args(&ws, "loop", &looping))
        .env("POCKETPILOT_MAX_AGENT_STEPS", "2")
        .output()
        .unwrap();
    assert_eq!(code(&out), 9);
    assert!(text(&out.stderr).contains("all 2 steps"));
    // Raising another budget than the one that ran out is a usage error that says which.
    let wrong = e.output(&["raise", "3", "--usd", "1"]);
    assert_eq!(code(&wrong), 2, "{}", text(&wrong.stderr));
    assert!(
        text(&wrong.stderr).contains("--steps"),
        "{}",
        text(&wrong.stderr)
    );
    // One more step runs on from the same context, and pauses at the new limit.
    let raised = e
        .command(&["raise", "3", "--steps", "1"])
        .env("POCKETPILOT_MAX_AGENT_STEPS", "2")
        .output()
        .unwrap();
    assert_eq!(code(&raised), 9, "{}", text(&raised.stderr));
    assert!(
        text(&raised.stderr).contains("all 3 steps"),
        "{}",
        text(&raised.stderr)
    );
    // No amount: the budget again (2 more steps), and it pauses at 5.
    let again = e
        .command(&["raise", "3"])
        .env("POCKETPILOT_MAX_AGENT_STEPS", "2")
        .output()
        .unwrap();
    assert_eq!(code(&again), 9, "{}", text(&again.stderr));
    assert!(
        text(&again.stderr).contains("all 5 steps"),
        "{}",
        text(&again.stderr)
    );
    let stopped = e.output(&["stop", "3"]);
    assert_eq!(code(&stopped), 5, "{}", text(&stopped.stderr));
    let shown = e.output(&["show", "3"]);
    assert!(
        text(&shown.stdout).contains("cost: $0.00"),
        "{}",
        text(&shown.stdout)
    );
}

#[test]
fn usage_errors_exit_two_with_a_clear_message() {
    let e = Harness::new(&[]);
    let ws = e.ws().display().to_string();
    let p = e.script("a.json", json!([{ "text": "x" }]));
    assert_eq!(code(&e.output(&["run", "--workspace", &ws])), 2);
    let empty = e.output(&run_args(&ws, "  ", &p));
    assert_eq!(code(&empty), 2);
    assert!(text(&empty.stderr).contains("goal is empty"));
    let missing = e.output(&run_args("/definitely/not/here", "x", &p));
    assert_eq!(code(&missing), 2);
    assert!(text(&missing.stderr).contains("does not exist"));
    let unknown = e.output(&["show", "999"]);
    assert_eq!(code(&unknown), 2);
    assert!(text(&unknown.stderr).contains("no task with id 999"));
    assert_eq!(code(&e.output(&["cancel", "999"])), 2);
    assert_eq!(code(&e.output(&["frobnicate"])), 2);
    let bad = e.output(&run_args(&ws, "x", "scripted:/no/such/file.json"));
    assert_eq!(code(&bad), 1);
    assert!(text(&bad.stderr).contains("cannot read the script"));
}

/// Session modes and capabilities are parsed where they enter: a bad one is a usage error
/// that names the accepted forms, and nothing is written.
#[test]
fn a_bad_mode_or_capability_is_a_usage_error_naming_what_is_accepted() {
    let e = Harness::new(&[]);
    let ws = e.ws().display().to_string();
    let p = e.script("a.json", json!([{ "text": "x" }]));
    assert_eq!(code(&e.output(&run_args(&ws, "hello", &p))), 0);
    let session = e.json(&["tasks", "--json"])[0]["session_id"]
        .as_i64()
        .unwrap()
        .to_string();
    let bad = e.output(&["session", "modes", &session, "--steering", "sometimes"]);
    assert_eq!(code(&bad), 2);
    assert!(
        text(&bad.stderr).contains("[possible values: one-at-a-time, all]"),
        "{}",
        text(&bad.stderr)
    );
    let good = e.output(&["session", "modes", &session, "--follow-up", "all"]);
    assert_eq!(code(&good), 0, "{}", text(&good.stderr));
    assert_eq!(
        text(&good.stdout).trim(),
        "steering one-at-a-time · follow-up all"
    );
    let allow = e.output(&[&run_args(&ws, "x", &p)[..], &["--allow", "fs: write"]].concat());
    assert_eq!(code(&allow), 2);
    assert!(
        text(&allow.stderr).contains("is not a capability"),
        "{}",
        text(&allow.stderr)
    );
    assert_eq!(e.json(&["tasks", "--json"]).as_array().unwrap().len(), 1);
}

#[test]
fn no_model_configured_fails_fast_naming_the_setting() {
    let e = Harness::new(&[]);
    let ws = e.ws().display().to_string();
    let out = e.output(&["run", "--workspace", &ws, "--goal", "hello"]);
    assert_eq!(code(&out), 1);
    assert!(
        text(&out.stderr).contains("pocketpilot provider set"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_corrupt_database_is_reported_and_kept() {
    let e = Harness::new(&[]);
    let data = e.dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let db = data.join("pocketpilot.db");
    let junk = vec![0x42u8; 8192];
    std::fs::write(&db, &junk).unwrap();
    let out = e.output(&["tasks"]);
    // The store's own exit code (12): damaged, nothing written, no backup to offer.
    assert_eq!(code(&out), 12);
    let err = text(&out.stderr);
    assert!(
        err.contains("is damaged") && err.contains("no backup"),
        "{err}"
    );
    assert_eq!(std::fs::read(&db).unwrap(), junk);
}

fn wait_for(mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "condition never held"
        );
        // sleep: the poll interval of the shared bounded wait (`wait_for`).
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn without_a_terminal_a_risky_step_waits_exits_three_and_can_be_approved_later() {
    let e = Harness::new(&[]);
    let ws = e.ws().display().to_string();
    let p = e.script(
        "w.json",
        json!([
            { "tool_calls": [{ "name": "write_file", "arguments": { "path": "out.txt", "content": "data\n" } }] },
            { "text": "Written." }
        ]),
    );
    let out = e.output(&run_args(&ws, "write", &p));
    assert_eq!(code(&out), 3, "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("pocketpilot approve"));
    assert!(!e.ws().join("out.txt").exists());
    let pending = e.json(&["approvals", "--json"]);
    let id = pending[0]["id"].as_i64().unwrap();
    assert!(text(&out.stdout).contains(&format!("approval {id}")));
    assert!(pending[0]["effect"]["diff"]
        .as_str()
        .unwrap()
        .contains("+data"));

    let approved = e.output(&["approve", &id.to_string()]);
    assert_eq!(code(&approved), 0, "{}", text(&approved.stderr));
    assert!(text(&approved.stdout).contains("Written."));
    assert_eq!(
        std::fs::read_to_string(e.ws().join("out.txt")).unwrap(),
        "data\n"
    );
    assert_eq!(code(&e.output(&["approve", &id.to_string()])), 2);

    // Rejecting the next one leaves the file as it was.
    let out = e.output(&run_args(&ws, "write again", &p));
    assert_eq!(code(&out), 3);
    let id = e.json(&["approvals", "--json"])[0]["id"].as_i64().unwrap();
    std::fs::write(e.ws().join("out.txt"), "mine\n").unwrap();
    let rejected = e.output(&["reject", &id.to_string(), "--reason", "keep mine"]);
    assert_eq!(code(&rejected), 0);
    assert_eq!(
        std::fs::read_to_string(e.ws().join("out.txt")).unwrap(),
        "mine\n"
    );

    // --allow grants the capability for that run.
    let out = e.output(&[&run_args(&ws, "write", &p)[..], &["--allow", "fs:write"]].concat());
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(e.ws().join("out.txt")).unwrap(),
        "data\n"
    );
}

#[test]
fn cancel_from_another_process_stops_a_running_task() {
    let e = Harness::new(&[]);
    let ws = e.ws().display().to_string();
    let p = e.script(
        "slow.json",
        json!([{ "text": "x".repeat(300), "chunk_size": 1, "chunk_delay_ms": 100 }]),
    );
    let mut child = e
        .command(&run_args(&ws, "ramble", &p))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut id = 0;
    wait_for(|| {
        let tasks = e.json(&["tasks", "--json"]);
        if tasks.as_array().is_some_and(|a| !a.is_empty()) && tasks[0]["status"] == "running" {
            id = tasks[0]["id"].as_i64().unwrap();
            true
        } else {
            false
        }
    });
    let out = e.output(&["cancel", &id.to_string()]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("cancelled"),
        "{}",
        text(&out.stdout)
    );
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(4));
}

#[test]
fn logs_are_json_lines_that_carry_the_task() {
    let e = Harness::new(&[]);
    let ws = e.ws().display().to_string();
    let p = e.script("a.json", json!([{ "text": "logged" }]));
    assert_eq!(code(&e.output(&run_args(&ws, "log me", &p))), 0);
    let id = e.json(&["tasks", "--json"])[0]["id"].as_i64().unwrap();
    let out = e.output(&["logs", "--task", &id.to_string()]);
    assert_eq!(code(&out), 0);
    let lines: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!lines.is_empty());
    assert!(lines
        .iter()
        .all(|l| l.to_string().contains(&format!("\"task_id\":{id}"))));
}

/// Runs the binary on a pseudo-terminal (util-linux `script`), answering its prompts.
fn on_a_terminal(e: &Harness, args: &[&str], answers: &[(&str, &str)]) -> (i32, String) {
    use std::io::{Read, Write};
    let bin = env!("CARGO_BIN_EXE_pocketpilot");
    let line = std::iter::once(bin.to_owned())
        .chain(
            args.iter()
                .map(|a| format!("'{}'", a.replace('\'', "'\\''"))),
        )
        .collect::<Vec<_>>()
        .join(" ");
    let mut child = Command::new("script")
        .args(["-qefc", &line, "/dev/null"])
        .env("POCKETPILOT_DATA_DIR", e.dir.path().join("data"))
        .env("HOME", e.dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<u8>();
    std::thread::spawn(move || {
        let mut b = [0u8; 1];
        while let Ok(1) = stdout.read(&mut b) {
            if tx.send(b[0]).is_err() {
                break;
            }
        }
    });
    let mut seen = String::new();
    let mut bytes = Vec::new();
    let mut screen = Vec::new();
    for (prompt, answer) in answers {
        let start = Instant::now();
        while !seen.contains(prompt) {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "no prompt `{prompt}` in:\n{seen}"
            );
            if let Ok(b) = rx.recv_timeout(Duration::from_millis(100)) {
                bytes.push(b);
                seen = String::from_utf8_lossy(&bytes).into_owned();
            }
        }
        screen.append(&mut bytes);
        seen.clear();
        stdin.write_all(answer.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }
    let status = child.wait().unwrap();
    while let Ok(b) = rx.recv_timeout(Duration::from_millis(200)) {
        bytes.push(b);
    }
    drop(stdin);
    screen.append(&mut bytes);
    (
        status.code().unwrap_or(-1),
        String::from_utf8_lossy(&screen).into_owned(),
    )
}

#[test]
fn on_a_terminal_run_asks_inline_and_each_answer_does_what_it_says() {
    let e = Harness::new(&[]);
    let ws = e.ws().display().to_string();
    let p = e.script(
        "w.json",
        json!([
            { "tool_calls": [{ "name": "write_file", "arguments": { "path": "o.txt", "content": "first\n" } }] },
            { "tool_calls": [{ "name": "write_file", "arguments": { "path": "o.txt", "content": "second\n" } }] },
            { "text": "All done." }
        ]),
    );
    // y, then a (allow for this session): the second write is not asked again.
    let (code, screen) = on_a_terminal(
        &e,
        &run_args(&ws, "write twice", &p),
        &[("Approve?", "a\n")],
    );
    assert_eq!(code, 0, "{screen}");
    assert!(
        screen.contains("+first"),
        "the dialog shows the diff: {screen}"
    );
    assert!(screen.contains("All done."));
    assert_eq!(
        std::fs::read_to_string(e.ws().join("o.txt")).unwrap(),
        "second\n"
    );

    // e (edit) then n (reject with a reason), in a fresh session.
    std::fs::remove_file(e.ws().join("o.txt")).unwrap();
    let (code, screen) = on_a_terminal(
        &e,
        &run_args(&ws, "write twice", &p),
        &[
            ("Approve?", "e\n"),
            (
                "New arguments",
                "{\"path\":\"edited.txt\",\"content\":\"mine\\n\"}\n",
            ),
            ("Approve?", "n\n"),
            ("Reason", "no thanks\n"),
        ],
    );
    assert_eq!(code, 0, "{screen}");
    assert_eq!(
        std::fs::read_to_string(e.ws().join("edited.txt")).unwrap(),
        "mine\n"
    );
    assert!(!e.ws().join("o.txt").exists());
    let id = e.json(&["tasks", "--json"])[0]["id"].as_i64().unwrap();
    let shown = e.json(&["show", &id.to_string(), "--json"]);
    let rejected = shown["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|ev| ev["type"] == "tool_call_failed")
        .unwrap();
    assert_eq!(
        rejected["payload"]["error"],
        "rejected by the user: no thanks"
    );
}

#[test]
fn workspace_policy_rules_are_set_from_the_command_line() {
    let e = Harness::new(&[]);
    let ws = e.ws().display().to_string();
    let p = e.script(
        "w.json",
        json!([
            { "tool_calls": [{ "name": "write_file", "arguments": { "path": "o.txt", "content": "x" } }] },
            { "text": "ok" }
        ]),
    );
    assert_eq!(
        code(&e.output(&["policy", "allow", "fs:write", "--workspace", &ws])),
        0
    );
    let out = e.output(&run_args(&ws, "write", &p));
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(e.ws().join("o.txt").exists());
    std::fs::remove_file(e.ws().join("o.txt")).unwrap();

    assert_eq!(
        code(&e.output(&["policy", "deny", "fs", "--workspace", &ws])),
        0
    );
    let rules = e.json(&["policy", "show", "--workspace", &ws, "--json"]);
    assert_eq!(rules["deny"][0], "fs");
    let out = e.output(&[&run_args(&ws, "write", &p)[..], &["--allow", "fs:write"]].concat());
    assert_eq!(code(&out), 0);
    assert!(
        text(&out.stderr).contains("denies"),
        "{}",
        text(&out.stderr)
    );
    assert!(!e.ws().join("o.txt").exists());
    assert_eq!(
        code(&e.output(&["policy", "allow", "nonsense:", "--workspace", &ws])),
        2
    );
}

/// Start at login from the CLI: the entry under `XDG_CONFIG_HOME` names this binary with
/// `--background`; one the desktop's settings switched off counts as off; `off` removes
/// it. `--version` says where the data is and what is not there yet.
#[test]
fn autostart_writes_and_removes_the_xdg_entry_and_version_reports_it() {
    let e = Harness::new(&[]);
    let config = e.dir.path().join("config");
    let run = |args: &[&str]| {
        e.command(args)
            .env("XDG_CONFIG_HOME", &config)
            .output()
            .unwrap()
    };
    let entry = config.join("autostart").join("pocketpilot.desktop");
    let out = run(&["autostart", "status"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("start at login: off\n"));
    assert!(!entry.exists());

    let out = run(&["autostart", "on"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("start at login: on\n"));
    let written = std::fs::read_to_string(&entry).unwrap();
    let bin = std::fs::canonicalize(env!("CARGO_BIN_EXE_pocketpilot")).unwrap();
    assert!(
        written.contains(&format!("\nExec={} --background\n", bin.display())),
        "{written}"
    );
    let version = text(&run(&["--version"]).stdout);
    assert!(
        version.starts_with(&format!(
            "pocketpilot {} (commit ",
            env!("CARGO_PKG_VERSION")
        )),
        "{version}"
    );
    assert!(
        version.contains(&format!(
            "\ndata: {}\nlogs: {}\nstart at login: on (",
            e.dir.path().join("data").display(),
            e.dir.path().join("data").join("logs").display()
        )),
        "{version}"
    );
    assert!(
        version.ends_with("\nsandbox: sandboxed: writes in the workspace only, no network\n"),
        "{version}"
    );

    std::fs::write(
        &entry,
        written.replace(
            "X-GNOME-Autostart-enabled=true",
            "X-GNOME-Autostart-enabled=false",
        ),
    )
    .unwrap();
    assert!(text(&run(&["autostart"]).stdout).starts_with("start at login: off\n"));

    let out = run(&["autostart", "off"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(!entry.exists());
    assert!(text(&out.stdout).starts_with("start at login: off\n"));
}

#[test]
fn say_into_a_full_inbox_exits_eight_and_writes_nothing() {
    let e = Harness::new(&[]);
    let ws = e.ws().display().to_string();
    let p = e.script(
        "w.json",
        json!([
            { "tool_calls": [{ "name": "write_file", "arguments": { "path": "out.txt", "content": "x" } }] },
            { "text": "Written." }
        ]),
    );
    // A run left waiting for approval keeps the session busy: what is said queues.
    let out = e.output(&run_args(&ws, "write", &p));
    assert_eq!(code(&out), 3, "{}", text(&out.stderr));
    let session = e.json(&["sessions", "--json"])[0]["id"].as_i64().unwrap();
    let s = session.to_string();
    let say = |words: &str| {
        e.command(&["say", &s, words])
            .env("POCKETPILOT_MAX_QUEUED", "1")
            .output()
            .unwrap()
    };
    let first = say("one");
    assert_eq!(code(&first), 0, "{}", text(&first.stderr));
    let full = say("two");
    assert_eq!(code(&full), 8, "{}", text(&full.stderr));
    assert!(
        text(&full.stderr).contains("full"),
        "{}",
        text(&full.stderr)
    );
    let shown = e.json(&["session", "show", &s, "--json"]);
    let texts: Vec<&str> = shown["submissions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["content"]["text"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(texts, ["write", "one"], "the refused say wrote nothing");
}

#[test]
fn session_delete_asks_on_a_terminal_wants_yes_without_one_and_refuses_a_working_session() {
    let e = Harness::new(&[]);
    let ws = e.ws().display().to_string();
    let hi = e.script("hi.json", json!([{ "text": "Hi." }]));
    assert_eq!(code(&e.output(&run_args(&ws, "First", &hi))), 0);
    assert_eq!(code(&e.output(&run_args(&ws, "Second", &hi))), 0);
    let cron = e.output(&[
        "cron",
        "add",
        "@daily",
        "--workspace",
        &ws,
        "--goal",
        "tidy",
    ]);
    assert_eq!(code(&cron), 0, "{}", text(&cron.stderr));
    let titles = |e: &Harness| -> Vec<String> {
        let mut t: Vec<String> = e
            .json(&["sessions", "--json"])
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["title"].as_str().unwrap().to_owned())
            .collect();
        t.sort();
        t
    };
    let id_of = |e: &Harness, title: &str| -> String {
        e.json(&["sessions", "--json"])
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["title"] == title)
            .map(|s| s["id"].to_string())
            .unwrap()
    };
    let first = id_of(&e, "First");

    // Without a terminal, only with --yes: refused (usage), and nothing is lost.
    let out = e.output(&["session", "delete", &first]);
    assert_eq!(code(&out), 2);
    assert!(text(&out.stderr).contains("--yes"), "{}", text(&out.stderr));
    assert_eq!(titles(&e), ["First", "Second"]);

    // On a terminal it asks, naming the session; anything but yes keeps it.
    let (c, screen) = on_a_terminal(&e, &["session", "delete", &first], &[("[y/N]", "n\n")]);
    assert_eq!(c, 0, "{screen}");
    assert!(
        screen.contains("\"First\"") && screen.contains("cannot be undone"),
        "{screen}"
    );
    assert_eq!(titles(&e), ["First", "Second"]);
    let (c, screen) = on_a_terminal(&e, &["session", "delete", &first], &[("[y/N]", "y\n")]);
    assert_eq!(c, 0, "{screen}");
    assert!(screen.contains("deleted session"), "{screen}");
    assert_eq!(titles(&e), ["Second"]);

    // A session whose task waits for an approval is refused (exit 6) until it is stopped.
    let waits = e.script(
        "w.json",
        json!([{ "tool_calls": [{ "name": "run_command", "arguments": { "command": "echo hi" } }] }, { "text": "ok" }]),
    );
    assert_eq!(code(&e.output(&run_args(&ws, "Waiting", &waits))), 3);
    let waiting = id_of(&e, "Waiting");
    let out = e.output(&["session", "delete", &waiting, "--yes"]);
    assert_eq!(code(&out), 6, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("stop that task first"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(titles(&e), ["Second", "Waiting"]);
    let task = e
        .json(&["tasks", "--json"])
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["status"] == "waiting_approval")
        .map(|t| t["id"].to_string())
        .unwrap();
    assert_eq!(code(&e.output(&["cancel", &task])), 0);
    let out = e.output(&["session", "delete", &waiting, "--yes"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(titles(&e), ["Second"]);
    assert!(e
        .json(&["approvals", "--json"])
        .as_array()
        .unwrap()
        .is_empty());

    // The schedule on the workspace is untouched; an unknown session is a usage error.
    let crons = e.output(&["cron", "list"]);
    assert!(
        text(&crons.stdout).contains("tidy"),
        "{}",
        text(&crons.stdout)
    );
    assert_eq!(code(&e.output(&["session", "delete", "9999", "--yes"])), 2);
}

/// A GGUF v3 file with a header and no tensors: enough for `models` to read its facts.
fn tiny_gguf(path: &std::path::Path) {
    fn string(out: &mut Vec<u8>, s: &str) {
        out.extend((s.len() as u64).to_le_bytes());
        out.extend(s.as_bytes());
    }
    let mut b = b"GGUF".to_vec();
    b.extend(3u32.to_le_bytes());
    b.extend(0u64.to_le_bytes()); // tensors
    b.extend(2u64.to_le_bytes()); // metadata pairs
    string(&mut b, "general.architecture");
    b.extend(8u32.to_le_bytes()); // string
    string(&mut b, "llama");
    string(&mut b, "llama.context_length");
    b.extend(4u32.to_le_bytes()); // u32
    b.extend(2048u32.to_le_bytes());
    std::fs::write(path, b).unwrap();
}

#[test]
fn models_are_imported_listed_chosen_and_removed_and_bad_files_are_refused() {
    let e = Harness::new(&[]);
    let file = e.dir.path().join("Tiny-Model.gguf");
    tiny_gguf(&file);
    let f = file.display().to_string();
    let out = e.output(&["models", "import", &f]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let listed = e.json(&["models", "list", "--json"]);
    let rows = listed.as_array().unwrap();
    assert_eq!(rows.len(), 1, "{listed}");
    assert_eq!(rows[0]["name"], "tiny-model");
    assert_eq!(rows[0]["in_use"], true);
    assert_eq!(rows[0]["facts"]["training_context"], 2048);

    // Too large for the memory this machine has: refused with both figures.
    let mut big = e.command(&["models", "import", &f, "--name", "x"]);
    big.env("POCKETPILOT_MEMORY_AVAILABLE", "1000");
    let out = big.output().unwrap();
    assert_eq!(code(&out), 1);
    assert!(
        text(&out.stderr).contains("available"),
        "{}",
        text(&out.stderr)
    );
    // Not a GGUF file.
    let notes = e.dir.path().join("notes.gguf");
    std::fs::write(&notes, "just text").unwrap();
    let out = e.output(&["models", "import", &notes.display().to_string()]);
    assert_eq!(code(&out), 1);
    assert!(text(&out.stderr).contains("GGUF"), "{}", text(&out.stderr));
    assert_eq!(
        e.json(&["models", "list", "--json"])
            .as_array()
            .unwrap()
            .len(),
        1
    );

    assert_eq!(code(&e.output(&["models", "use", "nope"])), 2);
    assert_eq!(code(&e.output(&["models", "rm", "tiny-model"])), 0);
    assert_eq!(code(&e.output(&["models", "rm", "tiny-model"])), 2);
    assert!(e
        .json(&["models", "list", "--json"])
        .as_array()
        .unwrap()
        .is_empty());
    // The person's own file is theirs: neither removed nor made private.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert!(file.exists());
    assert_ne!(mode, 0o600, "the original's mode was changed");
}
