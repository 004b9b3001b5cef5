//! How much CPU it costs to read a streamed answer: a local server streams N chunks
//! (OpenAI's chunk shape, as llmock sends it) and each client reads them all.
//!
//! Clients, in the same run and against the same bytes: ours (`OpenAiProvider::stream`),
//! `async-openai` (`chat().create_stream`), and the Python `openai` SDK from
//! `.venv-test/bin/python` (run `tests/setup-python.sh` first; skipped with a note if it
//! is missing). CPU time is the reading thread's own (`CLOCK_THREAD_CPUTIME_ID`) for the
//! Rust clients, on a current-thread runtime so the HTTP connection is driven on that
//! thread too; the Python client measures `time.process_time()` around its loop. The
//! server runs on another thread and is not counted.
//!
//! `cargo bench -p pocketpilot-model --bench stream_ingest` (`STREAM_CHUNKS=N` to change N).
#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use pocketpilot_model::{Message, OpenAiConfig, OpenAiProvider, Provider, StreamEvent};

fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn payload(chunks: usize) -> Vec<u8> {
    let head = r#"{"id":"chatcmpl-bench0123456789","object":"chat.completion.chunk","created":1795991234,"model":"bench-model","system_fingerprint":null,"choices":[{"index":0,"delta":"#;
    let mut body = String::with_capacity(chunks * 230);
    body.push_str(&format!(
        "data: {head}{{\"role\":\"assistant\",\"content\":\"\"}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n"
    ));
    for i in 0..chunks {
        body.push_str(&format!(
            "data: {head}{{\"content\":\"tok{} \"}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n",
            i % 1000
        ));
    }
    body.push_str(&format!(
        "data: {head}{{}},\"logprobs\":null,\"finish_reason\":\"stop\"}}]}}\n\n"
    ));
    body.push_str(r#"data: {"id":"chatcmpl-bench0123456789","object":"chat.completion.chunk","created":1795991234,"model":"bench-model","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":100000,"total_tokens":100005}}"#);
    body.push_str("\n\ndata: [DONE]\n\n");
    // Chunked framing in 16 KiB pieces, like a server flushing as it goes.
    let mut wire = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n".to_vec();
    for piece in body.as_bytes().chunks(16 * 1024) {
        wire.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        wire.extend_from_slice(piece);
        wire.extend_from_slice(b"\r\n");
    }
    wire.extend_from_slice(b"0\r\n\r\n");
    wire
}

fn serve(listener: TcpListener, wire: Arc<Vec<u8>>) {
    for socket in listener.incoming() {
        let Ok(mut socket) = socket else { continue };
        let wire = wire.clone();
        std::thread::spawn(move || {
            let _ = read_request(&mut socket);
            let _ = socket.write_all(&wire);
            let _ = socket.shutdown(std::net::Shutdown::Write);
        });
    }
}

fn read_request(socket: &mut TcpStream) -> std::io::Result<()> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = socket.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        data.extend_from_slice(&buf[..n]);
        if let Some(p) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&data[..p]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            while data.len() < p + 4 + length {
                let n = socket.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                data.extend_from_slice(&buf[..n]);
            }
            return Ok(());
        }
    }
}

struct Figure {
    name: &'static str,
    chunks: usize,
    cpu: Duration,
    wall: Duration,
}

impl Figure {
    fn cpu_per_chunk_us(&self) -> f64 {
        self.cpu.as_secs_f64() * 1e6 / self.chunks.max(1) as f64
    }
    fn chunks_per_s(&self) -> f64 {
        self.chunks as f64 / self.wall.as_secs_f64()
    }
}

fn best(runs: Vec<Figure>) -> Figure {
    runs.into_iter()
        .min_by(|a, b| a.cpu.cmp(&b.cpu))
        .expect("at least one run")
}

fn ours(base_url: &str, expected: usize) -> Figure {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let provider = OpenAiProvider::new(OpenAiConfig {
        base_url: base_url.into(),
        model: "bench-model".into(),
        ..OpenAiConfig::default()
    })
    .expect("provider");
    rt.block_on(async {
        let (wall0, cpu0) = (Instant::now(), thread_cpu());
        let mut stream = provider.stream(vec![Message::user("go")], vec![]);
        let mut chunks = 0;
        let mut done = false;
        while let Some(event) = stream.next().await {
            match event.expect("stream") {
                StreamEvent::Delta(_) => chunks += 1,
                StreamEvent::Done(r) => {
                    assert!(r.usage.is_some());
                    done = true;
                }
                StreamEvent::Reset => panic!("reset"),
            }
        }
        let (cpu, wall) = (thread_cpu() - cpu0, wall0.elapsed());
        assert!(
            done && chunks == expected,
            "pocketpilot read {chunks} chunks"
        );
        Figure {
            name: "pocketpilot",
            chunks,
            cpu,
            wall,
        }
    })
}

fn async_openai(base_url: &str, expected: usize) -> Figure {
    use async_openai::config::OpenAIConfig;
    use async_openai::types::chat::{
        ChatCompletionRequestUserMessageArgs, CreateChatCompletionRequestArgs,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let client = async_openai::Client::with_config(
        OpenAIConfig::new()
            .with_api_base(base_url)
            .with_api_key("none"),
    );
    rt.block_on(async {
        let request = CreateChatCompletionRequestArgs::default()
            .model("bench-model")
            .messages([ChatCompletionRequestUserMessageArgs::default()
                .content("go")
                .build()
                .expect("message")
                .into()])
            .build()
            .expect("request");
        let (wall0, cpu0) = (Instant::now(), thread_cpu());
        let mut stream = client
            .chat()
            .create_stream(request)
            .await
            .expect("async-openai stream");
        let mut chunks = 0;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.expect("async-openai chunk");
            if chunk
                .choices
                .first()
                .and_then(|c| c.delta.content.as_deref())
                .is_some_and(|c| !c.is_empty())
            {
                chunks += 1;
            }
        }
        let (cpu, wall) = (thread_cpu() - cpu0, wall0.elapsed());
        assert_eq!(chunks, expected, "async-openai chunks");
        Figure {
            name: "async-openai",
            chunks,
            cpu,
            wall,
        }
    })
}

const PYTHON_CLIENT: &str = r#"
import json, sys, time
from openai import OpenAI
client = OpenAI(base_url=sys.argv[1], api_key="none", max_retries=0)
w0, c0 = time.perf_counter(), time.process_time()
stream = client.chat.completions.create(model="bench-model", messages=[{"role": "user", "content": "go"}], stream=True)
n = 0
for chunk in stream:
    if chunk.choices and chunk.choices[0].delta.content:
        n += 1
print(json.dumps({"chunks": n, "cpu": time.process_time() - c0, "wall": time.perf_counter() - w0}))
"#;

fn openai_python(base_url: &str) -> Result<Figure, String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = root.join(".venv-test/bin/python");
    if !python.exists() {
        return Err(format!(
            "{} missing: run tests/setup-python.sh",
            python.display()
        ));
    }
    let out = Command::new(&python)
        .args(["-c", PYTHON_CLIENT, base_url])
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("python said: {e}"))?;
    Ok(Figure {
        name: "openai-python",
        chunks: v["chunks"].as_u64().unwrap_or(0) as usize,
        cpu: Duration::from_secs_f64(v["cpu"].as_f64().unwrap_or(0.0)),
        wall: Duration::from_secs_f64(v["wall"].as_f64().unwrap_or(1.0)),
    })
}

fn main() {
    // `cargo bench` passes `--bench`; no other arguments are understood.
    let chunks: usize = std::env::var("STREAM_CHUNKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let runs: usize = std::env::var("STREAM_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let wire = Arc::new(payload(chunks));
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base_url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    std::thread::spawn(move || serve(listener, wire.clone()));

    println!("stream_ingest: {chunks} chunks per run, best of {runs} runs for the Rust clients");
    let mut figures = vec![best((0..runs).map(|_| ours(&base_url, chunks)).collect())];
    figures.push(best(
        (0..runs).map(|_| async_openai(&base_url, chunks)).collect(),
    ));
    match openai_python(&base_url) {
        Ok(f) => {
            assert_eq!(f.chunks, chunks, "openai-python chunks");
            figures.push(f)
        }
        Err(e) => println!("openai-python skipped: {e}"),
    }
    println!(
        "{:<15} {:>9} {:>16} {:>14}",
        "client", "chunks", "CPU per chunk", "chunks/s"
    );
    for f in &figures {
        println!(
            "{:<15} {:>9} {:>13.2} µs {:>14.0}",
            f.name,
            f.chunks,
            f.cpu_per_chunk_us(),
            f.chunks_per_s()
        );
    }
    let ours = figures[0].cpu_per_chunk_us();
    let mut ratio = String::from("ratio:");
    for f in &figures[1..] {
        ratio.push_str(&format!(
            " {} uses {:.1}x our CPU per chunk;",
            f.name,
            f.cpu_per_chunk_us() / ours
        ));
    }
    println!("{}", ratio.trim_end_matches(';'));
}
