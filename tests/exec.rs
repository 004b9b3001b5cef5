//! `pocketpilot exec` end to end: the real binary on a store of its own, the scripted
//! model, other processes answering or cancelling. Its JSON lines are validated against
//! the published schema (docs/exec-schema.json) and its exit codes are the contract.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod support;

use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::Harness;

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn script(h: &Harness, name: &str, v: Value) -> String {
    let p = h.dir.path().join(name);
    std::fs::write(&p, v.to_string()).unwrap();
    format!("scripted:{}", p.display())
}

fn exec(h: &Harness, goal: &str, provider: &str, more: &[&str]) -> Output {
    let ws = h.ws().display().to_string();
    let mut args = vec!["exec", goal, "--workspace", &ws, "--provider", provider];
    args.extend_from_slice(more);
    h.output(&args)
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{what} never came"
        );
        // sleep: the poll interval of a bounded wait on another process's store.
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn published_schema() -> jsonschema::Validator {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/exec-schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

/// Every stdout line parsed and validated against the published schema; their types.
fn valid_lines(stdout: &[u8]) -> Vec<Value> {
    let validator = published_schema();
    let lines: Vec<Value> = text(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(!lines.is_empty());
    for line in &lines {
        let errors: Vec<String> = validator.iter_errors(line).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{line}\n{errors:#?}");
    }
    lines
}

fn kinds(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .map(|l| l["type"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn json_lines_validate_against_the_published_schema() {
    let h = Harness::new(&[]);
    std::fs::write(h.ws().join("a.txt"), "alpha\n").unwrap();
    let p = script(
        &h,
        "s.json",
        json!([
            { "text": "Looking.", "tool_calls": [
                { "name": "read_file", "arguments": { "path": "a.txt" } },
                { "name": "read_file", "arguments": { "path": "missing.txt" } } ] },
            { "tool_calls": [{ "name": "write_file", "arguments": { "path": "b.txt", "content": "beta\n" } }] },
            { "text": "Copied alpha; wrote beta.", "chunk_size": 3 }
        ]),
    );
    let out = exec(&h, "copy", &p, &["--json", "--allow", "fs:write"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let lines = valid_lines(&out.stdout);
    let kinds = kinds(&lines);
    for k in [
        "task_created",
        "task_started",
        "model_turn_started",
        "model_turn_completed",
        "tool_call_started",
        "tool_call_completed",
        "tool_call_failed",
        "assistant_delta",
        "task_completed",
    ] {
        assert!(kinds.contains(&k.to_owned()), "no {k} in {kinds:?}");
    }
    assert_eq!(kinds.last().unwrap(), "task_completed");
    assert_eq!(
        lines.last().unwrap()["payload"]["final_answer"],
        "Copied alpha; wrote beta."
    );
    assert_eq!(
        std::fs::read_to_string(h.ws().join("b.txt")).unwrap(),
        "beta\n"
    );

    // An approval left waiting is a line of the schema too.
    let w = script(
        &h,
        "w.json",
        json!([{ "tool_calls": [{ "name": "run_command", "arguments": { "command": "echo hi" } }] }]),
    );
    let out = exec(&h, "ask", &w, &["--json", "--on-approval", "fail"]);
    assert_eq!(code(&out), 3, "{}", text(&out.stderr));
    let lines = valid_lines(&out.stdout);
    let asked = lines.last().unwrap();
    assert_eq!(asked["type"], "approval_required");
    assert_eq!(asked["payload"]["effect"]["kind"], "command");

    // A line the schema does not describe is refused by it: the check can fail.
    let validator = published_schema();
    let mut bad = lines.last().unwrap().clone();
    bad["type"] = json!("no_such_event");
    assert!(!validator.is_valid(&bad));
    let mut bad = lines.last().unwrap().clone();
    bad["payload"]["step"] = json!("one");
    assert!(!validator.is_valid(&bad));
}

fn count_schema(h: &Harness) -> String {
    let p = h.dir.path().join("count.schema.json");
    std::fs::write(
        &p,
        json!({
            "type": "object",
            "required": ["count"],
            "properties": { "count": { "type": "integer", "minimum": 0 } },
            "additionalProperties": false
        })
        .to_string(),
    )
    .unwrap();
    p.display().to_string()
}

#[test]
fn an_answer_that_misses_the_schema_is_asked_again_with_the_errors() {
    let h = Harness::new(&[]);
    let log = h.dir.path().join("requests.jsonl");
    let p = script(
        &h,
        "s.json",
        json!({ "requests_log": log, "turns": [
            { "text": "There are two files." },
            { "text": "{\"count\": \"two\"}" },
            { "text": "```json\n{\"count\": 2}\n```" }
        ] }),
    );
    let schema = count_schema(&h);
    let out = exec(&h, "count the files", &p, &["--output-schema", &schema]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    // stdout is the checked value alone.
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer, json!({ "count": 2 }));
    let err = text(&out.stderr);
    assert!(err.contains("the answer is not JSON"), "{err}");
    assert!(err.contains("at /count:"), "{err}");

    // Three runs in one session, each retry a follow-up of the one before.
    let tasks = h.json(&["tasks", "--json"]);
    let tasks = tasks.as_array().unwrap();
    assert_eq!(tasks.len(), 3);
    assert!(tasks
        .iter()
        .all(|t| t["session_id"] == tasks[0]["session_id"]));
    assert!(tasks.iter().all(|t| t["status"] == "completed"));
    // The model was told the schema first, then what was wrong.
    let requests: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(requests.len(), 3);
    assert!(
        requests[0].contains("additionalProperties"),
        "{}",
        requests[0]
    );
    assert!(
        requests[1].contains("the answer is not JSON"),
        "{}",
        requests[1]
    );
    assert!(requests[2].contains("at /count:"), "{}", requests[2]);
}

#[test]
fn an_answer_that_never_matches_exits_eleven_after_the_retries() {
    let h = Harness::new(&[]);
    let p = script(
        &h,
        "s.json",
        json!({ "repeat_last": true, "turns": [{ "text": "{\"count\": -1}" }] }),
    );
    let schema = count_schema(&h);
    let out = exec(
        &h,
        "count",
        &p,
        &[
            "--output-schema",
            &schema,
            "--schema-retries",
            "1",
            "--json",
        ],
    );
    assert_eq!(code(&out), 11, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("minimum"),
        "{}",
        text(&out.stderr)
    );
    let lines = valid_lines(&out.stdout);
    let created = lines.iter().filter(|l| l["type"] == "task_created").count();
    assert_eq!(created, 2, "the first run and one retry");
    assert_eq!(h.json(&["tasks", "--json"]).as_array().unwrap().len(), 2);
}

#[test]
fn exit_codes_say_what_happened() {
    let h = Harness::new(&[]);
    let ok = script(&h, "ok.json", json!([{ "text": "fine" }]));
    let out = exec(&h, "hi", &ok, &[]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "fine");

    let failing = script(
        &h,
        "f.json",
        json!([{ "error": { "kind": "auth", "message": "bad key" } }]),
    );
    let out = exec(&h, "fail", &failing, &[]);
    assert_eq!(code(&out), 1, "{}", text(&out.stderr));

    let looping = script(
        &h,
        "l.json",
        json!({ "repeat_last": true, "turns": [{ "tool_calls": [{ "name": "list_dir", "arguments": {} }] }] }),
    );
    let ws = h.ws().display().to_string();
    let out = h
        .cmd(&["exec", "loop", "--workspace", &ws, "--provider", &looping])
        .env("POCKETPILOT_MAX_AGENT_STEPS", "2")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(code(&out), 9, "paused: {}", text(&out.stderr));
    assert!(text(&out.stderr).contains("pocketpilot raise"));

    let before = h.json(&["tasks", "--json"]).as_array().unwrap().len();
    let bad = h.dir.path().join("bad.schema.json");
    std::fs::write(&bad, r#"{"type": 12}"#).unwrap();
    let out = exec(
        &h,
        "x",
        &ok,
        &["--output-schema", &bad.display().to_string()],
    );
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("not a valid JSON Schema"));
    assert_eq!(
        h.json(&["tasks", "--json"]).as_array().unwrap().len(),
        before
    );
}

fn write_script(h: &Harness) -> String {
    script(
        h,
        "w.json",
        json!([
            { "tool_calls": [{ "name": "write_file", "arguments": { "path": "out.txt", "content": "data\n" } }] },
            { "text": "Written." }
        ]),
    )
}

#[test]
fn on_approval_fail_exits_three_and_leaves_the_approval_pending() {
    let h = Harness::new(&[]);
    let p = write_script(&h);
    let out = exec(&h, "write", &p, &["--on-approval", "fail"]);
    assert_eq!(code(&out), 3, "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("pocketpilot approve"));
    assert!(!h.ws().join("out.txt").exists());
    // Not denied: still pending, the task still waiting, answerable later.
    let pending = h.json(&["approvals", "--json"]);
    assert_eq!(pending.as_array().unwrap().len(), 1);
    assert_eq!(
        h.json(&["tasks", "--json"])[0]["status"],
        "waiting_approval"
    );
    let id = pending[0]["id"].as_i64().unwrap().to_string();
    let approved = h.output(&["approve", &id]);
    assert_eq!(code(&approved), 0, "{}", text(&approved.stderr));
    assert_eq!(
        std::fs::read_to_string(h.ws().join("out.txt")).unwrap(),
        "data\n"
    );
}

#[test]
fn on_approval_wait_goes_on_once_another_process_answers() {
    let h = Harness::new(&[]);
    let p = write_script(&h);
    let ws = h.ws().display().to_string();
    let child = h
        .cmd(&["exec", "write", "--workspace", &ws, "--provider", &p])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut id = String::new();
    wait_for("the pending approval", || {
        let pending = h.json(&["approvals", "--json"]);
        match pending[0]["id"].as_i64() {
            Some(n) => {
                id = n.to_string();
                true
            }
            None => false,
        }
    });
    let approved = h.output(&["approve", &id]);
    assert_eq!(code(&approved), 0, "{}", text(&approved.stderr));
    let out = child.wait_with_output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("Written."),
        "{}",
        text(&out.stdout)
    );
    assert!(text(&out.stderr).contains(&format!("approval {id}")));
    assert_eq!(
        std::fs::read_to_string(h.ws().join("out.txt")).unwrap(),
        "data\n"
    );
}

#[test]
fn cancel_from_another_process_exits_four() {
    let h = Harness::new(&[]);
    let p = script(
        &h,
        "slow.json",
        json!([{ "text": "x".repeat(300), "chunk_size": 1, "chunk_delay_ms": 100 }]),
    );
    let ws = h.ws().display().to_string();
    let mut child = h
        .cmd(&["exec", "ramble", "--workspace", &ws, "--provider", &p])
        .spawn()
        .unwrap();
    let mut id = String::new();
    wait_for("the running task", || {
        let tasks = h.json(&["tasks", "--json"]);
        if tasks[0]["status"] == "running" {
            id = tasks[0]["id"].as_i64().unwrap().to_string();
            true
        } else {
            false
        }
    });
    let out = h.output(&["cancel", &id]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(child.wait().unwrap().code(), Some(4));
}

#[test]
fn resume_continues_the_session() {
    let h = Harness::new(&[]);
    let log = h.dir.path().join("requests.jsonl");
    let p = script(
        &h,
        "s.json",
        json!({ "requests_log": log, "turns": [{ "text": "first" }, { "text": "second" }] }),
    );
    let out = exec(&h, "remember the word kumquat", &p, &[]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let session = h.json(&["tasks", "--json"])[0]["session_id"]
        .as_i64()
        .unwrap()
        .to_string();
    let out = h.output(&[
        "exec",
        "what was the word?",
        "--resume",
        &session,
        "--provider",
        &p,
    ]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "second");
    let tasks = h.json(&["tasks", "--json"]);
    assert_eq!(tasks.as_array().unwrap().len(), 2);
    assert_eq!(tasks[0]["session_id"], tasks[1]["session_id"]);
    // The second request carried the first run's context.
    let second = std::fs::read_to_string(&log).unwrap();
    let second = second.lines().nth(1).unwrap();
    assert!(second.contains("kumquat") && second.contains("what was the word?"));
}
