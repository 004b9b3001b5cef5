//! A worker frozen mid-command past its lease: the real `pocketpilot` binary, a scripted
//! model whose first command sleeps for 30 s, SIGSTOP, `pocketpilot resume` taking the
//! session over and running the next command, SIGCONT.
//!
//! Invariants: the frozen worker's command processes (as /proc shows them, pid and start
//! time) are gone before the next command starts; the frozen worker, once woken, records
//! nothing more and exits; the events stay gapless.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod support;
use std::collections::HashMap;
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use support::Harness;

/// `POCKETPILOT_LEASE_TTL_MS` (the runtime's own override of its 15 s TTL) shortens the
/// lease, so the frozen worker loses it in 1.5 s rather than 15.
const TTL_MS: u64 = 1_500;

/// (ppid, state, start time in ticks, command name) from /proc/PID/stat.
fn stat(pid: i32) -> Option<(i32, char, u64, String)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text[open + 1..close].to_owned();
    let f: Vec<&str> = text[close + 1..].split_whitespace().collect();
    Some((
        f[1].parse().ok()?,
        f[0].chars().next()?,
        f[19].parse().ok()?,
        comm,
    ))
}

/// Every live process below `root`: (pid, start time, name).
fn tree(root: i32) -> Vec<(i32, u64, String)> {
    let mut children: HashMap<i32, Vec<(i32, u64, char, String)>> = HashMap::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        if let Some((ppid, state, started, comm)) = stat(pid) {
            children
                .entry(ppid)
                .or_default()
                .push((pid, started, state, comm));
        }
    }
    let mut out = Vec::new();
    let mut next = vec![root];
    while let Some(p) = next.pop() {
        for (pid, started, state, comm) in children.remove(&p).unwrap_or_default() {
            next.push(pid);
            if state != 'Z' && state != 'X' {
                out.push((pid, started, comm));
            }
        }
    }
    out
}

/// Whether this very process (same pid, same start time) still runs; a zombie does not.
fn running(pid: i32, started: u64) -> bool {
    matches!(stat(pid), Some((_, state, s, _)) if s == started && state != 'Z' && state != 'X')
}

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

fn signal(child: &Child, sig: libc::c_int) {
    // SAFETY: signalling our own child process.
    unsafe {
        libc::kill(child.id() as libc::pid_t, sig);
    }
}

fn wait_exit(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        // sleep: the poll interval of the bounded wait for the child to exit.
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(child, libc::SIGKILL);
    let _ = child.wait();
    None
}

fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !done() {
        assert!(t0.elapsed() < limit, "{what}: not within {limit:?}");
        // sleep: the poll interval of a bounded wait for a condition of the processes.
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The mark `start NAME NS` a command wrote itself.
fn mark(marks: &str, what: &str, name: &str) -> Option<u128> {
    marks.lines().find_map(|l| {
        let p: Vec<&str> = l.split_whitespace().collect();
        (p.len() == 3 && p[0] == what && p[1] == name).then(|| p[2].parse().unwrap())
    })
}

fn events(h: &Harness, task: i64) -> (Value, Vec<Value>) {
    let shown = h.json(&["show", &task.to_string(), "--json"]);
    let events = shown["events"].as_array().unwrap().clone();
    (shown, events)
}

#[test]
fn a_frozen_workers_command_is_gone_before_the_new_holder_runs_the_next_one() {
    frozen_past_the_lease(None);
}

#[test]
fn a_frozen_workers_mcp_server_is_gone_before_the_new_holder_runs_the_next_command() {
    let server = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp-servers/node_modules/.bin/mcp-server-everything");
    assert!(
        server.exists(),
        "{} is missing: run tests/setup-mcp.sh",
        server.display()
    );
    frozen_past_the_lease(Some(&server));
}

/// The frozen worker's run has a command sleeping (and, with `mcp_server`, that stdio
/// server started for the run) when it is stopped.
fn frozen_past_the_lease(mcp_server: Option<&std::path::Path>) {
    let h = Harness::new(&[("POCKETPILOT_LEASE_TTL_MS", "1500")]);
    let cmd = |name: &str, secs: &str| {
        format!(
            "echo start {name} $(date +%s%N) >> marks.txt; sleep {secs}; echo end {name} $(date +%s%N) >> marks.txt"
        )
    };
    let turns = vec![
        json!({ "text": "first", "tool_calls": [{ "name": "run_command",
            "arguments": { "command": cmd("c0", "30") } }] }),
        json!({ "text": "second", "tool_calls": [{ "name": "run_command",
            "arguments": { "command": cmd("c1", "0.3") } }] }),
        json!({ "text": "all done" }),
    ];
    let script = h.dir.path().join("script.json");
    std::fs::write(&script, json!({ "turns": turns }).to_string()).unwrap();
    let ws = h.ws().display().to_string();
    let provider = format!("scripted:{}", script.display());
    if let Some(server) = mcp_server {
        let server = server.display().to_string();
        let added = h.output(&[
            "mcp",
            "add",
            "everything",
            "--workspace",
            &ws,
            "--",
            &server,
        ]);
        assert!(added.status.success(), "{added:?}");
    }
    let marks = h.ws().join("marks.txt");
    let read_marks = || std::fs::read_to_string(&marks).unwrap_or_default();

    let mut first = h
        .cmd(&[
            "run",
            "--workspace",
            &ws,
            "--goal",
            "sleep",
            "--provider",
            &provider,
            "--allow",
            "shell:execute",
        ])
        .spawn()
        .unwrap();
    wait_for("the first command starts", Duration::from_secs(30), || {
        mark(&read_marks(), "start", "c0").is_some()
    });
    // The first command's processes, named by pid and start time (once its shell has
    // forked the sleep: the mark is written just before).
    let mut doomed = Vec::new();
    wait_for("the first command sleeps", Duration::from_secs(30), || {
        doomed = tree(first.id() as i32);
        doomed.iter().any(|(_, _, name)| name == "sleep")
    });
    let names: Vec<&str> = doomed.iter().map(|(_, _, n)| n.as_str()).collect();
    assert!(
        names.contains(&"sleep") && names.contains(&"sh"),
        "the command's sh and sleep run below the worker: {doomed:?}"
    );
    if mcp_server.is_some() {
        assert!(
            names.contains(&"node"),
            "the MCP server runs below the worker: {doomed:?}"
        );
    }

    signal(&first, libc::SIGSTOP);
    // sleep: the frozen worker's lease must expire (TTL_MS on the wall clock) before
    // another process may take the session over.
    std::thread::sleep(Duration::from_millis(TTL_MS + 500));

    // Sampled from now on: the latest moment one of them was seen running.
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (stop, doomed) = (stop.clone(), doomed.clone());
        std::thread::spawn(move || {
            let mut last_seen: Option<u128> = None;
            let mut gone_at: Option<u128> = None;
            while !stop.load(Ordering::SeqCst) {
                let before = now_ns();
                if doomed.iter().any(|(p, s, _)| running(*p, *s)) {
                    last_seen = Some(before);
                } else if gone_at.is_none() {
                    gone_at = Some(now_ns());
                }
                // sleep: the sampling interval of the /proc watch (1 ms).
                std::thread::sleep(Duration::from_millis(1));
            }
            (last_seen, gone_at)
        })
    };
    let resume_at = now_ns();
    let mut resumer = h.cmd(&["resume"]).spawn().unwrap();
    let resumed = wait_exit(&mut resumer, Duration::from_secs(60)).expect("resume never ended");
    assert!(resumed.success());
    stop.store(true, Ordering::SeqCst);
    let (last_seen, gone_at) = sampler.join().unwrap();

    let text = read_marks();
    let next_start = mark(&text, "start", "c1").expect("the next command never ran");
    assert!(
        mark(&text, "end", "c0").is_none(),
        "the first command finished: {text}"
    );
    for (pid, started, name) in &doomed {
        assert!(!running(*pid, *started), "{name} ({pid}) still runs");
    }
    let gone_at = gone_at.expect("the first command's processes were never seen gone");
    if let Some(seen) = last_seen {
        assert!(
            seen < next_start,
            "the first command still ran {} µs after the next one started",
            (seen - next_start) / 1000
        );
    }
    assert!(
        gone_at < next_start,
        "gone at {gone_at}, next at {next_start}"
    );
    eprintln!(
        "figures: resume spawned → first command gone: {:.1} ms; gone → next command's start: {:.1} ms",
        (gone_at.saturating_sub(resume_at)) as f64 / 1e6,
        (next_start - gone_at) as f64 / 1e6,
    );

    let task = h.json(&["tasks", "--json"])[0]["id"].as_i64().unwrap();
    let (shown, before_wake) = events(&h, task);
    assert_eq!(shown["task"]["status"], "completed", "{shown}");

    signal(&first, libc::SIGCONT);
    let first_ended = wait_exit(&mut first, Duration::from_secs(30));
    assert!(first_ended.is_some(), "the woken worker never exited");

    let (_, after_wake) = events(&h, task);
    assert_eq!(
        before_wake, after_wake,
        "the woken worker recorded something after the takeover"
    );
    let seqs: Vec<i64> = after_wake
        .iter()
        .map(|e| e["sequence"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, (1..=seqs.len() as i64).collect::<Vec<_>>(), "a gap");
    let kinds: Vec<&str> = after_wake
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    let interrupted = after_wake
        .iter()
        .filter(|e| e["type"] == "tool_call_failed" && e["payload"]["kind"] == "interrupted")
        .count();
    assert_eq!(
        interrupted, 1,
        "the frozen call is reported once: {kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "task_started").count(),
        2,
        "{kinds:?}"
    );
    assert!(mark(&read_marks(), "end", "c0").is_none());
}

/// A run whose first call's `PreToolUse` hook (the person's, once) sleeps 30 s; returns
/// the worker and the hook's live processes (sh and sleep, by pid and start time).
fn run_stuck_in_a_hook(h: &Harness) -> (Child, Vec<(i32, u64, String)>) {
    let config = h.dir.path().join(".config/pocketpilot");
    std::fs::create_dir_all(&config).unwrap();
    let hook =
        "[ -e hook-ran ] && exit 0; touch hook-ran; echo start hook $(date +%s%N) >> marks.txt; \
                sleep 30; echo end hook $(date +%s%N) >> marks.txt";
    std::fs::write(
        config.join("hooks.json"),
        json!({ "hooks": { "PreToolUse": [{ "hooks": [{ "type": "command",
            "command": hook, "timeout": 120 }] }] } })
        .to_string(),
    )
    .unwrap();
    let turns = vec![
        json!({ "text": "first", "tool_calls": [{ "name": "run_command",
            "arguments": { "command": "echo start c0 $(date +%s%N) >> marks.txt" } }] }),
        json!({ "text": "all done" }),
    ];
    let script = h.dir.path().join("script.json");
    std::fs::write(&script, json!({ "turns": turns }).to_string()).unwrap();
    let ws = h.ws().display().to_string();
    let provider = format!("scripted:{}", script.display());
    let first = h
        .cmd(&[
            "run",
            "--workspace",
            &ws,
            "--goal",
            "sleep in a hook",
            "--provider",
            &provider,
            "--allow",
            "shell:execute",
        ])
        .env("XDG_CONFIG_HOME", h.dir.path().join(".config"))
        .spawn()
        .unwrap();
    let marks = h.ws().join("marks.txt");
    wait_for("the hook starts", Duration::from_secs(30), || {
        mark(
            &std::fs::read_to_string(&marks).unwrap_or_default(),
            "start",
            "hook",
        )
        .is_some()
    });
    let mut doomed = Vec::new();
    wait_for("the hook sleeps", Duration::from_secs(30), || {
        doomed = tree(first.id() as i32);
        doomed.iter().any(|(_, _, name)| name == "sleep")
    });
    (first, doomed)
}

#[test]
fn a_frozen_workers_hook_is_killed_by_the_process_that_takes_the_session_over() {
    let h = Harness::new(&[("POCKETPILOT_LEASE_TTL_MS", "1500")]);
    let (mut first, doomed) = run_stuck_in_a_hook(&h);
    signal(&first, libc::SIGSTOP);
    // sleep: the frozen worker's lease must expire (TTL_MS on the wall clock) before
    // another process may take the session over.
    std::thread::sleep(Duration::from_millis(TTL_MS + 500));
    let mut resumer = h
        .cmd(&["resume"])
        .env("XDG_CONFIG_HOME", h.dir.path().join(".config"))
        .spawn()
        .unwrap();
    let resumed = wait_exit(&mut resumer, Duration::from_secs(60)).expect("resume never ended");
    assert!(resumed.success());
    // The hook was recorded under the lease like a command: the new holder killed it.
    for (pid, started, name) in &doomed {
        assert!(
            !running(*pid, *started),
            "the hook's {name} ({pid}) still runs"
        );
    }
    let marks = std::fs::read_to_string(h.ws().join("marks.txt")).unwrap();
    assert!(mark(&marks, "start", "c0").is_some(), "{marks}");
    assert!(mark(&marks, "end", "hook").is_none(), "{marks}");
    let task = h.json(&["tasks", "--json"])[0]["id"].as_i64().unwrap();
    let (shown, _) = events(&h, task);
    assert_eq!(shown["task"]["status"], "completed", "{shown}");
    signal(&first, libc::SIGCONT);
    assert!(wait_exit(&mut first, Duration::from_secs(30)).is_some());
}

#[test]
fn a_hook_is_killed_with_its_run_on_cancel_and_with_its_process_on_kill_9() {
    let h = Harness::new(&[]);
    let (mut first, doomed) = run_stuck_in_a_hook(&h);
    let task = h.json(&["tasks", "--json"])[0]["id"].as_i64().unwrap();
    let out = h.output(&["cancel", &task.to_string()]);
    assert!(out.status.success(), "{out:?}");
    wait_for(
        "the hook's processes end on cancel",
        Duration::from_secs(10),
        || doomed.iter().all(|(p, s, _)| !running(*p, *s)),
    );
    assert!(wait_exit(&mut first, Duration::from_secs(30)).is_some());
    let (shown, _) = events(&h, task);
    assert_eq!(shown["task"]["status"], "cancelled", "{shown}");

    // The worker killed mid-hook: nothing of the hook outlives it.
    let h = Harness::new(&[]);
    let (mut first, doomed) = run_stuck_in_a_hook(&h);
    signal(&first, libc::SIGKILL);
    let _ = first.wait();
    wait_for(
        "the hook's processes end with the worker",
        Duration::from_secs(10),
        || doomed.iter().all(|(p, s, _)| !running(*p, *s)),
    );
}
