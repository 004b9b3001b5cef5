//! Against llmock (PyPI), started per test as a child process on a free port and
//! scripted over `POST /_llmock/scenario`. Needs `tests/setup-python.sh` to have run (or
//! `POCKETPILOT_LLMOCK` naming the binary). Every case ends in an answer or a clear error
//! within its bound; no partial text is ever the final answer.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::time::Duration;

use pocketpilot_model::{OpenAiConfig, OpenAiProvider, Provider, ProviderError};
use serde_json::json;

use crate::support::*;

const BOUND: Duration = Duration::from_secs(60);

fn config(mock: &Llmock) -> OpenAiConfig {
    let mut c = test_config(&mock.base_url());
    c.max_retries = 2;
    c.max_stream_restarts = 2;
    c.idle_timeout = Duration::from_secs(1);
    c
}

async fn turn(c: OpenAiConfig) -> Outcome {
    let provider = OpenAiProvider::new(c).unwrap();
    bounded(
        BOUND,
        run_turn(&provider, user("Tell me a story"), vec![weather_tool()]),
    )
    .await
}

#[tokio::test]
async fn plain_answer() {
    let mock = Llmock::start().await;
    let outcome = turn(config(&mock)).await;
    let r = outcome.done();
    assert!(!r.text.is_empty());
    assert!(
        outcome.events.len() > 1,
        "the answer came in several deltas"
    );
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    assert!(r.usage.is_some_and(|u| u.completion_tokens > 0), "{r:?}");
    assert!(r.tool_calls.is_empty());
}

#[tokio::test]
async fn one_tool_call() {
    let mock = Llmock::start().await;
    mock.scenario(
        json!([{"type":"reply","tool_calls":[{"name":"get_weather","arguments":{"city":"Oslo"}}]}]),
    )
    .await;
    let outcome = turn(config(&mock)).await;
    let r = outcome.done();
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(r.tool_calls.len(), 1);
    let call = &r.tool_calls[0];
    assert_eq!(call.name, "get_weather");
    assert!(call.id.starts_with("call_"), "{call:?}");
    let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap();
    assert_eq!(args, json!({"city":"Oslo"}));
}

#[tokio::test]
async fn parallel_tool_calls() {
    let mock = Llmock::start().await;
    mock.scenario(json!([{"type":"reply","tool_calls":[
        {"name":"get_weather","arguments":{"city":"Paris"}},
        {"name":"get_weather","arguments":{"city":"Oslo"}}
    ]}]))
    .await;
    let outcome = turn(config(&mock)).await;
    let r = outcome.done();
    let cities: Vec<String> = r
        .tool_calls
        .iter()
        .map(|c| {
            serde_json::from_str::<serde_json::Value>(&c.arguments).unwrap()["city"].to_string()
        })
        .collect();
    assert_eq!(cities, ["\"Paris\"", "\"Oslo\""]);
    assert_ne!(r.tool_calls[0].id, r.tool_calls[1].id);
}

#[tokio::test]
async fn rate_limited_with_retry_after_then_answered() {
    let mock = Llmock::start().await;
    mock.scenario(json!([{"type":"fail","status":429,"retry_after":1}]))
        .await;
    let outcome = turn(config(&mock)).await;
    assert!(!outcome.done().text.is_empty());

    // Without retries the wait the server asked for reaches the caller.
    mock.scenario(json!([{"type":"fail","status":429,"retry_after":1}]))
        .await;
    let mut c = config(&mock);
    c.max_retries = 0;
    let e = turn(c).await.error().clone();
    assert!(
        matches!(e, ProviderError::RateLimited { retry_after: Some(d), .. } if d == Duration::from_secs(1)),
        "{e:?}"
    );
}

#[tokio::test]
async fn server_error_then_success() {
    let mock = Llmock::start().await;
    mock.scenario(json!([{"type":"fail","status":500}])).await;
    let outcome = turn(config(&mock)).await;
    assert!(!outcome.done().text.is_empty());
    assert_eq!(outcome.resets(), 0);
}

#[tokio::test]
async fn unauthorized_is_final_and_points_at_the_key() {
    let mock = Llmock::start().await;
    mock.scenario(json!([{"type":"fail","status":401}])).await;
    let outcome = turn(config(&mock)).await;
    let e = outcome.error();
    assert!(matches!(e, ProviderError::Auth { status: 401, .. }), "{e}");
    assert!(e.to_string().contains("pocketpilot key set"), "{e}");
    assert!(!e.to_string().contains("sk-test"), "{e}");
}

/// A fault after some text: the text is voided by a `Reset` and the turn asked again.
async fn fault_mid_answer(kind: &str) {
    let mock = Llmock::start().await;
    mock.scenario(json!([{"type":"stream_fault","kind":kind,"after_chunks":3}]))
        .await;
    let outcome = turn(config(&mock)).await;
    let r = outcome.done();
    assert_eq!(outcome.resets(), 1, "{kind}: {:?}", outcome.events);
    assert_eq!(r.finish_reason.as_deref(), Some("stop"), "{kind}");
    // What the UI shows at the end is exactly the final answer, nothing of the cut one.
    assert_eq!(outcome.shown_text(), r.text, "{kind}");
}

#[tokio::test]
async fn truncated_stream_is_restarted() {
    fault_mid_answer("truncate").await;
}

#[tokio::test]
async fn disconnected_stream_is_restarted() {
    fault_mid_answer("disconnect").await;
}

#[tokio::test]
async fn malformed_chunk_restarts_the_stream() {
    fault_mid_answer("malformed").await;
}

#[tokio::test]
async fn stalled_stream_is_cut_by_the_idle_timeout_and_restarted() {
    fault_mid_answer("stall").await;
}

#[tokio::test]
async fn a_fault_before_any_text_falls_back_to_a_whole_answer() {
    let mock = Llmock::start().await;
    mock.scenario(json!([{"type":"stream_fault","kind":"truncate","after_chunks":1}]))
        .await;
    let outcome = turn(config(&mock)).await;
    assert_eq!(outcome.resets(), 0);
    assert_eq!(
        outcome.events.len(),
        1,
        "one whole delta: {:?}",
        outcome.events
    );
    assert!(!outcome.done().text.is_empty());
}

#[tokio::test]
async fn a_stream_that_keeps_breaking_ends_in_an_error_not_a_partial_answer() {
    let mock = Llmock::start().await;
    mock.scenario(json!([{"type":"stream_fault","kind":"truncate","after_chunks":3,"times":10}]))
        .await;
    let outcome = turn(config(&mock)).await;
    let e = outcome.error();
    assert_eq!(e.kind().as_str(), "model_stream", "{e}");
    assert_eq!(outcome.resets(), 2, "bounded by max_stream_restarts");
}

#[tokio::test]
async fn a_slow_server_hits_the_turn_timeout() {
    let mock = Llmock::start().await;
    mock.scenario(json!([{"type":"delay","seconds":5}])).await;
    let mut c = config(&mock);
    c.idle_timeout = Duration::from_secs(30);
    c.request_timeout = Duration::from_millis(800);
    let outcome = turn(c).await;
    assert_eq!(
        outcome.error().kind().as_str(),
        "model_timeout",
        "{}",
        outcome.error()
    );
}

#[tokio::test]
async fn complete_and_streaming_off() {
    let mock = Llmock::start().await;
    mock.scenario(
        json!([{"type":"reply","tool_calls":[{"name":"get_weather","arguments":{"city":"Rome"}}]}]),
    )
    .await;
    let provider = OpenAiProvider::new(config(&mock)).unwrap();
    let r = bounded(
        BOUND,
        provider.complete(user("weather?"), vec![weather_tool()]),
    )
    .await
    .unwrap();
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(r.tool_calls[0].arguments, r#"{"city": "Rome"}"#);
    assert!(r.usage.is_some());

    let mut c = config(&mock);
    c.stream = false;
    let outcome = turn(c).await;
    assert_eq!(outcome.events.len(), 1);
    assert_eq!(outcome.resets(), 0);
    assert!(!outcome.done().text.is_empty());
}

/// A server that is not llama.cpp has no `/apply-template`: no count, and no error (the
/// runtime's estimate stands).
#[tokio::test]
async fn a_server_without_the_count_endpoints_gives_no_count() {
    let mock = Llmock::start().await;
    let counted = bounded(
        BOUND,
        pocketpilot_model::openai::count_prompt(
            &config(&mock),
            &user("Tell me a story"),
            &[weather_tool()],
        ),
    )
    .await;
    assert_eq!(
        counted,
        Err(pocketpilot_model::openai::Uncounted::NotCounted)
    );
}
