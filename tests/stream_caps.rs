//! A model server that never stops streaming cannot exhaust memory: a real `pocketpilot
//! run` child against a real local HTTP server sending an endless SSE answer fails with
//! the cap's reason (`model_stream_limit`), the connection is closed, and the child's RSS
//! (read from /proc while it runs) stays bounded.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::Harness;

#[derive(Clone, Copy)]
enum Endless {
    /// Content deltas of 64 KiB each.
    Text,
    /// One tool call whose arguments never end.
    ToolArguments,
    /// A new tool call in every chunk.
    ToolCalls,
    /// One `data:` line that never ends.
    Line,
}

struct Server {
    url: String,
    closed: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
}

/// Answers `POST …/chat/completions` with an endless stream of `kind`; anything else 404.
fn serve(kind: Endless) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let closed = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let (c, s) = (closed.clone(), sent.clone());
    std::thread::spawn(move || {
        for socket in listener.incoming() {
            let Ok(mut socket) = socket else { return };
            let (c, s) = (c.clone(), s.clone());
            std::thread::spawn(move || {
                let mut head = [0u8; 65536];
                let n = socket.read(&mut head).unwrap_or(0);
                let request = String::from_utf8_lossy(&head[..n]).to_string();
                if !request.contains("/chat/completions") {
                    let _ = socket.write_all(
                        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    );
                    return;
                }
                let _ = socket.write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
                );
                if stream_forever(&mut socket, kind, &s).is_err() {
                    c.store(true, Ordering::SeqCst);
                }
            });
        }
    });
    Server { url, closed, sent }
}

/// Writes until the peer goes away (the `Err`), for at most 120 s.
fn stream_forever(
    socket: &mut std::net::TcpStream,
    kind: Endless,
    sent: &AtomicU64,
) -> std::io::Result<()> {
    let started = Instant::now();
    let big = "x".repeat(64 * 1024);
    let mut i = 0u64;
    if let Endless::Line = kind {
        socket.write_all(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"")?;
    }
    if let Endless::ToolArguments = kind {
        let first = json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c0",
            "type":"function","function":{"name":"read_file","arguments":"{\"path\":\""}}]}}]});
        socket.write_all(format!("data: {first}\n\n").as_bytes())?;
    }
    while started.elapsed() < Duration::from_secs(120) {
        let chunk = match kind {
            Endless::Text => format!(
                "data: {}\n\n",
                json!({"choices":[{"index":0,"delta":{"content":big}}]})
            ),
            Endless::ToolArguments => format!(
                "data: {}\n\n",
                json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,
                    "function":{"arguments":big}}]}}]})
            ),
            Endless::ToolCalls => format!(
                "data: {}\n\n",
                json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":i,"id":format!("c{i}"),
                    "type":"function","function":{"name":"list_dir","arguments":"{}"}}]}}]})
            ),
            Endless::Line => big.clone(),
        };
        socket.write_all(chunk.as_bytes())?;
        sent.fetch_add(chunk.len() as u64, Ordering::Relaxed);
        i += 1;
    }
    Ok(())
}

/// Generous: the CLI idles at ~100 MiB (debug build); the endless stream took it to GiBs.
const RSS_BOUND_KIB: u64 = 300 * 1024;

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

struct Outcome {
    code: i32,
    peak_rss_kib: u64,
    failed: Value,
    stderr: String,
}

/// `pocketpilot run` against `server`, its RSS sampled every 20 ms; the `task_failed`
/// payload of the task afterwards.
fn run(server: &Server, env: &[(&str, &str)]) -> Outcome {
    let h = Harness::new(&[
        ("POCKETPILOT_BASE_URL", server.url.as_str()),
        ("POCKETPILOT_MODEL", "endless"),
        ("POCKETPILOT_API_KEY", "sk-test-endless"),
        ("POCKETPILOT_CONTEXT_WINDOW", "100000"),
    ]);
    let mut child = h
        .command(&["run", "--workspace", &h.wss(), "--goal", "say something"])
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let started = Instant::now();
    let mut peak = 0;
    let status = loop {
        if let Some(kib) = rss_kib(pid) {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if peak > RSS_BOUND_KIB {
            let _ = child.kill();
            panic!("`pocketpilot run` grew past {RSS_BOUND_KIB} KiB of RSS ({peak} KiB)");
        }
        if started.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            panic!(
                "`pocketpilot run` still going after 90 s (peak RSS {peak} KiB, {} bytes streamed)",
                server.sent.load(Ordering::Relaxed)
            );
        }
        // sleep: the poll interval of the bounded watch over the child's memory while it runs.
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let shown = h.json(&["show", "1", "--json"]);
    let failed = shown["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "task_failed")
        .cloned()
        .unwrap_or(Value::Null);
    Outcome {
        code: status.code().unwrap_or(-1),
        peak_rss_kib: peak,
        failed,
        stderr,
    }
}

fn check(kind: Endless, env: &[(&str, &str)], cap_text: &str) -> Outcome {
    let server = serve(kind);
    let out = run(&server, env);
    assert_eq!(out.code, 1, "exit code; stderr: {}", out.stderr);
    let payload = &out.failed["payload"];
    assert_eq!(payload["kind"], "model_stream_limit", "{}", out.failed);
    let message = payload.to_string();
    assert!(message.contains(cap_text), "{message}");
    // The server saw its peer go away: the connection was closed, not left streaming.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !server.closed.load(Ordering::SeqCst) && Instant::now() < deadline {
        // sleep: the poll interval of the bounded wait for the server to see its peer go.
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        server.closed.load(Ordering::SeqCst),
        "the stream is still open"
    );
    assert!(
        out.peak_rss_kib < RSS_BOUND_KIB,
        "peak RSS {} KiB",
        out.peak_rss_kib
    );
    println!(
        "endless stream: peak RSS of `pocketpilot run` {:.1} MiB, {:.1} MiB streamed before the cap",
        out.peak_rss_kib as f64 / 1024.0,
        server.sent.load(Ordering::Relaxed) as f64 / (1024.0 * 1024.0)
    );
    out
}

#[test]
fn endless_text_fails_at_the_text_cap_with_bounded_memory() {
    check(Endless::Text, &[], "text bytes per turn");
}

#[test]
fn endless_tool_arguments_fail_at_their_cap() {
    check(
        Endless::ToolArguments,
        &[("POCKETPILOT_MAX_TURN_TOOL_ARGUMENT_BYTES", "1048576")],
        "tool-argument bytes per turn: more than 1048576",
    );
}

#[test]
fn endless_tool_calls_fail_at_their_cap() {
    check(
        Endless::ToolCalls,
        &[],
        "tool calls per turn: more than 128",
    );
}

#[test]
fn an_endless_line_fails_at_the_event_cap() {
    check(Endless::Line, &[], "bytes in one stream event");
}
