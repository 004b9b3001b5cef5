//! Hooks end to end: the real binary (`exec --json`), the scripted model, real hook
//! scripts written to Claude Code's contract (tests/fixtures/hooks), run in the sandbox.
//! Each test reads what the run recorded (`hook_ran` lines, validated against the
//! published schema) and what the model was sent (the scripted model's request log).
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod support;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{json, Value};
use support::Harness;

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hooks")
}

/// A scripted model whose every request is logged; returns `(provider, log)`.
fn model(h: &Harness, name: &str, turns: Value) -> (String, PathBuf) {
    let log = h.dir.path().join(format!("{name}.requests.jsonl"));
    let p = h.dir.path().join(format!("{name}.json"));
    let script = json!({ "turns": turns, "requests_log": log });
    std::fs::write(&p, script.to_string()).unwrap();
    (format!("scripted:{}", p.display()), log)
}

/// The workspace's hooks file, with the fixture scripts beside it.
fn workspace_hooks(h: &Harness, hooks: Value) {
    let dir = h.ws().join(".pocketpilot/hooks");
    std::fs::create_dir_all(&dir).unwrap();
    for f in std::fs::read_dir(fixtures()).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, dir.join(f.file_name().unwrap())).unwrap();
    }
    let file = json!({ "hooks": hooks });
    std::fs::write(
        h.ws().join(".pocketpilot/hooks.json"),
        serde_json::to_string_pretty(&file).unwrap(),
    )
    .unwrap();
}

fn consent(h: &Harness) {
    let ws = h.ws().display().to_string();
    let out = h.output(&["agent-hooks", "consent", "--workspace", &ws]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
}

fn exec(h: &Harness, goal: &str, provider: &str, more: &[&str]) -> Output {
    let ws = h.ws().display().to_string();
    let mut args = vec![
        "exec",
        goal,
        "--workspace",
        &ws,
        "--provider",
        provider,
        "--json",
    ];
    args.extend_from_slice(more);
    h.output(&args)
}

/// Every line, each valid against the published schema.
fn json_lines(out: &Output) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/exec-schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let lines: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    for l in &lines {
        let errors: Vec<String> = validator.iter_errors(l).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{l}\n{errors:#?}");
    }
    lines
}

fn of_type<'a>(lines: &'a [Value], t: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["type"] == t).collect()
}

fn hook_runs(lines: &[Value]) -> Vec<&Value> {
    of_type(lines, "hook_ran")
        .into_iter()
        .map(|l| &l["payload"])
        .collect()
}

/// The requests the model was sent, oldest first, each as its messages' JSON text.
fn requests(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_pre_tool_use_hook_blocks_rm_with_exit_2_and_the_model_reads_why() {
    let h = Harness::new(&[]);
    std::fs::write(h.ws().join("keep.txt"), "precious\n").unwrap();
    workspace_hooks(
        &h,
        json!({ "PreToolUse": [{ "matcher": "Bash", "hooks": [
            { "type": "command", "command": "bash \"$CLAUDE_PROJECT_DIR/.pocketpilot/hooks/block_rm.sh\"" }
        ] }] }),
    );
    consent(&h);
    let (p, log) = model(
        &h,
        "rm",
        json!([
            { "tool_calls": [{ "name": "run_command", "arguments": { "command": "rm keep.txt" } }] },
            { "tool_calls": [{ "name": "run_command", "arguments": { "command": "ls" } }] },
            { "text": "Left it." }
        ]),
    );
    let out = exec(&h, "tidy up", &p, &["--allow", "shell:execute"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let lines = json_lines(&out);
    assert!(h.ws().join("keep.txt").exists(), "rm ran");
    let runs = hook_runs(&lines);
    assert_eq!(runs.len(), 2, "{runs:#?}");
    assert_eq!(runs[0]["outcome"], "blocked");
    assert_eq!(runs[0]["exit_code"], 2);
    assert_eq!(runs[0]["hook_event"], "PreToolUse");
    assert_eq!(runs[0]["scope"], "workspace");
    assert_eq!(runs[1]["outcome"], "ok", "ls is not refused");
    let failed = of_type(&lines, "tool_call_failed");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["payload"]["kind"], "denied");
    let error = failed[0]["payload"]["error"].as_str().unwrap();
    assert!(error.contains("Blocked: rm is not allowed"), "{error}");
    let sent = requests(&log);
    assert!(
        sent[1].contains("Blocked: rm is not allowed in this project"),
        "{}",
        sent[1]
    );
    assert_eq!(of_type(&lines, "tool_call_completed").len(), 1);
}

#[test]
fn a_hook_adds_context_the_next_request_carries_but_its_allow_skips_no_approval() {
    let h = Harness::new(&[]);
    workspace_hooks(
        &h,
        json!({ "PreToolUse": [{ "matcher": "Write", "hooks": [
            { "type": "command", "command": "python3 \"$CLAUDE_PROJECT_DIR/.pocketpilot/hooks/add_context.py\"" }
        ] }] }),
    );
    consent(&h);
    let turns = json!([
        { "tool_calls": [{ "name": "write_file", "arguments": { "path": "b.txt", "content": "beta\n" } }] },
        { "text": "Wrote it." }
    ]);
    let (p, log) = model(&h, "ctx", turns.clone());
    let out = exec(&h, "write b", &p, &["--allow", "fs:write"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let lines = json_lines(&out);
    let runs = hook_runs(&lines);
    assert_eq!(runs.len(), 1, "{runs:#?}");
    assert_eq!(runs[0]["outcome"], "ok");
    let ctx = runs[0]["context"].as_str().unwrap();
    assert!(
        ctx.contains("House style:") && ctx.contains("b.txt"),
        "{ctx}"
    );
    let sent = requests(&log);
    assert_eq!(sent.len(), 2);
    assert!(!sent[0].contains("House style"));
    assert!(sent[1].contains("House style:"), "{}", sent[1]);

    // The hook says "allow"; the policy still asks for the write, and the run waits.
    let h2 = Harness::new(&[]);
    workspace_hooks(
        &h2,
        json!({ "PreToolUse": [{ "matcher": "Write", "hooks": [
            { "type": "command", "command": "python3 \"$CLAUDE_PROJECT_DIR/.pocketpilot/hooks/add_context.py\"" }
        ] }] }),
    );
    consent(&h2);
    let (p, _) = model(&h2, "ask", turns);
    let out = exec(&h2, "write b", &p, &["--on-approval", "fail"]);
    assert_eq!(code(&out), 3, "{}", text(&out.stderr));
    let lines = json_lines(&out);
    assert_eq!(of_type(&lines, "approval_required").len(), 1);
    assert!(!h2.ws().join("b.txt").exists());
}

#[test]
fn a_stop_hook_sends_the_agent_back_once() {
    let h = Harness::new(&[]);
    workspace_hooks(
        &h,
        json!({ "Stop": [{ "hooks": [
            { "type": "command", "command": "python3 \"$CLAUDE_PROJECT_DIR/.pocketpilot/hooks/stop_once.py\"" }
        ] }] }),
    );
    consent(&h);
    let (p, log) = model(
        &h,
        "stop",
        json!([
            { "text": "All done." },
            { "text": "Checked: CHANGELOG.md mentions it." },
            { "text": "A third answer nobody asked for." }
        ]),
    );
    let out = exec(&h, "finish", &p, &[]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let lines = json_lines(&out);
    let runs = hook_runs(&lines);
    assert_eq!(runs.len(), 2, "{runs:#?}");
    assert_eq!(runs[0]["outcome"], "blocked");
    assert_eq!(runs[1]["outcome"], "ok");
    let done = of_type(&lines, "task_completed");
    assert_eq!(
        done[0]["payload"]["final_answer"],
        "Checked: CHANGELOG.md mentions it."
    );
    let sent = requests(&log);
    assert_eq!(sent.len(), 2);
    assert!(sent[1].contains("check that CHANGELOG.md mentions the change"));
}

#[test]
fn a_hook_past_its_timeout_is_killed_and_does_not_block() {
    let h = Harness::new(&[]);
    workspace_hooks(
        &h,
        json!({ "PreToolUse": [{ "matcher": "*", "hooks": [
            { "type": "command", "command": "sleep 120; touch late.txt; exit 2", "timeout": 1 }
        ] }] }),
    );
    consent(&h);
    let (p, _) = model(
        &h,
        "slow",
        json!([
            { "tool_calls": [{ "name": "list_dir", "arguments": { "path": "." } }] },
            { "text": "Listed." }
        ]),
    );
    let out = exec(&h, "list", &p, &[]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let lines = json_lines(&out);
    let runs = hook_runs(&lines);
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["outcome"], "timed_out");
    assert_eq!(of_type(&lines, "tool_call_completed").len(), 1);
    assert!(!h.ws().join("late.txt").exists());
}

#[test]
fn an_unconsented_workspace_hook_does_not_run_until_consented_and_again_after_a_change() {
    let h = Harness::new(&[]);
    let ws = h.ws().display().to_string();
    let hooks = |marker: &str| {
        json!({ "UserPromptSubmit": [{ "hooks": [
            { "type": "command", "command": format!("touch {marker}") }
        ] }] })
    };
    workspace_hooks(&h, hooks("ran.txt"));
    let (p, _) = model(&h, "one", json!([{ "text": "ok" }]));
    let out = exec(&h, "hello", &p, &[]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let lines = json_lines(&out);
    let runs = hook_runs(&lines);
    assert_eq!(runs.len(), 1, "{runs:#?}");
    assert_eq!(runs[0]["outcome"], "not_consented");
    let said = runs[0]["message"].as_str().unwrap();
    assert!(
        said.contains(&format!("pocketpilot agent-hooks consent --workspace {ws}")),
        "{said}"
    );
    assert!(!h.ws().join("ran.txt").exists());

    let listed = h.output(&["agent-hooks", "list", "--workspace", &ws]);
    let listed = text(&listed.stdout);
    assert!(listed.contains("NOT consented"), "{listed}");
    assert!(listed.contains("touch ran.txt"), "{listed}");
    // A consent naming another content (the file changed since it was reviewed) is refused.
    let stale = "0".repeat(64);
    let refused = h.output(&[
        "agent-hooks",
        "consent",
        "--workspace",
        &ws,
        "--hash",
        &stale,
    ]);
    assert_ne!(code(&refused), 0);
    assert!(text(&refused.stderr).contains("changed since it was shown"));
    let out = exec(&h, "still not", &p, &[]);
    assert_eq!(hook_runs(&json_lines(&out))[0]["outcome"], "not_consented");
    // Consent shows the exact commands it allows.
    let given = h.output(&["agent-hooks", "consent", "--workspace", &ws]);
    assert!(text(&given.stdout).contains("touch ran.txt"));

    let out = exec(&h, "hello again", &p, &[]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(hook_runs(&json_lines(&out))[0]["outcome"], "ok");
    assert!(h.ws().join("ran.txt").exists());

    // A changed file is a new file: it needs consent again.
    workspace_hooks(&h, hooks("changed.txt"));
    let out = exec(&h, "and again", &p, &[]);
    assert_eq!(hook_runs(&json_lines(&out))[0]["outcome"], "not_consented");
    assert!(!h.ws().join("changed.txt").exists());

    // Revoked, the consented file does not run either.
    consent(&h);
    let revoked = h.output(&["agent-hooks", "revoke", "--workspace", &ws]);
    assert_eq!(code(&revoked), 0);
    let out = exec(&h, "once more", &p, &[]);
    assert_eq!(hook_runs(&json_lines(&out))[0]["outcome"], "not_consented");
    assert!(!h.ws().join("changed.txt").exists());
}

#[test]
fn a_hook_cannot_write_outside_the_workspace() {
    let h = Harness::new(&[]);
    let outside = h.dir.path().join("outside.txt");
    workspace_hooks(
        &h,
        json!({ "UserPromptSubmit": [{ "hooks": [
            { "type": "command", "command": format!("echo no > {}; echo yes > inside.txt", outside.display()) }
        ] }] }),
    );
    consent(&h);
    let (p, _) = model(&h, "w", json!([{ "text": "ok" }]));
    let out = exec(&h, "hello", &p, &[]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(!outside.exists(), "the hook wrote outside the workspace");
    // The control: the same hook wrote inside.
    assert_eq!(
        std::fs::read_to_string(h.ws().join("inside.txt")).unwrap(),
        "yes\n"
    );
    let lines = json_lines(&out);
    let runs = hook_runs(&lines);
    assert_eq!(runs[0]["outcome"], "ok", "{runs:#?}");
}

#[test]
fn a_person_hook_needs_no_consent_and_a_prompt_hook_can_refuse_the_goal() {
    let h = Harness::new(&[]);
    let config = h.dir.path().join(".config/pocketpilot");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("hooks.json"),
        json!({ "hooks": { "UserPromptSubmit": [{ "hooks": [{ "type": "command",
            "command": "jq -e '.prompt | test(\"deploy\")' >/dev/null && { echo 'no deploys from here' >&2; exit 2; }; echo 'The person prefers short answers.'" }] }] } })
        .to_string(),
    )
    .unwrap();
    let (p, log) = model(&h, "ok", json!([{ "text": "ok" }]));
    let out = exec(&h, "say hi", &p, &[]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let lines = json_lines(&out);
    let runs = hook_runs(&lines);
    assert_eq!(runs[0]["scope"], "person");
    assert_eq!(runs[0]["outcome"], "ok");
    assert!(requests(&log)[0].contains("The person prefers short answers."));

    let out = exec(&h, "deploy to prod", &p, &[]);
    assert_eq!(code(&out), 1, "{}", text(&out.stderr));
    let lines = json_lines(&out);
    let failed = of_type(&lines, "task_failed");
    assert_eq!(failed[0]["payload"]["kind"], "hook_blocked");
    assert!(failed[0]["payload"]["error"]
        .as_str()
        .unwrap()
        .contains("no deploys from here"));
    assert_eq!(
        requests(&log).len(),
        1,
        "the refused goal reached the model"
    );
}

#[test]
fn pre_compact_fires_for_the_persons_compact_now_with_trigger_manual() {
    let h = Harness::new(&[]);
    let config = h.dir.path().join(".config/pocketpilot");
    std::fs::create_dir_all(&config).unwrap();
    // Keeps what it was given, in the workspace (the only place it may write).
    std::fs::write(
        config.join("hooks.json"),
        json!({ "hooks": { "PreCompact": [{ "hooks": [{ "type": "command",
            "command": "cat > \"$CLAUDE_PROJECT_DIR/pre-compact.json\"" }] }] } })
        .to_string(),
    )
    .unwrap();
    let (p, _log) = model(
        &h,
        "compact",
        json!([{ "text": "An answer to keep." }, { "text": "A summary of the session." }]),
    );
    let out = exec(&h, "say something", &p, &[]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let lines = json_lines(&out);
    // The run itself never compacted: no PreCompact yet.
    assert!(hook_runs(&lines).is_empty(), "{lines:?}");
    assert!(!h.ws().join("pre-compact.json").exists());
    let session = h.json(&["sessions", "--json"])[0]["id"].as_i64().unwrap();

    // The person's "compact now" (the CLI's `session compact`).
    let out = h.output(&["session", "compact", &session.to_string(), "--json"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let given: Value =
        serde_json::from_str(&std::fs::read_to_string(h.ws().join("pre-compact.json")).unwrap())
            .unwrap();
    assert_eq!(given["hook_event_name"], "PreCompact");
    assert_eq!(given["trigger"], "manual");
    assert_eq!(given["session_id"], session.to_string());

    // Recorded like any hook's run, under the session's task.
    let task = h.json(&["tasks", "--json"])[0]["id"].as_i64().unwrap();
    let shown = h.json(&["show", &task.to_string(), "--json"]);
    let ran: Vec<&Value> = shown["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "hook_ran")
        .collect();
    assert_eq!(ran.len(), 1, "{shown}");
    assert_eq!(ran[0]["payload"]["hook_event"], "PreCompact");
    assert_eq!(ran[0]["payload"]["outcome"], "ok");
}

#[test]
fn an_in_process_eval_never_runs_the_evaluating_persons_own_hooks() {
    let h = Harness::new(&[]);
    // The person who runs the evals has a hook that refuses every goal.
    let config = h.dir.path().join(".config");
    std::fs::create_dir_all(config.join("pocketpilot")).unwrap();
    std::fs::write(
        config.join("pocketpilot/hooks.json"),
        json!({ "hooks": { "UserPromptSubmit": [{ "hooks": [{ "type": "command",
            "command": "echo 'not from this machine' >&2; exit 2" }] }] } })
        .to_string(),
    )
    .unwrap();
    let cases = h.dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("evals/cases/01_happy.json"),
        cases.join("01_happy.json"),
    )
    .unwrap();
    let out = h
        .cmd(&[
            "eval",
            "--cases",
            &cases.display().to_string(),
            "--filter",
            "happy_plain_answer",
            "--json",
        ])
        .env("XDG_CONFIG_HOME", &config)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        text(&out.stderr).contains("1 passed, 0 failed"),
        "{}",
        text(&out.stderr)
    );
}
