//! Bad networks and odd servers, played by a raw local TCP server: cuts, stalls,
//! timeouts, retries, fallbacks, cancellation and keeping the key secret.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use pocketpilot_model::{OpenAiProvider, Provider, ProviderError, StreamEvent};

use crate::support::*;

const KEY: &str = "sk-test-SECRET-0123456789";

fn delta(text: &str) -> String {
    format!(
        "data: {}\n\n",
        serde_json::json!({"choices":[{"index":0,"delta":{"content":text},"finish_reason":null}]})
    )
}

fn finish(reason: &str) -> String {
    format!(
        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        serde_json::json!({"choices":[{"index":0,"delta":{},"finish_reason":reason}]}),
        serde_json::json!({"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}})
    )
}

fn answer(words: &[&str]) -> String {
    let mut s = String::from(": hello\n\n");
    for w in words {
        s.push_str(&delta(w));
    }
    s.push_str(&finish("stop"));
    s
}

fn whole_json(text: &str) -> Vec<u8> {
    let body = serde_json::json!({
        "choices":[{"index":0,"message":{"role":"assistant","content":text},"finish_reason":"stop"}],
        "usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}
    })
    .to_string();
    json_response("200 OK", &body, "")
}

fn is_stream_request(r: &Request) -> bool {
    String::from_utf8_lossy(&r.body).contains("\"stream\":true")
}

#[tokio::test]
async fn dropping_the_stream_closes_the_connection_at_once() {
    let server = RawServer::start(|_, _| Reply {
        bytes: sse_response(delta("Hello").as_bytes(), false),
        split_at: None,
        after: After::Hold,
    })
    .await;
    let mut config = test_config(&server.base_url());
    config.idle_timeout = Duration::from_secs(60);
    let provider = OpenAiProvider::new(config).unwrap();
    let mut stream = provider.stream(user("hi"), vec![]);
    let first = bounded(Duration::from_secs(10), stream.next()).await;
    assert!(
        matches!(first, Some(Ok(StreamEvent::Delta(ref t))) if t == "Hello"),
        "{first:?}"
    );
    drop(stream);
    assert_eq!(
        server.client_closed(Duration::from_secs(10)).await,
        Some(0),
        "the server still holds the connection after the stream was dropped"
    );
}

#[tokio::test]
async fn a_cut_mid_answer_resets_the_text_and_asks_again() {
    let server = RawServer::start(|n, _| {
        let body = if n == 0 {
            // Clean close without a finish reason or [DONE].
            format!("{}{}", delta("Partial "), delta("words"))
        } else {
            answer(&["The ", "whole ", "answer."])
        };
        Reply::close(sse_response(body.as_bytes(), true))
    })
    .await;
    let mut config = test_config(&server.base_url());
    config.max_stream_restarts = 2;
    let provider = OpenAiProvider::new(config).unwrap();
    let outcome = say_hi(&provider).await;
    assert_eq!(outcome.done().text, "The whole answer.");
    assert_eq!(outcome.resets(), 1, "{:?}", outcome.events);
    assert_eq!(outcome.done().usage.map(|u| u.total_tokens), Some(7));
    assert_eq!(server.connections.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_connection_lost_after_the_finish_reason_still_completes_the_answer() {
    let server = RawServer::start(|_, _| {
        let body = format!(
            "{}data: {}\n\n",
            delta("All here."),
            serde_json::json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})
        );
        // No terminating chunk: the body breaks before the usage chunk and [DONE].
        Reply::close(sse_response(body.as_bytes(), false))
    })
    .await;
    let provider = OpenAiProvider::new(test_config(&server.base_url())).unwrap();
    let outcome = say_hi(&provider).await;
    assert_eq!(outcome.done().text, "All here.");
    assert_eq!(outcome.done().usage, None);
    assert_eq!(server.connections.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_silent_stream_is_cut_restarted_and_the_restarts_are_bounded() {
    let server = RawServer::start(|_, _| Reply {
        bytes: sse_response(delta("Thinking").as_bytes(), false),
        split_at: None,
        after: After::Hold,
    })
    .await;
    let mut config = test_config(&server.base_url());
    config.idle_timeout = Duration::from_millis(300);
    config.max_stream_restarts = 1;
    let provider = OpenAiProvider::new(config).unwrap();
    let outcome = say_hi(&provider).await;
    let e = outcome.error();
    assert_eq!(e.kind().as_str(), "model_stream", "{e}");
    assert!(e.to_string().contains("silent"), "{e}");
    assert_eq!(outcome.resets(), 1);
    assert_eq!(server.connections.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_failure_before_the_first_delta_falls_back_to_a_whole_answer() {
    let server = RawServer::start(|_, request| {
        if is_stream_request(request) {
            let role = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null}}]}\n\n";
            Reply::close(sse_response(role.as_bytes(), false))
        } else {
            Reply::close(whole_json("Whole answer."))
        }
    })
    .await;
    let provider = OpenAiProvider::new(test_config(&server.base_url())).unwrap();
    let outcome = say_hi(&provider).await;
    assert_eq!(outcome.done().text, "Whole answer.");
    assert_eq!(outcome.resets(), 0);
    assert_eq!(
        outcome.events,
        vec![StreamEvent::Delta("Whole answer.".into())]
    );
    let requests = server.requests.lock().unwrap();
    assert_eq!(requests.len(), 2);
    assert!(!is_stream_request(&requests[1]));
}

#[tokio::test]
async fn a_server_that_answers_a_stream_request_with_json_is_understood() {
    let server = RawServer::start(|_, _| Reply::close(whole_json("Not streamed."))).await;
    let provider = OpenAiProvider::new(test_config(&server.base_url())).unwrap();
    let outcome = say_hi(&provider).await;
    assert_eq!(outcome.done().text, "Not streamed.");
    assert_eq!(server.connections.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn streaming_off_makes_one_whole_request() {
    let server = RawServer::start(|_, _| Reply::close(whole_json("One piece."))).await;
    let mut config = test_config(&server.base_url());
    config.stream = false;
    let provider = OpenAiProvider::new(config).unwrap();
    let outcome = say_hi(&provider).await;
    assert_eq!(
        outcome.events,
        vec![StreamEvent::Delta("One piece.".into())]
    );
    assert_eq!(outcome.done().usage.map(|u| u.total_tokens), Some(2));
    assert!(!is_stream_request(&server.requests.lock().unwrap()[0]));
}

#[tokio::test]
async fn server_errors_and_rate_limits_are_retried_then_succeed() {
    let server = RawServer::start(|n, _| match n {
        0 => Reply::close(json_response(
            "503 Service Unavailable",
            "upstream busy",
            "",
        )),
        1 => Reply::close(json_response(
            "429 Too Many Requests",
            r#"{"error":{"message":"slow down","code":"rate_limit_exceeded"}}"#,
            "retry-after: 30\r\nretry-after-ms: 20\r\n",
        )),
        _ => Reply::close(sse_response(answer(&["Made ", "it."]).as_bytes(), true)),
    })
    .await;
    let mut config = test_config(&server.base_url());
    config.max_retries = 3;
    let provider = OpenAiProvider::new(config).unwrap();
    let outcome = say_hi(&provider).await;
    assert_eq!(outcome.done().text, "Made it.");
    assert_eq!(server.connections.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn retries_are_bounded_and_the_last_error_is_reported() {
    let server = RawServer::start(|_, _| {
        Reply::close(json_response(
            "500 Internal Server Error",
            r#"{"error":{"message":"kaput","type":"server_error"}}"#,
            "",
        ))
    })
    .await;
    let mut config = test_config(&server.base_url());
    config.max_retries = 2;
    let provider = OpenAiProvider::new(config).unwrap();
    let outcome = say_hi(&provider).await;
    let e = outcome.error();
    assert!(
        matches!(e, ProviderError::Server { status: 500, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("kaput"), "{e}");
    // Three streaming attempts, then the whole-answer fallback with its own three.
    assert_eq!(server.connections.load(Ordering::SeqCst), 6);
}

#[tokio::test]
async fn client_errors_are_final_and_say_what_the_server_said() {
    let server = RawServer::start(|_, _| {
        Reply::close(json_response(
            "401 Unauthorized",
            r#"{"error":{"message":"Incorrect API key provided","code":"invalid_api_key"}}"#,
            "",
        ))
    })
    .await;
    let mut config = test_config(&server.base_url());
    config.max_retries = 3;
    let provider = OpenAiProvider::new(config).unwrap();
    let outcome = say_hi(&provider).await;
    let e = outcome.error();
    assert!(matches!(e, ProviderError::Auth { status: 401, .. }), "{e}");
    assert!(e.to_string().contains("Incorrect API key provided"), "{e}");
    assert!(e.to_string().contains("pocketpilot key set"), "{e}");
    assert_eq!(
        server.connections.load(Ordering::SeqCst),
        1,
        "401 is not retried"
    );

    let server = RawServer::start(|_, _| {
        Reply::close(json_response("400 Bad Request", "plain text complaint", ""))
    })
    .await;
    let provider = OpenAiProvider::new(test_config(&server.base_url())).unwrap();
    let e = provider.complete(user("hi"), vec![]).await.unwrap_err();
    assert!(
        matches!(&e, ProviderError::Request { status: 400, message } if message == "plain text complaint"),
        "{e:?}"
    );
}

#[tokio::test]
async fn an_error_event_inside_the_stream_is_a_cut() {
    let server = RawServer::start(|_, _| {
        let body = format!(
            "{}data: {{\"error\":{{\"message\":\"provider overloaded\",\"code\":502}}}}\n\n",
            delta("Half")
        );
        Reply::close(sse_response(body.as_bytes(), true))
    })
    .await;
    let provider = OpenAiProvider::new(test_config(&server.base_url())).unwrap();
    let outcome = say_hi(&provider).await;
    let e = outcome.error();
    assert_eq!(e.kind().as_str(), "model_stream");
    assert!(e.to_string().contains("provider overloaded"), "{e}");
}

#[tokio::test]
async fn an_unreachable_server_is_a_connect_error_after_retries() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut config = test_config(&format!("http://127.0.0.1:{port}/v1"));
    config.max_retries = 1;
    let provider = OpenAiProvider::new(config).unwrap();
    let outcome = say_hi(&provider).await;
    let e = outcome.error();
    assert_eq!(e.kind().as_str(), "model_connect", "{e}");
    assert!(e.to_string().contains(&format!("127.0.0.1:{port}")), "{e}");
}

#[tokio::test]
async fn the_turn_deadline_bounds_a_server_that_never_answers() {
    let server = RawServer::start(|_, _| Reply {
        bytes: Vec::new(),
        split_at: None,
        after: After::Hold,
    })
    .await;
    let mut config = test_config(&server.base_url());
    config.idle_timeout = Duration::from_secs(60);
    config.request_timeout = Duration::from_millis(400);
    let provider = OpenAiProvider::new(config).unwrap();
    let outcome = say_hi(&provider).await;
    assert_eq!(
        outcome.error().kind().as_str(),
        "model_timeout",
        "{}",
        outcome.error()
    );
    let e = bounded(
        Duration::from_secs(20),
        provider.complete(user("hi"), vec![]),
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind().as_str(), "model_timeout", "{e}");
}

/// A `MakeWriter` that keeps every log line.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn the_api_key_is_sent_but_never_shown() {
    // The server echoes the key in its errors, as some do.
    let server = RawServer::start(|n, _| {
        let body = format!(r#"{{"error":{{"message":"key {KEY} is not valid here"}}}}"#);
        match n {
            0 => Reply::close(json_response("500 Internal Server Error", &body, "")),
            _ => Reply::close(json_response("401 Unauthorized", &body, "")),
        }
    })
    .await;
    let logs = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer({
            let logs = logs.clone();
            move || logs.clone()
        })
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let mut config = test_config(&server.base_url());
    config.max_retries = 2;
    let provider = OpenAiProvider::new(config.clone()).unwrap();
    let outcome = say_hi(&provider).await;
    let e = outcome.error();
    assert_eq!(e.kind().as_str(), "model_auth");
    let shown = [
        e.to_string(),
        format!("{e:?}"),
        format!("{provider:?}"),
        format!("{config:?}"),
        String::from_utf8_lossy(&logs.0.lock().unwrap()).to_string(),
    ];
    let logged = &shown[4];
    assert!(
        logged.contains("retrying"),
        "the retry was not logged: {logged}"
    );
    for text in &shown {
        assert!(!text.contains(KEY), "the key leaked: {text}");
    }
    assert!(e.to_string().contains("[redacted]"), "{e}");
    let head = server.requests.lock().unwrap()[0].head.to_ascii_lowercase();
    assert!(
        head.contains(&format!(
            "authorization: bearer {}",
            KEY.to_ascii_lowercase()
        )),
        "{head}"
    );
}
