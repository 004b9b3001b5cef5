//! How well the context accounting does against a real server, and what it costs.
//!
//! 1. The estimator's error against the server's own `prompt_tokens` over a 30-request
//!    session of varied content (code, prose, JSON, logs, listings, German, numbers) on
//!    llama.cpp + SmolLM2 (a tokenizer the estimator does not have): each request is the
//!    previous one plus a turn, as an agent sends them. "anchored" reuses the server's
//!    count of the previous request and estimates the new turn (what the runtime does);
//!    "cold" estimates the whole request with what calibration learnt (what it does right
//!    after a compaction changed the prefix). Errors after the first request (which
//!    calibrates); p50 and p95 of |estimate − server| / server.
//! 2. The planner's time on a 200-turn view, with the cl100k-proxy estimator and the
//!    shape-based one.
//!
//! `cargo bench -p pocketpilot-model --bench context`; writes bench-results/context.txt.
//! Needs the real model server (`scripts/setup-model-server.sh`); without it part 1 is
//! skipped with a note (and fails when `POCKETPILOT_REQUIRE_MODEL_SERVER` is set).
#![allow(clippy::unwrap_used, clippy::expect_used)]
use pocketpilot_test_support::llama as llama_server;

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use pocketpilot_context::{plan_compaction, Anchor, Budget, Estimator, Item, PlanOptions};
use pocketpilot_model::{
    Message, OpenAiConfig, OpenAiProvider, Provider, ToolCall, ToolKind, ToolSpec,
};

fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "read_file".into(),
            description: "Reads a file of the workspace".into(),
            parameters: serde_json::json!({"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}),
        },
        ToolSpec {
            name: "run_command".into(),
            description: "Runs a shell command in the workspace and returns its output".into(),
            parameters: serde_json::json!({"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}),
        },
    ]
}

/// Tool outputs of varied kinds, each a few dozen to ~150 tokens.
fn outputs() -> Vec<(&'static str, &'static str, String)> {
    vec![
        ("read_file", "src/config.rs", "use serde::Deserialize;\n\n#[derive(Debug, Deserialize)]\npub struct Config {\n    pub retries: u32,\n    pub timeout_ms: u64,\n    pub endpoints: Vec<String>,\n}\n\nimpl Default for Config {\n    fn default() -> Self {\n        Self { retries: 3, timeout_ms: 2_500, endpoints: vec![\"http://127.0.0.1:8080\".into()] }\n    }\n}\n".into()),
        ("run_command", "cargo test", "running 12 tests\ntest config::defaults ... ok\ntest config::parse_empty ... ok\ntest config::parse_bad_port ... FAILED\n\nfailures:\n\n---- config::parse_bad_port stdout ----\nthread 'config::parse_bad_port' panicked at src/config.rs:88:9:\nassertion `left == right` failed\n  left: 70000\n right: 65535\n\ntest result: FAILED. 11 passed; 1 failed; 0 ignored\n".into()),
        ("read_file", "README.md", "# Relay\n\nRelay forwards webhooks to local services. It retries with backoff, keeps a journal of every delivery, and never drops a message silently.\n\n## Usage\n\nStart it with `relay serve --port 9000`, then point your provider at `/hooks/<name>`. Each hook has its own token; rotate it with `relay hooks rotate NAME`.\n".into()),
        ("run_command", "ls -la src", "total 48\ndrwxr-xr-x 2 dev dev 4096 Dec  1 11:02 .\ndrwxr-xr-x 6 dev dev 4096 Dec  1 10:58 ..\n-rw-r--r-- 1 dev dev 2311 Dec  1 11:02 config.rs\n-rw-r--r-- 1 dev dev 9120 Dec  1 10:58 journal.rs\n-rw-r--r-- 1 dev dev  733 Dec  1 10:58 lib.rs\n-rw-r--r-- 1 dev dev 5402 Dec  1 10:58 retry.rs\n".into()),
        ("read_file", "fixtures/delivery.json", r#"{"id":"dlv_8f2c1d","hook":"github","status":"retrying","attempts":[{"at":"2026-12-01T10:58:01Z","code":502,"ms":311},{"at":"2026-12-01T10:58:03Z","code":502,"ms":298}],"next_at":"2026-12-01T10:58:07Z","payload_bytes":18233}"#.into()),
        ("run_command", "tail -5 relay.log", "2026-12-01T10:58:01.114Z WARN delivery=dlv_8f2c1d attempt=1 status=502 elapsed_ms=311\n2026-12-01T10:58:03.127Z WARN delivery=dlv_8f2c1d attempt=2 status=502 elapsed_ms=298\n2026-12-01T10:58:07.140Z INFO delivery=dlv_8f2c1d attempt=3 status=200 elapsed_ms=87\n2026-12-01T11:00:00.000Z INFO journal compacted entries=1204 bytes=883201\n".into()),
        ("read_file", "docs/de.md", "Relay leitet Webhooks an lokale Dienste weiter. Fehlgeschlagene Zustellungen werden mit wachsendem Abstand wiederholt, und jede Zustellung wird im Journal festgehalten. Größere Nutzlasten über 10 MB werden abgelehnt.".into()),
        ("read_file", "src/retry.rs", "pub fn backoff(attempt: u32, base_ms: u64) -> u64 {\n    // Equal jitter: half fixed, half random, so that clients spread out.\n    let exp = base_ms.saturating_mul(1 << attempt.min(16));\n    exp.min(30_000)\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn caps() {\n        assert_eq!(super::backoff(40, 500), 30_000);\n    }\n}\n".into()),
        ("run_command", "git log --oneline -6", "a1b2c3d Journal: compact in the background\n9e8f7a6 Retry: cap the backoff at 30 s\n5d4c3b2 Hooks: rotate tokens without downtime\n1a2b3c4 Config: reject ports over 65535\n0f9e8d7 Serve: graceful shutdown on SIGTERM\n7c6b5a4 Initial import\n".into()),
        ("read_file", "data/latency.csv", "hook,p50_ms,p95_ms,p99_ms,count\ngithub,84,311,902,12044\nstripe,61,204,577,8123\nslack,45,133,401,30211\ncustom,120,980,2411,311\n".into()),
    ]
}

fn call(id: usize, name: &str, arg: &str) -> ToolCall {
    let key = if name == "read_file" {
        "path"
    } else {
        "command"
    };
    ToolCall {
        id: format!("call_{id}"),
        name: name.into(),
        arguments: serde_json::json!({ key: arg }).to_string(),
    }
}

/// The turns the session adds, one per request: a tool call and its result, or an
/// answer and the person's next message.
fn additions() -> Vec<Vec<Message>> {
    let outs = outputs();
    let remarks = [
        "The config has three defaults; the port check is missing.",
        "One test fails: ports over 65535 are accepted.",
        "Noted. The retries look right to me.",
        "Die Zustellung wurde nach zwei Fehlversuchen erfolgreich wiederholt.",
        "The p95 for custom hooks is 980 ms, far above the others.",
    ];
    let asks = [
        "Fix the port check, then run the tests again.",
        "Also make the error message say which port was given.",
        "Bitte fasse die Protokolle kurz zusammen.",
        "What does the latency table say about custom hooks?",
        "Good. Now write a changelog entry for these fixes (two lines).",
    ];
    let mut adds = Vec::new();
    let mut n = 0;
    for round in 0..3 {
        for (i, (name, arg, out)) in outs.iter().enumerate() {
            n += 1;
            let c = call(n, name, arg);
            let text = if round == 0 {
                String::new()
            } else {
                format!("Looking at {arg} again.")
            };
            adds.push(vec![
                Message::assistant(text, vec![c.clone()]),
                Message::tool_result(c.id, out.clone()),
            ]);
            if i % 2 == 1 && adds.len() < 30 {
                let k = (i / 2 + round) % remarks.len();
                adds.push(vec![
                    Message::assistant(remarks[k], vec![]),
                    Message::user(asks[k]),
                ]);
            }
            if adds.len() >= 29 {
                return adds;
            }
        }
    }
    adds
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() as f64 - 1.0)).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

async fn estimator_vs_server(out: &mut String) {
    let Some(server) = llama_server::LlamaServer::start(8192).await else {
        writeln!(out, "estimator vs llama.cpp: SKIPPED (the real model server is not built: scripts/setup-model-server.sh)").ok();
        return;
    };
    let provider = match OpenAiProvider::new(counting_config(server.base_url())) {
        Ok(p) => p,
        Err(e) => {
            writeln!(out, "estimator vs llama.cpp: cannot make the provider: {e}").ok();
            return;
        }
    };
    let tools = tools();
    let mut messages = vec![
        Message::system("You are a careful coding agent working in the `relay` repository. Use the tools you are given; ask before changing files."),
        Message::user("The port check in the config seems broken. Find out why and fix it."),
    ];
    let mut estimator = Estimator::for_model("smollm2");
    let mut anchor: Option<Anchor> = None;
    let (mut anchored_err, mut cold_err) = (Vec::new(), Vec::new());
    let mut first = None;
    let mut sizes = Vec::new();
    let started = Instant::now();
    for (turn, added) in std::iter::once(Vec::new()).chain(additions()).enumerate() {
        messages.extend(added);
        let est = estimator.request(&messages, &tools, anchor.as_ref());
        let cold = estimator.request(&messages, &tools, None);
        let answer = match provider.complete(messages.clone(), tools.clone()).await {
            Ok(a) => a,
            Err(e) => {
                writeln!(out, "estimator vs llama.cpp: request {turn} failed: {e}").ok();
                return;
            }
        };
        let Some(observed) = answer.usage.map(|u| u.prompt_tokens) else {
            writeln!(out, "estimator vs llama.cpp: no usage in the answer").ok();
            return;
        };
        let rel = |e: u32| (f64::from(e) - observed as f64).abs() / observed as f64;
        sizes.push(observed);
        if turn == 0 {
            first = Some((est.tokens, observed));
        } else {
            anchored_err.push(rel(est.tokens));
            cold_err.push(rel(cold.tokens));
        }
        estimator.calibrate(observed, &est);
        anchor = Some(Anchor::new(&messages, &tools, observed));
    }
    let elapsed = started.elapsed();
    anchored_err.sort_by(f64::total_cmp);
    cold_err.sort_by(f64::total_cmp);
    let c = estimator.calibration();
    writeln!(
        out,
        "estimator vs llama.cpp's prompt_tokens (SmolLM2 tokenizer, cl100k proxy), {} requests of {}..{} tokens ({:.0} s)",
        sizes.len(),
        sizes.iter().min().unwrap_or(&0),
        sizes.iter().max().unwrap_or(&0),
        elapsed.as_secs_f64()
    )
    .ok();
    write_errors(out, first, [&anchored_err, &cold_err], c);
}

/// A request that has the server count its prompt and answer one token.
fn counting_config(base_url: String) -> OpenAiConfig {
    OpenAiConfig {
        base_url,
        model: "smollm2".into(),
        max_tokens: Some(1),
        temperature: Some(0.0),
        stream: false,
        request_timeout: Duration::from_secs(120),
        idle_timeout: Duration::from_secs(120),
        max_retries: 0,
        ..OpenAiConfig::default()
    }
}

/// The estimate's errors against the server's counts: the first request's, then the
/// anchored and the cold estimates' percentiles (sorted), then what was learnt.
fn write_errors(
    out: &mut String,
    first: Option<(u32, u64)>,
    [anchored_err, cold_err]: [&Vec<f64>; 2],
    c: pocketpilot_context::Calibration,
) {
    if let Some((e, o)) = first {
        writeln!(
            out,
            "  first request, uncalibrated      estimate {e} vs {o} ({:+.1}%)",
            100.0 * (f64::from(e) - o as f64) / o as f64
        )
        .ok();
    }
    for (name, errs) in [
        ("anchored (previous count + new turn)", anchored_err),
        ("cold (whole request, calibrated)", cold_err),
    ] {
        writeln!(
            out,
            "  {name:<37} p50 {:5.2}%   p95 {:5.2}%   max {:5.2}%   (n={})",
            100.0 * percentile(errs, 50.0),
            100.0 * percentile(errs, 95.0),
            100.0 * errs.last().copied().unwrap_or(f64::NAN),
            errs.len()
        )
        .ok();
    }
    writeln!(
        out,
        "  learnt: {:.3} server tokens per proxy token, {:.0} fixed tokens per request",
        c.ratio, c.fixed
    )
    .ok();
}

/// A 200-turn view: rules, goal, steers, and turns with tool results of varied size.
fn long_view() -> Vec<Item> {
    let outs = outputs();
    let mut items = vec![
        Item::system_rules(1, "You are PocketPilot. Ask before risky steps."),
        Item::workspace_instructions(2, "AGENTS.md: run the tests before committing."),
        Item::goal(3, "Make the relay pass its tests."),
    ];
    let mut id = 4;
    for n in 0..200 {
        let (name, arg, text) = &outs[n % outs.len()];
        let c = call(n, name, arg);
        items.push(Item::assistant(id, format!("Step {n}."), vec![c.clone()]));
        id += 1;
        // Every fifth output is long (a whole file or log).
        let body = if n % 5 == 0 {
            text.repeat(20)
        } else {
            text.clone()
        };
        // The fixture's tools are the two built-ins it names.
        let kind = if *name == "read_file" {
            ToolKind::Read
        } else {
            ToolKind::Command
        };
        items.push(Item::tool_result(id, &c, kind, body));
        id += 1;
        if n % 25 == 24 {
            items.push(Item::person(id, format!("Steer {n}: keep the public API.")));
            id += 1;
        }
    }
    items
}

fn planner_time(out: &mut String) {
    let view = long_view();
    let tools = tools();
    type Make = fn() -> Estimator;
    let makers: [(&str, Make); 2] = [
        ("cl100k proxy", || Estimator::for_model("smollm2")),
        ("shape-based ", || Estimator::shape_based("smollm2")),
    ];
    for (label, make) in makers {
        for window in [8192u32, 32768] {
            // Cold: a new estimator (nothing counted yet), as on a run's first turn;
            // warm: the same estimator again, as on the turns after (it remembers the
            // counts of long texts).
            let estimator = make();
            let budget = Budget::new(window, 1024, &estimator);
            let mut times = Vec::new();
            let mut summary = false;
            for _ in 0..11 {
                let t = Instant::now();
                let plan = plan_compaction(
                    &view,
                    &tools,
                    &budget,
                    &estimator,
                    &PlanOptions::default(),
                    None,
                );
                let compacted = plan.as_ref().ok().map(|p| {
                    summary = p.summary_request().is_some();
                    p.finish(None, &estimator)
                });
                times.push(t.elapsed().as_secs_f64() * 1000.0);
                std::hint::black_box(compacted);
            }
            let cold = times.remove(0);
            times.sort_by(f64::total_cmp);
            writeln!(
                out,
                "planner, 200-turn view ({} items), {label}, window {window:>5}: cold {cold:7.2} ms   warm p50 {:6.2} ms   max {:6.2} ms{}",
                view.len(),
                percentile(&times, 50.0),
                times.last().copied().unwrap_or(f64::NAN),
                if summary { "   (plans a summary)" } else { "" }
            )
            .ok();
        }
    }
}

fn main() {
    let mut out = String::new();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("no runtime: {e}");
            std::process::exit(1);
        }
    };
    runtime.block_on(estimator_vs_server(&mut out));
    planner_time(&mut out);
    print!("{out}");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench-results");
    let header = format!(
        "# context accounting (cargo bench -p pocketpilot-model --bench context); {} cores\n",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    if let Err(e) = std::fs::create_dir_all(&dir)
        .and_then(|_| std::fs::write(dir.join("context.txt"), format!("{header}{out}")))
    {
        eprintln!("cannot write bench-results/context.txt: {e}");
    }
    if out.contains("SKIPPED") && llama_server::required() {
        std::process::exit(1);
    }
}
