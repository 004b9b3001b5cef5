//! A real OpenAI-compatible server, `llmock` (from PyPI), that answers what a test
//! scripts and records every request it receives.
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub struct Llmock {
    child: Child,
    pub port: u16,
}

impl Drop for Llmock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One request to `port`: its status and body.
pub fn http(port: u16, method: &str, path: &str, body: &Value) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let body = body.to_string();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let status = out
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = out.split("\r\n\r\n").nth(1).unwrap_or_default().to_owned();
    (status, body)
}

impl Llmock {
    /// Starts it on a free port, without its own tool-calling, and waits until it answers.
    pub fn start() -> Self {
        let bin = super::test_venv("llmock", "POCKETPILOT_LLMOCK");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(&bin)
            .args(["serve", "--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--tool-mode", "off", "--log-level", "warning"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mock = Self { child, port };
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err()
            || http(port, "POST", "/_llmock/reset", &json!({})).0 != 200
        {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "llmock did not start"
            );
            // sleep: the poll interval of the bounded wait for llmock to start (no readiness signal).
            std::thread::sleep(Duration::from_millis(100));
        }
        mock
    }

    /// What it answers from now on.
    pub fn scenario(&self, behaviors: Value) {
        let (status, body) = http(
            self.port,
            "POST",
            "/_llmock/scenario",
            &json!({ "behaviors": behaviors }),
        );
        assert!((200..300).contains(&status), "{body}");
    }

    /// Every request it received, as it reports them.
    pub fn requests(&self) -> Value {
        let (_, body) = http(self.port, "GET", "/_llmock/requests", &json!({}));
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
    }

    /// The chat requests it received, in order, as it reports them.
    pub fn chat_requests(&self) -> Vec<Value> {
        let served = self.requests();
        served["requests"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| {
                r["path"]
                    .as_str()
                    .unwrap_or("")
                    .ends_with("/chat/completions")
            })
            .cloned()
            .collect()
    }

    /// The chat requests it received, in order: their `messages`.
    pub fn chats(&self) -> Vec<Vec<Value>> {
        self.chat_requests()
            .iter()
            .map(|r| {
                let body = match &r["body"] {
                    Value::String(s) => serde_json::from_str(s).unwrap(),
                    other => other.clone(),
                };
                body["messages"].as_array().unwrap().clone()
            })
            .collect()
    }
}
