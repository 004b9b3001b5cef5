//! MCP tools in real runs: the official reference servers (npm, installed by
//! `tests/setup-mcp.sh`), the scripted model, the real policy and guard.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use pocketpilot_core::ops;
use pocketpilot_test_support as support;

use std::path::PathBuf;

use pocketpilot_core::engine::mcp::{self, StoredServer};
use pocketpilot_core::{ApprovalAnswer, TaskStatus};
use pocketpilot_mcp::{McpServerConfig, McpTransport};
use pocketpilot_tools::PolicyRules;
use serde_json::json;
use support::*;

fn server_bin(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/mcp-servers/node_modules/.bin")
        .join(name);
    assert!(
        p.exists(),
        "{} is missing: run tests/setup-mcp.sh",
        p.display()
    );
    p.display().to_string()
}

fn stdio(name: &str, command: String, args: Vec<String>) -> StoredServer {
    StoredServer {
        workspace: None,
        config: McpServerConfig {
            name: name.into(),
            transport: McpTransport::Stdio {
                command,
                args,
                env: Vec::new(),
            },
            capability: None,
            tool_capabilities: Default::default(),
            allow_read_only: false,
            startup_timeout_secs: 20,
            call_timeout_secs: 20,
            secret_env: Vec::new(),
            keep_relative_paths: false,
            sandbox: Default::default(),
        },
    }
}

fn everything() -> StoredServer {
    stdio(
        "everything",
        server_bin("mcp-server-everything"),
        vec!["stdio".into()],
    )
}

#[tokio::test]
async fn an_mcp_tool_needs_approval_shows_its_call_and_runs_when_approved() {
    let f = Fixture::new();
    mcp::add(f.rt.store_for_tests(), everything()).unwrap();
    let p = f.script(
        "echo.json",
        json!([
            { "tool_calls": [{ "name": "mcp__everything__echo", "arguments": { "message": "hi from the agent" } }] },
            { "text": "The server echoed it." }
        ]),
    );
    let id = f.submit("echo", &p);
    assert_eq!(f.settle(id).await, TaskStatus::WaitingApproval);
    let a = f.rt.call(ops::PendingApprovals {}).unwrap().remove(0);
    assert_eq!(a.capability.as_deref(), Some("mcp:everything:echo:execute"));
    assert_eq!(serde_json::to_value(&a.effect).unwrap()["kind"], "command");
    assert_eq!(
        serde_json::to_value(&a.effect).unwrap()["command"],
        r#"mcp:everything:echo {"message":"hi from the agent"}"#
    );
    // issue 14: the approval says how the server process is confined.
    let asked = f.event(id, "approval_required").payload();
    assert_eq!(
        asked["sandbox"],
        pocketpilot_sandbox::probe().line(false),
        "{asked}"
    );
    f.answer(
        a.id,
        ApprovalAnswer {
            approve: true,
            by: "t".into(),
            ..Default::default()
        },
    );
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    let done = f.event(id, "tool_call_completed");
    assert_eq!(done.payload()["output"], "Echo: hi from the agent");
}

#[tokio::test]
async fn a_path_outside_the_workspace_is_stopped_before_the_server_sees_it() {
    let f = Fixture::new();
    let secret = f.dir.path().join("secret.txt");
    std::fs::write(&secret, "TOP-SECRET-CONTENT").unwrap();
    // The filesystem server itself may read the whole temp dir; the guard may not.
    mcp::add(
        f.rt.store_for_tests(),
        stdio(
            "fs",
            server_bin("mcp-server-filesystem"),
            vec![f.dir.path().display().to_string()],
        ),
    )
    .unwrap();
    let ws = std::fs::canonicalize(&f.workspace)
        .unwrap()
        .display()
        .to_string();
    f.rt.call(ops::SetPolicyRules {
        workspace: ws.to_string(),
        rules: PolicyRules {
            allow: vec!["mcp".into()],
            deny: vec![],
        },
    })
    .unwrap();
    std::fs::write(f.ws("inside.txt"), "inside").unwrap();
    let p = f.script(
        "fs.json",
        json!([
            { "tool_calls": [
                { "name": "mcp__fs__read_text_file", "arguments": { "path": secret.display().to_string() } },
                { "name": "mcp__fs__read_text_file", "arguments": { "path": "../secret.txt" } },
                { "name": "mcp__fs__read_text_file", "arguments": { "path": "inside.txt" } }
            ] },
            { "text": "done" }
        ]),
    );
    let id = f.submit("read", &p);
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    let events = f.rt.call(ops::TaskEvents { task_id: id }).unwrap();
    let failed: Vec<_> = events
        .iter()
        .filter(|e| e.kind().as_str() == "tool_call_failed")
        .collect();
    assert_eq!(failed.len(), 2, "{failed:?}");
    assert!(failed
        .iter()
        .all(|e| e.payload()["kind"] == "path_rejected"));
    let read = events
        .iter()
        .find(|e| e.kind().as_str() == "tool_call_completed")
        .unwrap();
    assert!(read.payload()["output"]
        .as_str()
        .unwrap()
        .contains("inside"));
    let all = serde_json::to_string(&events).unwrap();
    assert!(!all.contains("TOP-SECRET-CONTENT"));
}

#[tokio::test]
async fn a_broken_server_is_reported_and_the_run_goes_on_and_the_whitelist_limits_tools() {
    let f = Fixture::new();
    mcp::add(
        f.rt.store_for_tests(),
        stdio("broken", "/definitely/not/a/server".into(), vec![]),
    )
    .unwrap();
    mcp::add(f.rt.store_for_tests(), everything()).unwrap();
    let ws = std::fs::canonicalize(&f.workspace)
        .unwrap()
        .display()
        .to_string();
    f.rt.call(ops::SetPolicyRules {
        workspace: ws.to_string(),
        rules: PolicyRules {
            allow: vec!["mcp".into()],
            deny: vec![],
        },
    })
    .unwrap();
    let p = f.script(
        "sum.json",
        json!([
            { "tool_calls": [{ "name": "mcp__everything__get-sum", "arguments": { "a": 2, "b": 40 } }] },
            { "text": "42" }
        ]),
    );
    let id = f.submit("add", &p);
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    let events = f.rt.call(ops::TaskEvents { task_id: id }).unwrap();
    let problem = events
        .iter()
        .find(|e| e.kind().as_str() == "mcp_problem")
        .unwrap();
    assert_eq!(problem.payload()["server"], "broken");
    let sum = events
        .iter()
        .find(|e| e.kind().as_str() == "tool_call_completed")
        .unwrap();
    assert!(sum.payload()["output"].as_str().unwrap().contains("42"));

    // With no MCP allowed for the run, the tool is not there at all.
    let mut t = f.task("add again", &p);
    t.mcp = Some(Vec::new());
    let id = f.rt.call(ops::SubmitTask { new: t.clone() }).unwrap();
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    let failed = f.event(id, "tool_call_failed");
    assert_eq!(failed.payload()["kind"], "unknown_tool");
}

/// An approval of one of `server`'s tools: the `sandbox` line its event carries.
async fn approval_line_of(server: StoredServer) -> String {
    let f = Fixture::new();
    mcp::add(f.rt.store_for_tests(), server).unwrap();
    let p = f.script(
        "echo.json",
        json!([
            { "tool_calls": [{ "name": "mcp__everything__echo", "arguments": { "message": "x" } }] },
            { "text": "done" }
        ]),
    );
    let id = f.submit("echo", &p);
    assert_eq!(f.settle(id).await, TaskStatus::WaitingApproval);
    let asked = f.event(id, "approval_required").payload();
    asked["sandbox"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn an_mcp_approval_names_the_servers_widened_sandbox_and_says_not_sandboxed_when_it_is_off() {
    let extra = tempfile::tempdir().unwrap();
    let mut widened = everything();
    widened.config.sandbox.network = true;
    widened.config.sandbox.extra_read = vec![extra.path().to_path_buf()];
    let line = approval_line_of(widened).await;
    let status = pocketpilot_sandbox::probe();
    if status.is_sandboxed() {
        assert_eq!(
            line,
            format!(
                "sandboxed: writes in the workspace only, network allowed; widened by the server's configuration: read {}",
                extra.path().display()
            )
        );
    } else {
        assert_eq!(line, status.line(true));
    }

    let mut off = everything();
    off.config.sandbox.off = true;
    let line = approval_line_of(off).await;
    assert_eq!(
        line,
        "NOT sandboxed: this MCP server's configuration turns its sandbox off"
    );
}

/// A session grant given for one MCP tool covers that tool only: another tool of the same
/// server still asks (issue 15: all of a server's tools shared `mcp:execute`).
#[tokio::test]
async fn a_session_grant_for_one_mcp_tool_covers_no_other_tool_of_its_server() {
    let f = Fixture::new();
    mcp::add(f.rt.store_for_tests(), everything()).unwrap();
    let p = f.script(
        "grant.json",
        json!([
            { "tool_calls": [{ "name": "mcp__everything__echo", "arguments": { "message": "one" } }] },
            { "tool_calls": [{ "name": "mcp__everything__echo", "arguments": { "message": "two" } }] },
            { "tool_calls": [{ "name": "mcp__everything__get-env", "arguments": {} }] },
            { "text": "done" }
        ]),
    );
    let id = f.submit("grant", &p);
    assert_eq!(f.settle(id).await, TaskStatus::WaitingApproval);
    let a = f.rt.call(ops::PendingApprovals {}).unwrap().remove(0);
    assert_eq!(a.tool, "mcp__everything__echo");
    let answer = ApprovalAnswer {
        approve: true,
        session_grant: true,
        by: "t".into(),
        ..Default::default()
    };
    f.answer(a.id, answer);
    // The second echo runs under the grant; get-env must ask.
    assert_eq!(f.settle(id).await, TaskStatus::WaitingApproval);
    let next = f.rt.call(ops::PendingApprovals {}).unwrap().remove(0);
    assert_eq!(next.tool, "mcp__everything__get-env");
    assert_eq!(
        next.capability.as_deref(),
        Some("mcp:everything:get-env:execute")
    );
    let sources: Vec<String> =
        f.rt.call(ops::TaskEvents { task_id: id })
            .unwrap()
            .into_iter()
            .filter(|e| e.kind().as_str() == "tool_call_started")
            .map(|e| e.payload()["decision_source"].as_str().unwrap().to_owned())
            .collect();
    assert_eq!(sources, ["user", "session_grant"]);
    f.answer(
        next.id,
        ApprovalAnswer {
            approve: false,
            by: "t".into(),
            ..Default::default()
        },
    );
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
}

/// A server-wide rule is an explicit choice: `mcp:<server>:*` allows every tool of that
/// server, and a rule naming one tool allows that tool only.
#[tokio::test]
async fn rules_name_one_mcp_tool_or_its_whole_server() {
    let f = Fixture::new();
    mcp::add(f.rt.store_for_tests(), everything()).unwrap();
    let ws = std::fs::canonicalize(&f.workspace)
        .unwrap()
        .display()
        .to_string();
    let calls = json!([
        { "tool_calls": [{ "name": "mcp__everything__echo", "arguments": { "message": "one" } }] },
        { "tool_calls": [{ "name": "mcp__everything__get-env", "arguments": {} }] },
        { "text": "done" }
    ]);
    f.rt.call(ops::SetPolicyRules {
        workspace: ws.to_string(),
        rules: PolicyRules {
            allow: vec!["mcp:everything:echo".into()],
            deny: vec![],
        },
    })
    .unwrap();
    let id = f.submit("one tool", &f.script("one.json", calls.clone()));
    assert_eq!(f.settle(id).await, TaskStatus::WaitingApproval);
    assert_eq!(
        f.rt.call(ops::PendingApprovals {}).unwrap()[0].tool,
        "mcp__everything__get-env"
    );
    f.rt.call(ops::CancelTask { task_id: id }).unwrap();
    f.settle(id).await;
    f.rt.call(ops::SetPolicyRules {
        workspace: ws.to_string(),
        rules: PolicyRules {
            allow: vec!["mcp:everything:*".into()],
            deny: vec![],
        },
    })
    .unwrap();
    let t = f.task("the server", &f.script("all.json", calls));
    let id = f.rt.call(ops::SubmitTask { new: t.clone() }).unwrap();
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    assert!(!f.kinds(id).contains(&"approval_required".to_string()));
}
