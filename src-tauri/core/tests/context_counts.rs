//! Where the server counts a request before it is sent (llama.cpp), a request it counts
//! over its window never reaches it: neither the request for a summary of older turns
//! (it used to be sent uncounted) nor the turn's own. The real runtime, store and worker
//! against a llama.cpp-like server on 127.0.0.1 that counts every request at 5,000 tokens
//! in a 4,096-token window (a tokenizer no estimate matches) and refuses, as llama.cpp
//! does, any chat request that reaches it.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use pocketpilot_core::config::ProviderSettings;
use pocketpilot_core::{ops, NewTask, TaskStatus};
use pocketpilot_test_support as support;
use serde_json::json;
use support::http::{self, Reply};
use support::*;

const COUNT: usize = 5_000;

/// What the server was asked: token counts, and chat requests.
#[derive(Default)]
struct Asked {
    counts: AtomicUsize,
    chats: AtomicUsize,
}

async fn server() -> (String, Arc<Asked>) {
    let asked = Arc::new(Asked::default());
    let seen = asked.clone();
    let root = http::serve(move |path, _| match path {
        "/props" => Reply::Json(200, json!({"default_generation_settings": {"n_ctx": 4096}})),
        "/apply-template" => Reply::Json(200, json!({ "prompt": "the rendered request" })),
        "/tokenize" => {
            seen.counts.fetch_add(1, Ordering::SeqCst);
            Reply::Json(200, json!({ "tokens": vec![1; COUNT] }))
        }
        "/v1/chat/completions" => {
            seen.chats.fetch_add(1, Ordering::SeqCst);
            let message = format!(
                "request ({COUNT} tokens) exceeds the available context size (4096 tokens), \
                 try increasing it"
            );
            Reply::Json(
                400,
                json!({"error": {"code": 400, "message": message,
                    "type": "exceed_context_size_error", "n_prompt_tokens": COUNT, "n_ctx": 4096}}),
            )
        }
        _ => Reply::Json(404, json!({"error": {"code": 404}})),
    })
    .await;
    (format!("{root}/v1"), asked)
}

#[tokio::test]
async fn a_request_the_server_counts_over_its_window_never_reaches_it() {
    // A local server needs no key; this keeps the keychain out of the test.
    std::env::set_var("POCKETPILOT_API_KEY", "none");
    let f = Fixture::new();
    // A session longer than the window, written by the scripted model (no window of its
    // own, so nothing is compacted yet).
    let long = "the quick brown fox jumps over the lazy dog; ".repeat(60);
    let script = f.script(
        "long.json",
        json!({ "repeat_last": true, "turns": [ { "text": long } ] }),
    );
    let mut session = None;
    for n in 0..10 {
        let task = NewTask {
            session_id: session,
            ..f.task(&format!("question {n}: tell me more"), &script)
        };
        let id = f.rt.call(ops::SubmitTask { new: task }).unwrap();
        assert_eq!(f.settle(id).await, TaskStatus::Completed);
        session = Some(f.rt.call(ops::GetTask { id }).unwrap().session_id);
    }

    // The same session, now on the counting server.
    let (base, asked) = server().await;
    f.rt.call(ops::SetProviderSettings {
        settings: ProviderSettings {
            base_url: Some(base),
            model: Some("m".into()),
            stream: false,
            ..ProviderSettings::default()
        },
    })
    .unwrap();
    let task = NewTask {
        session_id: session,
        ..f.task("hi", "settings")
    };
    let id = f.rt.call(ops::SubmitTask { new: task }).unwrap();
    assert_eq!(f.settle(id).await, TaskStatus::Failed);

    let error =
        f.rt.call(ops::GetTask { id })
            .unwrap()
            .error
            .unwrap_or_default();
    eprintln!(
        "counted {} times; the run failed with: {error}",
        asked.counts.load(Ordering::SeqCst)
    );
    assert_eq!(
        asked.chats.load(Ordering::SeqCst),
        0,
        "a request counted over the window was sent; the run failed with: {error}"
    );
    // The summary request and the turn's own were both counted.
    assert!(asked.counts.load(Ordering::SeqCst) >= 2);
    assert!(
        error.contains("window") || error.contains("context"),
        "the failure says why: {error}"
    );
}
