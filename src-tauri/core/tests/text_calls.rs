//! Tool calls a model writes as text in its answer: made proper calls that go through the
//! same approval and guard as any, recorded as repaired; a call that cannot be read is
//! told to the model and the run goes on. The model is scripted (the only fake): its turns
//! carry only text, as a small local model's do.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use pocketpilot_core::ops;
use pocketpilot_test_support as support;

use std::time::Duration;

use pocketpilot_core::{ApprovalAnswer, Runtime, TaskStatus};
use serde_json::{json, Value};
use support::*;

const WRITE_AS_TEXT: &str = "I will write the note now.\n<tool_call>\n{\"name\": \"Write-File\", \"arguments\": \"{\\\"path\\\": \\\"notes/hello.txt\\\", \\\"content\\\": \\\"hello\\\\n\\\"}\"}\n</tool_call>";

fn approve() -> ApprovalAnswer {
    ApprovalAnswer {
        approve: true,
        by: "test".into(),
        ..Default::default()
    }
}

/// The messages of every request the scripted model was sent, one list per request.
fn requests(path: &std::path::Path) -> Vec<Vec<Value>> {
    read(path)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["messages"].as_array().unwrap().clone()
        })
        .collect()
}

#[tokio::test]
async fn a_write_written_as_text_asks_for_approval_survives_a_restart_and_runs_when_approved() {
    let f = Fixture::new();
    let log = f.dir.path().join("requests.jsonl");
    let p = f.script(
        "text_write.json",
        json!({ "requests_log": log, "turns": [{ "text": WRITE_AS_TEXT }, { "text": "Done." }] }),
    );
    let id = f.submit("write hello", &p);
    assert_eq!(f.settle(id).await, TaskStatus::WaitingApproval);
    assert!(
        !f.ws("notes").exists(),
        "nothing may be written before approval"
    );

    let repaired = f.event(id, "tool_call_repaired").payload();
    assert_eq!(repaired["call_id"], "text_call_1");
    assert_eq!(repaired["tool"], "write_file");
    let original = repaired["original"].as_str().unwrap();
    assert!(
        original.starts_with("<tool_call>") && original.contains("Write-File"),
        "{original}"
    );
    assert_eq!(
        repaired["fixes"],
        json!(["tool_call_tag", "arguments_unquoted", "name_normalised"])
    );
    // The recorded turn carries the proper call and the text without it.
    let turn = f.event(id, "model_turn_completed").payload();
    assert_eq!(turn["text"], "I will write the note now.");
    assert_eq!(turn["tool_calls"][0]["id"], "text_call_1");
    assert_eq!(turn["tool_calls"][0]["name"], "write_file");
    let kinds = f.kinds(id);
    let pos = |k: &str| kinds.iter().position(|x| x == k).unwrap();
    assert!(
        pos("tool_call_repaired") < pos("approval_required"),
        "{kinds:?}"
    );

    let pending = f.rt.call(ops::PendingApprovals {}).unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].tool, "write_file");
    assert_eq!(pending[0].capability.as_deref(), Some("fs:write"));

    // The run goes on from what the store holds, in a new runtime.
    let data_dir = f.data_dir.clone();
    let approval = pending[0].id;
    drop(f.rt);
    let rt = Runtime::open(&data_dir).unwrap();
    rt.call(ops::ResolveApproval {
        approval_id: approval,
        answer: approve(),
    })
    .unwrap();
    let status = tokio::time::timeout(
        Duration::from_secs(30),
        rt.call(ops::WaitSettled { task_id: id }),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(status, TaskStatus::Completed);
    assert_eq!(read(&f.workspace.join("notes/hello.txt")), "hello\n");
    let started = rt
        .call(ops::TaskEvents { task_id: id })
        .unwrap()
        .into_iter()
        .find(|e| e.kind().as_str() == "tool_call_started")
        .unwrap()
        .payload();
    assert_eq!(started["call_id"], "text_call_1");
    assert_eq!(started["decision_source"], "user");

    // The model is sent its call back as a proper call, answered by its result.
    let sent = requests(&log);
    assert_eq!(sent.len(), 2);
    let assistant = sent[1].iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(assistant["content"], "I will write the note now.");
    assert_eq!(assistant["tool_calls"][0]["name"], "write_file");
    assert_eq!(
        serde_json::from_str::<Value>(assistant["tool_calls"][0]["arguments"].as_str().unwrap())
            .unwrap(),
        json!({ "path": "notes/hello.txt", "content": "hello\n" })
    );
    let result = sent[1].iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(result["tool_call_id"], "text_call_1");
}

#[tokio::test]
async fn a_call_that_cannot_be_read_is_told_to_the_model_and_the_run_completes() {
    let f = Fixture::new();
    std::fs::write(f.ws("a.txt"), "alpha\n").unwrap();
    let log = f.dir.path().join("requests.jsonl");
    let broken =
        "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\",}}</tool_call>";
    let fixed =
        "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}</tool_call>";
    let p = f.script(
        "text_broken.json",
        json!({ "requests_log": log, "turns": [
            { "text": broken }, { "text": fixed }, { "text": "It says alpha." }
        ] }),
    );
    let id = f.submit("read a.txt", &p);
    assert_eq!(f.settle(id).await, TaskStatus::Completed);

    let failed = f.event(id, "tool_call_failed").payload();
    assert_eq!(failed["kind"], "invalid_arguments");
    assert!(
        failed["error"]
            .as_str()
            .unwrap()
            .starts_with("arguments are not valid JSON: "),
        "{failed}"
    );
    // Nothing is repaired from the broken turn; the second turn's call ran.
    let repaired: Vec<Value> =
        f.rt.call(ops::TaskEvents { task_id: id })
            .unwrap()
            .into_iter()
            .filter(|e| e.kind().as_str() == "tool_call_repaired")
            .map(|e| e.payload())
            .collect();
    assert_eq!(repaired.len(), 1);
    assert_eq!(repaired[0]["original"], fixed);
    assert_eq!(
        f.event(id, "tool_call_completed").payload()["output"],
        "alpha\n"
    );
    assert_eq!(
        f.rt.call(ops::GetTask { id })
            .unwrap()
            .final_answer
            .as_deref(),
        Some("It says alpha.")
    );

    // The model read what was wrong, beside what it wrote.
    let sent = requests(&log);
    assert_eq!(sent.len(), 3);
    let second = &sent[1];
    let assistant = second.iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(assistant["content"], broken);
    let told = second.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(told["tool_call_id"], assistant["tool_calls"][0]["id"]);
    assert!(
        told["content"]
            .as_str()
            .unwrap()
            .contains("Tool read_file failed: arguments are not valid JSON"),
        "{told}"
    );
}

#[tokio::test]
async fn a_call_only_mentioned_in_the_answer_never_runs() {
    let f = Fixture::new();
    let answer = "I could write it, for example:\n\n```json\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"x.txt\", \"content\": \"x\"}}\n```";
    let p = f.script("mention.json", json!([{ "text": answer }]));
    let id = f.submit("explain", &p);
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    let kinds = f.kinds(id);
    for k in [
        "tool_call_repaired",
        "approval_required",
        "tool_call_started",
        "tool_call_failed",
    ] {
        assert!(!kinds.iter().any(|x| x == k), "{k} in {kinds:?}");
    }
    assert_eq!(
        f.rt.call(ops::GetTask { id })
            .unwrap()
            .final_answer
            .as_deref(),
        Some(answer)
    );
    assert!(!f.ws("x.txt").exists());
}
