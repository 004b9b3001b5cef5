//! `pocketpilot run` against a real OpenAI-compatible server (llmock, from PyPI, started
//! here on 127.0.0.1): a tool call executed, its result sent back, the final answer
//! printed — and the API key found nowhere it must not be.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod support;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use serde_json::{json, Value};
use support::llmock::Llmock;
use support::Harness;

const KEY: &str = "sk-pocketpilot-test-9f8e7d6c5b4a";

/// The binary on `h`'s store, with the server at `port` as its model.
fn pocketpilot(h: &Harness, port: u16, args: &[&str]) -> Output {
    h.command(args)
        .env(
            "POCKETPILOT_BASE_URL",
            format!("http://127.0.0.1:{port}/v1"),
        )
        .env("POCKETPILOT_MODEL", "test-model")
        .env("POCKETPILOT_API_KEY", KEY)
        .env("POCKETPILOT_LOG", "trace")
        // A window set by the person: no discovery requests reach these one-purpose servers.
        .env("POCKETPILOT_CONTEXT_WINDOW", "32768")
        .output()
        .unwrap()
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn a_full_run_against_a_real_server_executes_the_tool_and_prints_the_answer() {
    let mock = Llmock::start();
    let h = Harness::new(&[]);
    let dir = &h.dir;
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("notes.txt"), "The launch code is banana.\n").unwrap();
    mock.scenario(json!([
        { "type": "reply", "tool_calls": [{ "name": "read_file", "arguments": { "path": "notes.txt" } }] },
        { "type": "reply", "text": "The notes say the launch code is banana." }
    ]));
    let out = pocketpilot(
        &h,
        mock.port,
        &[
            "run",
            "--workspace",
            ws.to_str().unwrap(),
            "--goal",
            "What do the notes say?",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains("The notes say the launch code is banana."),
        "{stdout}"
    );
    assert!(stderr.contains("read_file"), "{stderr}");

    let shown: Value =
        serde_json::from_slice(&pocketpilot(&h, mock.port, &["show", "1", "--json"]).stdout)
            .unwrap();
    let events = shown["events"].as_array().unwrap();
    let completed = events
        .iter()
        .find(|e| e["type"] == "tool_call_completed")
        .unwrap();
    assert!(completed["payload"]["output"]
        .as_str()
        .unwrap()
        .contains("banana"));
    assert!(events
        .iter()
        .any(|e| e["type"] == "task_started" && e["payload"]["provider"] == "openai:test-model"));
    assert!(shown["task"]["prompt_tokens"].as_i64().unwrap() > 0);

    // A rejected key: a clear error that points at the key setting — and never shows it.
    mock.scenario(json!([{ "type": "fail", "status": 401 }]));
    let out = pocketpilot(
        &h,
        mock.port,
        &[
            "run",
            "--workspace",
            ws.to_str().unwrap(),
            "--goal",
            "again",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr.contains("pocketpilot key set"), "{stderr}");

    // The key is in no file of the data directory (database, WAL, logs), in no event and
    // in no output.
    let _ = pocketpilot(&h, mock.port, &["logs"]);
    let data = dir.path().join("data");
    let files = files_under(&data);
    assert!(files.iter().any(|f| f.to_string_lossy().contains("logs")));
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        assert!(
            !bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()),
            "the API key leaked into {}",
            f.display()
        );
    }
    for args in [
        &["show", "1", "--json"][..],
        &["show", "2", "--json"],
        &["logs"],
        &["provider", "show", "--json"],
    ] {
        let out = pocketpilot(&h, mock.port, args);
        assert!(!String::from_utf8_lossy(&out.stdout).contains(KEY));
        assert!(!String::from_utf8_lossy(&out.stderr).contains(KEY));
    }
}

#[test]
fn eval_real_plays_the_cases_against_the_configured_model_and_reports_without_failing() {
    let mock = Llmock::start();
    let h = Harness::new(&[]);
    let cases = Path::new(env!("CARGO_MANIFEST_DIR")).join("evals/cases");
    let eval = |filter: &str| {
        let out = pocketpilot(
            &h,
            mock.port,
            &[
                "eval",
                "--real",
                "--json",
                "--cases",
                cases.to_str().unwrap(),
                "--filter",
                filter,
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        // --real reports; it has no pass requirement, so it exits 0 either way.
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
        (summary, stderr)
    };

    // The model answers as the case expects: the case passes, played by the real model.
    mock.scenario(json!([{ "type": "reply", "text": "Hello! I am ready to help." }]));
    let (summary, stderr) = eval("happy_plain_answer");
    assert_eq!(summary["real"], true);
    assert_eq!(summary["cases"][0]["passed"], true, "{summary}");
    assert!(stderr.ends_with("1 passed, 0 failed\n"), "{stderr}");
    let chats = mock.chat_requests();
    assert_eq!(chats.len(), 1, "{chats:?}");
    assert_eq!(chats[0]["model"], "test-model");
    assert!(chats[0]["body"].to_string().contains("Say hello"));

    // An answer the case does not expect: reported as failed, with the reason.
    mock.scenario(json!([{ "type": "reply", "text": "Goodbye." }]));
    let (summary, stderr) = eval("happy_plain_answer");
    assert_eq!(summary["cases"][0]["passed"], false, "{summary}");
    assert!(
        summary["cases"][0]["failures"]
            .to_string()
            .contains("ready to help"),
        "{summary}"
    );
    assert!(stderr.ends_with("0 passed, 1 failed\n"), "{stderr}");
}

/// A one-shot OpenAI-compatible server that remembers the request's Authorization header.
fn capture_auth() -> (u16, std::thread::JoinHandle<String>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let h = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = s.read(&mut chunk).unwrap();
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        let head = String::from_utf8_lossy(&buf).into_owned();
        let auth = head
            .lines()
            .find_map(|l| {
                l.strip_prefix("authorization: ")
                    .or_else(|| l.strip_prefix("Authorization: "))
            })
            .unwrap_or_default()
            .to_owned();
        let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":null}]}\n\n\
                    data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
        let _ = write!(
            s,
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        auth
    });
    (port, h)
}

#[test]
fn commands_cannot_read_the_key_from_our_process_and_the_key_still_reaches_the_server() {
    let h = Harness::new(&[]);
    let dir = &h.dir;
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let script = dir.path().join("peek.json");
    std::fs::write(
        &script,
        json!([
            { "tool_calls": [{ "name": "run_command", "arguments": {
                "command": "tr '\\0' '\\n' < /proc/$PPID/environ > env.txt; env >> env.txt" } }] },
            { "text": "looked" }
        ])
        .to_string(),
    )
    .unwrap();
    let out = h
        .command(&[
            "run",
            "--workspace",
            ws.to_str().unwrap(),
            "--goal",
            "peek",
            "--allow",
            "shell",
        ])
        .args(["--provider", &format!("scripted:{}", script.display())])
        .env("POCKETPILOT_API_KEY", KEY)
        .env("SOME_SERVICE_TOKEN", "tok-should-stay-hidden")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen = std::fs::read_to_string(ws.join("env.txt")).unwrap();
    // The command did read an environment (its own); ours stays out of it, our own
    // variables included (the sandbox scrubs POCKETPILOT_*).
    assert!(
        seen.contains("HOME="),
        "the command read no environment: {seen}"
    );
    assert!(
        !seen.contains("POCKETPILOT_"),
        "our variables reached the command: {seen}"
    );
    assert!(!seen.contains(KEY), "the API key is readable by commands");
    assert!(!seen.contains("tok-should-stay-hidden"));

    // After the relaunch the key is still ours, in memory, and reaches the model server.
    let (port, server) = capture_auth();
    let out = pocketpilot(
        &h,
        port,
        &["run", "--workspace", ws.to_str().unwrap(), "--goal", "hi"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(server.join().unwrap(), format!("Bearer {KEY}"));
}
