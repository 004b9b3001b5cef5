use std::sync::Arc;

use async_trait::async_trait;
use pocketpilot_context::ItemKind;
use pocketpilot_model::ScriptedProvider;
use pocketpilot_tools::{Effect, Registry, Tool, ToolContext, ToolError, ToolOutput};
use serde_json::json;

use super::*;

/// A tool whose name says nothing of what it does, as an MCP server may name one.
struct Zz;

#[async_trait]
impl Tool for Zz {
    fn name(&self) -> &'static str {
        "zz"
    }
    fn description(&self) -> &'static str {
        "Runs the project's checks."
    }
    fn parameters(&self) -> serde_json::Value {
        json!({ "type": "object", "properties": {} })
    }
    fn capability(&self) -> &'static str {
        "mcp:checks:zz:execute"
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Command
    }
    fn replay_safe(&self) -> bool {
        false
    }
    fn effect(&self, _: &serde_json::Value, ctx: &ToolContext) -> Result<Effect, ToolError> {
        Ok(Effect::Command {
            command: "zz".into(),
            cwd: ctx.workspace.display().to_string(),
        })
    }
    async fn call(&self, _: serde_json::Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("ok"))
    }
}

fn entry(id: i64, kind: EntryKind, content: serde_json::Value) -> Entry {
    Entry {
        id,
        session_id: 1,
        task_id: Some(1),
        kind,
        content,
        created_at: String::new(),
        rewound_by: None,
    }
}

fn tool_kinds_of_view(kinds: &ToolKinds) -> Vec<(String, ToolKind)> {
    let calls = json!([
        { "id": "c1", "name": "zz", "arguments": "{}" },
        { "id": "c2", "name": "read_file", "arguments": "{\"path\":\"a\"}" },
        { "id": "c3", "name": "gone", "arguments": "{}" },
    ]);
    let all = vec![
        entry(1, EntryKind::User, json!({ "text": "Check it." })),
        entry(
            2,
            EntryKind::Assistant,
            json!({ "text": "", "tool_calls": calls }),
        ),
        entry(
            3,
            EntryKind::ToolResult,
            json!({ "call_id": "c1", "text": "fine" }),
        ),
        entry(
            4,
            EntryKind::ToolResult,
            json!({ "call_id": "c2", "text": "a" }),
        ),
        entry(
            5,
            EntryKind::ToolResult,
            json!({ "call_id": "c3", "text": "?" }),
        ),
    ];
    let est = Estimator::for_model("test");
    view_of(&all, Some(1), 4096, &est, "rules".into(), None, kinds)
        .items
        .into_iter()
        .filter_map(|i| match i.kind {
            ItemKind::ToolResult {
                name, tool_kind, ..
            } => Some((name, tool_kind)),
            _ => None,
        })
        .collect()
}

/// The planner learns what a tool does from the tool's declaration, carried on the item of
/// each of its results: an MCP tool called `zz` that runs commands is a command.
#[test]
fn a_tool_results_item_carries_the_kind_its_tool_declares() {
    let mut tools = Registry::builtin();
    tools.register(Arc::new(Zz));
    let kinds = tool_kinds_of_view(&ToolKinds::of(&tools));
    assert_eq!(
        kinds,
        vec![
            ("zz".to_owned(), ToolKind::Command),
            ("read_file".to_owned(), ToolKind::Read),
            ("gone".to_owned(), ToolKind::Other),
        ]
    );
    // Without the run's tools (the meter), only the built-ins are known.
    let builtin = tool_kinds_of_view(&ToolKinds::of(&Registry::builtin()));
    assert_eq!(builtin[0], ("zz".to_owned(), ToolKind::Other));
    assert_eq!(builtin[1], ("read_file".to_owned(), ToolKind::Read));
}

fn script(dir: &std::path::Path, name: &str, body: serde_json::Value) -> ScriptedProvider {
    let path = dir.join(name);
    std::fs::write(&path, body.to_string()).unwrap();
    ScriptedProvider::from_file(&path).unwrap()
}

/// The window comes from the provider: what a script declares is the person's setting; a
/// script that declares none has no window to keep to, and no server to ask for one.
#[tokio::test]
async fn a_runs_context_follows_the_window_its_provider_reports() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("db.sqlite")).unwrap());
    let declared = script(
        dir.path(),
        "declared.json",
        json!({ "context_window": 2048, "turns": [ { "text": "Hi." } ] }),
    );
    let facts = facts_of(&declared).await;
    assert_eq!(
        facts.window,
        Window {
            tokens: 2048,
            source: WindowOrigin::Setting
        }
    );
    assert!(!facts.counted, "a script's usage is no count");
    let ctx = SessionContext::for_run(
        store.clone(),
        Conversation::of(1, Vec::new()),
        1,
        "/w",
        &declared,
    )
    .await
    .unwrap()
    .expect("a declared window gives the run a context");
    assert_eq!(ctx.window().tokens, 2048);

    let bare = script(dir.path(), "bare.json", json!([ { "text": "Hi." } ]));
    assert!(
        SessionContext::for_run(store, Conversation::of(1, Vec::new()), 1, "/w", &bare)
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(facts_of(&bare).await.window.source, WindowOrigin::Assumed);
}

/// How the test server answers `/apply-template`.
#[derive(Clone, Copy)]
enum Template {
    /// Holds the connection without a word, as a busy server does.
    Busy,
    /// 404: a server without the count endpoints.
    Missing,
    Renders(&'static str),
    /// The request's messages, their contents one after another.
    Echo,
}

/// What the test server was asked: `/apply-template` calls, and the prompt tokens (by its
/// own count) of each chat request it received.
struct Asked {
    templates: Arc<std::sync::atomic::AtomicUsize>,
    chats: Arc<Mutex<Vec<usize>>>,
}

/// The test server's tokenizer: a token per byte, several times what the estimator takes
/// text to cost, so no estimate of a long text is right.
fn tokens_of(text: &str) -> usize {
    text.len()
}

/// What the test server's template makes of a request body.
fn rendered(body: &serde_json::Value) -> String {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A llama.cpp-like server on 127.0.0.1 with a 4,096-token window: `/props` names it (so
/// the run counts requests), `/tokenize` counts by [`tokens_of`], `/apply-template`
/// answers as `template` says, given how many times it was asked before, and a chat
/// request is counted and refused (404: no model here; the summary then falls back).
async fn counting_server(
    template: impl Fn(usize) -> Template + Send + Sync + 'static,
) -> (String, Asked) {
    use pocketpilot_test_support::http::{serve, Reply};
    use std::sync::atomic::{AtomicUsize, Ordering};
    let asked = Asked {
        templates: Arc::new(AtomicUsize::new(0)),
        chats: Arc::new(Mutex::new(Vec::new())),
    };
    let (counter, chats) = (asked.templates.clone(), asked.chats.clone());
    let missing = || Reply::Json(404, json!({"error": {"code": 404}}));
    let root = serve(move |path, request| match path {
        "/props" => Reply::Json(200, json!({"default_generation_settings": {"n_ctx": 4096}})),
        "/tokenize" => {
            let n = tokens_of(request["content"].as_str().unwrap_or_default());
            Reply::Json(200, json!({ "tokens": vec![1; n] }))
        }
        "/v1/chat/completions" => {
            lock(&chats).push(tokens_of(&rendered(request)));
            missing()
        }
        "/apply-template" => match template(counter.fetch_add(1, Ordering::SeqCst)) {
            Template::Renders(body) => Reply::Json(200, serde_json::from_str(body).unwrap()),
            Template::Echo => Reply::Json(200, json!({ "prompt": rendered(request) })),
            Template::Missing => missing(),
            Template::Busy => Reply::Hold,
        },
        _ => missing(),
    })
    .await;
    (format!("{root}/v1"), asked)
}

fn prepared(text: &str) -> Prepared {
    Prepared {
        messages: vec![Message::user(text)],
        estimate: 10,
        budget: pocketpilot_context::Budget {
            window: 4096,
            output_reserve: 512,
            margin: 0,
        },
        window: Window {
            tokens: 4096,
            source: WindowOrigin::Discovered,
        },
        compacted: false,
    }
}

async fn counting_context(
    store: &Arc<Store>,
    provider: &dyn Provider,
    id: i64,
) -> Arc<SessionContext> {
    SessionContext::for_run(
        store.clone(),
        Conversation::of(id, Vec::new()),
        id,
        "/w",
        provider,
    )
    .await
    .unwrap()
    .expect("a discovered window gives the run a context")
}

/// A provider of the test server, with a 300 ms idle timeout.
fn provider_at(base: &str) -> pocketpilot_model::OpenAiProvider {
    pocketpilot_model::OpenAiProvider::new(pocketpilot_model::OpenAiConfig {
        base_url: base.to_owned(),
        model: "m".into(),
        idle_timeout: std::time::Duration::from_millis(300),
        ..pocketpilot_model::OpenAiConfig::default()
    })
    .unwrap()
}

/// A busy llama.cpp (its count not answered within the probe's bound) is asked again for
/// the next request; a server that answers that it does not count is never asked again.
/// A real timeout is under test: the held count waits out the provider's idle timeout,
/// 300 ms here.
#[tokio::test]
async fn a_busy_servers_count_is_asked_again_and_a_server_without_counts_is_not() {
    use std::sync::atomic::Ordering;
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("db.sqlite")).unwrap());
    let p = prepared("hi");

    let (base, asked) = counting_server(|before| match before {
        0 => Template::Busy,
        _ => Template::Renders(r#"{"prompt":"<user>hi"}"#),
    })
    .await;
    let busy = provider_at(&base);
    let ctx = counting_context(&store, &busy, 1).await;
    assert_eq!(ctx.count(&busy, &p, &[]).await, Err(Uncounted::NoAnswer));
    assert_eq!(
        ctx.count(&busy, &p, &[]).await,
        Ok(8),
        "asked again after no answer"
    );
    assert_eq!(asked.templates.load(Ordering::SeqCst), 2);

    let (base, asked) = counting_server(|_| Template::Missing).await;
    let without = provider_at(&base);
    let ctx = counting_context(&store, &without, 2).await;
    assert_eq!(
        ctx.count(&without, &p, &[]).await,
        Err(Uncounted::NotCounted)
    );
    assert_eq!(
        ctx.count(&without, &p, &[]).await,
        Err(Uncounted::NotCounted)
    );
    assert_eq!(asked.templates.load(Ordering::SeqCst), 1, "not asked again");
}

/// A chat far longer than a 4k window: short questions and long answers.
fn long_chat() -> Vec<Item> {
    let mut items = vec![Item::goal(1, "Walk me through the harbour report.")];
    for n in 0..20u64 {
        items.push(Item::person(2 + 2 * n, format!("Tell me more, part {n}.")));
        let answer: Vec<String> = (0..400)
            .map(|i| format!("harbour{} ", (i * 7 + n) % 37))
            .collect();
        items.push(Item::assistant(3 + 2 * n, answer.concat(), Vec::new()));
    }
    items
}

/// The summary request is estimated whole, never anchored by a count, so on a server
/// whose tokenizer the estimate gets wrong it can be planned over the window. Where the
/// server counts, it is counted first, fitted again smaller, and never sent too large;
/// where it does not count, it is sent as planned.
#[tokio::test]
async fn a_summary_request_the_server_counts_over_its_window_is_fitted_again_before_it_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("db.sqlite")).unwrap());
    let items = long_chat();
    let e = Estimator::shape_based("m");
    let budget = Budget::new(4096, 512, &e);
    let replan = |cut: u32| {
        let options = PlanOptions {
            summary_room_cut: cut,
            ..PlanOptions::default()
        };
        Ok(plan_compaction(&items, &[], &budget, &e, &options, None)?)
    };
    let first = replan(0).unwrap();
    let r = first.summary_request().expect("a summary is planned");
    let room = 4096 - r.max_tokens as usize;
    let planned = tokens_of(&rendered(&json!({ "messages": r.messages })));
    assert!(planned > room, "as planned: {planned} of {room}");

    let (base, asked) = counting_server(|_| Template::Echo).await;
    let provider = provider_at(&base);
    let ctx = counting_context(&store, &provider, 1).await;
    let (plan, summary) = ctx
        .summary_that_fits(&provider, &e, first.clone(), replan)
        .await
        .unwrap();
    assert_eq!(summary, None, "the test server writes no summary");
    let sent = lock(&asked.chats).clone();
    assert_eq!(sent.len(), 1, "the summary was asked for, once: {sent:?}");
    assert!(sent[0] <= room, "sent {} of {room}", sent[0]);
    assert_eq!(
        plan.summary_request().map(|r| &r.covers),
        Some(&r.covers),
        "the same turns are summarised, shown shorter"
    );

    let (base, asked) = counting_server(|_| Template::Missing).await;
    let provider = provider_at(&base);
    let ctx = counting_context(&store, &provider, 2).await;
    let (plan, _) = ctx
        .summary_that_fits(&provider, &e, first.clone(), replan)
        .await
        .unwrap();
    assert_eq!(plan, first, "no count, no change");
    assert_eq!(lock(&asked.chats).len(), 1);
}
