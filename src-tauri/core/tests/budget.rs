//! Issue 19 end to end: the repetition guard, money budgets and raise-and-continue on the
//! real runtime, store, worker and tools; the model is scripted (the only fake).
#![allow(clippy::unwrap_used, clippy::expect_used)]
use pocketpilot_core::ops;
use pocketpilot_test_support as support;
use std::sync::Arc;

use pocketpilot_core::config::Limits;
use pocketpilot_core::policy::cost::{Price, Prices};
use pocketpilot_core::{Runtime, TaskStatus};
use pocketpilot_protocol::Raise;
use serde_json::{json, Value};
use support::*;

fn missing_file_turn() -> Value {
    json!({ "tool_calls": [{ "name": "read_file", "arguments": { "path": "missing.txt" } }] })
}

fn paused_payload(f: &Fixture, id: i64) -> Value {
    let events = f.rt.call(ops::TaskEvents { task_id: id }).unwrap();
    let paused: Vec<_> = events
        .iter()
        .filter(|e| e.kind().as_str() == "run_paused")
        .collect();
    paused.last().expect("no run_paused event").payload()
}

fn tool_calls(f: &Fixture, id: i64) -> usize {
    f.kinds(id)
        .iter()
        .filter(|k| *k == "tool_call_failed" || *k == "tool_call_completed")
        .count()
}

#[tokio::test]
async fn a_model_repeating_a_failing_call_is_paused_after_three_and_continue_runs_on() {
    let f = Fixture::new();
    let p = f.script(
        "repeat.json",
        json!([missing_file_turn(), missing_file_turn(), missing_file_turn(),
               { "text": "The file is missing; I stop here." }]),
    );
    let id = f.submit("read it", &p);
    assert_eq!(f.settle(id).await, TaskStatus::Paused);
    assert_eq!(tool_calls(&f, id), 3, "{:?}", f.kinds(id));
    let pause = paused_payload(&f, id);
    assert_eq!(pause["reason"], "repetition");
    assert_eq!(pause["repeated"]["name"], "read_file");
    assert_eq!(pause["repeated"]["times"], 3);
    assert!(pause["message"]
        .as_str()
        .unwrap()
        .contains("the agent is repeating itself"));
    let task = f.rt.call(ops::GetTask { id }).unwrap();
    assert_eq!(task.step_count, 3);
    assert_eq!(
        task.pause.as_ref().map(|p| p.reason.as_str()),
        Some("repetition")
    );
    // The tray counts it as needing the person.
    assert_eq!(f.rt.call(ops::GetCounts {}).unwrap().paused, 1);

    f.rt.call(ops::ContinueTask {
        task_id: id,
        raise: Raise::default(),
        steer: None,
        by: "test".into(),
    })
    .unwrap();
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    let task = f.rt.call(ops::GetTask { id }).unwrap();
    assert_eq!(
        task.final_answer.as_deref(),
        Some("The file is missing; I stop here.")
    );
    assert!(task.pause.is_none());
    assert!(f.kinds(id).contains(&"run_continued".to_string()));
}

#[tokio::test]
async fn stopping_a_repeating_run_cancels_it_and_a_steer_reaches_the_model() {
    let f = Fixture::new();
    let p = f.script(
        "repeat.json",
        json!({ "repeat_last": true, "turns": [missing_file_turn()] }),
    );
    let id = f.submit("read it", &p);
    assert_eq!(f.settle(id).await, TaskStatus::Paused);
    // Continuing with a steer: the person's text joins the context; the model repeats
    // itself again and the guard, counting afresh, pauses it after three more.
    f.rt.call(ops::ContinueTask {
        task_id: id,
        raise: Raise::default(),
        steer: Some("try b.txt".into()),
        by: "test".into(),
    })
    .unwrap();
    assert_eq!(f.settle(id).await, TaskStatus::Paused);
    assert_eq!(tool_calls(&f, id), 6);
    let entries =
        f.rt.call(ops::SessionEntries {
            session_id: f.rt.call(ops::GetTask { id }).unwrap().session_id,
        })
        .unwrap();
    assert!(entries.iter().any(
        |e| e.kind == pocketpilot_protocol::EntryKind::User && e.content["text"] == "try b.txt"
    ));

    assert_eq!(
        f.rt.call(ops::StopTask { task_id: id }).unwrap(),
        TaskStatus::Cancelled
    );
    let task = f.rt.call(ops::GetTask { id }).unwrap();
    assert!(task.error.unwrap().contains("repeating itself"));
    assert!(
        f.rt.call(ops::StopTask { task_id: id }).is_err(),
        "a stopped task stays stopped"
    );
}

#[tokio::test]
async fn the_guard_is_a_setting_and_off_at_zero() {
    let f = Fixture::with_limits(Limits {
        repeat_limit: 0,
        max_steps: 5,
        ..Limits::default()
    });
    let p = f.script(
        "repeat.json",
        json!({ "repeat_last": true, "turns": [missing_file_turn()] }),
    );
    let id = f.submit("read it", &p);
    assert_eq!(f.settle(id).await, TaskStatus::Paused);
    // It ran to the step budget instead.
    assert_eq!(tool_calls(&f, id), 5);
    assert_eq!(paused_payload(&f, id)["budget"], "steps");
}

#[tokio::test]
async fn continuing_after_the_step_budget_keeps_the_context() {
    let f = Fixture::with_limits(Limits {
        max_steps: 2,
        ..Limits::default()
    });
    std::fs::write(f.ws("a.txt"), "alpha").unwrap();
    let log = f.dir.path().join("requests.jsonl");
    let p = f.script(
        "steps.json",
        json!({ "requests_log": log, "turns": [
            { "tool_calls": [{ "name": "read_file", "arguments": { "path": "a.txt" } }] },
            { "tool_calls": [{ "name": "list_dir", "arguments": {} }] },
            { "text": "a.txt says alpha." }
        ]}),
    );
    let id = f.submit("what does a.txt say", &p);
    assert_eq!(f.settle(id).await, TaskStatus::Paused);
    let pause = paused_payload(&f, id);
    assert_eq!(
        (pause["reason"].clone(), pause["budget"].clone()),
        (json!("budget"), json!("steps"))
    );

    // A raise that does not add steps is refused with what is needed.
    let err =
        f.rt.call(ops::ContinueTask {
            task_id: id,
            raise: Raise {
                usd: 1.0,
                ..Raise::default()
            },
            steer: None,
            by: "t".into(),
        })
        .unwrap_err();
    assert!(
        matches!(
            err,
            pocketpilot_core::api::service::RuntimeError::RaiseNeeded {
                budget: pocketpilot_protocol::Budget::Steps,
                ..
            }
        ),
        "{err}"
    );
    // Said in words, for the window: no command-line flag, no variable.
    let said = err.to_string();
    assert!(
        said.contains("more steps") && !said.contains("--"),
        "{said}"
    );

    f.rt.call(ops::ContinueTask {
        task_id: id,
        raise: Raise {
            steps: 3,
            ..Raise::default()
        },
        steer: None,
        by: "t".into(),
    })
    .unwrap();
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    let task = f.rt.call(ops::GetTask { id }).unwrap();
    assert_eq!(task.extra.steps, 3);
    assert_eq!(task.step_count, 3);

    // The request after the raise carried the whole earlier conversation.
    let requests: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(requests.len(), 3);
    let third = requests[2]["messages"].as_array().unwrap();
    let text = serde_json::to_string(third).unwrap();
    assert!(text.contains("what does a.txt say"), "{text}");
    assert!(
        text.contains("alpha"),
        "the first tool result is there: {text}"
    );
    let roles: Vec<&str> = third.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "assistant", "tool"]
    );
}

fn set_prices(rt: &Arc<Runtime>) {
    rt.call(ops::SetPrices {
        prices: Prices {
            models: vec![Price {
                model: "scripted:*".into(),
                input_per_mtok: 1000.0,
                output_per_mtok: 2000.0,
                cached_input_per_mtok: Some(500.0),
            }],
        },
    })
    .unwrap();
}

fn priced_call(path: &str) -> Value {
    json!({ "tool_calls": [{ "name": "read_file", "arguments": { "path": path } }],
            "usage": { "prompt_tokens": 1000, "cached_prompt_tokens": 200, "completion_tokens": 500 } })
}

#[tokio::test]
async fn the_money_budget_pauses_at_known_prices_and_a_raise_in_dollars_continues() {
    let f = Fixture::with_limits(Limits {
        max_task_usd: Some(3.0),
        ..Limits::default()
    });
    set_prices(&f.rt);
    // Each turn: 800 fresh × $1000 + 200 cached × $500 + 500 out × $2000 per million = $1.90.
    let p = f.script(
        "priced.json",
        json!([priced_call("a"), priced_call("b"),
               { "text": "done", "usage": { "prompt_tokens": 1000, "completion_tokens": 500 } }]),
    );
    let id = f.submit("spend", &p);
    assert_eq!(f.settle(id).await, TaskStatus::Paused);
    let pause = paused_payload(&f, id);
    assert_eq!(pause["budget"], "usd");
    assert!(
        pause["message"].as_str().unwrap().contains("$3.80"),
        "{pause}"
    );
    let cost = f.rt.call(ops::GetTaskCost { task_id: id }).unwrap();
    assert_eq!(cost.task.turns, 2);
    assert!((cost.task.cost_usd - 3.8).abs() < 1e-9, "{cost:?}");
    assert_eq!(cost.task.cached_prompt_tokens, 400);
    let turn = f.event(id, "model_turn_completed").payload();
    assert!(
        (turn["cost_usd"].as_f64().unwrap() - 1.9).abs() < 1e-9,
        "{turn}"
    );

    f.rt.call(ops::ContinueTask {
        task_id: id,
        raise: Raise {
            usd: 2.0,
            ..Raise::default()
        },
        steer: None,
        by: "t".into(),
    })
    .unwrap();
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    // The last turn: 1000 × $1000 + 500 × $2000 per million = $2.00.
    let cost = f.rt.call(ops::GetTaskCost { task_id: id }).unwrap();
    assert!((cost.task.cost_usd - 5.8).abs() < 1e-9, "{cost:?}");
    assert_eq!(cost.turns.len(), 3);
    assert!((cost.session.cost_usd - 5.8).abs() < 1e-9);
    let usage = f.rt.call(ops::GetUsage { since: None }).unwrap();
    assert!((usage.today.cost_usd - 5.8).abs() < 1e-9);
    assert_eq!(usage.today_unattended.turns, 0);
}

#[tokio::test]
async fn a_stopped_budget_pause_ends_budget_exceeded_and_the_day_budget_holds_the_next_task() {
    let f = Fixture::with_limits(Limits {
        max_day_usd: Some(1.0),
        ..Limits::default()
    });
    set_prices(&f.rt);
    let p = f.script(
        "priced.json",
        json!([priced_call("a"), { "text": "never" }]),
    );
    let id = f.submit("spend", &p);
    assert_eq!(f.settle(id).await, TaskStatus::Paused);
    assert_eq!(
        f.rt.call(ops::StopTask { task_id: id }).unwrap(),
        TaskStatus::BudgetExceeded
    );
    let last =
        f.rt.call(ops::TaskEvents { task_id: id })
            .unwrap()
            .pop()
            .unwrap();
    assert_eq!(last.kind().as_str(), "budget_exceeded");
    assert_eq!(last.payload()["budget"], "usd");
    // The day's money is spent: the next task pauses before it asks the model anything.
    let next = f.submit("more", &p);
    assert_eq!(f.settle(next).await, TaskStatus::Paused);
    assert!(!f.kinds(next).contains(&"model_turn_started".to_string()));
    assert!(paused_payload(&f, next)["message"]
        .as_str()
        .unwrap()
        .contains("daily budget"));
}

#[tokio::test]
async fn the_token_and_seconds_budgets_pause_and_a_raise_continues_them() {
    let f = Fixture::with_limits(Limits {
        max_task_tokens: Some(50),
        ..Limits::default()
    });
    let p = f.script(
        "hungry.json",
        json!([
            { "tool_calls": [{ "name": "list_dir", "arguments": {} }], "usage": { "prompt_tokens": 40, "completion_tokens": 30 } },
            { "text": "finished", "usage": { "prompt_tokens": 10, "completion_tokens": 10 } }
        ]),
    );
    let id = f.submit("spend", &p);
    assert_eq!(f.settle(id).await, TaskStatus::Paused);
    assert_eq!(paused_payload(&f, id)["budget"], "tokens");
    f.rt.call(ops::ContinueTask {
        task_id: id,
        raise: Raise {
            tokens: 100,
            ..Raise::default()
        },
        steer: None,
        by: "t".into(),
    })
    .unwrap();
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    // The call the model asked for before the budget ran out ran after the raise.
    assert!(f.kinds(id).contains(&"tool_call_completed".to_string()));
}

#[tokio::test]
async fn a_paused_task_stays_paused_across_a_restart_and_costs_no_time() {
    let f = Fixture::with_limits(Limits {
        max_steps: 1,
        ..Limits::default()
    });
    let p = f.script(
        "one.json",
        json!([{ "tool_calls": [{ "name": "list_dir", "arguments": {} }] }, { "text": "ok" }]),
    );
    let id = f.submit("go", &p);
    assert_eq!(f.settle(id).await, TaskStatus::Paused);
    let active = f.rt.call(ops::GetTask { id }).unwrap().active_ms;
    // sleep: real time passes while the task is paused, to show it is not counted in active_ms.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let rt = Runtime::open(&f.data_dir).unwrap();
    assert!(rt.call(ops::InterruptedSessions {}).unwrap().is_empty());
    assert!(rt.call(ops::ResumeAll {}).unwrap().is_empty());
    let task = rt.call(ops::GetTask { id }).unwrap();
    assert_eq!(task.status, TaskStatus::Paused);
    assert_eq!(
        task.active_ms, active,
        "waiting for the person cost no time"
    );
    // Cancel works on a paused task too.
    rt.call(ops::CancelTask { task_id: id }).unwrap();
    assert_eq!(
        rt.call(ops::GetTask { id }).unwrap().status,
        TaskStatus::Cancelled
    );
}

#[tokio::test]
async fn a_step_pause_offers_the_budget_again_and_an_empty_raise_takes_it() {
    let f = Fixture::with_limits(Limits {
        max_steps: 3,
        repeat_limit: 0,
        ..Limits::default()
    });
    let p = f.script(
        "five.json",
        json!({ "turns": [
            { "tool_calls": [{ "name": "list_dir", "arguments": {} }] },
            { "tool_calls": [{ "name": "list_dir", "arguments": { "path": "." } }] },
            { "tool_calls": [{ "name": "list_dir", "arguments": {} }] },
            { "tool_calls": [{ "name": "list_dir", "arguments": { "path": "." } }] },
            { "text": "done in five" }
        ]}),
    );
    let id = f.submit("look around", &p);
    assert_eq!(f.settle(id).await, TaskStatus::Paused);

    let offer = f.rt.call(ops::GetPauseOffer { task_id: id }).unwrap();
    assert_eq!(offer.budget, Some(pocketpilot_protocol::Budget::Steps));
    assert_eq!((offer.used, offer.limit), (3.0, Some(3.0)));
    assert_eq!(offer.raise.steps, 3, "the budget again: {offer:?}");
    assert_eq!(
        offer.sentence,
        "The agent used all 3 of its 3 steps without finishing."
    );
    let stored =
        f.rt.call(ops::GetTask { id })
            .unwrap()
            .pause
            .unwrap()
            .message;
    for text in [&offer.sentence, &stored] {
        assert!(
            !text.contains("POCKETPILOT_") && !text.contains("--"),
            "{text}"
        );
    }

    // "Continue" with nothing typed: the same budget again.
    f.rt.call(ops::ContinueTask {
        task_id: id,
        raise: Raise::default(),
        steer: None,
        by: "window".into(),
    })
    .unwrap();
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    let task = f.rt.call(ops::GetTask { id }).unwrap();
    assert_eq!(task.extra.steps, 3);
    assert_eq!(task.step_count, 5);
    assert_eq!(task.final_answer.as_deref(), Some("done in five"));
    // Nothing is paused any more: there is no offer.
    assert!(f.rt.call(ops::GetPauseOffer { task_id: id }).is_err());
}

#[tokio::test]
async fn a_token_pause_offers_enough_to_cover_the_overrun() {
    let f = Fixture::with_limits(Limits {
        max_task_tokens: Some(50),
        ..Limits::default()
    });
    let p = f.script(
        "hungry.json",
        json!([
            { "tool_calls": [{ "name": "list_dir", "arguments": {} }], "usage": { "prompt_tokens": 100, "completion_tokens": 20 } },
            { "text": "finished", "usage": { "prompt_tokens": 10, "completion_tokens": 10 } }
        ]),
    );
    let id = f.submit("spend", &p);
    assert_eq!(f.settle(id).await, TaskStatus::Paused);
    let offer = f.rt.call(ops::GetPauseOffer { task_id: id }).unwrap();
    // 120 used of 50: 70 over, and one budget more.
    assert_eq!(offer.raise.tokens, 120);
    assert!(offer.sentence.contains("120 tokens"), "{}", offer.sentence);
    f.rt.call(ops::ContinueTask {
        task_id: id,
        raise: Raise::default(),
        steer: None,
        by: "window".into(),
    })
    .unwrap();
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
}
