//! The recorded transcripts (llama.cpp with a real small model; llmock) replayed byte
//! for byte from a local TCP server, whole and split at every byte boundary. Assertions
//! are about protocol handling (assembled text, tool calls, usage, finish, error kinds),
//! checked against a naive independent reading of the same bytes.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use pocketpilot_model::{OpenAiProvider, ProviderError};

use crate::support::*;

#[derive(Debug, Clone, Copy)]
enum Expect {
    Answer {
        finish: &'static str,
        calls: usize,
    },
    Error {
        kind: &'static str,
        status: u16,
        says: &'static str,
    },
}

use Expect::*;

const STREAM_CUT: Expect = Error {
    kind: "model_stream",
    status: 0,
    says: "",
};

fn table() -> Vec<(&'static str, Vec<Expect>)> {
    let bad_request = |says| Error {
        kind: "model_request",
        status: 400,
        says,
    };
    vec![
        (
            "llamacpp-smollm2-plain.txt",
            vec![Answer {
                finish: "stop",
                calls: 0,
            }],
        ),
        (
            "llamacpp-smollm2-toolcall-stream.txt",
            vec![Answer {
                finish: "tool_calls",
                calls: 1,
            }],
        ),
        (
            "llamacpp-smollm2-toolcall-stream-required.txt",
            vec![Answer {
                finish: "tool_calls",
                calls: 1,
            }],
        ),
        (
            "llamacpp-smollm2-hermes-errors.txt",
            vec![
                Answer {
                    finish: "length",
                    calls: 0,
                },
                bad_request("parse error"),
                bad_request("'messages' is required"),
                bad_request("Expected 'messages' to be an array"),
                // Classified for what it is: the runtime compacts and asks again.
                Error {
                    kind: "model_context_overflow",
                    status: 400,
                    says: "3033 tokens asked, the window holds 2048",
                },
                bad_request("Invalid tool_choice"),
                Error {
                    kind: "model_not_found",
                    status: 404,
                    says: "File Not Found",
                },
            ],
        ),
        (
            "llmock-plain.txt",
            vec![Answer {
                finish: "stop",
                calls: 0,
            }],
        ),
        (
            "llmock-toolcall.txt",
            vec![Answer {
                finish: "tool_calls",
                calls: 1,
            }],
        ),
        (
            "llmock-toolcall-parallel.txt",
            vec![Answer {
                finish: "tool_calls",
                calls: 2,
            }],
        ),
        (
            "llmock-errors.txt",
            vec![
                // The recording stops after two chunks: no finish, no [DONE].
                STREAM_CUT,
                Error {
                    kind: "model_request",
                    status: 422,
                    says: "JSON decode error",
                },
                Error {
                    kind: "model_request",
                    status: 422,
                    says: "Field required",
                },
                Error {
                    kind: "model_rate_limited",
                    status: 429,
                    says: "Rate limit exceeded.",
                },
                Error {
                    kind: "model_server",
                    status: 500,
                    says: "Internal server error.",
                },
                Error {
                    kind: "model_auth",
                    status: 401,
                    says: "Unauthorized.",
                },
            ],
        ),
        // truncate (clean close), disconnect (reset mid-body), malformed (cut-off JSON).
        (
            "llmock-streamfaults.txt",
            vec![STREAM_CUT, STREAM_CUT, STREAM_CUT],
        ),
        (
            "synthetic-crlf-keepalive-utf8.txt",
            vec![Answer {
                finish: "tool_calls",
                calls: 1,
            }],
        ),
    ]
}

/// An outcome reduced to what must not change with how the bytes were cut.
#[derive(Debug, PartialEq)]
enum Seen {
    Answer(Expected),
    Error(&'static str, u16, Option<Duration>),
}

fn seen(result: &Result<pocketpilot_model::ModelResponse, ProviderError>) -> Seen {
    match result {
        Ok(r) => Seen::Answer(as_expected(r)),
        Err(e) => {
            let (status, wait) = match e {
                ProviderError::Auth { status, .. }
                | ProviderError::Server { status, .. }
                | ProviderError::Request { status, .. } => (*status, None),
                ProviderError::NotFound { .. } => (404, None),
                ProviderError::RateLimited { retry_after, .. } => (429, *retry_after),
                _ => (0, None),
            };
            Seen::Error(e.kind().as_str(), status, wait)
        }
    }
}

async fn replay_server(section: &Recorded) -> RawServer {
    let wire = Arc::new(section.wire());
    RawServer::start(move |_, request| {
        // The split point travels in the user message: `split:<k>`.
        let body = String::from_utf8_lossy(&request.body);
        let split_at = body
            .split("split:")
            .nth(1)
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|k| k.parse().ok());
        Reply {
            bytes: wire.to_vec(),
            split_at,
            after: After::Close,
        }
    })
    .await
}

fn check(section: &Recorded, expect: Expect, outcome: &Outcome) {
    let what = format!("{} / {}", section.file, section.title);
    match expect {
        Answer { finish, calls } => {
            let r = outcome.done();
            assert_eq!(outcome.resets(), 0, "{what}");
            assert_eq!(as_expected(r), expected(&section.body), "{what}");
            assert_eq!(r.finish_reason.as_deref(), Some(finish), "{what}");
            assert_eq!(r.tool_calls.len(), calls, "{what}");
            for call in &r.tool_calls {
                assert!(
                    !call.id.is_empty() && call.name == "get_weather",
                    "{what}: {call:?}"
                );
                let args: serde_json::Value = serde_json::from_str(&call.arguments)
                    .unwrap_or_else(|e| panic!("{what}: arguments {:?}: {e}", call.arguments));
                assert!(args["city"].is_string(), "{what}: {args}");
            }
            if calls == 0 {
                assert!(!r.text.is_empty(), "{what}");
            }
            if section.body.windows(7).any(|w| w == b"\"usage\"") && finish != "length" {
                let expected_usage = expected(&section.body).usage;
                if expected_usage.is_some() {
                    assert!(r.usage.is_some(), "{what}: usage lost");
                }
            }
        }
        Error { kind, status, says } => {
            let e = outcome.error();
            assert_eq!(e.kind().as_str(), kind, "{what}: {e}");
            if status != 0 {
                assert_eq!(section.status(), status, "{what}");
            }
            assert!(e.to_string().contains(says), "{what}: {e}");
            if kind == "rate_limited" {
                assert!(
                    matches!(e, ProviderError::RateLimited { retry_after: Some(d), .. } if *d == Duration::from_millis(2000)),
                    "{what}: {e:?}"
                );
            }
            if kind == "not_found" {
                let text = e.to_string();
                assert!(
                    text.contains("/v1/chat/completions") && text.contains("test-model"),
                    "{text}"
                );
            }
        }
    }
}

fn sections() -> Vec<(Recorded, Expect)> {
    let mut all = Vec::new();
    for (file, expects) in table() {
        let sections = load_fixture(file);
        assert_eq!(sections.len(), expects.len(), "{file}: sections");
        all.extend(sections.into_iter().zip(expects));
    }
    all
}

#[tokio::test]
async fn recorded_transcripts_replayed_byte_for_byte() {
    for (section, expect) in sections() {
        let server = replay_server(&section).await;
        let provider = OpenAiProvider::new(test_config(&server.base_url())).unwrap();
        let outcome = bounded(
            Duration::from_secs(20),
            run_turn(&provider, user("hi"), vec![weather_tool()]),
        )
        .await;
        check(&section, expect, &outcome);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_transcripts_split_at_every_byte_boundary() {
    for (section, expect) in sections() {
        let server = replay_server(&section).await;
        let provider = OpenAiProvider::new(test_config(&server.base_url())).unwrap();
        let whole = run_turn(&provider, user("hi"), vec![weather_tool()]).await;
        check(&section, expect, &whole);
        let reference = seen(&whole.result);
        let len = section.wire().len();
        let provider = &provider;
        let reference = &reference;
        let section = &section;
        let runs = futures::stream::iter(1..len)
            .map(|k| async move {
                let outcome =
                    run_turn(provider, user(&format!("split:{k}")), vec![weather_tool()]).await;
                check(section, expect, &outcome);
                assert_eq!(
                    &seen(&outcome.result),
                    reference,
                    "{} split at {k}",
                    section.file
                );
            })
            .buffer_unordered(16)
            .collect::<Vec<()>>();
        bounded(Duration::from_secs(300), runs).await;
    }
}
