//! Webhook request bodies, through the public router (`trigger::webhook::router`) with a
//! valid token and `Content-Type: application/json`: the body parsing is private to
//! `webhook.rs` (a `pub fn parse_body(&[u8]) -> Result<HookBody, …>` would let this target
//! call it directly).
//!
//! Property: any body gets an answer without a panic; it is never a 5xx; a 202 names a
//! task whose goal is the body's `text`, at most 4000 characters.
#![no_main]
use std::sync::{Arc, OnceLock};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use libfuzzer_sys::fuzz_target;
use pocketpilot_triggers::webhook;
use pocketpilot_triggers::TriggerSettings;
use pocketpilot_core::{ops, Runtime};
use tower::ServiceExt;

struct World {
    _dir: tempfile::TempDir,
    tokio: tokio::runtime::Runtime,
    rt: Arc<Runtime>,
    app: axum::Router,
    token: String,
}

fn world() -> &'static World {
    static W: OnceLock<World> = OnceLock::new();
    W.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).expect("ws");
        let tokio = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio");
        let rt = Runtime::open(&dir.path().join("data")).expect("runtime");
        // A provider that fails at once: accepted tasks end `failed` and never run a model.
        let created = webhook::create(&rt, "fuzz", &ws, Some("scripted:/nonexistent")).expect("hook");
        let settings = TriggerSettings {
            webhook_rate_per_minute: u32::MAX / 2,
            webhook_burst: u32::MAX / 2,
            ..TriggerSettings::default()
        };
        let app = webhook::router(rt.clone(), &settings);
        World {
            _dir: dir,
            tokio,
            rt,
            app,
            token: created.token,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let w = world();
    w.tokio.block_on(async {
        let req = Request::post("/hooks/fuzz")
            .header("content-type", "application/json")
            .header("x-pocketpilot-token", &w.token)
            .body(Body::from(data.to_vec()))
            .expect("request");
        let resp = w.app.clone().oneshot(req).await.expect("infallible");
        let status = resp.status();
        assert!(!status.is_server_error(), "{status} for {:?}", String::from_utf8_lossy(data));
        if status == StatusCode::ACCEPTED {
            let bytes = resp.into_body().collect().await.expect("body").to_bytes();
            let v: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
            let sent: serde_json::Value = serde_json::from_slice(data).expect("a 202 came from JSON");
            assert!(sent.is_object(), "only a JSON object may be accepted");
            let text = sent["text"].as_str().expect("a 202 has text");
            assert!(text.chars().count() <= webhook::MAX_TEXT_CHARS);
            match v["task_id"].as_i64() {
                Some(id) => {
                    let task = w.rt.call(ops::GetTask { id }).expect("the task exists");
                    assert_eq!(task.goal.trim(), text.trim());
                }
                // Queued in a busy session's inbox: the submission is there.
                None => {
                    assert_eq!(v["queued"], true, "{v}");
                    let session = sent["session"].as_i64().expect("only a named session queues");
                    let id = v["submission_id"].as_i64().expect("submission id");
                    let inbox = w.rt.call(ops::GetInbox { session_id: session }).expect("inbox");
                    assert!(inbox.iter().any(|s| s.id == id));
                }
            }
        }
    });
});
