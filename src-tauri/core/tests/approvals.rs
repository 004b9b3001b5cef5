//! Approvals stop the run before the effect, and resume it after the person's answer.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use pocketpilot_core::ops;
use pocketpilot_test_support as support;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use pocketpilot_core::config::{workspace_rules_key, Limits};
use pocketpilot_core::store::settings;
use pocketpilot_core::{ApprovalAnswer, Runtime, TaskStatus};
use pocketpilot_tools::PolicyRules;
use serde_json::json;
use support::*;

fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            for (k, v) in snapshot(&p) {
                out.insert(format!("{}/{k}", p.display()), v);
            }
        } else {
            out.insert(p.display().to_string(), std::fs::read(&p).unwrap());
        }
    }
    out
}

fn write_script(f: &Fixture) -> String {
    f.script(
        "write.json",
        json!([
            { "text": "I will write it.", "tool_calls": [{ "name": "write_file", "arguments": { "path": "notes/hello.txt", "content": "hello\n" } }] },
            { "text": "Done." }
        ]),
    )
}

fn approve() -> ApprovalAnswer {
    ApprovalAnswer {
        approve: true,
        by: "test".into(),
        ..Default::default()
    }
}

#[tokio::test]
async fn counts_say_what_is_running_and_what_waits_for_a_person() {
    let f = Fixture::new();
    let zero = f.rt.call(ops::GetCounts {}).unwrap();
    assert_eq!((zero.running, zero.waiting_approval), (0, 0));
    let waiting = f.submit("write hello", &write_script(&f));
    assert_eq!(f.settle(waiting).await, TaskStatus::WaitingApproval);
    // Created and not started yet (no worker): counted as running, as the tray shows it.
    let queued =
        f.rt.call(ops::CreateTask {
            new: f.task("later", &write_script(&f)),
        })
        .unwrap();
    assert_eq!(
        f.rt.call(ops::GetTask { id: queued }).unwrap().status,
        TaskStatus::Queued
    );
    let c = f.rt.call(ops::GetCounts {}).unwrap();
    assert_eq!((c.running, c.waiting_approval), (1, 1));
    f.answer(
        f.rt.call(ops::PendingApprovals {}).unwrap()[0].id,
        approve(),
    );
    assert_eq!(f.settle(waiting).await, TaskStatus::Completed);
    f.rt.call(ops::CancelTask { task_id: queued }).unwrap();
    let c = f.rt.call(ops::GetCounts {}).unwrap();
    assert_eq!((c.running, c.waiting_approval), (0, 0));
}

#[tokio::test]
async fn a_write_waits_for_approval_before_touching_disk_then_runs_when_approved() {
    let f = Fixture::new();
    let id = f.submit("write hello", &write_script(&f));
    assert_eq!(f.settle(id).await, TaskStatus::WaitingApproval);
    assert!(
        !f.ws("notes").exists(),
        "nothing may be written before approval"
    );
    let pending = f.rt.call(ops::PendingApprovals {}).unwrap();
    assert_eq!(pending.len(), 1);
    let a = &pending[0];
    assert_eq!(a.tool, "write_file");
    assert_eq!(a.capability.as_deref(), Some("fs:write"));
    assert_eq!(serde_json::to_value(&a.effect).unwrap()["kind"], "diff");
    assert!(
        serde_json::to_value(&a.effect).unwrap()["diff"]
            .as_str()
            .unwrap()
            .contains("+hello"),
        "{:?}",
        a.effect
    );
    assert!(!f.kinds(id).contains(&"tool_call_started".to_string()));

    f.answer(a.id, approve());
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    assert_eq!(read(&f.ws("notes/hello.txt")), "hello\n");
    let kinds = f.kinds(id);
    let pos = |k: &str| kinds.iter().position(|x| x == k).unwrap();
    assert!(pos("approval_required") < pos("approval_resolved"));
    assert!(pos("approval_resolved") < pos("tool_call_started"));
    let started = f.event(id, "tool_call_started");
    assert_eq!(started.payload()["decision_source"], "user");
    assert_eq!(
        f.rt.call(ops::GetTask { id })
            .unwrap()
            .final_answer
            .as_deref(),
        Some("Done.")
    );
    // Answering twice is refused, not done twice.
    assert_eq!(
        f.rt.call(ops::ResolveApproval {
            approval_id: a.id,
            answer: approve()
        })
        .unwrap_err()
        .kind()
        .as_str(),
        "not_pending"
    );
}

#[tokio::test]
async fn rejecting_leaves_the_workspace_byte_identical_and_tells_the_model() {
    let f = Fixture::new();
    std::fs::write(f.ws("keep.txt"), "original").unwrap();
    let before = snapshot(&f.workspace);
    let id = f.submit("write hello", &write_script(&f));
    assert_eq!(f.settle(id).await, TaskStatus::WaitingApproval);
    let a = f.rt.call(ops::PendingApprovals {}).unwrap().remove(0);
    f.answer(
        a.id,
        ApprovalAnswer {
            approve: false,
            note: Some("not now".into()),
            by: "test".into(),
            ..Default::default()
        },
    );
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    assert_eq!(snapshot(&f.workspace), before);
    let failed = f.event(id, "tool_call_failed");
    assert_eq!(failed.payload()["kind"], "rejected");
    assert_eq!(failed.payload()["error"], "rejected by the user: not now");
}

#[tokio::test]
async fn edited_arguments_run_instead_and_are_guarded_again() {
    let f = Fixture::new();
    let id = f.submit("write hello", &write_script(&f));
    assert_eq!(f.settle(id).await, TaskStatus::WaitingApproval);
    let a = f.rt.call(ops::PendingApprovals {}).unwrap().remove(0);
    let mut answer = approve();
    answer.edited_arguments = Some(json!({ "path": "notes/edited.txt", "content": "edited\n" }));
    f.answer(a.id, answer);
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    assert_eq!(read(&f.ws("notes/edited.txt")), "edited\n");
    assert!(!f.ws("notes/hello.txt").exists());

    // An edit that points outside the workspace is stopped by the guard at run time.
    let outside = f.dir.path().join("outside.txt");
    let id = f.submit("write again", &write_script(&f));
    assert_eq!(f.settle(id).await, TaskStatus::WaitingApproval);
    let a = f.rt.call(ops::PendingApprovals {}).unwrap().remove(0);
    let mut answer = approve();
    answer.edited_arguments =
        Some(json!({ "path": outside.display().to_string(), "content": "escape" }));
    f.answer(a.id, answer);
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    assert!(!outside.exists());
    let failed = f.event(id, "tool_call_failed");
    assert_eq!(
        failed.payload()["kind"],
        "path_rejected",
        "{}",
        failed.payload()
    );
}

#[tokio::test]
async fn a_session_grant_covers_its_capability_and_nothing_else() {
    let f = Fixture::new();
    let p = f.script(
        "grant.json",
        json!([
            { "tool_calls": [{ "name": "write_file", "arguments": { "path": "a.txt", "content": "a" } }] },
            { "tool_calls": [{ "name": "write_file", "arguments": { "path": "b.txt", "content": "b" } }] },
            { "tool_calls": [{ "name": "run_command", "arguments": { "command": "echo hi > c.txt" } }] },
            { "text": "ok" }
        ]),
    );
    let id = f.submit("three steps", &p);
    assert_eq!(f.settle(id).await, TaskStatus::WaitingApproval);
    let a = f.rt.call(ops::PendingApprovals {}).unwrap().remove(0);
    let mut answer = approve();
    answer.session_grant = true;
    f.answer(a.id, answer);
    // The second write needs no approval; the command does.
    assert_eq!(f.settle(id).await, TaskStatus::WaitingApproval);
    assert_eq!(read(&f.ws("b.txt")), "b");
    let next = f.rt.call(ops::PendingApprovals {}).unwrap().remove(0);
    assert_eq!(next.tool, "run_command");
    assert_eq!(
        serde_json::to_value(&next.effect).unwrap()["kind"],
        "command"
    );
    assert_eq!(
        serde_json::to_value(&next.effect).unwrap()["command"],
        "echo hi > c.txt"
    );
    assert!(!f.ws("c.txt").exists());
    let second_write =
        f.rt.call(ops::TaskEvents { task_id: id })
            .unwrap()
            .into_iter()
            .filter(|e| e.kind().as_str() == "tool_call_started")
            .nth(1)
            .unwrap();
    assert_eq!(second_write.payload()["decision_source"], "session_grant");
    f.answer(next.id, approve());
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    assert_eq!(read(&f.ws("c.txt")), "hi\n");
}

#[tokio::test]
async fn allow_on_the_command_line_is_recorded_as_the_users_decision() {
    let f = Fixture::new();
    let mut t = f.task("write hello", &write_script(&f));
    t.grants = vec![pocketpilot_protocol::Capability::FS_WRITE];
    let id = f.rt.call(ops::SubmitTask { new: t.clone() }).unwrap();
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    assert_eq!(read(&f.ws("notes/hello.txt")), "hello\n");
    let started = f.event(id, "tool_call_started");
    assert_eq!(started.payload()["decision"], "allow");
    assert_eq!(started.payload()["decision_source"], "user");
}

#[tokio::test]
async fn a_workspace_deny_rule_beats_every_allow() {
    let f = Fixture::new();
    let ws = std::fs::canonicalize(&f.workspace)
        .unwrap()
        .display()
        .to_string();
    let rules = PolicyRules {
        allow: vec!["fs:write".into()],
        deny: vec!["fs".into()],
    };
    f.rt.store_for_tests()
        .write(|c| settings::set(c, &workspace_rules_key(&ws), &rules))
        .unwrap();
    let mut t = f.task("write hello", &write_script(&f));
    t.grants = vec![pocketpilot_protocol::Capability::FS_WRITE];
    let id = f.rt.call(ops::SubmitTask { new: t.clone() }).unwrap();
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    assert!(!f.ws("notes").exists());
    let failed = f.event(id, "tool_call_failed");
    assert_eq!(failed.payload()["kind"], "denied");
    assert!(f.rt.call(ops::PendingApprovals {}).unwrap().is_empty());
}

#[tokio::test]
async fn a_pending_approval_survives_a_restart_and_waiting_costs_no_budget() {
    let f = Fixture::with_limits(Limits {
        max_task_seconds: 2,
        ..Limits::default()
    });
    let id = f.submit("write hello", &write_script(&f));
    assert_eq!(f.settle(id).await, TaskStatus::WaitingApproval);
    let data_dir = f.data_dir.clone();
    drop(f.rt);
    // Longer than the whole seconds budget: waiting must not count.
    // sleep: the wall clock has to pass the task's seconds budget while it waits, to show waiting is not counted.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let rt = Runtime::open(&data_dir).unwrap();
    let pending = rt.call(ops::PendingApprovals {}).unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(
        rt.call(ops::GetTask { id }).unwrap().status,
        TaskStatus::WaitingApproval
    );
    rt.call(ops::ResolveApproval {
        approval_id: pending[0].id,
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
}

#[tokio::test]
async fn cancelling_a_waiting_task_ends_it_and_nothing_runs() {
    let f = Fixture::new();
    let id = f.submit("write hello", &write_script(&f));
    assert_eq!(f.settle(id).await, TaskStatus::WaitingApproval);
    f.rt.call(ops::CancelTask { task_id: id }).unwrap();
    assert_eq!(
        f.rt.call(ops::GetTask { id }).unwrap().status,
        TaskStatus::Cancelled
    );
    assert!(!f.ws("notes").exists());
}

#[tokio::test]
async fn bad_tool_input_is_a_tool_error_the_run_survives_and_nothing_is_written() {
    let f = Fixture::new();
    std::fs::write(f.ws("blob.bin"), [0u8, 159, 146, 150, 0, 1, 2]).unwrap();
    let huge = "x".repeat(3 * 1024 * 1024);
    let p = f.script(
        "bad.json",
        json!([
            { "tool_calls": [
                { "name": "read_file", "arguments": { "path": "bad\u{0}name" } },
                { "name": "read_file", "arguments": { "path": "blob.bin" } },
                { "name": "read_file", "arguments": { "path": "a.txt", "surprise": true } },
                { "name": "write_file", "arguments": { "path": "big.txt", "content": huge } },
                { "name": "write_file", "arguments": { "path": "../escape.txt", "content": "x" } },
                { "name": "list_dir", "arguments": { "path": "/etc" } }
            ] },
            { "text": "I could not do any of that." }
        ]),
    );
    let id = f.submit("try bad things", &p);
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    let kinds: Vec<String> =
        f.rt.call(ops::TaskEvents { task_id: id })
            .unwrap()
            .into_iter()
            .filter(|e| e.kind().as_str() == "tool_call_failed")
            .map(|e| e.payload()["kind"].as_str().unwrap().to_owned())
            .collect();
    assert_eq!(kinds.len(), 6, "{kinds:?}");
    assert!(
        f.rt.call(ops::PendingApprovals {}).unwrap().is_empty(),
        "nothing invalid may reach a person"
    );
    assert!(!f.ws("big.txt").exists());
    assert!(!f.dir.path().join("escape.txt").exists());
}

/// Turn 1 runs call `c1` (a read, allowed); turn 2 repeats the id `c1` for a write that
/// needs approval: it is another call, and the person's answer decides it.
fn reused_id_script(f: &Fixture) -> String {
    std::fs::write(f.ws("seen.txt"), "seen").unwrap();
    f.script(
        "reused.json",
        json!([
            { "tool_calls": [{ "id": "c1", "name": "read_file", "arguments": { "path": "seen.txt" } }] },
            { "tool_calls": [{ "id": "c1", "name": "write_file", "arguments": { "path": "out.txt", "content": "second" } }] },
            { "text": "Done." }
        ]),
    )
}

#[tokio::test]
async fn a_call_id_the_model_reuses_in_a_later_turn_is_a_new_call_approved() {
    let f = Fixture::new();
    let id = f.submit("reuse", &reused_id_script(&f));
    assert_eq!(f.settle(id).await, TaskStatus::WaitingApproval);
    let a = f.rt.call(ops::PendingApprovals {}).unwrap().remove(0);
    assert_eq!(
        (a.tool.as_str(), a.call_id.as_str(), a.step),
        ("write_file", "c1", 2)
    );
    f.answer(a.id, approve());
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    assert_eq!(read(&f.ws("out.txt")), "second");
    assert!(f.rt.call(ops::PendingApprovals {}).unwrap().is_empty());
    let asked = f
        .kinds(id)
        .iter()
        .filter(|k| *k == "approval_required")
        .count();
    assert_eq!(asked, 1, "the answer was not taken: asked again");
    let journal =
        f.rt.store_for_tests()
            .read(|c| pocketpilot_core::store::tool_calls::list(c, id))
            .unwrap();
    let rows: Vec<(i64, &str, &str)> = journal
        .iter()
        .map(|j| (j.step, j.call_id.as_str(), j.name.as_str()))
        .collect();
    assert_eq!(rows, [(1, "c1", "read_file"), (2, "c1", "write_file")]);
    assert_eq!(journal[0].output.as_deref(), Some("seen"));
}

#[tokio::test]
async fn a_call_id_the_model_reuses_in_a_later_turn_is_a_new_call_rejected() {
    let f = Fixture::new();
    let id = f.submit("reuse", &reused_id_script(&f));
    assert_eq!(f.settle(id).await, TaskStatus::WaitingApproval);
    let a = f.rt.call(ops::PendingApprovals {}).unwrap().remove(0);
    let no = ApprovalAnswer {
        approve: false,
        note: Some("no".into()),
        by: "test".into(),
        ..Default::default()
    };
    f.answer(a.id, no);
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    assert!(!f.ws("out.txt").exists());
    assert_eq!(
        f.event(id, "tool_call_failed").payload()["kind"],
        "rejected"
    );
    let asked = f
        .kinds(id)
        .iter()
        .filter(|k| *k == "approval_required")
        .count();
    assert_eq!(asked, 1, "the answer was not taken: asked again");
}

/// The person is shown a diff against the file; the file changes on disk before they
/// answer. Approving does not write under that approval: the call is asked again with the
/// diff it would apply now, and only that second answer writes.
#[tokio::test]
async fn an_edit_whose_file_changed_after_the_approval_was_asked_is_asked_again() {
    let f = Fixture::new();
    std::fs::write(f.ws("conf.txt"), "mode = safe\nlimit = 1\n").unwrap();
    let p = f.script(
        "edit.json",
        json!([
            { "tool_calls": [{ "name": "edit_file", "arguments": { "path": "conf.txt",
                "edits": [{ "old_text": "limit = 1", "new_text": "limit = 2" }] } }] },
            { "text": "Edited." }
        ]),
    );
    let id = f.submit("edit", &p);
    assert_eq!(f.settle(id).await, TaskStatus::WaitingApproval);
    let first = f.rt.call(ops::PendingApprovals {}).unwrap().remove(0);
    let diff = |a: &pocketpilot_core::store::Approval| {
        serde_json::to_value(&a.effect).unwrap()["diff"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert!(diff(&first).contains(" mode = safe"), "{}", diff(&first));
    // Changed on disk between the request and the answer.
    let changed = "mode = unsafe\nlimit = 1\n";
    std::fs::write(f.ws("conf.txt"), changed).unwrap();
    f.answer(first.id, approve());
    assert_eq!(f.settle(id).await, TaskStatus::WaitingApproval);
    assert_eq!(
        read(&f.ws("conf.txt")),
        changed,
        "written under the old approval"
    );
    assert!(!f.kinds(id).contains(&"tool_call_started".to_string()));
    let second = f.rt.call(ops::PendingApprovals {}).unwrap().remove(0);
    assert_ne!(second.id, first.id);
    assert_eq!(
        (second.call_id.as_str(), second.step),
        (first.call_id.as_str(), first.step)
    );
    assert!(
        diff(&second).contains(" mode = unsafe"),
        "{}",
        diff(&second)
    );
    assert!(second.reason.contains("changed"), "{}", second.reason);
    f.answer(second.id, approve());
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    assert_eq!(read(&f.ws("conf.txt")), "mode = unsafe\nlimit = 2\n");
}

/// A write approved as creating a file does not overwrite one that appeared since: the
/// approval pins the file's state (absent, or its hash).
#[tokio::test]
async fn a_write_whose_file_changed_anywhere_is_asked_again() {
    let f = Fixture::new();
    let p = f.script(
        "write.json",
        json!([
            { "tool_calls": [{ "name": "write_file", "arguments": { "path": "new.txt", "content": "mine\n" } }] },
            { "text": "Written." }
        ]),
    );
    let id = f.submit("write", &p);
    assert_eq!(f.settle(id).await, TaskStatus::WaitingApproval);
    let first = f.rt.call(ops::PendingApprovals {}).unwrap().remove(0);
    // The file did not exist when asked; now it does.
    std::fs::write(f.ws("new.txt"), "someone else's\n").unwrap();
    f.answer(first.id, approve());
    assert_eq!(f.settle(id).await, TaskStatus::WaitingApproval);
    assert_eq!(read(&f.ws("new.txt")), "someone else's\n");
    let second = f.rt.call(ops::PendingApprovals {}).unwrap().remove(0);
    let effect = serde_json::to_value(&second.effect).unwrap();
    assert!(
        effect["diff"].as_str().unwrap().contains("-someone else's"),
        "{effect}"
    );
    assert!(effect["base_sha256"].is_string(), "{effect}");
    let no = ApprovalAnswer {
        approve: false,
        by: "test".into(),
        ..Default::default()
    };
    f.answer(second.id, no);
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    assert_eq!(read(&f.ws("new.txt")), "someone else's\n");
}
