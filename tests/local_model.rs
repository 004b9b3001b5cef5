//! The built-in model through the real binary: a fresh data dir with no provider answers a
//! goal through a `llama-server` the app starts itself (the portable build and SmolLM2
//! that `scripts/setup.sh` put in place), with default settings. The server is checked
//! through `/proc`: it never outlives the app, a kill -9 of it mid-answer is survived,
//! and it stops by itself after the idle time.
//!
//! Needs the real model server (`scripts/setup-model-server.sh`): skipped with a loud
//! message without it, failed when `POCKETPILOT_REQUIRE_MODEL_SERVER` is set.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn peers() -> PathBuf {
    match std::env::var_os("POCKETPILOT_PEERS").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/pocketpilot-peers"),
    }
}

/// Whether the server and model are there; panics when they must be.
fn available() -> bool {
    let p = peers();
    let server = p.join("llama.cpp/build-portable/bin/llama-server");
    let model = p.join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    if server.exists() && model.exists() {
        return true;
    }
    let msg = format!(
        "the built-in model is not installed under {} (run scripts/setup-model-server.sh)",
        p.display()
    );
    assert!(
        std::env::var_os("POCKETPILOT_REQUIRE_MODEL_SERVER").is_none(),
        "{msg}"
    );
    eprintln!("SKIPPED: {msg}");
    false
}

/// The machine has two cores and the model needs both: one of these tests at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Self {
        let e = Self {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(e.ws()).unwrap();
        std::fs::write(
            e.ws().join("README.md"),
            "# Demo\nA tiny project used to try PocketPilot.\n",
        )
        .unwrap();
        e
    }
    fn ws(&self) -> PathBuf {
        self.dir.path().join("ws")
    }
    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }
    /// The app as a new user runs it: no provider, default settings, the built-in model on.
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_pocketpilot"));
        c.args(args)
            .env("POCKETPILOT_DATA_DIR", self.data())
            .env("HOME", self.dir.path())
            .env("POCKETPILOT_PEERS", peers())
            .env_remove("POCKETPILOT_LOCAL_MODEL")
            .env_remove("POCKETPILOT_BASE_URL")
            .env_remove("POCKETPILOT_MODEL")
            .env_remove("POCKETPILOT_PROVIDER")
            .env_remove("POCKETPILOT_LLAMA_SERVER")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }
    fn output(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }
    fn json(&self, args: &[&str]) -> Value {
        let out = self.output(args);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }
    /// The `llama-server` processes started for this data dir (their command line names
    /// the template written into it).
    fn servers(&self) -> Vec<u32> {
        servers_naming(&self.data())
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn servers_naming(data: &Path) -> Vec<u32> {
    let needle = data.display().to_string();
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

fn kill9(pid: u32) {
    // SAFETY: sending SIGKILL to a process this test started (or its child).
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGKILL);
    }
}

fn the_task(e: &Env) -> Value {
    let tasks = e.json(&["tasks", "--json"]);
    let id = tasks.as_array().unwrap()[0]["id"].as_i64().unwrap();
    e.json(&["show", &id.to_string(), "--json"])
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
    if !available() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let e = Env::new();
    let ws = e.ws().display().to_string();
    let out = e.output(&["run", "--workspace", &ws, "--goal", "Say hello"]);
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
    let task = the_task(&e);
    assert_eq!(task["task"]["status"], "completed", "{task}");
    assert!(
        started_provider(&task).contains("smollm2"),
        "not the built-in model: {task}"
    );
    // The app is gone, and so is its server.
    assert!(e.servers().is_empty(), "a llama-server outlived the app");
    // Its log went to the logs dir.
    let log = e.data().join("logs/llama-server.log");
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
    if !available() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let e = Env::new();
    // A server that is not there: the run must fail on it, never fall back silently.
    let set = e.output(&[
        "provider",
        "set",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "elsewhere",
    ]);
    assert!(set.status.success(), "{}", text(&set.stderr));
    let ws = e.ws().display().to_string();
    let out = e.output(&["run", "--workspace", &ws, "--goal", "Say hello"]);
    assert!(!out.status.success());
    assert!(e.servers().is_empty(), "the built-in model was started");
    assert!(started_provider(&the_task(&e)).contains("elsewhere"));
}

#[test]
fn kill_9_of_the_app_leaves_no_server_behind() {
    if !available() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let e = Env::new();
    let ws = e.ws().display().to_string();
    let mut app: Child = e
        .cmd(&[
            "run",
            "--workspace",
            &ws,
            "--goal",
            "Write a long story about a lighthouse keeper.",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the app's llama-server", Duration::from_secs(120), || {
        !e.servers().is_empty()
    });
    let server = e.servers()[0];
    kill9(app.id());
    app.wait().unwrap();
    wait_until(
        "the server's end after the app's kill -9",
        Duration::from_secs(20),
        || !Path::new(&format!("/proc/{server}")).exists() || zombie(server),
    );
    assert!(e.servers().is_empty());
}

#[test]
fn kill_9_of_the_server_mid_answer_restarts_it_and_the_run_completes_once() {
    if !available() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let e = Env::new();
    let ws = e.ws().display().to_string();
    let mut app = e
        .cmd(&[
            "run",
            "--workspace",
            &ws,
            "--goal",
            "Write a long story about a lighthouse keeper and the sea.",
        ])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The first streamed bytes of the answer: the server is mid-answer.
    let mut stdout = app.stdout.take().unwrap();
    let mut first = [0u8; 16];
    let n = stdout.read(&mut first).unwrap();
    assert!(n > 0, "the app printed nothing");
    let before = e.servers();
    assert_eq!(before.len(), 1, "{before:?}");
    kill9(before[0]);
    let mut rest = Vec::new();
    stdout.read_to_end(&mut rest).unwrap();
    let status = app.wait().unwrap();
    assert!(status.success(), "the run did not complete: {status:?}");
    let task = the_task(&e);
    assert_eq!(task["task"]["status"], "completed", "{task}");
    // A new server answered (a new pid), and the transcript holds one answer.
    let sid = task["task"]["session_id"].as_i64().unwrap();
    let shown = e.json(&["session", "show", &sid.to_string(), "--json"]);
    let answers: Vec<&Value> = shown["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|en| en["kind"] == "assistant")
        .collect();
    assert_eq!(answers.len(), 1, "{shown}");
    let log = std::fs::read_to_string(e.data().join("logs/llama-server.log")).unwrap();
    assert!(
        log.matches("listening on http").count() >= 2,
        "the server was not started again: {log}"
    );
}

/// A background run (a webhook into `serve`): the server stays while the app works, and
/// is gone after the idle time while the app keeps running.
#[test]
fn the_server_stops_after_the_idle_time_while_the_app_runs_on() {
    if !available() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let e = Env::new();
    let ws = e.ws().display().to_string();
    let added = e.output(&["hooks", "add", "hello", "--workspace", &ws]);
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
    let mut serve = e
        .cmd(&["serve", "--port", &port.to_string()])
        // The setting's default is 10 minutes; the test shortens it (and checks the
        // default in `core`'s unit tests).
        .env("POCKETPILOT_LOCAL_IDLE_SECONDS", "3")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
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
        !e.servers().is_empty()
    });
    wait_until("the task's end", Duration::from_secs(300), || {
        let t = the_task(&e);
        t["task"]["status"] == "completed" || t["task"]["status"] == "failed"
    });
    assert_eq!(the_task(&e)["task"]["status"], "completed");
    wait_until("the idle stop", Duration::from_secs(60), || {
        e.servers().is_empty()
    });
    assert!(serve.try_wait().unwrap().is_none(), "serve exited");
    kill9(serve.id());
    serve.wait().unwrap();
}
