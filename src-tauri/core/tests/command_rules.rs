//! Command rules in the approval path: "for this session" on a command approval keeps a
//! session command rule (not a capability grant), "Always allow" keeps a workspace rule,
//! a capability grant still covers every command, and deny wins over all of them.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use pocketpilot_core::ops;
use pocketpilot_test_support as support;

use pocketpilot_core::{ApprovalAnswer, TaskStatus};
use pocketpilot_protocol::{CommandRuleKind, CommandRuleOrigin, CommandRuleScope, KeepRules};
use serde_json::json;
use support::*;

fn approve() -> ApprovalAnswer {
    ApprovalAnswer {
        approve: true,
        by: "test".into(),
        ..Default::default()
    }
}

fn commands(f: &Fixture, name: &str, commands: &[&str]) -> String {
    let mut turns: Vec<_> = commands
        .iter()
        .map(
            |c| json!({ "tool_calls": [{ "name": "run_command", "arguments": { "command": c } }] }),
        )
        .collect();
    turns.push(json!({ "text": "ok" }));
    f.script(name, json!(turns))
}

fn sources(f: &Fixture, id: i64) -> Vec<String> {
    f.rt.call(ops::TaskEvents { task_id: id })
        .unwrap()
        .into_iter()
        .filter(|e| e.kind().as_str() == "tool_call_started")
        .map(|e| e.payload()["decision_source"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn for_this_session_keeps_a_command_rule_that_covers_that_command_only() {
    let f = Fixture::new();
    let p = commands(&f, "s.json", &["echo one", "echo two", "ls", "echo three"]);
    let id = f.submit("echo", &p);
    assert_eq!(f.settle(id).await, TaskStatus::WaitingApproval);
    let first = f.rt.call(ops::PendingApprovals {}).unwrap().remove(0);
    let offer =
        f.rt.call(ops::GetCommandOffer {
            approval_id: first.id,
        })
        .unwrap()
        .unwrap();
    assert_eq!(offer.part, "echo one");
    assert_eq!(offer.suggested, ["echo one *"]);
    // The window offers `echo *`-style rules; the person keeps a broader one here.
    let keep = KeepRules {
        scope: CommandRuleScope::Session,
        rules: vec!["echo *".into()],
    };
    f.rt.call(ops::ResolveApprovalKeeping {
        approval_id: first.id,
        answer: approve(),
        keep: Some(keep),
    })
    .unwrap();
    // `echo two` runs without asking; `ls` is not covered and asks.
    assert_eq!(f.settle(id).await, TaskStatus::WaitingApproval);
    let next = f.rt.call(ops::PendingApprovals {}).unwrap().remove(0);
    assert_eq!(next.arguments["command"], "ls");
    assert!(next.reason.contains("`ls` has no rule"), "{}", next.reason);
    assert_eq!(sources(&f, id), ["user", "command_rule"]);
    let session = f.rt.call(ops::GetTask { id }).unwrap().session_id;
    let grants =
        f.rt.store_for_tests()
            .read(|c| pocketpilot_core::store::sessions::grants(c, session))
            .unwrap();
    assert!(grants.is_empty(), "no capability grant: {grants:?}");
    let rules =
        f.rt.call(ops::ListCommandRules {
            workspace: Some(f.workspace.to_str().unwrap().to_string()),
        })
        .unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0].session_id, Some(session));
    assert_eq!(rules[0].origin, CommandRuleOrigin::Session);

    // The capability-wide grant ("Allow every shell command for this session") still
    // means what it meant: `echo three` runs under it.
    let mut all = approve();
    all.session_grant = true;
    f.answer(next.id, all);
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    assert_eq!(
        sources(&f, id),
        ["user", "command_rule", "user", "session_grant"]
    );

    // Another session of the workspace does not inherit the session rule.
    let other = f.submit("echo", &commands(&f, "o.json", &["echo four"]));
    assert_eq!(f.settle(other).await, TaskStatus::WaitingApproval);
}

#[tokio::test]
async fn always_allow_keeps_a_workspace_rule_and_a_deny_rule_wins_over_an_approval() {
    let f = Fixture::new();
    let ws = f.workspace.to_str().unwrap().to_owned();
    let p = commands(&f, "w.json", &["echo a > a.txt && echo b"]);
    let id = f.submit("echo", &p);
    assert_eq!(f.settle(id).await, TaskStatus::WaitingApproval);
    let a = f.rt.call(ops::PendingApprovals {}).unwrap().remove(0);
    // A redirection to a file: no rule could cover it, so none is offered.
    let offer =
        f.rt.call(ops::GetCommandOffer { approval_id: a.id })
            .unwrap()
            .unwrap();
    assert!(offer.suggested.is_empty(), "{offer:?}");
    // A rule kept from an approval must read as one.
    let bad = KeepRules {
        scope: CommandRuleScope::Workspace,
        rules: vec!["echo $(x)".into()],
    };
    assert!(f
        .rt
        .call(ops::ResolveApprovalKeeping {
            approval_id: a.id,
            answer: approve(),
            keep: Some(bad)
        })
        .is_err());
    // Deny added while the approval waits: approving does not run it.
    f.rt.call(ops::AddCommandRule {
        workspace: ws.to_string(),
        kind: CommandRuleKind::Deny,
        rule: "echo a *".into(),
    })
    .unwrap();
    f.answer(a.id, approve());
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    assert!(!f.ws("a.txt").exists());
    let failed = f.event(id, "tool_call_failed");
    assert!(failed.payload()["error"]
        .as_str()
        .unwrap()
        .contains("the deny rule `echo a *`"));

    let p = commands(&f, "k.json", &["git status", "git status -s"]);
    let id = f.submit("git", &p);
    assert_eq!(f.settle(id).await, TaskStatus::WaitingApproval);
    let a = f.rt.call(ops::PendingApprovals {}).unwrap().remove(0);
    let offer =
        f.rt.call(ops::GetCommandOffer { approval_id: a.id })
            .unwrap()
            .unwrap();
    assert_eq!(offer.suggested, ["git status *"]);
    let keep = KeepRules {
        scope: CommandRuleScope::Workspace,
        rules: offer.suggested,
    };
    f.rt.call(ops::ResolveApprovalKeeping {
        approval_id: a.id,
        answer: approve(),
        keep: Some(keep),
    })
    .unwrap();
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    assert_eq!(sources(&f, id), ["user", "command_rule"]);
    let kept =
        f.rt.call(ops::ListCommandRules {
            workspace: Some(ws.to_string()),
        })
        .unwrap();
    assert!(kept.iter().any(|r| r.rule == "git status *"
        && r.session_id.is_none()
        && r.origin == CommandRuleOrigin::Person));
}
