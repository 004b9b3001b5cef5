//! Issue 13, deterministic: the scripted model declares a small window; the real store,
//! worker, recorder and tools budget and compact the session.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use pocketpilot_core::ops;
use pocketpilot_test_support as support;

use pocketpilot_core::engine::context::build_view;
use pocketpilot_core::{NewTask, TaskStatus};
use pocketpilot_model::Role;
use serde_json::json;
use support::*;

const INSTRUCTION: &str =
    "Always answer in French, and never touch the folder named secrets/. (instruction #1)";

fn long_answer(i: usize) -> String {
    format!("Answer {i}: ") + &"the quick brown fox jumps over the lazy dog; ".repeat(25)
}

/// One task per message, in one session, each settled before the next.
async fn converse(f: &Fixture, provider: &str, messages: &[String]) -> (i64, Vec<i64>) {
    let mut session = None;
    let mut ids = Vec::new();
    for m in messages {
        let task = NewTask {
            session_id: session,
            ..f.task(m, provider)
        };
        let id = f.rt.call(ops::SubmitTask { new: task.clone() }).unwrap();
        f.settle(id).await;
        session = Some(f.rt.call(ops::GetTask { id }).unwrap().session_id);
        ids.push(id);
    }
    (session.unwrap(), ids)
}

fn chatty_script(f: &Fixture, name: &str, with_summary: bool) -> String {
    let mut script = json!({
        "context_window": 4096,
        "repeat_last": true,
        "turns": [ { "text": long_answer(0) } ],
    });
    if with_summary {
        script["summary"] =
            json!({ "text": "The assistant gave several long answers about a fox." });
    }
    f.script(name, script)
}

#[tokio::test]
async fn the_persons_instructions_stay_verbatim_through_three_compactions() {
    let f = Fixture::new();
    let p = chatty_script(&f, "chatty.json", true);
    let mut messages = vec![INSTRUCTION.to_owned()];
    messages.extend((1..20).map(|i| format!("question {i}: tell me more")));
    let (session, ids) = converse(&f, &p, &messages).await;
    for id in &ids {
        let t = f.rt.call(ops::GetTask { id: *id }).unwrap();
        assert_eq!(t.status, TaskStatus::Completed, "task {id}: {:?}", t.error);
    }
    let compactions =
        f.rt.call(ops::ListCompactions {
            session_id: session,
        })
        .unwrap();
    assert!(compactions.len() >= 3, "{} compactions", compactions.len());
    assert!(compactions.iter().all(|c| !c.fallback));
    // Every request was planned within its budget, and what was sent stayed bounded.
    let turns =
        f.rt.call(ops::ContextTurns {
            session_id: session,
        })
        .unwrap();
    assert_eq!(turns.len(), ids.len());
    for t in &turns {
        assert!(t.estimate <= t.budget, "{t:?}");
        assert_eq!(t.window, 4096);
    }
    // The model's view now: the instruction verbatim, as the person's message, with the
    // summary standing for older answers; every original answer is still in the store.
    let est = pocketpilot_context::Estimator::for_model("scripted");
    let view =
        f.rt.store_for_tests()
            .read(|c| build_view(c, session, ids.last().copied(), "/w", 4096, &est))
            .unwrap();
    let msgs = view.messages();
    assert!(msgs
        .iter()
        .any(|m| m.role == Role::User && m.content.as_deref() == Some(INSTRUCTION)));
    assert!(msgs.iter().any(|m| m
        .content
        .as_deref()
        .is_some_and(|c| c.contains("several long answers about a fox"))));
    let answers =
        f.rt.call(ops::SessionEntries {
            session_id: session,
        })
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == pocketpilot_protocol::EntryKind::Assistant)
        .count();
    assert_eq!(answers, ids.len());
    // Audit: each compaction is an event with the figures.
    let events: Vec<_> = ids
        .iter()
        .flat_map(|id| f.rt.call(ops::TaskEvents { task_id: *id }).unwrap())
        .filter(|e| e.kind().as_str() == "context_compacted")
        .collect();
    assert!(events.len() >= 3);
    for e in &events {
        let p = e.payload();
        assert!(p["tokens_after"].as_u64().unwrap() < p["tokens_before"].as_u64().unwrap());
        assert!(!p["summarised"].as_array().unwrap().is_empty());
    }
}

#[tokio::test]
async fn a_failing_summary_call_falls_back_to_the_fixed_marker_and_every_turn_completes() {
    let f = Fixture::new();
    let p = chatty_script(&f, "nosummary.json", false);
    let mut messages = vec![INSTRUCTION.to_owned()];
    messages.extend((1..10).map(|i| format!("question {i}")));
    let (session, ids) = converse(&f, &p, &messages).await;
    for id in &ids {
        let t = f.rt.call(ops::GetTask { id: *id }).unwrap();
        assert_eq!(t.status, TaskStatus::Completed, "task {id}: {:?}", t.error);
    }
    let compactions =
        f.rt.call(ops::ListCompactions {
            session_id: session,
        })
        .unwrap();
    assert!(!compactions.is_empty());
    assert!(compactions.iter().all(|c| c.fallback), "{compactions:?}");
    assert!(
        compactions[0].summary.contains("dropped"),
        "{}",
        compactions[0].summary
    );
    for t in
        f.rt.call(ops::ContextTurns {
            session_id: session,
        })
        .unwrap()
    {
        assert!(t.estimate <= t.budget, "{t:?}");
    }
}

#[tokio::test]
async fn an_input_larger_than_the_window_fails_alone_and_hi_then_gets_an_answer() {
    let f = Fixture::new();
    let p = f.script(
        "hi.json",
        json!({ "context_window": 4096, "repeat_last": true, "turns": [ { "text": "Bonjour." } ] }),
    );
    let huge = "all work and no play makes jack a dull boy. ".repeat(1500);
    let (session, ids) = converse(&f, &p, &[huge, "hi".to_owned()]).await;
    let first = f.rt.call(ops::GetTask { id: ids[0] }).unwrap();
    assert_eq!(first.status, TaskStatus::Failed);
    let failed = f.event(ids[0], "task_failed").payload();
    assert_eq!(failed["kind"], "model_context_overflow");
    // Never sent: no model turn completed, and no request recorded for it.
    assert!(!f
        .kinds(ids[0])
        .contains(&"model_turn_completed".to_string()));
    let second = f.rt.call(ops::GetTask { id: ids[1] }).unwrap();
    assert_eq!(second.status, TaskStatus::Completed);
    assert_eq!(second.final_answer.as_deref(), Some("Bonjour."));
    let turns =
        f.rt.call(ops::ContextTurns {
            session_id: session,
        })
        .unwrap();
    assert_eq!(turns.len(), 1);
    assert!(turns[0].estimate <= turns[0].budget);
}

#[tokio::test]
async fn a_tool_result_larger_than_the_window_is_capped_in_the_context_and_kept_whole_in_the_log() {
    let f = Fixture::new();
    let big: String = (0..4000)
        .map(|i| format!("line {i} of a long file\n"))
        .collect();
    std::fs::write(f.ws("big.txt"), &big).unwrap();
    let p = f.script(
        "tool.json",
        json!({ "context_window": 4096, "turns": [
            { "tool_calls": [ { "name": "read_file", "arguments": { "path": "big.txt" } } ] },
            { "text": "It is a long file." }
        ] }),
    );
    let (session, ids) = converse(&f, &p, &["read big.txt".to_owned()]).await;
    assert_eq!(
        f.rt.call(ops::GetTask { id: ids[0] }).unwrap().status,
        TaskStatus::Completed
    );
    let done = f.event(ids[0], "tool_call_completed").payload();
    assert!(done["output"].as_str().unwrap().len() >= big.len() / 2);
    for t in
        f.rt.call(ops::ContextTurns {
            session_id: session,
        })
        .unwrap()
    {
        assert!(t.estimate <= t.budget, "{t:?}");
        assert!(t.prompt_tokens.unwrap() < 4096, "{t:?}");
    }
}

#[tokio::test]
async fn fifty_short_messages_never_overflow_even_when_the_persons_words_alone_do_not_fit() {
    let f = Fixture::new();
    let p = f.script(
        "short.json",
        json!({ "context_window": 4096, "repeat_last": true, "turns": [ { "text": "Noted." } ],
                "summary": { "text": "Short acknowledgements." } }),
    );
    let messages: Vec<String> = (1..=50)
        .map(|i| {
            format!("Message {i}. ")
                + &"the harbour lights flicker while old ships creak. ".repeat(5)
        })
        .collect();
    let (session, ids) = converse(&f, &p, &messages).await;
    for id in &ids {
        let t = f.rt.call(ops::GetTask { id: *id }).unwrap();
        assert_eq!(t.status, TaskStatus::Completed, "task {id}: {:?}", t.error);
    }
    for t in
        f.rt.call(ops::ContextTurns {
            session_id: session,
        })
        .unwrap()
    {
        assert!(t.estimate <= t.budget, "{t:?}");
    }
}

#[tokio::test]
async fn compact_now_and_a_fresh_context_are_the_transcripts_marks_and_the_next_request_starts_fresh(
) {
    let f = Fixture::new();
    // Six long answers fit 8,192 tokens: nothing compacted yet, four turns to summarise.
    let p = f.script(
        "marks.json",
        json!({
            "context_window": 8192,
            "repeat_last": true,
            "turns": [ { "text": long_answer(0) } ],
            "summary": { "text": "The assistant gave several long answers about a fox." },
        }),
    );
    let messages: Vec<String> = (1..=6).map(|i| format!("question {i}")).collect();
    let (session, ids) = converse(&f, &p, &messages).await;
    assert!(f
        .rt
        .call(ops::GetContextMarks {
            session_id: session
        })
        .unwrap()
        .compactions
        .is_empty());
    let before =
        f.rt.call(ops::GetContextUse {
            session_id: session,
        })
        .await
        .unwrap();
    assert_eq!(before.window, 8192);
    assert_eq!(before.window_source.as_str(), "setting");

    // Compact now: a manual compaction, recorded under the newest task.
    let report =
        f.rt.call(ops::CompactNow {
            session_id: session,
        })
        .await
        .unwrap();
    assert!(report.compacted, "{report:?}");
    assert_eq!(report.task_id, *ids.last().unwrap());
    assert!(report.tokens_after < report.tokens_before, "{report:?}");
    let marks =
        f.rt.call(ops::GetContextMarks {
            session_id: session,
        })
        .unwrap();
    assert_eq!(marks.compactions.len(), 1, "{marks:?}");
    let c = &marks.compactions[0];
    assert_eq!(c.cause.map(|c| c.as_str()), Some("manual"));
    assert!(!c.replaces.is_empty());
    assert!(
        c.summary.contains("several long answers about a fox"),
        "{c:?}"
    );
    let after =
        f.rt.call(ops::GetContextUse {
            session_id: session,
        })
        .await
        .unwrap();
    assert!(
        after.used < before.used,
        "before {before:?}, after {after:?}"
    );

    // Fresh context: a reset placed at once in the idle session, after the newest task.
    let admitted =
        f.rt.call(ops::FreshContext {
            session_id: session,
        })
        .unwrap();
    assert!(admitted.started.is_none());
    let marks =
        f.rt.call(ops::GetContextMarks {
            session_id: session,
        })
        .unwrap();
    assert_eq!(marks.resets.len(), 1);
    assert_eq!(marks.resets[0].after_task, ids.last().copied());
    let task = NewTask {
        session_id: Some(session),
        ..f.task("a new topic", &p)
    };
    let next = f.rt.call(ops::SubmitTask { new: task.clone() }).unwrap();
    assert_eq!(f.settle(next).await, TaskStatus::Completed);
    // The request carried the system rules and the new goal only.
    let last =
        f.rt.call(ops::ContextTurns {
            session_id: session,
        })
        .unwrap()
        .pop()
        .unwrap();
    assert_eq!(last.task_id, next);
    assert_eq!(last.messages, 2, "{last:?}");
}

#[tokio::test]
async fn compact_now_is_refused_while_the_session_has_a_run() {
    let f = Fixture::new();
    let p = f.script(
        "slow.json",
        json!({ "context_window": 4096, "turns": [ { "text": "Slowly.", "delay_ms": 3000 } ] }),
    );
    let id = f.submit("take your time", &p);
    let session = f.rt.call(ops::GetTask { id }).unwrap().session_id;
    let err =
        f.rt.call(ops::CompactNow {
            session_id: session,
        })
        .await
        .unwrap_err();
    assert_eq!(err.kind().as_str(), "conversation_busy", "{err}");
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    assert!(f
        .rt
        .call(ops::GetContextMarks {
            session_id: session
        })
        .unwrap()
        .compactions
        .is_empty());
}

#[tokio::test]
async fn a_message_too_long_for_the_window_is_refused_saying_how_much_to_cut() {
    let f = Fixture::new();
    let p = chatty_script(&f, "refuse.json", false);
    let huge = "the harbour lights flicker while old ships creak. ".repeat(500);
    let id = f.submit(&huge, &p);
    assert_eq!(f.settle(id).await, TaskStatus::Failed);
    let error = f.rt.call(ops::GetTask { id }).unwrap().error.unwrap();
    assert!(error.contains("Your message is about "), "{error}");
    assert!(
        error.contains("this model's window leaves room for "),
        "{error}"
    );
    assert!(error.contains("Shorten it by about "), "{error}");
    assert!(!f.kinds(id).contains(&"model_turn_completed".to_owned()));
}

/// A small window gets the short system text; a large one the full rules. Both are the same
/// bytes request after request (the server's prompt cache keeps the prefix).
#[tokio::test]
async fn a_small_window_gets_the_lean_system_text_and_a_large_one_the_full() {
    let f = Fixture::new();
    let p = chatty_script(&f, "lean.json", false);
    let id = f.submit("hello", &p);
    f.settle(id).await;
    let session = f.rt.call(ops::GetTask { id }).unwrap().session_id;
    let est = pocketpilot_context::Estimator::for_model("scripted");
    let system = |window: u32| {
        f.rt.store_for_tests()
            .read(|c| build_view(c, session, Some(id), "/w", window, &est))
            .unwrap()
            .messages()[0]
            .content
            .clone()
            .unwrap()
    };
    let (small, large) = (system(4096), system(32_768));
    assert_eq!(
        small,
        pocketpilot_core::engine::transcript::lean_system_prompt("/w")
    );
    assert_eq!(
        large,
        pocketpilot_core::engine::transcript::system_prompt("/w")
    );
    assert!(
        small.len() * 3 < large.len() * 2,
        "{} vs {}",
        small.len(),
        large.len()
    );
    assert_eq!(small, system(4096));
    // The person's setting moves the line.
    f.rt.store_for_tests()
        .write(|c| {
            pocketpilot_core::store::settings::set(
                c,
                pocketpilot_core::engine::context::LEAN_SETTING,
                &32_768u32,
            )
        })
        .unwrap();
    assert_eq!(
        system(32_768),
        pocketpilot_core::engine::transcript::lean_system_prompt("/w")
    );
}

#[tokio::test]
async fn a_small_windows_run_offers_lean_specs_and_no_tool_the_policy_denies() {
    let f = Fixture::new();
    let p = chatty_script(&f, "offer.json", false);
    let id = f.submit("hello", &p);
    f.settle(id).await;
    let session = f.rt.call(ops::GetTask { id }).unwrap().session_id;
    let settings = pocketpilot_core::config::ProviderSettings::default();
    let ctx = pocketpilot_core::engine::context::SessionContext::open(
        f.rt.store_for_tests().clone(),
        session,
        id,
        "/w",
        Some(&p),
        &settings,
    )
    .await
    .unwrap();
    let rules = pocketpilot_tools::PolicyRules {
        allow: vec![],
        deny: vec!["net".into()],
    };
    let mut tools = pocketpilot_tools::Registry::builtin();
    pocketpilot_core::engine::context::offer_tools(&mut tools, Some(&ctx), &rules);
    let specs = tools.specs();
    assert!(tools.is_lean());
    assert!(specs.iter().all(|s| s.name != "fetch_url"));
    assert_eq!(specs.len(), 7);
    assert!(
        tools.get("fetch_url").is_some(),
        "still refused by name, not unknown"
    );
    let mut full = pocketpilot_tools::Registry::builtin();
    pocketpilot_core::engine::context::offer_tools(&mut full, None, &Default::default());
    assert!(!full.is_lean());
    assert_eq!(full.specs().len(), 8);
}

#[tokio::test]
async fn compact_now_works_while_a_run_is_paused_and_the_continued_run_sees_the_summary() {
    let f = Fixture::with_limits(pocketpilot_core::config::Limits {
        max_steps: 1,
        ..Default::default()
    });
    // Six long answers, then a task whose first turn is a call: one step, then a pause.
    let mut turns: Vec<serde_json::Value> =
        (0..6).map(|i| json!({ "text": long_answer(i) })).collect();
    turns.push(json!({ "tool_calls": [ { "name": "list_dir", "arguments": { "path": "." } } ] }));
    turns.push(json!({ "text": "Done listing." }));
    let log = f.dir.path().join("requests.jsonl");
    let p = f.script(
        "paused.json",
        json!({
            "requests_log": log,
            "context_window": 8192,
            "turns": turns,
            "summary": { "text": "The assistant gave several long answers about a fox." },
        }),
    );
    let messages: Vec<String> = (1..=6).map(|i| format!("question {i}")).collect();
    let (session, _) = converse(&f, &p, &messages).await;
    let task = NewTask {
        session_id: Some(session),
        ..f.task("list the folder", &p)
    };
    let id = f.rt.call(ops::SubmitTask { new: task.clone() }).unwrap();
    assert_eq!(f.settle(id).await, TaskStatus::Paused);

    let report =
        f.rt.call(ops::CompactNow {
            session_id: session,
        })
        .await
        .unwrap();
    assert!(report.compacted, "{report:?}");
    assert_eq!(report.task_id, id);
    assert!(report.tokens_after < report.tokens_before, "{report:?}");

    // Continued, its next request is the compacted view: the summary, not the six answers.
    f.rt.call(ops::ContinueTask {
        task_id: id,
        raise: pocketpilot_protocol::Raise {
            steps: 1,
            ..Default::default()
        },
        steer: None,
        by: "test".into(),
    })
    .unwrap();
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    let requests = read(&log);
    let last = requests.lines().last().unwrap();
    assert!(last.contains("several long answers about a fox"), "{last}");
    assert!(!last.contains("Answer 0:"), "{last}");
}
