//! Against the real model server (llama.cpp + SmolLM2-135M, see `llama_server`): its own
//! report of the window, its own refusal of a request over it, its own token counts.
//! Prompts are kept small: the model processes ~140 tokens a second here.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::time::Duration;

use pocketpilot_context::{Anchor, Estimator};
use pocketpilot_model::{
    discover_context_window, Discovery, Message, OpenAiConfig, OpenAiProvider, Provider,
    ProviderError, ToolCall, ToolKind, WindowSource,
};

use crate::llama_server::LlamaServer;
use crate::support::*;

const BOUND: Duration = Duration::from_secs(120);

fn config(server: &LlamaServer) -> OpenAiConfig {
    OpenAiConfig {
        model: "smollm2".into(),
        api_key: None,
        max_tokens: Some(4),
        temperature: Some(0.0),
        request_timeout: Duration::from_secs(100),
        idle_timeout: Duration::from_secs(60),
        ..test_config(&server.base_url())
    }
}

#[tokio::test]
async fn props_report_the_window_the_server_runs_with() {
    let Some(server) = LlamaServer::start(4096).await else {
        return;
    };
    let window = discover_context_window(&config(&server)).await;
    assert_eq!(window.tokens, 4096);
    assert_eq!(window.source, WindowSource::Discovered(Discovery::Props));
}

/// About 4,200 tokens: llama.cpp counts "word " as one token.
fn oversized() -> Vec<Message> {
    vec![Message::user("word ".repeat(4200))]
}

#[tokio::test]
async fn a_request_over_the_window_is_a_context_overflow_with_the_numbers() {
    let Some(server) = LlamaServer::start(4096).await else {
        return;
    };
    let provider = OpenAiProvider::new(config(&server)).unwrap();
    let check = |e: &ProviderError| {
        eprintln!("the server said: {e}");
        match e {
            ProviderError::ContextOverflow {
                requested: Some(requested),
                window: Some(4096),
                message,
            } => {
                assert!(*requested > 4096 && *requested < 4600, "{requested}");
                assert!(
                    message.contains("exceeds the available context size"),
                    "{message}"
                );
            }
            other => panic!("expected ContextOverflow with numbers, got {other:?}"),
        }
        assert_eq!(e.kind().as_str(), "model_context_overflow");
        assert!(!e.is_retryable());
    };
    // Whole and streamed: neither retries nor falls back (the same request cannot fit).
    let whole = bounded(BOUND, provider.complete(oversized(), vec![])).await;
    check(&whole.unwrap_err());
    let streamed = bounded(BOUND, run_turn(&provider, oversized(), vec![])).await;
    check(streamed.error());
    assert!(streamed.events.is_empty(), "{:?}", streamed.events);
}

#[tokio::test]
async fn usage_is_read_from_streamed_and_whole_answers_with_cached_tokens() {
    let Some(server) = LlamaServer::start(4096).await else {
        return;
    };
    let messages = vec![
        Message::system("You answer in one word."),
        Message::user("Name a colour."),
    ];
    let mut c = config(&server);
    c.stream = false;
    let whole = OpenAiProvider::new(c.clone()).unwrap();
    let first = bounded(BOUND, whole.complete(messages.clone(), vec![]))
        .await
        .unwrap();
    let usage = first.usage.expect("usage in a whole answer");
    assert!(usage.prompt_tokens > 10, "{usage:?}");
    assert!(first.cached_prompt_tokens.is_some(), "{first:?}");
    c.stream = true;
    let streaming = OpenAiProvider::new(c).unwrap();
    let outcome = bounded(BOUND, run_turn(&streaming, messages.clone(), vec![])).await;
    let second = outcome.done();
    let streamed_usage = second
        .usage
        .expect("usage from stream_options.include_usage");
    // The same prompt, counted the same way both times; the second time from the cache.
    assert_eq!(streamed_usage.prompt_tokens, usage.prompt_tokens);
    let cached = second
        .cached_prompt_tokens
        .expect("cached tokens in the usage chunk");
    assert!(
        cached > 0 && cached <= streamed_usage.prompt_tokens,
        "{second:?}"
    );
}

/// The server's count before sending (`/apply-template` + `/tokenize`) is the count it
/// then reports in the answer's usage: the same template, tools, history and special
/// tokens. The request has all of them, so a part left out of the count would show.
#[tokio::test]
async fn the_count_before_sending_is_the_servers_own_count_of_the_request() {
    let Some(server) = LlamaServer::start(4096).await else {
        return;
    };
    let mut c = config(&server);
    c.stream = false;
    let messages = vec![
        Message::system("You read files and answer in one word."),
        Message::user("What does notes.txt say? ".repeat(20)),
        Message::assistant("", vec![read_file_call("call_1", "notes.txt")]),
        Message::tool_result("call_1", "The notes say: buy milk, fix the bike, call Ana."),
        Message::user("And in one word?"),
    ];
    let tools = vec![weather_tool()];
    let counted = pocketpilot_model::openai::count_prompt(&c, &messages, &tools)
        .await
        .expect("llama.cpp counts a request");
    let provider = OpenAiProvider::new(c).unwrap();
    let answer = bounded(BOUND, provider.complete(messages, tools))
        .await
        .unwrap();
    let usage = answer.usage.expect("usage in a whole answer");
    assert_eq!(u64::from(counted), usage.prompt_tokens);
}

fn read_file_call(id: &str, path: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "read_file".into(),
        arguments: format!(r#"{{"path":"{path}"}}"#),
    }
}

/// The estimator against the server's own `prompt_tokens`, over a few requests of
/// growing size and varied content: cold (the shape estimate alone), then calibrated
/// from the first request, then anchored on the previous count.
#[tokio::test]
async fn the_estimator_against_the_servers_count() {
    let Some(server) = LlamaServer::start(4096).await else {
        return;
    };
    let mut c = config(&server);
    c.stream = false;
    c.max_tokens = Some(1);
    let provider = OpenAiProvider::new(c).unwrap();
    let tools = vec![weather_tool()];
    let mut messages = vec![
        Message::system("You are a careful coding agent. Use the tools you are given."),
        Message::user("Read src/config.rs and tell me what the defaults are."),
    ];
    let additions: Vec<Vec<Message>> = vec![
        vec![
            Message::assistant("", vec![read_file_call("c1", "src/config.rs")]),
            Message::tool_result(
                "c1",
                "pub struct Config {\n    pub retries: u32,\n    pub timeout_ms: u64,\n}\n\nimpl Default for Config {\n    fn default() -> Self {\n        Self { retries: 3, timeout_ms: 2_500 }\n    }\n}\n",
            ),
        ],
        vec![
            Message::assistant("The defaults are 3 retries and a 2.5 s timeout.", vec![]),
            Message::user("Good. Now check the log for errors."),
        ],
        vec![
            Message::assistant("", vec![read_file_call("c2", "logs/run.log")]),
            Message::tool_result(
                "c2",
                "2026-12-01T12:00:00Z INFO started worker=3\n2026-12-01T12:00:01Z WARN retry 1/3 after 500ms (connection reset)\n2026-12-01T12:00:02Z ERROR giving up: timeout after 2500ms\n{\"event\":\"exit\",\"code\":1,\"elapsed_ms\":2731}\n",
            ),
        ],
        vec![
            Message::assistant(
                "One error: the run gave up after the 2.5 s timeout, following a connection reset.",
                vec![],
            ),
            Message::user("Erkläre es bitte auch auf Deutsch, kurz."),
        ],
    ];
    let mut estimator = Estimator::for_model("smollm2");
    assert!(!estimator.has_tokenizer());
    let mut anchor: Option<Anchor> = None;
    let mut worst_after_first = 0.0f64;
    for (turn, added) in std::iter::once(Vec::new()).chain(additions).enumerate() {
        messages.extend(added);
        let cold = estimator.request(&messages, &tools, None);
        let est = estimator.request(&messages, &tools, anchor.as_ref());
        let answer = bounded(BOUND, provider.complete(messages.clone(), tools.clone()))
            .await
            .unwrap();
        let observed = answer.usage.expect("usage").prompt_tokens;
        let error = |e: u32| (f64::from(e) - observed as f64) / observed as f64;
        eprintln!(
            "turn {turn}: server {observed}, estimate {} ({:+.1}%), cold {} ({:+.1}%), ratio {:.3}",
            est.tokens,
            100.0 * error(est.tokens),
            cold.tokens,
            100.0 * error(cold.tokens),
            estimator.calibration().ratio,
        );
        if turn == 0 {
            // Uncalibrated, the shape estimate is within what its margin covers.
            assert!(
                error(est.tokens).abs() < 0.35,
                "turn 0: {est:?} vs {observed}"
            );
        } else {
            worst_after_first = worst_after_first.max(error(est.tokens).abs());
        }
        estimator.calibrate(observed, &est);
        anchor = Some(Anchor::new(&messages, &tools, observed));
    }
    assert!(
        worst_after_first < 0.05,
        "worst error after the first turn: {worst_after_first:.3}"
    );
}

/// Issue 13 end to end: a session that outgrew a 2,048-token window (an old pasted log,
/// long tool outputs) is planned, its summary asked of the model, and the compacted
/// request is accepted by the server, counted within the budget the planner promised.
#[tokio::test]
async fn a_session_over_the_window_is_compacted_and_the_server_accepts_it() {
    use pocketpilot_context::{plan_compaction, Budget, Item, PlanOptions};

    let Some(server) = LlamaServer::start(2048).await else {
        return;
    };
    let log: String = (0..120)
        .map(|i| {
            format!(
                "2026-12-01T10:{:02}:{:02}Z WARN relay delivery={i} status=502 retry\n",
                i / 60,
                i % 60
            )
        })
        .collect();
    let mut view = vec![
        Item::system_rules(1, "You are a careful coding agent."),
        Item::person(2, format!("Here is the log:\n{log}")),
        Item::assistant(3, "The deliveries fail with 502 and are retried.", vec![]),
        Item::goal(4, "Now tell me in one line which file to look at."),
    ];
    let mut id = 5;
    for (n, path) in ["src/retry.rs", "src/journal.rs", "src/serve.rs"]
        .iter()
        .enumerate()
    {
        let c = read_file_call(&format!("c{n}"), path);
        view.push(Item::assistant(id, "", vec![c.clone()]));
        let body: String = (0..40)
            .map(|l| format!("    let value_{l} = compute_{l}(input, {l});\n"))
            .collect();
        view.push(Item::tool_result(id + 1, &c, ToolKind::Read, body));
        id += 2;
    }
    let tools = vec![weather_tool()];
    let estimator = Estimator::for_model("smollm2");
    let reserve = 64;
    let budget = Budget::new(2048, reserve, &estimator);
    let whole: Vec<Message> = view.iter().map(|i| i.message.clone()).collect();
    assert!(
        estimator.request(&whole, &tools, None).tokens > 2048,
        "the session must start over the window"
    );
    let plan = plan_compaction(
        &view,
        &tools,
        &budget,
        &estimator,
        &PlanOptions::default(),
        None,
    )
    .expect("a plan that fits");
    eprintln!("steps: {:?}", plan.steps);
    let summary = match plan.summary_request() {
        Some(request) => {
            let mut c = config(&server);
            c.stream = false;
            c.max_tokens = Some(request.max_tokens);
            let summariser = OpenAiProvider::new(c).unwrap();
            let answer = bounded(BOUND, summariser.complete(request.messages.clone(), vec![]))
                .await
                .expect("the summary request fits the window");
            Some(answer.text)
        }
        None => None,
    };
    let compacted = plan.finish(summary.as_deref(), &estimator);
    assert!(compacted.estimate <= budget.limit());
    let mut c = config(&server);
    c.stream = false;
    c.max_tokens = Some(reserve);
    let provider = OpenAiProvider::new(c).unwrap();
    let answer = bounded(BOUND, provider.complete(compacted.messages.clone(), tools))
        .await
        .expect("the compacted request is accepted");
    let counted = answer.usage.expect("usage").prompt_tokens;
    eprintln!(
        "compacted: estimate {} (limit {}), the server counted {counted}",
        compacted.estimate,
        budget.limit()
    );
    assert!(counted + u64::from(reserve) <= 2048, "{counted}");
    // The goal is there, verbatim.
    assert!(compacted
        .messages
        .iter()
        .any(|m| m.content.as_deref() == Some("Now tell me in one line which file to look at.")));
}
