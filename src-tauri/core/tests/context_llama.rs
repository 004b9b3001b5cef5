//! Issue 13 against the real model server: llama.cpp's `llama-server` with SmolLM2 and a
//! 4,096-token window, driven through the real runtime (store, worker, recorder, tools).
//! Skips loudly when the server is not built, fails when POCKETPILOT_REQUIRE_MODEL_SERVER
//! is set.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]
use pocketpilot_core::ops;
use pocketpilot_test_support as support;

use pocketpilot_core::config::{Limits, ProviderSettings};
use pocketpilot_core::{NewTask, TaskStatus};
use pocketpilot_protocol::EventKind;
use support::*;

use pocketpilot_test_support::llama::LlamaServer;

fn fixture(server: &LlamaServer) -> Fixture {
    // A local server needs no key; this keeps the keychain out of the test.
    std::env::set_var("POCKETPILOT_API_KEY", "none");
    let f = Fixture::with_limits(Limits {
        max_steps: 3,
        max_task_tokens: None,
        ..Limits::default()
    });
    f.rt.call(ops::SetProviderSettings {
        settings: ProviderSettings {
            base_url: Some(server.base_url()),
            model: Some("smollm2".into()),
            max_tokens: Some(48),
            temperature: Some(0.0),
            stream: false,
            ..ProviderSettings::default()
        },
    })
    .unwrap();
    f
}

async fn converse(f: &Fixture, messages: &[String]) -> (i64, Vec<i64>) {
    converse_in(f, None, messages).await
}

async fn converse_in(f: &Fixture, session: Option<i64>, messages: &[String]) -> (i64, Vec<i64>) {
    let mut session = session;
    let mut ids = Vec::new();
    for m in messages {
        let task = NewTask {
            session_id: session,
            ..f.task(m, "settings")
        };
        let id = f.rt.call(ops::SubmitTask { new: task.clone() }).unwrap();
        tokio::time::timeout(
            std::time::Duration::from_secs(600),
            f.rt.call(ops::WaitSettled { task_id: id }),
        )
        .await
        .expect("the task settles")
        .unwrap();
        session = Some(f.rt.call(ops::GetTask { id }).unwrap().session_id);
        ids.push(id);
    }
    (session.unwrap(), ids)
}

/// What a new person gets: the server and its model name, nothing else (no reserve, no
/// step or token limit of the test's own; streaming as by default).
fn default_fixture(server: &LlamaServer) -> Fixture {
    std::env::set_var("POCKETPILOT_API_KEY", "none");
    let f = Fixture::new();
    f.rt.call(ops::SetProviderSettings {
        settings: ProviderSettings {
            base_url: Some(server.base_url()),
            model: Some("smollm2".into()),
            ..ProviderSettings::default()
        },
    })
    .unwrap();
    f
}

/// The model turns of a task as the server counted them: (prompt tokens, cached tokens).
fn server_counts(f: &Fixture, id: i64) -> Vec<(u64, Option<u64>)> {
    f.rt.call(ops::TaskEvents { task_id: id })
        .unwrap()
        .into_iter()
        .filter(|e| e.kind() == EventKind::ModelTurnCompleted)
        .map(|e| {
            let p = e.payload();
            (
                p["usage"]["prompt_tokens"]
                    .as_u64()
                    .expect("the server counted"),
                p["cached_prompt_tokens"].as_u64(),
            )
        })
        .collect()
}

fn final_answer(f: &Fixture, id: i64) -> String {
    f.rt.call(ops::TaskEvents { task_id: id })
        .unwrap()
        .into_iter()
        .find(|e| e.kind() == EventKind::TaskCompleted)
        .and_then(|e| e.payload()["final_answer"].as_str().map(str::to_owned))
        .expect("the turn answered")
}

/// How many tokens the server's tokenizer makes of `text`.
async fn tokenize(server: &LlamaServer, text: &str) -> u64 {
    let body: serde_json::Value = reqwest::Client::new()
        .post(format!("{}/tokenize", server.root()))
        .json(&serde_json::json!({ "content": text }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    body["tokens"].as_array().expect("tokens").len() as u64
}

fn prose(i: usize, words: usize) -> String {
    let base = [
        "the", "harbour", "lights", "flicker", "while", "old", "ships", "creak", "against",
        "their", "moorings", "and", "gulls", "argue", "over", "scraps", "of", "bread",
    ];
    let mut out = format!("Message {i}. Please read this and reply briefly. ");
    for w in 0..words {
        out.push_str(base[(w * 7 + i) % base.len()]);
        out.push(if w % 13 == 12 { '.' } else { ' ' });
    }
    out
}

fn assert_no_context_failure(f: &Fixture, ids: &[i64]) {
    for id in ids {
        let t = f.rt.call(ops::GetTask { id: *id }).unwrap();
        assert_eq!(t.status, TaskStatus::Completed, "task {id}: {:?}", t.error);
    }
}

#[tokio::test]
async fn four_long_messages_past_the_window_then_hi_every_turn_completes() {
    let Some(server) = LlamaServer::start(4096).await else {
        return;
    };
    let f = fixture(&server);
    let mut messages: Vec<String> = (1..=4).map(|i| prose(i, 900)).collect();
    messages.push("hi".into());
    let (session, ids) = converse(&f, &messages).await;
    assert_no_context_failure(&f, &ids);
    let turns =
        f.rt.call(ops::ContextTurns {
            session_id: session,
        })
        .unwrap();
    for t in &turns {
        let sent = t.prompt_tokens.expect("the server counted the request");
        eprintln!(
            "estimate {} server {sent} budget {} window {}",
            t.estimate, t.budget, t.window
        );
        assert_eq!(t.window, 4096, "discovered from /props");
        assert!(sent + 48 <= 4096, "{t:?}");
    }
    // The four messages alone are well past the window: something had to give, visibly.
    let compacted: usize = ids
        .iter()
        .map(|id| {
            f.kinds(*id)
                .iter()
                .filter(|k| *k == "context_compacted")
                .count()
        })
        .sum();
    assert!(compacted >= 1);
    assert!(f
        .rt
        .call(ops::GetTask {
            id: *ids.last().unwrap()
        })
        .unwrap()
        .final_answer
        .is_some());
}

/// 50 turns of a person's messages in one session: the window fills near turn 20, and from
/// then on the session compacts once every dozen turns or so (a summary, and the oldest of
/// the person's messages as one marker). Each compaction costs the server its prompt cache
/// once, so the test takes minutes (about 4 on two quiet cores), not the 20 it took when
/// every turn after the window filled compacted again.
#[tokio::test]
async fn fifty_turns_never_exceed_the_window_and_the_estimate_tracks_the_servers_count() {
    let Some(server) = LlamaServer::start(4096).await else {
        return;
    };
    let f = fixture(&server);
    let messages: Vec<String> = (1..=50).map(|i| prose(i, 40)).collect();
    let (session, ids) = converse(&f, &messages).await;
    assert_no_context_failure(&f, &ids);
    let turns =
        f.rt.call(ops::ContextTurns {
            session_id: session,
        })
        .unwrap();
    assert!(turns.len() >= 50);
    let mut errors: Vec<f64> = Vec::new();
    for (i, t) in turns.iter().enumerate() {
        let sent = t.prompt_tokens.expect("the server counted the request");
        assert!(sent + 48 <= 4096, "request {i}: {t:?}");
        assert!(t.estimate <= t.budget, "request {i}: {t:?}");
        let err = (f64::from(t.estimate) - f64::from(sent)).abs() / f64::from(sent);
        if i > 0 {
            errors.push(err);
        }
        // Within the safety margin the budget keeps (at most 20%).
        assert!(
            err <= 0.2,
            "request {i}: estimate {} server {sent}",
            t.estimate
        );
    }
    // The window fills near turn 20: compacting on each turn after it would be ~30.
    let compactions: usize = ids
        .iter()
        .map(|id| {
            f.kinds(*id)
                .iter()
                .filter(|k| *k == "context_compacted")
                .count()
        })
        .sum();
    assert!(
        (1..=8).contains(&compactions),
        "{compactions} compactions in 50 turns"
    );
    eprintln!("50 turns: {compactions} compactions");
    errors.sort_by(f64::total_cmp);
    let p = |q: f64| errors[((errors.len() - 1) as f64 * q) as usize] * 100.0;
    eprintln!(
        "50 turns: estimate error after the first request p50 {:.1}% p95 {:.1}% max {:.1}%",
        p(0.5),
        p(0.95),
        p(1.0)
    );
}

/// A tool result larger than the whole window, then the real server: the run that read it
/// (scripted, the only way to make the small model call a tool) leaves the session holding
/// ~7,000 tokens of output; the next question goes to llama-server with that output capped
/// in its context, the request fits, and the full output is still in the event log.
#[tokio::test]
async fn a_tool_result_larger_than_the_window_then_the_real_server_answers_within_it() {
    let Some(server) = LlamaServer::start(4096).await else {
        return;
    };
    let f = fixture(&server);
    let big = prose(7, 5_000);
    std::fs::write(f.workspace.join("big.txt"), &big).unwrap();
    let reader = f.script(
        "reader.json",
        serde_json::json!([
            { "tool_calls": [{ "name": "read_file", "arguments": { "path": "big.txt" } }] },
            { "text": "I read it." }
        ]),
    );
    let first = f.submit("read big.txt", &reader);
    assert_eq!(f.settle(first).await, TaskStatus::Completed);
    let session = f.rt.call(ops::GetTask { id: first }).unwrap().session_id;
    let done = f.event(first, "tool_call_completed").payload();
    assert!(done["output"].as_str().unwrap().len() >= big.len() / 2);

    let (_, ids) = converse_in(
        &f,
        Some(session),
        &["What was the file about? One line.".into()],
    )
    .await;
    assert_no_context_failure(&f, &ids);
    let turns: Vec<_> =
        f.rt.call(ops::ContextTurns {
            session_id: session,
        })
        .unwrap()
        .into_iter()
        .filter(|t| t.task_id == ids[0])
        .collect();
    assert!(!turns.is_empty());
    for t in &turns {
        let sent = t.prompt_tokens.expect("the server counted the request");
        assert!(sent + 48 <= 4096, "{t:?}");
    }
}

/// The settings a new user gets, in a 4,096-token window: nine messages of about 660 words
/// (each about a quarter of the window), then "hi". Every turn completes; the oldest of the
/// person's words are elided, visibly; no request is over the window by the server's count.
#[tokio::test]
async fn nine_long_messages_then_hi_with_default_settings_every_turn_completes() {
    let Some(server) = LlamaServer::start(4096).await else {
        return;
    };
    let f = default_fixture(&server);
    let mut messages: Vec<String> = (1..=9).map(|i| prose(i, 660)).collect();
    messages.push("hi".into());
    let (session, ids) = converse(&f, &messages).await;
    assert_no_context_failure(&f, &ids);
    let reserve = pocketpilot_context::Budget::default_reserve(4096);
    let turns =
        f.rt.call(ops::ContextTurns {
            session_id: session,
        })
        .unwrap();
    assert!(turns.len() >= ids.len());
    for t in &turns {
        let sent = t.prompt_tokens.expect("the server counted the request");
        eprintln!(
            "estimate {} server {sent} budget {} window {}",
            t.estimate, t.budget, t.window
        );
        assert_eq!(t.window, 4096, "discovered from /props");
        assert!(sent + reserve <= 4096, "{t:?}");
    }
    let compactions: Vec<serde_json::Value> = ids
        .iter()
        .flat_map(|id| f.rt.call(ops::TaskEvents { task_id: *id }).unwrap())
        .filter(|e| e.kind().as_str() == "context_compacted")
        .map(|e| e.payload())
        .collect();
    assert!(!compactions.is_empty());
    // Nine quarters of the window cannot all be there: the person's oldest words went.
    assert!(compactions
        .iter()
        .any(|c| !c["instructions_elided"].as_array().unwrap().is_empty()));
}

/// A fresh session with every built-in tool on, with the settings a new user gets: the
/// first request is lean (at most 1,000 prompt tokens by the server's count), and from the
/// second turn on the server reuses its cached prefix (its `cached_tokens`) for at least
/// 90% of each turn's prompt.
///
/// A turn's prompt is the first request of its task: it adds the person's new message to
/// what the server already holds (the previous request and the answer it generated). A
/// later request of the same task adds a tool's result, new material of any size, so it
/// is printed, not judged.
#[tokio::test]
async fn the_first_request_is_lean_and_later_turns_reuse_the_servers_prompt_cache() {
    let Some(server) = LlamaServer::start(4096).await else {
        return;
    };
    let f = default_fixture(&server);
    let messages: Vec<String> = (1..=4).map(|i| prose(i, 30)).collect();
    let (_, ids) = converse(&f, &messages).await;
    assert_no_context_failure(&f, &ids);
    // A compaction rewrites the view, so the turn after it starts a new prefix and is not
    // held to the 90%. Four short messages fill under half the window, so none may happen
    // here: every turn from the second is judged, and a compaction fails the test by name
    // rather than as a cache figure.
    for id in &ids {
        let compacted =
            f.rt.call(ops::TaskEvents { task_id: *id })
                .unwrap()
                .iter()
                .any(|e| e.kind() == EventKind::ContextCompacted);
        assert!(!compacted, "task {id} compacted its context");
    }
    let turns: Vec<_> = ids.iter().map(|id| server_counts(&f, *id)).collect();
    // Every figure is printed before any is judged: the promises fail for different
    // reasons (the size of the specs, the stability of our prefix, the server's cache).
    for (n, (id, requests)) in ids.iter().zip(&turns).enumerate() {
        for (r, (prompt, cached)) in requests.iter().enumerate() {
            let cached = cached.unwrap_or(0);
            eprintln!(
                "turn {} (task {id}) request {}: {cached} of {prompt} cached ({:.1}%)",
                n + 1,
                r + 1,
                cached as f64 * 100.0 / *prompt as f64
            );
        }
    }
    let first = turns[0][0].0;
    assert!(first <= 1000, "first request: {first} prompt tokens");
    let mut reread = Vec::new();
    for (n, (id, requests)) in ids.iter().zip(&turns).enumerate().skip(1) {
        let (prompt, cached) = requests[0];
        let cached = cached.expect("llama-server reports prompt_tokens_details.cached_tokens");
        // Ours to keep: the previous turn's last request, byte for byte, is this one's
        // prefix. Only what the server generated after it (the previous answer) and the
        // new message are not.
        let before = turns[n - 1].last().expect("a model turn").0;
        assert!(
            cached + 8 >= before,
            "turn {} (task {id}): {cached} of {prompt} cached, the previous request sent {before}",
            n + 1
        );
        if cached * 10 >= prompt * 9 {
            continue;
        }
        // Below 90% with our prefix kept: the cache then stopped inside the previous
        // answer. llama.cpp can generate a split its tokenizer never makes ("\n","\n" for
        // "\n\n"); reading the answer back as text it finds other tokens there and
        // re-reads from that point. That is the server's, and named as such; anything else
        // (a shortfall past the answer) is a failure.
        let answer = final_answer(&f, ids[n - 1]);
        let answer_tokens = tokenize(&server, &answer).await;
        assert!(
            cached < before + answer_tokens,
            "turn {} (task {id}): {cached} of {prompt} prompt tokens cached, although the previous request ({before}) and answer ({answer_tokens}) were",
            n + 1
        );
        eprintln!(
            "turn {}: the server re-read its own previous answer from token {} of {answer_tokens} (llama.cpp re-tokenisation)",
            n + 1,
            cached.saturating_sub(before)
        );
        reread.push(n + 1);
    }
    // A different split is rare (about one answer in twenty here): one such turn in a
    // session is the server's; more would hide a fault of ours.
    assert!(
        reread.len() <= 1,
        "turns {reread:?} each re-read the previous answer: more than llama.cpp's occasional re-tokenisation"
    );
}
