//! Issue 18 with the real store, worker and context planner: the workspace's instructions
//! and memories are re-applied verbatim in every request after a compaction (never
//! summarised), and `.pocketpilot/` is refused to every writing tool.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use pocketpilot_core::ops;
use pocketpilot_test_support as support;

use pocketpilot_context::ItemKind;
use pocketpilot_core::engine::context::build_view;
use pocketpilot_core::{NewTask, TaskStatus};
use pocketpilot_model::Role;
use pocketpilot_protocol::MemoryScope;
use serde_json::json;
use support::*;

const RULE: &str = "WORKSPACE-RULE: run the tests with `make check`, never with cargo directly.";

#[tokio::test]
async fn instructions_and_memories_stay_verbatim_in_the_view_through_compactions() {
    let f = Fixture::new();
    std::fs::write(f.ws("AGENTS.md"), RULE).unwrap();
    let ws = std::fs::canonicalize(&f.workspace).unwrap();
    let ws = ws.to_str().unwrap();
    f.rt.call(ops::AddMemory {
        scope: MemoryScope::Workspace,
        workspace: Some(ws.to_string()),
        text: "MEMORY: answers in British English.".into(),
    })
    .unwrap();
    let answer = "the quick brown fox jumps over the lazy dog; ".repeat(12);
    let p = f.script(
        "chatty.json",
        json!({
            "context_window": 4096,
            "repeat_last": true,
            "turns": [ { "text": answer } ],
            "summary": { "text": "SUMMARY: several long answers about a fox." },
        }),
    );
    let mut session = None;
    let mut last = 0;
    for i in 0..30 {
        let task = NewTask {
            session_id: session,
            ..f.task(&format!("question {i}: tell me more"), &p)
        };
        last = f.rt.call(ops::SubmitTask { new: task.clone() }).unwrap();
        let st = f.settle(last).await;
        assert_eq!(
            st,
            TaskStatus::Completed,
            "{i}: {:?}",
            f.rt.call(ops::GetTask { id: last }).unwrap().error
        );
        session = Some(f.rt.call(ops::GetTask { id: last }).unwrap().session_id);
    }
    let session = session.unwrap();
    let compactions =
        f.rt.call(ops::ListCompactions {
            session_id: session,
        })
        .unwrap();
    assert!(compactions.len() >= 2, "{} compactions", compactions.len());
    let est = pocketpilot_context::Estimator::for_model("scripted");
    let view =
        f.rt.store_for_tests()
            .read(|c| build_view(c, session, Some(last), ws, 4096, &est))
            .unwrap();
    // Second item, after the agent's rules: the preamble, kept as workspace instructions.
    let pre = &view.items[1];
    assert_eq!(pre.kind, ItemKind::WorkspaceInstructions);
    assert_eq!(pre.message.role, Role::System);
    assert!(pre.text().contains(RULE), "{}", pre.text());
    assert!(pre.text().contains("MEMORY: answers in British English."));
    // The summary stands for old turns; it never took the instructions' place.
    let summary = view
        .items
        .iter()
        .find(|i| i.kind == ItemKind::Summary)
        .expect("a summary in the view");
    assert!(!summary.text().contains("WORKSPACE-RULE"));
    assert_eq!(
        view.items
            .iter()
            .filter(|i| i.text().contains("WORKSPACE-RULE"))
            .count(),
        1
    );
}

#[tokio::test]
async fn no_tool_writes_or_deletes_in_the_pocketpilot_folder() {
    let f = Fixture::new();
    std::fs::create_dir_all(f.ws(".pocketpilot")).unwrap();
    std::fs::write(f.ws(".pocketpilot/policy.json"), "{}").unwrap();
    let calls = [
        json!({"name": "write_file", "arguments": {"path": ".pocketpilot/policy.json", "content": "{\"allow\":[\"*\"]}"}}),
        json!({"name": "write_file", "arguments": {"path": ".pocketpilot/new.md", "content": "x"}}),
        json!({"name": "edit_file", "arguments": {"path": ".pocketpilot/policy.json", "edits": [{"old_text": "{}", "new_text": "{\"allow\":[\"*\"]}"}]}}),
        json!({"name": "delete_path", "arguments": {"path": ".pocketpilot", "recursive": true}}),
        json!({"name": "delete_path", "arguments": {"path": "./.pocketpilot/policy.json"}}),
    ];
    let mut turns: Vec<_> = calls.iter().map(|c| json!({"tool_calls": [c]})).collect();
    turns.push(json!({"text": "done"}));
    let p = f.script("writes.json", json!(turns));
    let task = NewTask {
        grants: vec![
            pocketpilot_protocol::Capability::FS_WRITE,
            pocketpilot_protocol::Capability::FS_DELETE,
        ],
        ..f.task("change the policy", &p)
    };
    let id = f.rt.call(ops::SubmitTask { new: task.clone() }).unwrap();
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    let failed: Vec<String> =
        f.rt.call(ops::TaskEvents { task_id: id })
            .unwrap()
            .into_iter()
            .filter(|e| e.kind().as_str() == "tool_call_failed")
            .map(|e| e.payload().to_string())
            .collect();
    assert_eq!(failed.len(), calls.len(), "{failed:?}");
    for e in &failed {
        assert!(e.contains("never written by the agent"), "{e}");
    }
    assert_eq!(
        std::fs::read_to_string(f.ws(".pocketpilot/policy.json")).unwrap(),
        "{}"
    );
    assert!(!f.ws(".pocketpilot/new.md").exists());
}

#[test]
fn only_an_instruction_file_in_effect_is_read_for_the_window() {
    let f = Fixture::new();
    std::fs::write(f.ws("AGENTS.md"), RULE).unwrap();
    std::fs::create_dir_all(f.ws("lib")).unwrap();
    std::fs::write(
        f.ws("lib/AGENTS.md"),
        "not in effect: no session worked here",
    )
    .unwrap();
    std::fs::write(f.ws("secret.txt"), "private").unwrap();
    let ws = f.workspace.to_str().unwrap();
    let shown =
        f.rt.call(ops::GetInstructionText {
            workspace: ws.to_string(),
            session: None,
            rel: "AGENTS.md".into(),
        })
        .unwrap();
    assert_eq!(shown.text, RULE);
    assert_eq!(
        std::path::PathBuf::from(&shown.absolute),
        std::fs::canonicalize(f.ws("AGENTS.md")).unwrap()
    );
    // What the desktop's editor is handed: the same file, without reading it.
    assert_eq!(
        f.rt.call(ops::InstructionFile {
            workspace: ws.to_string(),
            session: None,
            rel: "AGENTS.md".into()
        })
        .unwrap(),
        std::fs::canonicalize(f.ws("AGENTS.md")).unwrap()
    );
    for other in ["lib/AGENTS.md", "secret.txt", "../AGENTS.md", "/etc/passwd"] {
        let e =
            f.rt.call(ops::GetInstructionText {
                workspace: ws.to_string(),
                session: None,
                rel: other.to_string(),
            })
            .unwrap_err();
        assert_eq!(
            e.kind(),
            pocketpilot_protocol::ErrorKind::OutsideWorkspace,
            "{other}: {e}"
        );
        let e =
            f.rt.call(ops::InstructionFile {
                workspace: ws.to_string(),
                session: None,
                rel: other.to_string(),
            })
            .unwrap_err();
        assert_eq!(
            e.kind(),
            pocketpilot_protocol::ErrorKind::OutsideWorkspace,
            "{other}: {e}"
        );
    }
}
