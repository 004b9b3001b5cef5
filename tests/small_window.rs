//! A small local model with the settings a new user gets, through the real binary: a
//! `llama-server` with a 4,096-token window (SmolLM2 with its own chat template, as a
//! person would run it), `pocketpilot provider set` and nothing else, then one `pocketpilot
//! run` per message, each its own process, as a person at a terminal types them. Nine
//! messages of about 660 words, then "hi": every turn completes, the compaction is reported,
//! and the server refuses no request for length: its own log, not only the answered turns,
//! is read for refusals.
//!
//! Needs the real model server (`scripts/setup-model-server.sh`): skipped with a loud
//! message without it, failed when `POCKETPILOT_REQUIRE_MODEL_SERVER` is set.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{model_server, text, Harness, BIN};

const WINDOW: u32 = 4096;

struct Server {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn healthy(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if write!(
        s,
        "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .is_err()
    {
        return false;
    }
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.starts_with("HTTP/1.1 200")
}

/// The server with a 4k window and the model's own template, or `None` when it is not
/// installed and not required.
fn start_server(dir: &Path) -> Option<Server> {
    let (bin, model) = model_server()?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let log = dir.join("llama-server.log");
    let mut command = Command::new(&bin);
    command
        .arg("-m")
        .arg(&model)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["-c", &WINDOW.to_string(), "-t", "2", "--jinja"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let server = Server {
        child: command.spawn().unwrap(),
        port,
        log,
    };
    let started = Instant::now();
    while !healthy(port) {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "llama-server did not become healthy: {}",
            std::fs::read_to_string(&server.log).unwrap_or_default()
        );
        // sleep: the poll interval while the server loads its model; it has no event to
        // wait on from outside but its health endpoint.
        std::thread::sleep(Duration::from_millis(100));
    }
    Some(server)
}

/// The binary under test: this build's, or `POCKETPILOT_BIN` (a copy kept apart from a
/// target directory that other builds share).
fn bin() -> PathBuf {
    std::env::var_os("POCKETPILOT_BIN")
        .filter(|b| !b.is_empty())
        .map_or_else(|| PathBuf::from(BIN), PathBuf::from)
}

/// `args` run to success; a failure names only the first arguments (the goals are long).
fn ok(h: &Harness, args: &[&str]) -> Output {
    let out = h.command_of(bin(), args).output().unwrap();
    assert!(
        out.status.success(),
        "{:?} failed: {}{}",
        &args[..args.len().min(3)],
        text(&out.stdout),
        text(&out.stderr)
    );
    out
}

fn json(h: &Harness, args: &[&str]) -> Value {
    serde_json::from_slice(&ok(h, args).stdout).unwrap()
}

/// About 660 words of plain prose, different per section: a person's pasted document.
fn section(n: usize) -> String {
    let words: Vec<&str> = "the harbour lights flicker while old ships creak against their \
        moorings and gulls argue over scraps of bread near the quiet market square at dawn"
        .split(' ')
        .filter(|w| !w.is_empty())
        .collect();
    let body: Vec<&str> = (0..650).map(|i| words[(i * 7 + n) % words.len()]).collect();
    format!(
        "Section {n}. Please read this part of the report and keep it in mind. {}",
        body.join(" ")
    )
}

#[test]
fn nine_long_messages_then_hi_each_its_own_run_with_default_settings() {
    // The person's own server, not the built-in model.
    let h = Harness::new(&[("POCKETPILOT_LOCAL_MODEL", "off")]);
    let Some(server) = start_server(h.dir.path()) else {
        return;
    };
    let base = format!("http://127.0.0.1:{}/v1", server.port);
    ok(
        &h,
        &["provider", "set", "--base-url", &base, "--model", "smollm2"],
    );
    ok(&h, &["run", "--workspace", &h.wss(), "--goal", &section(1)]);
    let tasks = json(&h, &["tasks", "--json"]);
    let session = tasks[0]["session_id"].as_i64().unwrap().to_string();
    for n in 2..=9 {
        ok(&h, &["run", "--session", &session, "--goal", &section(n)]);
    }
    ok(&h, &["run", "--session", &session, "--goal", "hi"]);

    let log = std::fs::read_to_string(&server.log).unwrap();
    let refused: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("exceeds the available context"))
        .collect();
    let shown = json(&h, &["session", "show", &session, "--json"]);
    let tasks = shown["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 10, "{shown}");
    for t in tasks {
        assert_eq!(t["status"], "completed", "{t}");
        assert!(
            !t["final_answer"].as_str().unwrap_or_default().is_empty(),
            "{t}"
        );
    }
    let compactions = shown["compactions"].as_array().unwrap();
    eprintln!(
        "{} compactions; causes {:?}",
        compactions.len(),
        compactions.iter().map(|c| &c["cause"]).collect::<Vec<_>>()
    );
    assert!(
        refused.is_empty(),
        "the server refused {} request(s) for length:\n{}\nwhat the runs said of sizes:\n{}",
        refused.len(),
        refused.join("\n"),
        runtime_sizes(&h).join("\n")
    );
    assert!(
        !compactions.is_empty(),
        "nine long messages fit a 4k window?"
    );
    // Nine quarters of the window cannot all be there: the person's oldest words went,
    // visibly, and never the message being answered.
    assert!(compactions
        .iter()
        .any(|c| !c["instructions_elided"].as_array().unwrap().is_empty()));
}

/// The runs' log lines about request sizes (counts, refusals, summaries), to tell which
/// request a refusal was.
fn runtime_sizes(h: &Harness) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(h.data().join("logs")) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = dir.filter_map(|e| e.ok().map(|e| e.path())).collect();
    files.sort();
    files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|text| {
            text.lines()
                .filter(|l| {
                    [
                        "counted",
                        "count the request",
                        "for length",
                        "summary",
                        "marker",
                    ]
                    .iter()
                    .any(|k| l.contains(k))
                })
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}
