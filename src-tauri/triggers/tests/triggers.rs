//! Triggers end to end: the real webhook listener on 127.0.0.1 (real HTTP requests), real
//! schedules on an injected clock (and one on the real clock), real file watches on a
//! real folder, the real task service behind them. The only fake is the model (scripted).
#![allow(clippy::unwrap_used, clippy::expect_used)]
use pocketpilot_core::ops;
use pocketpilot_protocol::{Capability, RunSource};
use pocketpilot_test_support as support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Duration as ChronoDuration, Timelike, Utc};
use clap::Parser;
use pocketpilot_cli::{self as cli, triggers as cli_triggers};
use pocketpilot_core::store::triggers::TriggerRun;
use pocketpilot_core::TaskStatus;
use pocketpilot_triggers::{
    self as trigger, cron, watch, webhook, Clock, HostOptions, ManualClock, SystemClock,
    TriggerHost, TriggerSettings,
};
use serde_json::{json, Value};
use support::*;

const LIMIT: Duration = Duration::from_secs(60);

fn settings() -> TriggerSettings {
    TriggerSettings {
        port: 0,
        webhook_rate_per_minute: 100_000,
        webhook_burst: 100_000,
        reload_secs: 1,
        watch_debounce_ms: 150,
        ..TriggerSettings::default()
    }
}

async fn host(f: &Fixture, settings: TriggerSettings, clock: Arc<dyn Clock>) -> TriggerHost {
    tokio::time::timeout(
        LIMIT,
        TriggerHost::start(
            f.rt.clone(),
            HostOptions {
                port: Some(0),
                webhooks: true,
                clock,
                settings: Some(settings),
            },
        ),
    )
    .await
    .expect("the host did not start")
    .unwrap()
}

fn url(h: &TriggerHost, name: &str) -> String {
    format!("http://{}/hooks/{name}", h.webhook_addr().unwrap())
}

fn instant_script(f: &Fixture) -> String {
    f.script("instant.json", json!([{ "text": "ok" }]))
}

/// Polls the store until `f` holds (bounded; no timing is asserted).
async fn until<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        // sleep: the poll interval of the shared bounded wait (`until`).
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn runs_len(f: &Fixture, kind: &str, id: i64, n: usize) -> Vec<TriggerRun> {
    until(&format!("{n} runs of {kind} {id}"), || {
        let runs = trigger::runs(&f.rt, kind, id).unwrap();
        (runs.len() >= n).then_some(runs)
    })
    .await
}

fn tasks_with_trigger(f: &Fixture, trigger: RunSource) -> Vec<pocketpilot_core::store::Task> {
    f.rt.call(ops::ListTasks { limit: 100_000 })
        .unwrap()
        .into_iter()
        .filter(|t| t.trigger == trigger)
        .collect()
}

async fn post(client: &reqwest::Client, url: &str, token: &str, body: Value) -> (u16, Value) {
    let resp = client
        .post(url)
        .header("X-PocketPilot-Token", token)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

// ------------------------------------------------------------------------------ webhook

#[tokio::test]
async fn a_good_token_gets_202_and_an_ordinary_webhook_task_that_completes() {
    let f = Fixture::new();
    let hook = webhook::create(&f.rt, "deploy", &f.workspace, Some(&instant_script(&f))).unwrap();
    assert_eq!(hook.token.len(), 64);
    let h = host(&f, settings(), Arc::new(SystemClock::default())).await;
    assert!(h.webhook_addr().unwrap().ip().is_loopback());
    let client = reqwest::Client::new();

    let (status, body) = post(
        &client,
        &url(&h, "deploy"),
        &hook.token,
        json!({ "text": "ship it" }),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    let id = body["task_id"].as_i64().unwrap();
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    let task = f.rt.call(ops::GetTask { id }).unwrap();
    assert_eq!(task.trigger, RunSource::Webhook);
    assert_eq!(task.goal, "ship it");
    let session =
        f.rt.call(ops::ListSessions {})
            .unwrap()
            .into_iter()
            .find(|s| s.id == task.session_id)
            .unwrap();
    assert_eq!(
        session.workspace,
        std::fs::canonicalize(&f.workspace)
            .unwrap()
            .display()
            .to_string()
    );

    // Bearer works too, and a follow-up in the same session is accepted.
    let resp = client
        .post(url(&h, "deploy"))
        .bearer_auth(&hook.token)
        .json(&json!({ "text": "and again", "session": task.session_id, "follow_up_of": id }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 202);
    let next: Value = resp.json().await.unwrap();
    let next =
        f.rt.call(ops::GetTask {
            id: next["task_id"].as_i64().unwrap(),
        })
        .unwrap();
    assert_eq!(
        (next.session_id, next.follow_up_of),
        (task.session_id, Some(id))
    );
    f.settle(next.id).await;

    let runs = trigger::runs(&f.rt, "webhook", hook.hook.id).unwrap();
    assert_eq!(
        runs.iter().filter_map(|r| r.task_id).collect::<Vec<_>>(),
        [id, next.id]
    );

    // Graceful shutdown: the listener is gone afterwards.
    let addr = h.webhook_addr().unwrap();
    h.shutdown().await;
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn refused_requests_get_clear_json_errors_and_create_nothing() {
    let f = Fixture::new();
    let hook = webhook::create(&f.rt, "inbox", &f.workspace, Some(&instant_script(&f))).unwrap();
    let other_ws = f.dir.path().join("elsewhere");
    std::fs::create_dir_all(&other_ws).unwrap();
    let h = host(&f, settings(), Arc::new(SystemClock::default())).await;
    let client = reqwest::Client::new();
    let u = url(&h, "inbox");
    let tok = hook.token.as_str();

    // A session of another workspace is out of the hook's reach.
    let foreign = f.rt.call(ops::CreateTask {
        new: (pocketpilot_core::NewTask {
            goal: "elsewhere".into(),
            workspace: Some(other_ws),
            trigger: RunSource::Cli,
            ..Default::default()
        })
        .clone(),
    });
    let foreign =
        f.rt.call(ops::GetTask {
            id: foreign.unwrap(),
        })
        .unwrap();
    f.rt.call(ops::CancelTask {
        task_id: foreign.id,
    })
    .unwrap();

    let kind = |v: &Value| v["error"]["kind"].as_str().unwrap_or_default().to_owned();
    let cases: Vec<(&str, u16, &str, reqwest::RequestBuilder)> = vec![
        (
            "bad token",
            401,
            "unauthorized",
            client
                .post(&u)
                .header("X-PocketPilot-Token", "0".repeat(64))
                .json(&json!({"text": "x"})),
        ),
        (
            "no token",
            401,
            "unauthorized",
            client.post(&u).json(&json!({"text": "x"})),
        ),
        (
            "basic auth",
            401,
            "unauthorized",
            client
                .post(&u)
                .basic_auth("a", Some(tok))
                .json(&json!({"text": "x"})),
        ),
        (
            "unknown hook",
            401,
            "unauthorized",
            client
                .post(url(&h, "nope"))
                .header("X-PocketPilot-Token", tok)
                .json(&json!({"text": "x"})),
        ),
        (
            "wrong content type",
            415,
            "unsupported_media_type",
            client
                .post(&u)
                .header("X-PocketPilot-Token", tok)
                .header("Content-Type", "text/plain")
                .body(r#"{"text":"x"}"#),
        ),
        (
            "oversized body",
            413,
            "body_too_large",
            client
                .post(&u)
                .header("X-PocketPilot-Token", tok)
                .json(&json!({"text": "x".repeat(webhook::MAX_BODY_BYTES)})),
        ),
        (
            "oversized chunked body (no Content-Length)",
            413,
            "body_too_large",
            client
                .post(&u)
                .header("X-PocketPilot-Token", tok)
                .header("Content-Type", "application/json")
                .body(reqwest::Body::wrap_stream(futures::stream::iter(
                    (0..100).map(|_| Ok::<_, std::io::Error>(vec![b' '; 1024])),
                ))),
        ),
        (
            "malformed JSON",
            400,
            "malformed_json",
            client
                .post(&u)
                .header("X-PocketPilot-Token", tok)
                .header("Content-Type", "application/json")
                .body("{\"text\": "),
        ),
        (
            "missing text",
            400,
            "missing_text",
            client
                .post(&u)
                .header("X-PocketPilot-Token", tok)
                .json(&json!({"session": null})),
        ),
        (
            "blank text",
            400,
            "missing_text",
            client
                .post(&u)
                .header("X-PocketPilot-Token", tok)
                .json(&json!({"text": "   "})),
        ),
        (
            "an array instead of an object",
            400,
            "invalid_body",
            client
                .post(&u)
                .header("X-PocketPilot-Token", tok)
                .json(&json!(["take me as text", null, null])),
        ),
        (
            "unknown field",
            400,
            "invalid_body",
            client
                .post(&u)
                .header("X-PocketPilot-Token", tok)
                .json(&json!({"text": "x", "grants": ["fs:write"]})),
        ),
        (
            "text too long",
            400,
            "text_too_long",
            client
                .post(&u)
                .header("X-PocketPilot-Token", tok)
                .json(&json!({"text": "é".repeat(webhook::MAX_TEXT_CHARS + 1)})),
        ),
        (
            "unknown session",
            400,
            "unknown_session",
            client
                .post(&u)
                .header("X-PocketPilot-Token", tok)
                .json(&json!({"text": "x", "session": 999})),
        ),
        (
            "another workspace's session",
            400,
            "unknown_session",
            client
                .post(&u)
                .header("X-PocketPilot-Token", tok)
                .json(&json!({"text": "x", "session": foreign.session_id})),
        ),
        (
            "unknown task",
            400,
            "unknown_task",
            client
                .post(&u)
                .header("X-PocketPilot-Token", tok)
                .json(&json!({"text": "x", "follow_up_of": 999})),
        ),
        (
            "GET",
            405,
            "method_not_allowed",
            client.get(&u).header("X-PocketPilot-Token", tok),
        ),
    ];
    for (what, status, expected_kind, req) in cases {
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status().as_u16(), status, "{what}");
        assert!(
            resp.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("application/json"),
            "{what}"
        );
        let body: Value = resp.json().await.unwrap();
        assert_eq!(kind(&body), expected_kind, "{what}: {body}");
        assert!(
            !body["error"]["message"].as_str().unwrap().is_empty(),
            "{what}"
        );
    }
    // Exactly 4000 characters is fine (a multi-byte text, within the byte bound).
    let (status, _) = post(
        &client,
        &u,
        tok,
        json!({"text": "é".repeat(webhook::MAX_TEXT_CHARS)}),
    )
    .await;
    assert_eq!(status, 202);

    // A paused hook is unknown; resumed, it answers again. Pausing everything: 503.
    webhook::set_paused(&f.rt, "inbox", true).unwrap();
    assert_eq!(post(&client, &u, tok, json!({"text": "x"})).await.0, 401);
    webhook::set_paused(&f.rt, "inbox", false).unwrap();
    trigger::pause_all(&f.rt).unwrap();
    let (status, body) = post(&client, &u, tok, json!({"text": "x"})).await;
    assert_eq!((status, kind(&body).as_str()), (503, "paused"));
    trigger::resume_all(&f.rt).unwrap();
    let (status, body) = post(&client, &u, tok, json!({"text": "last"})).await;
    assert_eq!(status, 202);
    f.settle(body["task_id"].as_i64().unwrap()).await;

    // Only the two accepted requests made tasks.
    assert_eq!(tasks_with_trigger(&f, RunSource::Webhook).len(), 2);
    h.shutdown().await;
}

#[tokio::test]
async fn a_hook_naming_a_busy_session_queues_its_text_like_a_follow_up() {
    let f = Fixture::new();
    // The first run waits for an approval: busy for as long as the test needs, no timer.
    let slow = f.script(
        "slow.json",
        json!([
            { "text": "late", "tool_calls": [{ "name": "write_file", "arguments": { "path": "a.txt", "content": "a" } }] },
            { "text": "written" },
            { "text": "answered the hook" },
            { "text": "third" }
        ]),
    );
    let hook = webhook::create(&f.rt, "inbox", &f.workspace, Some(&slow)).unwrap();
    let h = host(&f, settings(), Arc::new(SystemClock::default())).await;
    let client = reqwest::Client::new();
    let u = url(&h, "inbox");
    let tok = hook.token.as_str();
    let kind = |v: &Value| v["error"]["kind"].as_str().unwrap_or_default().to_owned();

    // Naming a busy session speaks to it like the window's composer: the text waits in
    // its inbox (202, queued) and is answered after the current run, in a run of its own.
    // With "when_busy": "reject" the hook answers 409 and nothing is queued.
    let busy = f.submit("busy", &slow);
    assert_eq!(f.settle(busy).await, TaskStatus::WaitingApproval);
    let busy_session = f.rt.call(ops::GetTask { id: busy }).unwrap().session_id;
    let (status, body) = post(
        &client,
        &u,
        tok,
        json!({"text": "from the hook", "session": busy_session, "when_busy": "reject"}),
    )
    .await;
    assert_eq!(
        (status, kind(&body).as_str()),
        (409, "conversation_busy"),
        "{body}"
    );
    assert!(f
        .rt
        .call(ops::GetInbox {
            session_id: busy_session
        })
        .unwrap()
        .is_empty());
    let (status, body) = post(
        &client,
        &u,
        tok,
        json!({"text": "x", "session": busy_session, "when_busy": "later"}),
    )
    .await;
    assert_eq!(
        (status, kind(&body).as_str()),
        (400, "invalid_body"),
        "{body}"
    );
    // Without a session there is no conversation to be busy: a clear 400, not ignored.
    let (status, body) = post(&client, &u, tok, json!({"text": "x", "when_busy": "steer"})).await;
    assert_eq!(
        (status, kind(&body).as_str()),
        (400, "invalid_body"),
        "{body}"
    );
    let (status, body) = post(
        &client,
        &u,
        tok,
        json!({"text": "from the hook", "session": busy_session}),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["queued"], true);
    assert!(body["task_id"].is_null());
    let submission = body["submission_id"].as_i64().unwrap();
    assert_eq!(
        f.rt.call(ops::GetInbox {
            session_id: busy_session
        })
        .unwrap()
        .iter()
        .map(|s| s.id)
        .collect::<Vec<_>>(),
        [submission]
    );
    let approval = f.rt.call(ops::PendingApprovals {}).unwrap().remove(0);
    f.answer(
        approval.id,
        pocketpilot_core::ApprovalAnswer {
            approve: true,
            by: "test".into(),
            ..Default::default()
        },
    );
    assert_eq!(f.settle(busy).await, TaskStatus::Completed);
    let answered = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let tasks =
                f.rt.call(ops::SessionTasks {
                    session_id: busy_session,
                })
                .unwrap();
            if let Some(t) = tasks
                .iter()
                .find(|t| t.id != busy && t.status.is_terminal())
            {
                break t.clone();
            }
            // sleep: the poll interval of a bounded wait for the queued task to end.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the queued text was answered");
    assert_eq!(answered.final_answer.as_deref(), Some("answered the hook"));
    let said: Vec<String> =
        f.rt.call(ops::SessionEntries {
            session_id: busy_session,
        })
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == pocketpilot_protocol::EntryKind::User)
        .map(|e| e.content["text"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(said, ["busy", "from the hook"]);

    // An idle session named by the hook: the text starts a run there at once.
    let (status, body) = post(
        &client,
        &u,
        tok,
        json!({"text": "once more", "session": busy_session}),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    assert!(body.get("queued").is_none());
    let again = body["task_id"].as_i64().unwrap();
    assert_eq!(
        f.rt.call(ops::GetTask { id: again }).unwrap().session_id,
        busy_session
    );
    f.settle(again).await;

    h.shutdown().await;
}

#[tokio::test]
async fn a_burst_of_500_concurrent_requests_makes_exactly_one_task_per_202() {
    let f = Fixture::new();
    let hook = webhook::create(&f.rt, "burst", &f.workspace, Some(&instant_script(&f))).unwrap();
    let h = host(&f, settings(), Arc::new(SystemClock::default())).await;
    let client = reqwest::Client::new();
    let u = url(&h, "burst");
    let mut joins = Vec::new();
    for i in 0..500 {
        let (client, u, tok) = (client.clone(), u.clone(), hook.token.clone());
        joins.push(tokio::spawn(async move {
            tokio::time::timeout(
                LIMIT,
                post(&client, &u, &tok, json!({ "text": format!("job {i}") })),
            )
            .await
            .expect("a request stalled")
        }));
    }
    let mut ids = BTreeSet::new();
    for j in joins {
        let (status, body) = j.await.unwrap();
        assert_eq!(status, 202, "{body}");
        assert!(
            ids.insert(body["task_id"].as_i64().unwrap()),
            "a task id was answered twice"
        );
    }
    let tasks = tasks_with_trigger(&f, RunSource::Webhook);
    assert_eq!(tasks.len(), ids.len());
    assert_eq!(tasks.iter().map(|t| t.id).collect::<BTreeSet<_>>(), ids);
    let goals: BTreeSet<String> = tasks.iter().map(|t| t.goal.clone()).collect();
    assert_eq!(goals, (0..500).map(|i| format!("job {i}")).collect());
    for id in &ids {
        assert_eq!(f.settle(*id).await, TaskStatus::Completed);
    }
    h.shutdown().await;
}

#[tokio::test]
async fn over_the_rate_a_hook_answers_429_and_still_every_202_is_a_task() {
    let f = Fixture::new();
    let hook = webhook::create(&f.rt, "limited", &f.workspace, Some(&instant_script(&f))).unwrap();
    let h = host(
        &f,
        TriggerSettings {
            webhook_rate_per_minute: 1,
            webhook_burst: 20,
            ..settings()
        },
        Arc::new(SystemClock::default()),
    )
    .await;
    let client = reqwest::Client::new();
    let u = url(&h, "limited");
    let mut joins = Vec::new();
    for i in 0..60 {
        let (client, u, tok) = (client.clone(), u.clone(), hook.token.clone());
        joins.push(tokio::spawn(async move {
            let resp = client
                .post(&u)
                .header("X-PocketPilot-Token", tok)
                .json(&json!({ "text": format!("job {i}") }))
                .send()
                .await
                .unwrap();
            let retry = resp
                .headers()
                .get("retry-after")
                .map(|v| v.to_str().unwrap().to_owned());
            (
                resp.status().as_u16(),
                retry,
                resp.json::<Value>().await.unwrap(),
            )
        }));
    }
    let mut accepted = Vec::new();
    let mut limited = 0;
    for j in joins {
        match j.await.unwrap() {
            (202, _, body) => accepted.push(body["task_id"].as_i64().unwrap()),
            (429, retry, body) => {
                limited += 1;
                assert_eq!(body["error"]["kind"], "rate_limited");
                assert!(retry.unwrap().parse::<u64>().unwrap() >= 1);
            }
            other => panic!("unexpected answer {other:?}"),
        }
    }
    // The burst of 20 (one more only if a minute passed), the rest refused.
    assert!(
        (20..=21).contains(&accepted.len()),
        "{} accepted",
        accepted.len()
    );
    assert_eq!(accepted.len() + limited, 60);
    assert_eq!(
        tasks_with_trigger(&f, RunSource::Webhook).len(),
        accepted.len()
    );
    for id in accepted {
        f.settle(id).await;
    }
    h.shutdown().await;
}

#[tokio::test]
async fn a_webhook_task_with_a_risky_step_parks_waiting_for_approval() {
    let f = Fixture::new();
    let p = f.script(
        "write.json",
        json!([
            { "tool_calls": [{ "name": "write_file", "arguments": { "path": "hooked.txt", "content": "x" } }] },
            { "text": "done" }
        ]),
    );
    let hook = webhook::create(&f.rt, "risky", &f.workspace, Some(&p)).unwrap();
    let h = host(&f, settings(), Arc::new(SystemClock::default())).await;
    let (status, body) = post(
        &reqwest::Client::new(),
        &url(&h, "risky"),
        &hook.token,
        json!({"text": "write"}),
    )
    .await;
    assert_eq!(status, 202);
    let id = body["task_id"].as_i64().unwrap();
    assert_eq!(f.settle(id).await, TaskStatus::WaitingApproval);
    assert!(!f.ws("hooked.txt").exists());
    f.rt.call(ops::CancelTask { task_id: id }).unwrap();
    f.settle(id).await;
    h.shutdown().await;
}

// --------------------------------------------------------------------------------- cron

#[tokio::test]
async fn cron_fires_on_time_and_skips_a_tick_while_its_previous_task_runs() {
    let f = Fixture::new();
    // The model takes a minute to answer: the first task is still running at the next tick.
    let slow = f.script(
        "slow.json",
        json!([{ "text": "late", "delay_ms": 600_000 }]),
    );
    let clock = ManualClock::new(t("2030-01-01T10:00:30Z"));
    let s = cron::create(
        &f.rt,
        &cron::NewSchedule {
            expr: "* * * * *".into(),
            workspace: f.workspace.clone(),
            goal: "tidy the inbox".into(),
            provider: Some(slow),
            catch_up: false,
        },
        clock.now(),
    )
    .unwrap();
    let h = host(&f, settings(), clock.clone()).await;

    clock.set(t("2030-01-01T10:01:00Z"));
    let runs = runs_len(&f, "cron", s.id, 1).await;
    assert_eq!(runs[0].outcome, "fired");
    assert_eq!(
        runs[0].scheduled_for.as_deref(),
        Some("2030-01-01T10:01:00.000Z")
    );
    let first = runs[0].task_id.unwrap();
    let task = f.rt.call(ops::GetTask { id: first }).unwrap();
    assert_eq!(
        (task.trigger, task.goal.as_str()),
        (RunSource::Cron, "tidy the inbox")
    );
    assert!(!task.status.is_terminal());

    clock.set(t("2030-01-01T10:02:00Z"));
    let runs = runs_len(&f, "cron", s.id, 2).await;
    assert_eq!(runs[1].outcome, "skipped");
    assert_eq!(runs[1].task_id, None);
    assert_eq!(
        runs[1].scheduled_for.as_deref(),
        Some("2030-01-01T10:02:00.000Z")
    );
    let reason = runs[1].reason.clone().unwrap();
    assert!(
        reason.contains(&format!("previous task {first} is still")),
        "{reason}"
    );

    f.rt.call(ops::CancelTask { task_id: first }).unwrap();
    assert_eq!(f.settle(first).await, TaskStatus::Cancelled);
    clock.set(t("2030-01-01T10:03:00Z"));
    let runs = runs_len(&f, "cron", s.id, 3).await;
    assert_eq!(runs[2].outcome, "fired");
    assert_eq!(
        runs[2].scheduled_for.as_deref(),
        Some("2030-01-01T10:03:00.000Z")
    );
    let second = runs[2].task_id.unwrap();
    assert_ne!(second, first);
    f.rt.call(ops::CancelTask { task_id: second }).unwrap();
    f.settle(second).await;
    h.shutdown().await;

    // Exactly these three ticks were handled: nothing fired in between.
    assert_eq!(trigger::runs(&f.rt, "cron", s.id).unwrap().len(), 3);
    assert_eq!(tasks_with_trigger(&f, RunSource::Cron).len(), 2);
}

#[tokio::test]
async fn after_the_app_was_closed_only_a_catch_up_schedule_runs_one_missed_tick() {
    let f = Fixture::new();
    let p = instant_script(&f);
    let clock = ManualClock::new(t("2030-01-01T10:00:30Z"));
    let new = |catch_up| cron::NewSchedule {
        expr: "@hourly".into(),
        workspace: f.workspace.clone(),
        goal: "hourly report".into(),
        provider: Some(p.clone()),
        catch_up,
    };
    let catching = cron::create(&f.rt, &new(true), clock.now()).unwrap();
    let plain = cron::create(&f.rt, &new(false), clock.now()).unwrap();

    // The app was closed from 10:00:30 to 12:30:40: the 11:00 and 12:00 ticks were missed.
    clock.set(t("2030-01-01T12:30:40Z"));
    let h = host(&f, settings(), clock.clone()).await;
    let c = runs_len(&f, "cron", catching.id, 1).await;
    assert_eq!(
        (c[0].outcome.as_str(), c[0].scheduled_for.as_deref()),
        ("fired", Some("2030-01-01T12:00:00.000Z"))
    );
    assert!(c[0].reason.as_deref().unwrap().contains("catch-up"));
    let p0 = runs_len(&f, "cron", plain.id, 1).await;
    assert_eq!(
        (p0[0].outcome.as_str(), p0[0].scheduled_for.as_deref()),
        ("skipped", Some("2030-01-01T12:00:00.000Z"))
    );
    assert!(p0[0].reason.as_deref().unwrap().contains("missed"));
    f.settle(c[0].task_id.unwrap()).await;

    clock.set(t("2030-01-01T13:00:00Z"));
    runs_len(&f, "cron", catching.id, 2).await;
    runs_len(&f, "cron", plain.id, 2).await;
    h.shutdown().await;

    // Restart (same data, a new host): the 13:00 tick is not fired again; 14:00 is.
    let h = host(&f, settings(), clock.clone()).await;
    clock.set(t("2030-01-01T14:00:00Z"));
    let c = runs_len(&f, "cron", catching.id, 3).await;
    let p = runs_len(&f, "cron", plain.id, 3).await;
    h.shutdown().await;
    let shape = |runs: &[TriggerRun]| {
        runs.iter()
            .map(|r| {
                (
                    r.outcome.clone(),
                    r.scheduled_for.clone().unwrap()[11..16].to_owned(),
                )
            })
            .collect::<Vec<_>>()
    };
    let fired = |hh: &str| ("fired".to_string(), hh.to_string());
    assert_eq!(shape(&c), [fired("12:00"), fired("13:00"), fired("14:00")]);
    assert_eq!(
        shape(&p),
        [
            ("skipped".into(), "12:00".into()),
            fired("13:00"),
            fired("14:00")
        ]
    );
    assert_eq!(trigger::runs(&f.rt, "cron", catching.id).unwrap().len(), 3);
    for r in c.iter().chain(p.iter()).filter_map(|r| r.task_id) {
        f.settle(r).await;
    }
}

#[tokio::test]
async fn a_schedule_fires_on_the_real_clock() {
    // Real time, real sleeping, real tokio timer. The only liberty: the clock is shifted so
    // that "now" stands 1.5 s before a minute boundary, instead of waiting up to a minute
    // for `* * * * *`. The schedule sleeps until the boundary like any other.
    let f = Fixture::new();
    let real = Utc::now();
    let boundary =
        real.with_second(0).unwrap().with_nanosecond(0).unwrap() + ChronoDuration::minutes(1);
    let clock = Arc::new(SystemClock::shifted(
        boundary - ChronoDuration::milliseconds(1500) - real,
    ));
    let s = cron::create(
        &f.rt,
        &cron::NewSchedule {
            expr: "* * * * *".into(),
            workspace: f.workspace.clone(),
            goal: "real time".into(),
            provider: Some(instant_script(&f)),
            catch_up: false,
        },
        clock.now(),
    )
    .unwrap();
    let h = host(&f, settings(), clock).await;
    let runs = runs_len(&f, "cron", s.id, 1).await;
    h.shutdown().await;
    assert_eq!(runs[0].outcome, "fired");
    assert_eq!(
        runs[0].scheduled_for.as_deref(),
        Some(trigger_stamp(boundary).as_str())
    );
    assert_eq!(
        f.settle(runs[0].task_id.unwrap()).await,
        TaskStatus::Completed
    );
}

fn trigger_stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[test]
fn bad_expressions_are_refused_at_creation() {
    let f = Fixture::new();
    for bad in ["* * * * * *", "every minute", "@reboot"] {
        let e = cron::create(
            &f.rt,
            &cron::NewSchedule {
                expr: bad.into(),
                workspace: f.workspace.clone(),
                goal: "x".into(),
                ..Default::default()
            },
            Utc::now(),
        )
        .unwrap_err();
        assert_eq!(e.kind().as_str(), "invalid_expression", "{bad}");
    }
}

// -------------------------------------------------------------------------------- watch

#[tokio::test]
async fn a_file_change_starts_a_task_naming_it_and_the_agents_own_write_does_not() {
    let f = Fixture::new();
    let w = watch::create(
        &f.rt,
        &watch::NewWatch {
            pattern: "*.txt".into(),
            workspace: f.workspace.clone(),
            goal: "Summarise the changed notes.".into(),
            provider: Some(instant_script(&f)),
            min_interval_secs: Some(0),
        },
    )
    .unwrap();
    let h = host(&f, settings(), Arc::new(SystemClock::default())).await;

    // A person's change.
    std::fs::write(f.ws("notes.txt"), "hello").unwrap();
    std::fs::write(f.ws("ignored.md"), "not matched").unwrap();
    let runs = runs_len(&f, "watch", w.id, 1).await;
    let first =
        f.rt.call(ops::GetTask {
            id: runs[0].task_id.unwrap(),
        })
        .unwrap();
    assert_eq!(first.trigger, RunSource::Watch);
    assert!(first.goal.starts_with("Summarise the changed notes."));
    assert!(first.goal.contains("- notes.txt"), "{}", first.goal);
    assert!(!first.goal.contains("ignored.md"));
    assert_eq!(f.settle(first.id).await, TaskStatus::Completed);

    // The agent writes a matching file through write_file (granted for this run).
    let p = f.script(
        "agent-write.json",
        json!([
            { "tool_calls": [{ "name": "write_file", "arguments": { "path": "agent.txt", "content": "by the agent" } }] },
            { "text": "written" }
        ]),
    );
    let mut task = f.task("write agent.txt", &p);
    task.grants = vec![Capability::FS_WRITE];
    let agent = f.rt.call(ops::SubmitTask { new: task.clone() }).unwrap();
    assert_eq!(f.settle(agent).await, TaskStatus::Completed);
    assert_eq!(read(&f.ws("agent.txt")), "by the agent");

    // A person's change after it: the next watch task names it, and only it. Had the
    // agent's write triggered, it would be a run before this one or listed in its goal.
    // (On a loaded machine one write's events can straddle two debounce windows and
    // bring a second run for notes.txt; what matters is which files the runs name.)
    std::fs::write(f.ws("later.txt"), "again").unwrap();
    let later = until("a watch run naming later.txt", || {
        trigger::runs(&f.rt, "watch", w.id)
            .unwrap()
            .into_iter()
            .filter_map(|r| r.task_id)
            .map(|id| f.rt.call(ops::GetTask { id }).unwrap())
            .find(|t| t.goal.contains("- later.txt"))
    })
    .await;
    f.settle(later.id).await;
    h.shutdown().await;
    let goals: Vec<String> = tasks_with_trigger(&f, RunSource::Watch)
        .into_iter()
        .map(|t| t.goal)
        .collect();
    assert_eq!(
        goals.len(),
        trigger::runs(&f.rt, "watch", w.id).unwrap().len()
    );
    for goal in &goals {
        assert!(!goal.contains("agent.txt"), "{goal}");
        assert!(
            goal.contains("- notes.txt") || goal.contains("- later.txt"),
            "{goal}"
        );
    }
}

#[test]
fn a_watch_outside_its_workspace_is_refused() {
    let f = Fixture::new();
    for bad in ["../*.txt", "/etc/*"] {
        let e = watch::create(
            &f.rt,
            &watch::NewWatch {
                pattern: bad.into(),
                workspace: f.workspace.clone(),
                goal: "x".into(),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert_eq!(e.kind().as_str(), "outside_workspace", "{bad}");
    }
}

// ---------------------------------------------------------------------------------- CLI

#[tokio::test]
async fn hooks_add_prints_the_token_and_nothing_else_and_only_its_digest_is_stored() {
    let f = Fixture::new();
    let ws = f.workspace.display().to_string();
    let provider = instant_script(&f);
    let args = [
        "pocketpilot",
        "hooks",
        "add",
        "ci",
        "--workspace",
        &ws,
        "--provider",
        &provider,
    ];
    let cmd = match cli::Cli::try_parse_from(args).unwrap().command {
        cli::Command::Hooks(c) => c,
        other => panic!("parsed as {other:?}"),
    };
    let mut out = Vec::new();
    cli_triggers::hooks(&f.rt, cmd, &mut out).unwrap();
    let out = String::from_utf8(out).unwrap();
    let token = out.strip_suffix('\n').expect("one line");
    assert!(
        token.len() == 64 && token.chars().all(|c| c.is_ascii_hexdigit()),
        "{out:?}"
    );

    // The token is not in the database (nor its WAL), nor in `hooks list --json`.
    let mut listed = Vec::new();
    let cmd = match cli::Cli::try_parse_from(["pocketpilot", "hooks", "list", "--json"])
        .unwrap()
        .command
    {
        cli::Command::Hooks(c) => c,
        other => panic!("parsed as {other:?}"),
    };
    cli_triggers::hooks(&f.rt, cmd, &mut listed).unwrap();
    let listed = String::from_utf8(listed).unwrap();
    assert!(
        listed.contains("\"ci\"") && !listed.contains(token),
        "{listed}"
    );
    for entry in std::fs::read_dir(&f.data_dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap_or_default();
        assert!(!bytes.windows(token.len()).any(|w| w == token.as_bytes()));
    }

    // And it works against the listener.
    let h = host(&f, settings(), Arc::new(SystemClock::default())).await;
    let (status, body) = post(
        &reqwest::Client::new(),
        &url(&h, "ci"),
        token,
        json!({"text": "hi"}),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    f.settle(body["task_id"].as_i64().unwrap()).await;
    h.shutdown().await;
}

/// A `Write` the test can read while `serve` holds it.
#[derive(Clone, Default)]
struct Shared(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Shared {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

#[tokio::test]
async fn serve_says_where_it_listens_and_stops_cleanly_on_sigterm() {
    let f = Fixture::new();
    let hook = webhook::create(&f.rt, "srv", &f.workspace, Some(&instant_script(&f))).unwrap();
    let status = Shared::default();
    let serving = tokio::spawn(trigger::serve::serve_until_signal(
        f.rt.clone(),
        Some(0),
        status.clone(),
    ));
    let line = until("the listening line", || {
        status
            .text()
            .lines()
            .find(|l| l.starts_with("listening on http://127.0.0.1:"))
            .map(str::to_owned)
    })
    .await;
    let base = line.strip_prefix("listening on ").unwrap().to_owned();
    let (code, body) = post(
        &reqwest::Client::new(),
        &format!("{base}/hooks/srv"),
        &hook.token,
        json!({"text": "hi"}),
    )
    .await;
    assert_eq!(code, 202);
    f.settle(body["task_id"].as_i64().unwrap()).await;

    // The handlers were installed before the line was written, so this SIGTERM is theirs.
    unsafe { libc::kill(libc::getpid(), libc::SIGTERM) };
    tokio::time::timeout(LIMIT, serving)
        .await
        .expect("serve did not stop")
        .unwrap()
        .unwrap();
    assert!(
        status.text().ends_with("stopping\nstopped\n"),
        "{}",
        status.text()
    );
    let addr = base.strip_prefix("http://").unwrap();
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn a_hook_naming_a_session_whose_inbox_is_full_gets_429_and_queues_nothing() {
    use pocketpilot_core::config::{InboxSettings, INBOX_KEY};
    let f = Fixture::new();
    f.rt.store_for_tests()
        .write(|c| {
            pocketpilot_core::store::settings::set(c, INBOX_KEY, &InboxSettings { max_queued: 1 })
        })
        .unwrap();
    let waits = f.script(
        "waits.json",
        json!([{ "tool_calls": [{ "name": "write_file", "arguments": { "path": "a.txt", "content": "a" } }] }]),
    );
    let hook = webhook::create(&f.rt, "full", &f.workspace, Some(&waits)).unwrap();
    let h = host(&f, settings(), Arc::new(SystemClock::default())).await;
    let client = reqwest::Client::new();
    let u = url(&h, "full");
    let busy = f.submit("busy", &waits);
    assert_eq!(f.settle(busy).await, TaskStatus::WaitingApproval);
    let session = f.rt.call(ops::GetTask { id: busy }).unwrap().session_id;
    let body = json!({"text": "queued", "session": session});
    let (status, first) = post(&client, &u, &hook.token, body.clone()).await;
    assert_eq!(status, 202, "{first}");
    let (status, refused) = post(&client, &u, &hook.token, body).await;
    assert_eq!(
        (status, refused["error"]["kind"].as_str()),
        (429, Some("inbox_full")),
        "{refused}"
    );
    assert_eq!(
        f.rt.call(ops::GetInbox {
            session_id: session
        })
        .unwrap()
        .len(),
        1,
        "nothing more queued"
    );
    assert_eq!(
        f.rt.call(ops::ListSubmissions {
            session_id: session
        })
        .unwrap()
        .len(),
        2
    );
    h.shutdown().await;
}

/// Which hook names exist is not revealed: an unknown name, a paused hook, a known one with
/// a bad or missing token all get the same status and the same body.
#[tokio::test]
async fn unknown_and_known_hooks_are_refused_alike() {
    let f = Fixture::new();
    let hook = webhook::create(&f.rt, "known", &f.workspace, Some(&instant_script(&f))).unwrap();
    webhook::create(&f.rt, "sleeping", &f.workspace, Some(&instant_script(&f))).unwrap();
    webhook::set_paused(&f.rt, "sleeping", true).unwrap();
    let h = host(&f, settings(), Arc::new(SystemClock::default())).await;
    let client = reqwest::Client::new();
    let bad = "0".repeat(64);
    let mut answers = Vec::new();
    for (name, token) in [
        ("known", Some(bad.as_str())),
        ("nope", Some(bad.as_str())),
        ("nope", Some(hook.token.as_str())),
        ("sleeping", Some(bad.as_str())),
        ("known", None),
        ("nope", None),
    ] {
        let mut req = client.post(url(&h, name)).json(&json!({"text": "x"}));
        if let Some(token) = token {
            req = req.header("X-PocketPilot-Token", token);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let body = resp.text().await.unwrap();
        answers.push((name, token.is_some(), status, body));
    }
    let (_, _, status, body) = &answers[0];
    assert_eq!(*status, 401);
    assert!(body.contains(r#""kind":"unauthorized""#), "{body}");
    for (name, with_token, s, b) in &answers {
        assert_eq!((s, b), (status, body), "{name} (token: {with_token})");
    }
    assert!(f.rt.call(ops::ListTasks { limit: 100 }).unwrap().is_empty());
    h.shutdown().await;
}

/// A person's run whose first command the person approved for the whole session: the
/// session then holds `shell:execute`. Returns the session.
async fn a_session_holding_a_shell_grant(f: &Fixture, script: &str) -> i64 {
    let first = f.submit("person", script);
    assert_eq!(f.settle(first).await, TaskStatus::WaitingApproval);
    let a = f.rt.call(ops::PendingApprovals {}).unwrap().remove(0);
    let grant = pocketpilot_core::ApprovalAnswer {
        approve: true,
        session_grant: true,
        by: "person".into(),
        ..Default::default()
    };
    f.answer(a.id, grant);
    assert_eq!(f.settle(first).await, TaskStatus::Completed);
    f.rt.call(ops::GetTask { id: first }).unwrap().session_id
}

#[tokio::test]
async fn a_webhook_into_a_session_holding_a_grant_stops_for_approval() {
    let f = Fixture::new();
    let p = f.script(
        "granted.json",
        json!([
            { "tool_calls": [{ "name": "run_command", "arguments": { "command": "echo person > person.txt" } }] },
            { "text": "done for the person" },
            { "tool_calls": [{ "name": "run_command", "arguments": { "command": "touch PWNED" } }] },
            { "text": "done for the hook" },
            { "tool_calls": [{ "name": "run_command", "arguments": { "command": "echo again > again.txt" } }] },
            { "text": "done again" }
        ]),
    );
    let session = a_session_holding_a_shell_grant(&f, &p).await;
    let grants =
        f.rt.store_for_tests()
            .read(|c| pocketpilot_core::store::sessions::grants(c, session))
            .unwrap();
    assert_eq!(grants, ["shell:execute"], "the person's grant is held");

    let hook = webhook::create(&f.rt, "granted", &f.workspace, Some(&p)).unwrap();
    let h = host(&f, settings(), Arc::new(SystemClock::default())).await;
    let (status, body) = post(
        &reqwest::Client::new(),
        &url(&h, "granted"),
        &hook.token,
        json!({"text": "touch it", "session": session}),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    let hooked = body["task_id"].as_i64().unwrap();
    assert_eq!(
        f.rt.call(ops::GetTask { id: hooked }).unwrap().trigger,
        RunSource::Webhook
    );
    assert_eq!(f.settle(hooked).await, TaskStatus::WaitingApproval);
    assert!(
        !f.ws("PWNED").exists(),
        "the hook's command ran under the grant"
    );
    let asked = f.rt.call(ops::PendingApprovals {}).unwrap().remove(0);
    assert_eq!(asked.task_id, hooked);
    assert_eq!(asked.capability.as_deref(), Some("shell:execute"));
    f.answer(
        asked.id,
        pocketpilot_core::ApprovalAnswer {
            approve: false,
            by: "person".into(),
            ..Default::default()
        },
    );
    assert_eq!(f.settle(hooked).await, TaskStatus::Completed);
    assert!(!f.ws("PWNED").exists());

    // The person's next run in the session keeps their grant.
    let mut again = f.task("again", &p);
    again.workspace = None;
    again.session_id = Some(session);
    let next = f.rt.call(ops::SubmitTask { new: again.clone() }).unwrap();
    assert_eq!(f.settle(next).await, TaskStatus::Completed);
    assert_eq!(read(&f.ws("again.txt")), "again\n");
    h.shutdown().await;
}

/// Issue 15: a webhook's steer into a person's working run would act under the person's
/// session grant. It does not join that run: it waits for the person's answer and runs on
/// its own, as the webhook's run, where its risky step stops for approval.
#[tokio::test]
async fn a_webhook_steer_into_a_persons_working_run_runs_on_its_own_without_the_grant() {
    let f = Fixture::new();
    let p = f.script(
        "steered.json",
        json!([
            { "tool_calls": [{ "name": "run_command", "arguments": { "command": "echo person > person.txt" } }] },
            { "text": "done for the person" },
            { "tool_calls": [{ "name": "run_command", "arguments": { "command": "while [ ! -e go ]; do sleep 0.05; done" } }] },
            { "text": "second answer for the person" },
            { "tool_calls": [{ "name": "run_command", "arguments": { "command": "touch PWNED" } }] },
            { "text": "done for the hook" }
        ]),
    );
    let session = a_session_holding_a_shell_grant(&f, &p).await;

    // The person's next run works under the grant (its command waits for `go`).
    let mut working = f.task("keep going", &p);
    working.workspace = None;
    working.session_id = Some(session);
    let working =
        f.rt.call(ops::SubmitTask {
            new: working.clone(),
        })
        .unwrap();
    until("the person's command to start", || {
        f.kinds(working)
            .contains(&"tool_call_started".to_string())
            .then_some(())
    })
    .await;

    let hook = webhook::create(&f.rt, "steerer", &f.workspace, Some(&p)).unwrap();
    let h = host(&f, settings(), Arc::new(SystemClock::default())).await;
    let (status, body) = post(
        &reqwest::Client::new(),
        &url(&h, "steerer"),
        &hook.token,
        json!({"text": "touch it", "session": session, "when_busy": "steer"}),
    )
    .await;
    assert_eq!(
        (status, body["queued"].clone()),
        (202, json!(true)),
        "{body}"
    );
    std::fs::write(f.ws("go"), "").unwrap();

    assert_eq!(f.settle(working).await, TaskStatus::Completed);
    let joined = f
        .rt
        .call(ops::TaskEvents { task_id: working })
        .unwrap()
        .into_iter()
        .any(|e| e.kind().as_str() == "input_placed" && e.payload()["boundary"] == "post_tools");
    assert!(!joined, "the hook's steer joined the person's run");
    assert_eq!(
        f.rt.call(ops::GetTask { id: working })
            .unwrap()
            .final_answer
            .as_deref(),
        Some("second answer for the person")
    );
    let hooked = until("the hook's own run", || {
        tasks_with_trigger(&f, RunSource::Webhook)
            .first()
            .map(|t| t.id)
    })
    .await;
    assert_eq!(
        f.rt.call(ops::GetTask { id: hooked }).unwrap().session_id,
        session
    );
    assert_eq!(f.settle(hooked).await, TaskStatus::WaitingApproval);
    assert!(
        !f.ws("PWNED").exists(),
        "the hook's command ran under the grant"
    );
    let asked = f.rt.call(ops::PendingApprovals {}).unwrap().remove(0);
    assert_eq!(asked.task_id, hooked);
    assert_eq!(asked.capability.as_deref(), Some("shell:execute"));
    let reject = pocketpilot_core::ApprovalAnswer {
        approve: false,
        by: "person".into(),
        ..Default::default()
    };
    f.answer(asked.id, reject);
    assert_eq!(f.settle(hooked).await, TaskStatus::Completed);
    assert!(!f.ws("PWNED").exists());
    h.shutdown().await;
}

#[tokio::test]
async fn the_daily_cap_for_unattended_runs_parks_the_next_scheduled_run_until_the_next_day() {
    let f = Fixture::with_limits(pocketpilot_core::config::Limits {
        max_trigger_day_usd: Some(1.0),
        ..Default::default()
    });
    f.rt.call(ops::SetPrices {
        prices: (pocketpilot_core::policy::cost::Prices {
            models: vec![pocketpilot_core::policy::cost::Price {
                model: "scripted:*".into(),
                input_per_mtok: 1000.0,
                output_per_mtok: 1000.0,
                cached_input_per_mtok: None,
            }],
        })
        .clone(),
    })
    .unwrap();
    // Each run: one turn of 1000 + 500 tokens at $1000 per million = $1.50.
    let p = f.script(
        "report.json",
        json!([{ "text": "report done", "usage": { "prompt_tokens": 1000, "completion_tokens": 500 } }]),
    );
    let clock = ManualClock::new(t("2030-01-01T23:57:30Z"));
    let c = clock.clone();
    f.rt.call(ops::SetClock {
        clock: Arc::new(move || c.now()),
    });
    let s = cron::create(
        &f.rt,
        &cron::NewSchedule {
            expr: "* * * * *".into(),
            workspace: f.workspace.clone(),
            goal: "nightly report".into(),
            provider: Some(p),
            catch_up: false,
        },
        clock.now(),
    )
    .unwrap();
    // No timer to look for lifted pauses: the host must sleep until the pause lifts.
    let slow = TriggerSettings {
        reload_secs: 3600,
        ..settings()
    };
    let h = host(&f, slow, clock.clone()).await;

    clock.set(t("2030-01-01T23:58:00Z"));
    let first = runs_len(&f, "cron", s.id, 1).await[0].task_id.unwrap();
    assert_eq!(f.settle(first).await, TaskStatus::Completed);

    // $1.50 spent today: the next scheduled run parks before it asks the model anything.
    clock.set(t("2030-01-01T23:59:00Z"));
    let parked = runs_len(&f, "cron", s.id, 2).await[1].task_id.unwrap();
    assert_eq!(f.settle(parked).await, TaskStatus::Paused);
    assert!(!f.kinds(parked).contains(&"model_turn_started".to_string()));
    let pause =
        f.rt.call(ops::GetTask { id: parked })
            .unwrap()
            .pause
            .unwrap();
    assert!(pause.message.contains("daily cap"), "{}", pause.message);
    assert_eq!(f.rt.call(ops::GetCounts {}).unwrap().paused, 1);
    assert_eq!(
        f.rt.call(ops::StopTask { task_id: parked }).unwrap(),
        TaskStatus::BudgetExceeded
    );

    // A new UTC day: the cap starts again and the next tick runs.
    clock.set(t("2030-01-02T00:00:00Z"));
    let next = runs_len(&f, "cron", s.id, 3).await[2].task_id.unwrap();
    assert_eq!(f.settle(next).await, TaskStatus::Completed);
    assert_eq!(
        f.rt.call(ops::GetTask { id: next })
            .unwrap()
            .final_answer
            .as_deref(),
        Some("report done")
    );
    let usage = f.rt.call(ops::GetUsage { since: None }).unwrap();
    assert!(
        (usage.today_unattended.cost_usd - 1.5).abs() < 1e-9,
        "{usage:?}"
    );
    assert!((usage.total.cost_usd - 3.0).abs() < 1e-9, "{usage:?}");
    h.shutdown().await;
}

/// A fixture with the daily cap for unattended runs at $1 and every scripted turn of
/// 1000 + 500 tokens costing $1.50.
#[tokio::test]
async fn a_schedule_another_process_adds_starts_without_a_timer_or_a_reload() {
    let f = Fixture::new();
    let p = instant_script(&f);
    let start = t("2030-01-01T09:00:30Z");
    let clock = ManualClock::new(start);
    // The only timer left in the host is the restart of a failed runner: an hour here.
    let slow = TriggerSettings {
        reload_secs: 3600,
        ..settings()
    };
    let h = host(&f, slow, clock.clone()).await;

    // The CLI: its own connection to the same store, as another process has; the host
    // is not told (no `reload`), it sees the commit through the store watcher.
    let cli = pocketpilot_core::api::service::Runtime::open(&f.data_dir).unwrap();
    let id = schedule_at_in(&cli, &f, "* * * * *", "tick", &p, clock.now());

    // Once the host's runner for it exists, the next minute on the clock fires it.
    let mut minute = 0;
    let runs = until("a run of the schedule another process added", || {
        minute += 1;
        clock.set(start + ChronoDuration::minutes(minute));
        let runs = trigger::runs(&f.rt, "cron", id).unwrap();
        (!runs.is_empty()).then_some(runs)
    })
    .await;
    assert_eq!(runs[0].trigger_id, id);
    h.shutdown().await;
}

fn capped_fixture() -> Fixture {
    let f = Fixture::with_limits(pocketpilot_core::config::Limits {
        max_trigger_day_usd: Some(1.0),
        ..Default::default()
    });
    f.rt.call(ops::SetPrices {
        prices: (pocketpilot_core::policy::cost::Prices {
            models: vec![pocketpilot_core::policy::cost::Price {
                model: "scripted:*".into(),
                input_per_mtok: 1000.0,
                output_per_mtok: 1000.0,
                cached_input_per_mtok: None,
            }],
        })
        .clone(),
    })
    .unwrap();
    f
}

fn schedule_at(f: &Fixture, expr: &str, goal: &str, provider: &str, now: DateTime<Utc>) -> i64 {
    schedule_at_in(&f.rt, f, expr, goal, provider, now)
}

fn schedule_at_in(
    rt: &Arc<pocketpilot_core::api::service::Runtime>,
    f: &Fixture,
    expr: &str,
    goal: &str,
    provider: &str,
    now: DateTime<Utc>,
) -> i64 {
    let new = cron::NewSchedule {
        expr: expr.into(),
        workspace: f.workspace.clone(),
        goal: goal.into(),
        provider: Some(provider.into()),
        catch_up: false,
    };
    cron::create(rt, &new, now).unwrap().id
}

async fn status_becomes(f: &Fixture, id: i64, want: TaskStatus) {
    until(&format!("task {id} {want}"), || {
        (f.rt.call(ops::GetTask { id }).unwrap().status == want).then_some(())
    })
    .await
}

#[tokio::test]
async fn a_run_parked_by_the_daily_cap_continues_by_itself_the_next_day_unless_the_person_stopped_it(
) {
    let f = capped_fixture();
    let p = f.script(
        "report.json",
        json!([{ "text": "report done", "usage": { "prompt_tokens": 1000, "completion_tokens": 500 } }]),
    );
    let clock = ManualClock::new(t("2030-01-01T23:57:30Z"));
    let c = clock.clone();
    f.rt.call(ops::SetClock {
        clock: Arc::new(move || c.now()),
    });
    // Fixed times, so no tick of the new day competes with the resumed run for the cap.
    let report = schedule_at(&f, "58,59 23 * * *", "nightly report", &p, clock.now());
    let backup = schedule_at(&f, "59 23 * * *", "nightly backup", &p, clock.now());
    // No timer to look for lifted pauses: the host must sleep until the pause lifts.
    let slow = TriggerSettings {
        reload_secs: 3600,
        ..settings()
    };
    let h = host(&f, slow, clock.clone()).await;

    clock.set(t("2030-01-01T23:58:00Z"));
    let first = runs_len(&f, "cron", report, 1).await[0].task_id.unwrap();
    assert_eq!(f.settle(first).await, TaskStatus::Completed);

    // Over the cap ($1.50 of $1): both runs of 23:59 park before asking the model.
    clock.set(t("2030-01-01T23:59:00Z"));
    let parked = runs_len(&f, "cron", report, 2).await[1].task_id.unwrap();
    let stopped = runs_len(&f, "cron", backup, 1).await[0].task_id.unwrap();
    for id in [parked, stopped] {
        assert_eq!(f.settle(id).await, TaskStatus::Paused);
        let pause = f.rt.call(ops::GetTask { id }).unwrap().pause.unwrap();
        assert_eq!(
            pause.resumes_at.as_deref(),
            Some("2030-01-02T00:00:00.000Z")
        );
        assert!(
            pause.message.contains("continues by itself"),
            "{}",
            pause.message
        );
    }
    // The person stops one of them.
    assert_eq!(
        f.rt.call(ops::StopTask { task_id: stopped }).unwrap(),
        TaskStatus::BudgetExceeded
    );

    // Still the same day: the clock moves (waking the host's wait for the lift) and the
    // task stays parked.
    clock.set(t("2030-01-01T23:59:59.900Z"));
    // sleep: nothing is to happen; a wrong continue would show within this (it starts in
    // milliseconds here).
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(
        f.rt.call(ops::GetTask { id: parked }).unwrap().status,
        TaskStatus::Paused
    );
    assert!(!f.kinds(parked).contains(&"model_turn_started".to_string()));

    // The next UTC day: the cap reset, the parked run continues from where it stopped.
    clock.set(t("2030-01-02T00:00:00Z"));
    status_becomes(&f, parked, TaskStatus::Completed).await;
    let task = f.rt.call(ops::GetTask { id: parked }).unwrap();
    assert_eq!(task.final_answer.as_deref(), Some("report done"));
    assert!(task.pause.is_none());
    let continued = f.event(parked, "run_continued").payload();
    assert_eq!(continued["by"], pocketpilot_core::policy::pause::LIFTED_BY);
    let kinds = f.kinds(parked);
    let at = |k: &str| kinds.iter().position(|x| x == k).unwrap();
    assert!(
        at("run_paused") < at("run_continued") && at("run_continued") < at("model_turn_started")
    );

    // The stopped one stays as the person left it: no continue, no model turn.
    assert_eq!(
        f.rt.call(ops::GetTask { id: stopped }).unwrap().status,
        TaskStatus::BudgetExceeded
    );
    let kinds = f.kinds(stopped);
    assert!(
        !kinds
            .iter()
            .any(|k| k == "run_continued" || k == "model_turn_started"),
        "{kinds:?}"
    );
    let usage = f.rt.call(ops::GetUsage { since: None }).unwrap();
    assert!(
        (usage.today_unattended.cost_usd - 1.5).abs() < 1e-9,
        "{usage:?}"
    );
    assert_eq!(f.rt.call(ops::GetCounts {}).unwrap().paused, 0);
    h.shutdown().await;
}
