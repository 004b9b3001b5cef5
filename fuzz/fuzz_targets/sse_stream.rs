//! The SSE parser and the tool-call assembler of the OpenAI-compatible provider, through
//! its public entry: `OpenAiProvider::stream` against a loopback server that answers every
//! request with the fuzz input as a `text/event-stream` body (sent in up to three writes,
//! split where the input's first byte says, so a UTF-8 character or a line can be cut
//! between reads). `sse::SseStream` and `assemble::Assembler` are `pub(crate)`: making them
//! public (or a `fuzzing` feature re-exporting them) would let this target call them
//! directly, faster and without the HTTP layer.
//!
//! Property: every turn ends (a response, a reset then a response, or an error) within the
//! timeouts, without a panic; a `Done` response's tool calls all have a name or an id.
#![no_main]
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures::StreamExt;
use libfuzzer_sys::fuzz_target;
use pocketpilot_model::{Message, OpenAiConfig, OpenAiProvider, Provider, StreamEvent};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

struct World {
    rt: tokio::runtime::Runtime,
    body: Arc<Mutex<Vec<u8>>>,
    provider: OpenAiProvider,
}

fn world() -> &'static World {
    static W: OnceLock<World> = OnceLock::new();
    W.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("tokio");
        let body: Arc<Mutex<Vec<u8>>> = Arc::default();
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let served = body.clone();
        rt.spawn(async move {
            loop {
                let Ok((mut sock, _)) = listener.accept().await else { continue };
                let input = served.lock().map(|b| b.clone()).unwrap_or_default();
                tokio::spawn(async move {
                    // Read the request head and body (small JSON) before answering.
                    let mut buf = vec![0u8; 64 * 1024];
                    let mut got = 0;
                    loop {
                        let Ok(n) = sock.read(&mut buf[got..]).await else { return };
                        if n == 0 {
                            return;
                        }
                        got += n;
                        let text = String::from_utf8_lossy(&buf[..got]);
                        if let Some(end) = text.find("\r\n\r\n") {
                            let len = text[..end]
                                .lines()
                                .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().unwrap_or(0)))
                                .unwrap_or(0);
                            if got >= end + 4 + len {
                                break;
                            }
                        }
                        if got == buf.len() {
                            return;
                        }
                    }
                    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
                    let _ = sock.write_all(head.as_bytes()).await;
                    let split = input.first().map_or(0, |b| *b as usize);
                    let (a, rest) = input.split_at(split.min(input.len()));
                    let (b, c) = rest.split_at(rest.len() / 2);
                    for part in [a, b, c] {
                        let _ = sock.write_all(part).await;
                        let _ = sock.flush().await;
                        tokio::task::yield_now().await;
                    }
                    let _ = sock.shutdown().await;
                });
            }
        });
        let provider = OpenAiProvider::new(OpenAiConfig {
            base_url: format!("http://{addr}/v1"),
            model: "fuzz".into(),
            connect_timeout: Duration::from_secs(2),
            idle_timeout: Duration::from_secs(2),
            request_timeout: Duration::from_secs(5),
            max_retries: 0,
            retry_base_delay: Duration::from_millis(1),
            max_stream_restarts: 1,
            ..OpenAiConfig::default()
        })
        .expect("provider");
        World { rt, body, provider }
    })
}

fuzz_target!(|data: &[u8]| {
    let w = world();
    if let Ok(mut b) = w.body.lock() {
        *b = data.to_vec();
    }
    w.rt.block_on(async {
        let mut stream = w.provider.stream(vec![Message::user("hi")], Vec::new());
        let turn = async {
            while let Some(item) = stream.next().await {
                match item {
                    Ok(StreamEvent::Done(r)) => {
                        for c in &r.tool_calls {
                            assert!(!c.id.is_empty(), "a tool call without an id: {c:?}");
                        }
                        return;
                    }
                    Ok(_) => {}
                    Err(_) => return,
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(20), turn)
            .await
            .expect("a turn never ended");
    });
});
