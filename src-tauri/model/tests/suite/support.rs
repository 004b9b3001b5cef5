//! Test support: a raw TCP server that answers with exact bytes, the recorded fixtures
//! turned into responses, an llmock child process, and stream collection helpers.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use pocketpilot_model::{
    Message, ModelResponse, OpenAiConfig, OpenAiProvider, Provider, ProviderError, StreamEvent,
    ToolSpec,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn repo_root() -> PathBuf {
    crate_dir().join("../..")
}

/// Small timeouts so that no failing case can hang the suite.
pub fn test_config(base_url: &str) -> OpenAiConfig {
    OpenAiConfig {
        base_url: base_url.into(),
        model: "test-model".into(),
        api_key: Some("sk-test-SECRET-0123456789".into()),
        connect_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(2),
        request_timeout: Duration::from_secs(20),
        max_retries: 0,
        retry_base_delay: Duration::from_millis(10),
        max_stream_restarts: 0,
        ..OpenAiConfig::default()
    }
}

pub fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Weather for a city".into(),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"]
        }),
    }
}

/// What one streamed turn produced.
#[derive(Debug)]
pub struct Outcome {
    pub events: Vec<StreamEvent>,
    pub result: Result<ModelResponse, ProviderError>,
}

impl Outcome {
    /// Deltas since the last `Reset`, concatenated: what a UI shows at the end.
    pub fn shown_text(&self) -> String {
        let mut text = String::new();
        for e in &self.events {
            match e {
                StreamEvent::Delta(d) => text.push_str(d),
                StreamEvent::Reset => text.clear(),
                StreamEvent::Done(_) => {}
            }
        }
        text
    }

    pub fn resets(&self) -> usize {
        self.events
            .iter()
            .filter(|e| matches!(e, StreamEvent::Reset))
            .count()
    }

    pub fn done(&self) -> &ModelResponse {
        match &self.result {
            Ok(r) => r,
            Err(e) => panic!(
                "expected a complete answer, got {e} after {:?}",
                self.events
            ),
        }
    }

    pub fn error(&self) -> &ProviderError {
        match &self.result {
            Err(e) => e,
            Ok(r) => panic!("expected an error, got {r:?}"),
        }
    }
}

/// The plain turn most network tests play: "hi", no tools, bounded at 20 s.
pub async fn say_hi(provider: &OpenAiProvider) -> Outcome {
    bounded(
        Duration::from_secs(20),
        run_turn(provider, user("hi"), vec![]),
    )
    .await
}

/// Runs a turn to its end, checking the event grammar: `Done` is last and alone, nothing
/// follows an error, and the text shown at the end is the text of the answer.
pub async fn run_turn(
    provider: &OpenAiProvider,
    messages: Vec<Message>,
    tools: Vec<ToolSpec>,
) -> Outcome {
    let mut stream = provider.stream(messages, tools);
    let mut events = Vec::new();
    let result = loop {
        match stream.next().await {
            Some(Ok(StreamEvent::Done(r))) => {
                assert!(stream.next().await.is_none(), "events after Done");
                break Ok(r);
            }
            Some(Ok(e)) => events.push(e),
            Some(Err(e)) => {
                assert!(stream.next().await.is_none(), "events after an error");
                break Err(e);
            }
            None => panic!("the stream ended without Done or an error: {events:?}"),
        }
    };
    let outcome = Outcome { events, result };
    if let Ok(r) = &outcome.result {
        assert_eq!(outcome.shown_text(), r.text, "shown text != final text");
    }
    outcome
}

pub fn user(text: &str) -> Vec<Message> {
    vec![Message::user(text)]
}

// ---------------------------------------------------------------------------------------
// Raw server

/// A request as the raw server read it.
#[derive(Debug, Clone)]
pub struct Request {
    pub head: String,
    pub body: Vec<u8>,
}

/// How a reply ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum After {
    /// Close the connection (FIN).
    Close,
    /// Keep the connection open, send nothing more, and report when the client closes it.
    Hold,
}

#[derive(Debug, Clone)]
pub struct Reply {
    pub bytes: Vec<u8>,
    /// Write `bytes[..k]`, flush, pause, then the rest.
    pub split_at: Option<usize>,
    pub after: After,
}

impl Reply {
    pub fn close(bytes: Vec<u8>) -> Self {
        Self {
            bytes,
            split_at: None,
            after: After::Close,
        }
    }
}

type Plan = Arc<dyn Fn(usize, &Request) -> Reply + Send + Sync>;

/// A TCP server on 127.0.0.1 whose replies are exact bytes chosen by `plan` from the
/// connection number and the request.
pub struct RawServer {
    pub addr: SocketAddr,
    pub connections: Arc<AtomicUsize>,
    pub requests: Arc<Mutex<Vec<Request>>>,
    closed: tokio::sync::Mutex<mpsc::UnboundedReceiver<usize>>,
    task: JoinHandle<()>,
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl RawServer {
    pub async fn start(plan: impl Fn(usize, &Request) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (closed_tx, closed_rx) = mpsc::unbounded_channel();
        let plan: Plan = Arc::new(plan);
        let task = {
            let connections = connections.clone();
            let requests = requests.clone();
            tokio::spawn(async move {
                loop {
                    let Ok((socket, _)) = listener.accept().await else {
                        return;
                    };
                    let n = connections.fetch_add(1, Ordering::SeqCst);
                    let plan = plan.clone();
                    let requests = requests.clone();
                    let closed_tx = closed_tx.clone();
                    tokio::spawn(async move {
                        serve(socket, n, plan, requests, closed_tx).await;
                    });
                }
            })
        };
        Self {
            addr,
            connections,
            requests,
            closed: tokio::sync::Mutex::new(closed_rx),
            task,
        }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Waits (bounded) until the client closed a held connection; returns its number.
    pub async fn client_closed(&self, within: Duration) -> Option<usize> {
        let mut rx = self.closed.lock().await;
        tokio::time::timeout(within, rx.recv()).await.ok().flatten()
    }
}

async fn serve(
    mut socket: TcpStream,
    n: usize,
    plan: Plan,
    requests: Arc<Mutex<Vec<Request>>>,
    closed: mpsc::UnboundedSender<usize>,
) {
    let _ = socket.set_nodelay(true);
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    requests.lock().unwrap().push(request.clone());
    let reply = plan(n, &request);
    let (first, second) = match reply.split_at {
        Some(k) if k < reply.bytes.len() => reply.bytes.split_at(k),
        _ => (&reply.bytes[..], &[][..]),
    };
    if socket.write_all(first).await.is_err() || socket.flush().await.is_err() {
        return;
    }
    if !second.is_empty() {
        // sleep: splits the reply across two TCP writes, as a slow server's bytes arrive.
        tokio::time::sleep(Duration::from_millis(1)).await;
        if socket.write_all(second).await.is_err() {
            return;
        }
    }
    match reply.after {
        After::Close => {
            let _ = socket.shutdown().await;
        }
        After::Hold => {
            let mut buf = [0u8; 1024];
            loop {
                match socket.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
            let _ = closed.send(n);
        }
    }
}

async fn read_request(socket: &mut TcpStream) -> Option<Request> {
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    let head_end = loop {
        if let Some(p) = find(&data, b"\r\n\r\n") {
            break p + 4;
        }
        let n = socket.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&data[..head_end]).to_string();
    let length = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())
                .flatten()
        })
        .unwrap_or(0);
    while data.len() < head_end + length {
        let n = socket.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
    }
    Some(Request {
        head,
        body: data[head_end..head_end + length].to_vec(),
    })
}

pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// An SSE response with chunked framing; `complete: false` leaves the last chunk out (the
/// connection then closes mid-body, like a reset).
pub fn sse_response(body: &[u8], complete: bool) -> Vec<u8> {
    let mut out = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n".to_vec();
    out.extend_from_slice(&chunked(body, complete));
    out
}

pub fn chunked(body: &[u8], complete: bool) -> Vec<u8> {
    let mut out = Vec::new();
    if !body.is_empty() {
        out.extend_from_slice(format!("{:x}\r\n", body.len()).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\r\n");
    }
    if complete {
        out.extend_from_slice(b"0\r\n\r\n");
    }
    out
}

pub fn json_response(status: &str, body: &str, extra_headers: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n{extra_headers}\r\n{body}",
        body.len()
    )
    .into_bytes()
}

// ---------------------------------------------------------------------------------------
// Recorded fixtures

/// One recorded exchange: the response head as recorded (or none: the recording kept
/// only the SSE body) and the body bytes exactly as recorded.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub file: String,
    pub title: String,
    pub head: Option<String>,
    pub body: Vec<u8>,
    /// The recording says the connection broke (curl exit 18).
    pub reset: bool,
}

impl Recorded {
    /// The bytes the replay server sends: the recorded head with its framing headers
    /// replaced (chunked body, connection closed afterwards) and the recorded body.
    pub fn wire(&self) -> Vec<u8> {
        let head = self.head.clone().unwrap_or_else(|| {
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n".into()
        });
        let mut lines: Vec<&str> = head
            .split("\r\n")
            .filter(|l| !l.is_empty())
            .filter(|l| {
                let name = l
                    .split(':')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase();
                !matches!(
                    name.as_str(),
                    "transfer-encoding" | "connection" | "keep-alive"
                )
            })
            .collect();
        let has_length = lines
            .iter()
            .any(|l| l.to_ascii_lowercase().starts_with("content-length:"));
        lines.push("connection: close");
        if !has_length {
            lines.push("transfer-encoding: chunked");
        }
        let mut out = lines.join("\r\n").into_bytes();
        out.extend_from_slice(b"\r\n\r\n");
        let head_len = out.len();
        if has_length {
            out.extend_from_slice(&self.body);
        } else {
            out.extend_from_slice(&chunked(&self.body, !self.reset));
        }
        debug_assert!(out.len() > head_len);
        out
    }

    pub fn status(&self) -> u16 {
        self.head
            .as_deref()
            .and_then(|h| h.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .unwrap_or(200)
    }
}

/// The exchanges of one fixture file (`### title` separates several).
pub fn load_fixture(name: &str) -> Vec<Recorded> {
    let path = crate_dir().join("fixtures/sse").join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut sections: Vec<(String, Vec<u8>)> = Vec::new();
    let mut title = String::new();
    let mut current = Vec::new();
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        if line.starts_with(b"### ") {
            if !current.is_empty() {
                sections.push((title.clone(), std::mem::take(&mut current)));
            }
            title = String::from_utf8_lossy(&line[4..]).trim().to_string();
        } else {
            current.extend_from_slice(line);
        }
    }
    if !current.is_empty() {
        sections.push((title, current));
    }
    sections
        .into_iter()
        .map(|(title, raw)| section(name, title, raw))
        .collect()
}

fn section(file: &str, title: String, mut raw: Vec<u8>) -> Recorded {
    // The recorder's own trailer line.
    let mut reset = false;
    if let Some(p) = find(&raw, b"[curl exit=") {
        reset = raw[p..].starts_with(b"[curl exit=18]");
        raw.truncate(p);
    }
    let (head, body) = if raw.starts_with(b"HTTP/") {
        let end = find(&raw, b"\r\n\r\n").expect("a head") + 4;
        let head = String::from_utf8(raw[..end].to_vec()).unwrap();
        let mut body = raw[end..].to_vec();
        let length = head.lines().find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .and_then(|v| v.trim().parse::<usize>().ok())
        });
        if let Some(length) = length {
            assert!(
                body.len() >= length,
                "{file}: body shorter than content-length"
            );
            body.truncate(length);
        }
        (Some(head), body)
    } else {
        (None, raw)
    };
    Recorded {
        file: file.into(),
        title,
        head,
        body,
        reset,
    }
}

/// What a naive reading of the recorded body says the answer is (an oracle independent
/// of the provider's parser): text, tool calls (id, name, arguments), finish, usage.
#[derive(Debug, Default, PartialEq)]
pub struct Expected {
    pub text: String,
    pub calls: Vec<(String, String, String)>,
    pub finish: Option<String>,
    pub usage: Option<(u64, u64, u64)>,
}

pub fn expected(body: &[u8]) -> Expected {
    let text = String::from_utf8_lossy(body).replace("\r\n", "\n");
    let mut out = Expected::default();
    for line in text.lines() {
        let Some(data) = line.strip_prefix("data:") else {
            continue;
        };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(data.trim()) else {
            continue;
        };
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            out.usage = Some((
                u["prompt_tokens"].as_u64().unwrap_or(0),
                u["completion_tokens"].as_u64().unwrap_or(0),
                u["total_tokens"].as_u64().unwrap_or(0),
            ));
        }
        for choice in v["choices"].as_array().into_iter().flatten() {
            if let Some(f) = choice["finish_reason"].as_str() {
                out.finish = Some(f.into());
            }
            if let Some(c) = choice["delta"]["content"].as_str() {
                out.text.push_str(c);
            }
            for call in choice["delta"]["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let i = call["index"].as_u64().unwrap_or(0) as usize;
                while out.calls.len() <= i {
                    out.calls.push(Default::default());
                }
                if let Some(id) = call["id"].as_str() {
                    out.calls[i].0 = id.into();
                }
                if let Some(name) = call["function"]["name"].as_str() {
                    out.calls[i].1 = name.into();
                }
                if let Some(args) = call["function"]["arguments"].as_str() {
                    out.calls[i].2.push_str(args);
                }
            }
        }
    }
    out
}

pub fn as_expected(r: &ModelResponse) -> Expected {
    Expected {
        text: r.text.clone(),
        calls: r
            .tool_calls
            .iter()
            .map(|c| (c.id.clone(), c.name.clone(), c.arguments.clone()))
            .collect(),
        finish: r.finish_reason.clone(),
        usage: r
            .usage
            .map(|u| (u.prompt_tokens, u.completion_tokens, u.total_tokens)),
    }
}

// ---------------------------------------------------------------------------------------
// llmock

/// An llmock server started for one test; killed when dropped.
pub struct Llmock {
    child: Child,
    pub port: u16,
    http: reqwest::Client,
}

impl Drop for Llmock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn llmock_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("POCKETPILOT_LLMOCK") {
        return PathBuf::from(p);
    }
    repo_root().join(".venv-test/bin/llmock")
}

impl Llmock {
    pub async fn start() -> Self {
        Self::start_with(&[]).await
    }

    pub async fn start_with(extra: &[&str]) -> Self {
        let binary = llmock_binary();
        assert!(
            Path::new(&binary).exists(),
            "llmock not found at {}: run `tests/setup-python.sh` at the repo root (or set POCKETPILOT_LLMOCK)",
            binary.display()
        );
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let child = Command::new(&binary)
            .args(["serve", "--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--tool-mode", "off", "--log-level", "warning"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let mock = Self {
            child,
            port,
            http: reqwest::Client::new(),
        };
        let ready = async {
            loop {
                let reset = mock
                    .http
                    .post(format!("http://127.0.0.1:{port}/_llmock/reset"))
                    .send()
                    .await;
                if matches!(reset, Ok(r) if r.status().is_success()) {
                    return;
                }
                // sleep: the poll interval of the bounded wait for llmock to answer its reset (no readiness signal).
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(30), ready)
            .await
            .expect("llmock did not start within 30 s");
        mock
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Queues one-shot behaviours (see the fixtures README).
    pub async fn scenario(&self, behaviors: serde_json::Value) {
        let r = self
            .http
            .post(format!("http://127.0.0.1:{}/_llmock/scenario", self.port))
            .json(&serde_json::json!({ "behaviors": behaviors }))
            .send()
            .await
            .unwrap();
        assert!(
            r.status().is_success(),
            "scenario rejected: {}",
            r.text().await.unwrap()
        );
    }
}

/// Bounds a test body so that a hang fails instead of blocking the suite.
pub async fn bounded<T>(within: Duration, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(within, fut)
        .await
        .unwrap_or_else(|_| panic!("did not finish within {within:?}"))
}
