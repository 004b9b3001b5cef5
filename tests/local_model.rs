//! The built-in model through the real binary: a fresh data dir with no provider answers a
//! goal through a `llama-server` the app starts itself (the portable build and SmolLM2
//! that `scripts/setup.sh` put in place), with default settings. The server is checked
//! through `/proc`: it never outlives the app, a kill -9 of it mid-answer is survived,
//! and it stops by itself after the idle time.
//!
//! Needs the real model server (`scripts/setup-model-server.sh`): skipped with a loud
//! message without it, failed when `POCKETPILOT_REQUIRE_MODEL_SERVER` is set.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{kill9, model_server, peers, signal, text, Harness};

/// The machine has two cores and the model needs both: one of these tests at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The app as a new user runs it: no provider, default settings, the built-in model on
/// (the test command turns it off for every other test), found where the setup put it.
fn harness() -> Harness {
    let mut h = Harness::new(&[]);
    h.set_env("POCKETPILOT_PEERS", peers().display().to_string());
    h.remove_env("POCKETPILOT_LOCAL_MODEL");
    std::fs::write(
        h.ws().join("README.md"),
        "# Demo\nA tiny project used to try PocketPilot.\n",
    )
    .unwrap();
    h
}

/// The `llama-server` processes started for this data dir (their command line names the
/// template written into it).
fn servers(h: &Harness) -> Vec<u32> {
    let needle = h.data().display().to_string();
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = text(&cmdline).replace('\0', " ");
        if cmdline.contains("llama-server") && cmdline.contains(&needle) && !zombie(pid) {
            out.push(pid);
        }
    }
    out
}

fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(true)
}

/// Waits for a condition with a generous bound (the machine is shared and slow); the
/// message says what never came.
fn wait_until(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < limit,
            "{what} never happened in {limit:?}"
        );
        // sleep: polling /proc, which offers no notification for another process's exit.
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn the_task(h: &Harness) -> Value {
    let tasks = h.json(&["tasks", "--json"]);
    let id = tasks.as_array().unwrap()[0]["id"].as_i64().unwrap();
    h.json(&["show", &id.to_string(), "--json"])
}

fn started_provider(task: &Value) -> String {
    task["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|ev| ev["type"] == "task_started")
        .map(|ev| ev["payload"]["provider"].as_str().unwrap_or("").to_owned())
        .unwrap_or_default()
}

#[test]
fn a_fresh_install_answers_its_first_goal_with_the_built_in_model() {
    if model_server().is_none() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let h = harness();
    let ws = h.wss();
    let out = h.output(&["run", "--workspace", &ws, "--goal", "Say hello"]);
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(
        !text(&out.stdout).trim().is_empty(),
        "no answer: {}",
        text(&out.stderr)
    );
    let task = the_task(&h);
    assert_eq!(task["task"]["status"], "completed", "{task}");
    assert!(
        started_provider(&task).contains("smollm2"),
        "not the built-in model: {task}"
    );
    // The app is gone, and so is its server.
    assert!(servers(&h).is_empty(), "a llama-server outlived the app");
    // Its log went to the logs dir.
    let log = h.data().join("logs/llama-server.log");
    assert!(
        std::fs::metadata(&log)
            .map(|m| m.len() > 0)
            .unwrap_or(false),
        "no server log at {}",
        log.display()
    );
}

#[test]
fn a_configured_provider_wins_over_the_built_in_model() {
    if model_server().is_none() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let h = harness();
    // A server that is not there: the run must fail on it, never fall back silently.
    let set = h.output(&[
        "provider",
        "set",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "elsewhere",
    ]);
    assert!(set.status.success(), "{}", text(&set.stderr));
    let ws = h.wss();
    let out = h.output(&["run", "--workspace", &ws, "--goal", "Say hello"]);
    assert!(!out.status.success());
    assert!(servers(&h).is_empty(), "the built-in model was started");
    assert!(started_provider(&the_task(&h)).contains("elsewhere"));
}

#[test]
fn kill_9_of_the_app_leaves_no_server_behind() {
    if model_server().is_none() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let h = harness();
    let ws = h.wss();
    let mut app = h
        .cmd(&[
            "run",
            "--workspace",
            &ws,
            "--goal",
            "Write a long story about a lighthouse keeper.",
        ])
        .spawn()
        .unwrap();
    wait_until("the app's llama-server", Duration::from_secs(120), || {
        !servers(&h).is_empty()
    });
    let server = servers(&h)[0];
    kill9(&mut app);
    wait_until(
        "the server's end after the app's kill -9",
        Duration::from_secs(20),
        || !Path::new(&format!("/proc/{server}")).exists() || zombie(server),
    );
    assert!(servers(&h).is_empty());
}

#[test]
fn kill_9_of_the_server_mid_answer_restarts_it_and_the_run_completes_once() {
    if model_server().is_none() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let h = harness();
    let ws = h.wss();
    let mut app = h
        .command(&[
            "run",
            "--workspace",
            &ws,
            "--goal",
            "Write a long story about a lighthouse keeper and the sea.",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The first streamed bytes of the answer: the server is mid-answer.
    let mut stdout = app.stdout.take().unwrap();
    let mut first = [0u8; 16];
    let n = stdout.read(&mut first).unwrap();
    assert!(n > 0, "the app printed nothing");
    let before = servers(&h);
    assert_eq!(before.len(), 1, "{before:?}");
    signal(before[0], libc::SIGKILL);
    let mut rest = Vec::new();
    stdout.read_to_end(&mut rest).unwrap();
    let status = app.wait().unwrap();
    assert!(status.success(), "the run did not complete: {status:?}");
    let task = the_task(&h);
    assert_eq!(task["task"]["status"], "completed", "{task}");
    // A new server answered (a new pid), and the transcript holds one answer.
    let sid = task["task"]["session_id"].as_i64().unwrap();
    let shown = h.json(&["session", "show", &sid.to_string(), "--json"]);
    let answers: Vec<&Value> = shown["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|en| en["kind"] == "assistant")
        .collect();
    assert_eq!(answers.len(), 1, "{shown}");
    let log = std::fs::read_to_string(h.data().join("logs/llama-server.log")).unwrap();
    assert!(
        log.matches("listening on http").count() >= 2,
        "the server was not started again: {log}"
    );
}

/// A background run (a webhook into `serve`): the server stays while the app works, and
/// is gone after the idle time while the app keeps running.
#[test]
fn the_server_stops_after_the_idle_time_while_the_app_runs_on() {
    if model_server().is_none() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let h = harness();
    let ws = h.wss();
    let added = h.output(&["hooks", "add", "hello", "--workspace", &ws]);
    assert!(added.status.success(), "{}", text(&added.stderr));
    let token = text(&added.stdout)
        .split_whitespace()
        .find(|w| w.len() >= 32)
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("no token in {}", text(&added.stdout)));
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut serve = h
        .cmd(&["serve", "--port", &port.to_string()])
        // The setting's default is 10 minutes; the test shortens it (and checks the
        // default in `core`'s unit tests).
        .env("POCKETPILOT_LOCAL_IDLE_SECONDS", "3")
        .spawn()
        .unwrap();
    wait_until("serve listening", Duration::from_secs(30), || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let body = r#"{"text":"Say hello"}"#;
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "POST /hooks/hello HTTP/1.0\r\nX-PocketPilot-Token: {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut status = String::new();
    BufReader::new(s).read_line(&mut status).unwrap();
    assert!(status.contains("202"), "{status}");
    wait_until("the built-in server", Duration::from_secs(120), || {
        !servers(&h).is_empty()
    });
    wait_until("the task's end", Duration::from_secs(300), || {
        let t = the_task(&h);
        t["task"]["status"] == "completed" || t["task"]["status"] == "failed"
    });
    assert_eq!(the_task(&h)["task"]["status"], "completed");
    wait_until("the idle stop", Duration::from_secs(60), || {
        servers(&h).is_empty()
    });
    assert!(serve.try_wait().unwrap().is_none(), "serve exited");
    kill9(&mut serve);
}
