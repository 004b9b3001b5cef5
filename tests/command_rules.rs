//! Command rules through the real binary: a rule added with `pocketpilot policy add`, a
//! scripted run whose covered command runs without an approval, a compound command with
//! an uncovered part that asks (naming the part), the same refused once `rm` is denied,
//! and `policy explain` saying why, all read back from the store through the CLI.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod support;

use serde_json::{json, Value};
use support::{of_type, text, Harness};

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
        let h = Harness::new(&[]);
        std::fs::create_dir_all(h.ws().join("y")).unwrap();
        Self(h)
    }
    fn ws_arg(&self) -> String {
        self.ws().display().to_string()
    }
    fn script(&self, name: &str, command: &str) -> String {
        let p = self.dir.path().join(name);
        let turns = json!([
            { "tool_calls": [{ "name": "run_command", "arguments": { "command": command } }] },
            { "text": "Done." }
        ]);
        std::fs::write(&p, turns.to_string()).unwrap();
        format!("scripted:{}", p.display())
    }
    fn ok(&self, args: &[&str]) -> String {
        let out = self.output(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
        text(&out.stdout)
    }
    /// Runs `command` as the scripted model's one call; the exit code and the task id.
    fn agent_runs(&self, name: &str, command: &str) -> (i32, i64) {
        let provider = self.script(name, command);
        let ws = self.ws_arg();
        let out = self.output(&[
            "run",
            "--workspace",
            &ws,
            "--goal",
            "go",
            "--provider",
            &provider,
        ]);
        let id = self.json(&["tasks", "--json"])[0]["id"].as_i64().unwrap();
        (out.status.code().unwrap_or(-1), id)
    }
    fn events(&self, task: i64) -> Vec<Value> {
        self.json(&["show", &task.to_string(), "--json"])["events"]
            .as_array()
            .unwrap()
            .clone()
    }
}

fn call_id(events: &[Value]) -> String {
    of_type(events, "model_turn_completed")[0]["payload"]["tool_calls"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn a_rule_lets_its_command_run_a_compound_asks_and_a_deny_refuses() {
    let e = Env::new();
    let ws = e.ws_arg();
    let added = e.json(&[
        "policy",
        "add",
        "cargo   test *",
        "--workspace",
        &ws,
        "--json",
    ]);
    assert_eq!(added["rule"], "cargo test *", "stored as shown back");
    assert_eq!(added["kind"], "allow");
    assert_eq!(added["origin"], "person");
    let listed = e.json(&["policy", "list", "--workspace", &ws, "--json"]);
    assert_eq!(listed.as_array().unwrap().len(), 1);
    // Not a rule: refused, nothing stored.
    let bad = e.output(&["policy", "add", "cargo test $(x)", "--workspace", &ws]);
    assert_ne!(bad.status.code(), Some(0));
    assert_eq!(
        e.json(&["policy", "list", "--workspace", &ws, "--json"])
            .as_array()
            .unwrap()
            .len(),
        1
    );

    // Covered: runs without an approval, and the log names the rule and its date.
    let (code, task) = e.agent_runs("covered.json", "cargo test -p x");
    assert_eq!(code, 0);
    let events = e.events(task);
    assert!(of_type(&events, "approval_required").is_empty());
    let allowed = of_type(&events, "allowed_by_rule");
    assert_eq!(allowed.len(), 1, "{events:#?}");
    let used = &allowed[0]["payload"]["rules"][0];
    assert_eq!(used["rule"], "cargo test *");
    assert_eq!(used["part"], "cargo test -p x");
    assert_eq!(used["created_at"], added["created_at"]);
    let started = of_type(&events, "tool_call_started");
    assert_eq!(started[0]["payload"]["decision_source"], "command_rule");
    let why = e.ok(&["policy", "explain", &task.to_string(), &call_id(&events)]);
    assert!(why.contains("outcome: allowed"), "{why}");
    assert!(why.contains("by rule `cargo test *`"), "{why}");

    // An uncovered part asks, naming the part; nothing ran.
    let (code, task) = e.agent_runs("compound.json", "cargo test; rm -rf y");
    assert_eq!(code, 3, "left waiting for an approval");
    let pending = e.json(&["approvals", "--json"]);
    assert_eq!(pending.as_array().unwrap().len(), 1);
    let reason = pending[0]["reason"].as_str().unwrap();
    assert!(reason.contains("`rm -rf y` has no rule"), "{reason}");
    assert!(e.ws().join("y").exists());
    let events = e.events(task);
    let asked = of_type(&events, "approval_required");
    assert_eq!(asked[0]["payload"]["command"]["part"], "rm -rf y");
    assert_eq!(asked[0]["payload"]["command"]["suggested"], json!(["rm *"]));
    let why = e.ok(&["policy", "explain", &task.to_string(), &call_id(&events)]);
    assert!(why.contains("outcome: asked"), "{why}");
    let id = pending[0]["id"].as_i64().unwrap().to_string();
    assert_eq!(
        e.output(&["reject", &id, "--reason", "no"]).status.code(),
        Some(0)
    );

    // With `rm` denied the same command is refused: the model is told which rule.
    let deny = e.json(&[
        "policy",
        "add",
        "rm *",
        "--deny",
        "--workspace",
        &ws,
        "--json",
    ]);
    let (code, task) = e.agent_runs("denied.json", "cargo test; rm -rf y");
    assert_eq!(code, 0, "the model is told and finishes");
    assert!(e.ws().join("y").exists());
    let events = e.events(task);
    assert!(of_type(&events, "approval_required").is_empty());
    assert!(of_type(&events, "tool_call_started").is_empty());
    let failed = of_type(&events, "tool_call_failed");
    assert_eq!(failed[0]["payload"]["kind"], "denied");
    let error = failed[0]["payload"]["error"].as_str().unwrap();
    assert!(
        error.contains("the deny rule `rm *`") && error.contains("`rm -rf y`"),
        "{error}"
    );
    let why = e.ok(&["policy", "explain", &task.to_string(), &call_id(&events)]);
    assert!(why.contains("outcome: denied"), "{why}");

    // Removing the deny rule: the command asks again.
    let removed = e.ok(&["policy", "remove", &deny["id"].to_string()]);
    assert!(removed.contains("rm *"), "{removed}");
    let (code, _) = e.agent_runs("again.json", "cargo test; rm -rf y");
    assert_eq!(code, 3);
    // The capability rules keep their subcommands beside the command rules.
    assert_eq!(
        e.output(&["policy", "show", "--workspace", &ws])
            .status
            .code(),
        Some(0)
    );
}

#[test]
fn an_option_before_a_denied_subcommand_asks_rather_than_runs() {
    let e = Env::new();
    let ws = e.ws_arg();
    e.ok(&["policy", "add", "git *", "--workspace", &ws]);
    e.ok(&["policy", "add", "git push *", "--deny", "--workspace", &ws]);
    let (code, _) = e.agent_runs("push.json", "git -C . push origin main");
    assert_eq!(code, 3);
    let reason = e.json(&["approvals", "--json"])[0]["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        reason.contains("may match the deny rule `git push *`"),
        "{reason}"
    );
}
