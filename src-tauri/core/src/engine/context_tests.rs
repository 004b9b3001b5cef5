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
