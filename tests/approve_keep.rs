//! `pocketpilot approve --always` / `--for-session` through the real binary: approving a
//! command keeps the rules the approval suggested (or the one named with `--rule`) for the
//! workspace or the session, so the next such command runs without asking; a write's
//! approval has no rule to keep and is left pending.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod support;

use serde_json::{json, Value};
use support::{text, Harness};

/// The shared harness, with what these tests add to it.
struct Env(Harness);

impl std::ops::Deref for Env {
    type Target = Harness;
    fn deref(&self) -> &Harness {
        &self.0
    }
}

impl Env {
    fn new() -> Self {
        Self(Harness::new(&[]))
    }
    fn ws(&self) -> String {
        self.dir.path().join("ws").display().to_string()
    }
    /// A run whose one call is `call`; its exit code.
    fn agent(&self, name: &str, call: Value, session: Option<&str>) -> i32 {
        let p = self.dir.path().join(name);
        std::fs::write(
            &p,
            json!([{ "tool_calls": [call] }, { "text": "Done." }]).to_string(),
        )
        .unwrap();
        let provider = format!("scripted:{}", p.display());
        let ws = self.ws();
        let mut args = vec!["run", "--goal", "go", "--provider", &provider];
        match session {
            Some(s) => args.extend(["--session", s]),
            None => args.extend(["--workspace", &ws]),
        }
        self.output(&args).status.code().unwrap_or(-1)
    }
    fn pending(&self) -> Vec<Value> {
        self.json(&["approvals", "--json"])
            .as_array()
            .unwrap()
            .clone()
    }
}

fn command(c: &str) -> Value {
    json!({ "name": "run_command", "arguments": { "command": c } })
}

#[test]
fn approve_always_keeps_the_suggested_rule_for_the_workspace() {
    let e = Env::new();
    assert_eq!(e.agent("a.json", command("touch a.txt"), None), 3);
    let id = e.pending()[0]["id"].to_string();
    let out = e.output(&["approve", &id, "--always"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("keeping `touch *` in this workspace"),
        "{}",
        text(&out.stderr)
    );
    let rules = e.json(&["policy", "list", "--workspace", &e.ws(), "--json"]);
    assert_eq!(rules.as_array().unwrap().len(), 1);
    assert_eq!(rules[0]["rule"], "touch *");
    assert_eq!(rules[0]["origin"], "person");
    assert_eq!(rules[0]["session_id"], Value::Null);
    // A new session of the workspace: the kept rule covers it.
    assert_eq!(e.agent("b.json", command("touch b.txt"), None), 0);
    assert!(e.pending().is_empty());
}

#[test]
fn approve_for_session_keeps_a_named_rule_for_that_session_only() {
    let e = Env::new();
    // One script for the session's runs: the scripted model plays the turn the session's
    // transcript is at.
    let p = e.dir.path().join("session.json");
    let turns = json!([
        { "tool_calls": [command("touch a.txt")] }, { "text": "Done." },
        { "tool_calls": [command("touch a.txt")] }, { "text": "Done." },
        { "tool_calls": [command("touch c.txt")] }, { "text": "Done." }
    ]);
    std::fs::write(&p, turns.to_string()).unwrap();
    let provider = format!("scripted:{}", p.display());
    let ws = e.ws();
    let first = e.output(&[
        "run",
        "--workspace",
        &ws,
        "--goal",
        "go",
        "--provider",
        &provider,
    ]);
    assert_eq!(first.status.code(), Some(3));
    let session = e.json(&["tasks", "--json"])[0]["session_id"].to_string();
    let id = e.pending()[0]["id"].to_string();
    let out = e.output(&["approve", &id, "--for-session", "--rule", "touch a.txt"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rules = e.json(&["policy", "list", "--workspace", &ws, "--json"]);
    assert_eq!(rules[0]["rule"], "touch a.txt");
    assert_eq!(rules[0]["origin"], "session");
    assert_eq!(rules[0]["session_id"].to_string(), session);
    // The same command in that session runs; another command asks.
    let again = [
        "run",
        "--session",
        &session,
        "--goal",
        "again",
        "--provider",
        &provider,
    ];
    assert_eq!(e.output(&again).status.code(), Some(0));
    assert_eq!(
        e.output(&again).status.code(),
        Some(3),
        "touch c.txt has no rule"
    );
    // Another session of the workspace does not have it.
    assert_eq!(e.agent("other.json", command("touch a.txt"), None), 3);
}

#[test]
fn a_write_has_no_rule_to_keep_and_stays_pending() {
    let e = Env::new();
    let write = json!({ "name": "write_file", "arguments": { "path": "n.txt", "content": "x" } });
    assert_eq!(e.agent("w.json", write, None), 3);
    let id = e.pending()[0]["id"].to_string();
    let out = e.output(&["approve", &id, "--always"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("not for a command"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(e.pending().len(), 1);
}
