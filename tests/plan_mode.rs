//! Plan mode through the real binary, the scripted model playing the agent: `run --plan`
//! only reads (a write it tries is refused, not asked) and ends with a plan left for the
//! person; `plan approve` carries it out, its listed file written and its listed command
//! run without asking, its steps ticked; a write and a command beyond the plan ask; a
//! rejected plan runs nothing; a plan written as Markdown instead of `submit_plan` is read.
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
        std::fs::write(h.ws().join("README.md"), "The project.\n").unwrap();
        Self(h)
    }
    fn script(&self, turns: Value) -> String {
        let p = self.dir.path().join("script.json");
        std::fs::write(&p, turns.to_string()).unwrap();
        format!("scripted:{}", p.display())
    }
    fn code(&self, args: &[&str]) -> (i32, String) {
        let out = self.output(args);
        (out.status.code().unwrap_or(-1), text(&out.stderr))
    }
    fn plan_run(&self, provider: &str) -> (i32, String, i64) {
        let ws = self.ws().display().to_string();
        let (code, err) = self.code(&[
            "run",
            "--plan",
            "--workspace",
            &ws,
            "--goal",
            "Write the notes",
            "--provider",
            provider,
        ]);
        let task = self.json(&["tasks", "--json"])[0]["id"].as_i64().unwrap();
        (code, err, task)
    }
    fn events(&self, task: i64) -> Vec<Value> {
        self.json(&["show", &task.to_string(), "--json"])["events"]
            .as_array()
            .unwrap()
            .clone()
    }
    fn tasks(&self) -> Vec<Value> {
        self.json(&["tasks", "--json"]).as_array().unwrap().clone()
    }
}

fn call(name: &str, arguments: Value) -> Value {
    json!({ "name": name, "arguments": arguments })
}

fn submitted_plan() -> Value {
    call(
        "submit_plan",
        json!({
            "steps": ["Write notes.txt", "Create made.txt"],
            "files": ["notes.txt"],
            "commands": ["touch made.txt"]
        }),
    )
}

#[test]
fn an_approved_plan_runs_its_files_and_commands_and_asks_beyond_them() {
    let e = Env::new();
    let provider = e.script(json!([
        // Planning: a read runs, a write is refused (plan mode), then the plan.
        { "tool_calls": [
            call("read_file", json!({ "path": "README.md" })),
            call("write_file", json!({ "path": "notes.txt", "content": "too early\n" }))
        ] },
        { "tool_calls": [submitted_plan()] },
        // Carrying it out: the listed file and command without asking, each step ticked.
        { "tool_calls": [
            call("write_file", json!({ "path": "notes.txt", "content": "notes\n" })),
            call("plan_step_done", json!({ "step": 1 }))
        ] },
        { "tool_calls": [
            call("run_command", json!({ "command": "touch made.txt" })),
            call("plan_step_done", json!({ "step": 2 }))
        ] },
        // Beyond the plan: a write, then a command, each asks.
        { "tool_calls": [call("write_file", json!({ "path": "other.txt", "content": "x\n" }))] },
        { "tool_calls": [call("run_command", json!({ "command": "touch extra.txt" }))] },
        { "text": "Done." }
    ]));
    let (code, err, planner) = e.plan_run(&provider);
    assert_eq!(code, 3, "the plan waits for the person: {err}");
    assert!(err.contains("pocketpilot plan approve"), "{err}");
    assert!(err.contains("[ ] 1. Write notes.txt"), "{err}");
    assert!(
        !e.ws().join("notes.txt").exists(),
        "nothing written while planning"
    );
    let events = e.events(planner);
    let refused = of_type(&events, "tool_call_failed");
    assert_eq!(refused.len(), 1, "{events:#?}");
    assert_eq!(refused[0]["payload"]["kind"], "denied");
    assert!(refused[0]["payload"]["error"]
        .as_str()
        .unwrap()
        .contains("plan mode"));
    assert!(of_type(&events, "approval_required").is_empty());
    assert_eq!(of_type(&events, "plan_proposed").len(), 1);
    let plan = e.json(&["plan", "show", &planner.to_string(), "--json"]);
    assert_eq!(plan["status"], "proposed");
    assert_eq!(plan["source"], "tool");
    assert_eq!(plan["content"]["files"], json!(["notes.txt"]));

    let (code, err) = e.code(&["plan", "approve", &planner.to_string()]);
    assert_eq!(code, 3, "the write beyond the plan waits: {err}");
    assert_eq!(
        std::fs::read_to_string(e.ws().join("notes.txt")).unwrap(),
        "notes\n"
    );
    assert!(e.ws().join("made.txt").exists(), "the planned command ran");
    assert!(!e.ws().join("other.txt").exists());
    assert!(err.contains("[x] 1. Write notes.txt"), "{err}");
    let run = e.tasks()[0]["id"].as_i64().unwrap();
    assert_ne!(run, planner);
    let events = e.events(run);
    let started = of_type(&events, "tool_call_started");
    let source = |name: &str| {
        started
            .iter()
            .find(|s| s["payload"]["name"] == name)
            .map(|s| s["payload"]["decision_source"].clone())
            .unwrap()
    };
    assert_eq!(source("write_file"), "plan");
    assert_eq!(source("run_command"), "command_rule");
    let by_rule = of_type(&events, "allowed_by_rule");
    assert_eq!(by_rule[0]["payload"]["rules"][0]["origin"], "plan");
    assert_eq!(by_rule[0]["payload"]["rules"][0]["rule"], "touch made.txt");

    let pending = e.json(&["approvals", "--json"]);
    assert_eq!(pending[0]["tool"], "write_file");
    assert_eq!(pending[0]["arguments"]["path"], "other.txt");
    let id = pending[0]["id"].to_string();
    let (code, _) = e.code(&["approve", &id]);
    assert_eq!(code, 3, "the command beyond the plan asks too");
    assert!(e.ws().join("other.txt").exists());
    let pending = e.json(&["approvals", "--json"]);
    assert_eq!(pending[0]["tool"], "run_command");
    assert_eq!(pending[0]["arguments"]["command"], "touch extra.txt");
    let id = pending[0]["id"].to_string();
    let (code, _) = e.code(&["reject", &id, "--reason", "not in the plan"]);
    assert_eq!(code, 0);
    assert!(!e.ws().join("extra.txt").exists());

    let plan = e.json(&["plan", "show", &planner.to_string(), "--json"]);
    assert_eq!(plan["status"], "approved");
    assert_eq!(plan["run_task_id"], run);
    assert_eq!(plan["done"], json!([1, 2]));
    // Decided once.
    let (code, _) = e.code(&["plan", "reject", &planner.to_string()]);
    assert_ne!(code, 0);
}

#[test]
fn a_rejected_plan_runs_nothing() {
    let e = Env::new();
    let provider = e.script(json!([
        { "tool_calls": [submitted_plan()] },
        { "tool_calls": [call("write_file", json!({ "path": "notes.txt", "content": "notes\n" }))] },
        { "text": "Done." }
    ]));
    let (code, _, planner) = e.plan_run(&provider);
    assert_eq!(code, 3);
    let (code, err) = e.code(&[
        "plan",
        "reject",
        &planner.to_string(),
        "--reason",
        "too much",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(e.tasks().len(), 1, "no run carries it out");
    assert!(!e.ws().join("notes.txt").exists());
    assert!(!e.ws().join("made.txt").exists());
    let plan = e.json(&["plan", "show", &planner.to_string(), "--json"]);
    assert_eq!(plan["status"], "rejected");
    assert_eq!(plan["run_task_id"], Value::Null);
    let (code, _) = e.code(&["plan", "approve", &planner.to_string()]);
    assert_ne!(code, 0, "a rejected plan cannot be approved after");
    assert_eq!(e.tasks().len(), 1);
    assert!(!e.ws().join("notes.txt").exists());
    // The session's transcript tells the model's next turn.
    let session = e.tasks()[0]["session_id"].to_string();
    let shown = e.json(&["session", "show", &session, "--json"]).to_string();
    assert!(
        shown.contains("The person rejected the plan: too much"),
        "{shown}"
    );
}

#[test]
fn a_plan_written_in_the_answer_is_read_and_can_be_edited_before_approval() {
    let e = Env::new();
    let provider = e.script(json!([
        { "text": "## Plan\n1. Write notes.txt\n\nFiles:\n- `notes.txt`\n\nCommands:\n- `touch made.txt`\n" },
        { "tool_calls": [
            call("write_file", json!({ "path": "edited.txt", "content": "e\n" })),
            call("plan_step_done", json!({ "step": 1 }))
        ] },
        { "text": "Done." }
    ]));
    let (code, err, planner) = e.plan_run(&provider);
    assert_eq!(code, 3, "{err}");
    let plan = e.json(&["plan", "show", &planner.to_string(), "--json"]);
    assert_eq!(plan["source"], "answer");
    assert_eq!(plan["content"]["commands"], json!(["touch made.txt"]));
    // Edited: the run may write the file the person named, not the one the agent did.
    let edited = e.dir.path().join("plan.json");
    std::fs::write(
        &edited,
        json!({ "steps": ["Write edited.txt"], "files": ["edited.txt"], "commands": [] })
            .to_string(),
    )
    .unwrap();
    let edited_arg = edited.display().to_string();
    let plan = e.json(&[
        "plan",
        "edit",
        &planner.to_string(),
        "--file",
        &edited_arg,
        "--json",
    ]);
    assert_eq!(plan["edited"], true);
    let (code, err) = e.code(&["plan", "approve", &planner.to_string()]);
    assert_eq!(code, 0, "{err}");
    assert!(e.ws().join("edited.txt").exists());
    let plan = e.json(&["plan", "show", &planner.to_string(), "--json"]);
    assert_eq!(plan["done"], json!([1]));
}
