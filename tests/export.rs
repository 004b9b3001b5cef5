//! `pocketpilot export`, end to end: a session made through the real binary with the
//! scripted model (tool calls, a file added then changed), exported as JSON and Markdown
//! and read back against what `session show`, `show` and `changes` say; and `--all` over a
//! thousand sessions written straight into a real store.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod support;

use std::collections::BTreeMap;

use serde_json::{json, Value};
use support::Harness;

fn script(h: &Harness, name: &str, turns: Value) -> String {
    let p = h.dir.path().join(name);
    std::fs::write(&p, turns.to_string()).unwrap();
    format!("scripted:{}", p.display())
}

fn ok(h: &Harness, args: &[&str]) -> String {
    let out = h.output(args);
    assert!(
        out.status.success(),
        "{args:?} exited {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn write_call(path: &str, content: &str) -> Value {
    json!({ "tool_calls": [{ "name": "write_file", "arguments": { "path": path, "content": content } }],
            "usage": { "prompt_tokens": 100, "completion_tokens": 20 } })
}

/// Two tasks in one session: the first adds `plan.md`, the second reads it and rewrites a
/// line of it. Returns the session id.
fn two_task_session(h: &Harness) -> i64 {
    let s = script(
        h,
        "s.json",
        json!([
            write_call("plan.md", "# Plan\n\n- step one\n- step two\n"),
            { "text": "Wrote plan.md with two steps.", "usage": { "prompt_tokens": 150, "completion_tokens": 9 } },
            { "tool_calls": [{ "name": "read_file", "arguments": { "path": "plan.md" } }] },
            write_call("plan.md", "# Plan\n\n- step one\n- step 2, with ``` backticks\n"),
            { "text": "Step two is rewritten.", "usage": { "prompt_tokens": 300, "completion_tokens": 7 } }
        ]),
    );
    let ws = h.ws().display().to_string();
    ok(
        h,
        &[
            "run",
            "--workspace",
            &ws,
            "--goal",
            "Write a plan",
            "--provider",
            &s,
            "--allow",
            "fs:write",
        ],
    );
    let session = h.json(&["tasks", "--json"])[0]["session_id"]
        .as_i64()
        .unwrap();
    let sid = session.to_string();
    ok(
        h,
        &[
            "run",
            "--session",
            &sid,
            "--goal",
            "Rewrite step two",
            "--provider",
            &s,
            "--allow",
            "fs:write",
        ],
    );
    session
}

#[test]
fn a_session_exported_as_json_reads_back_as_the_store_has_it() {
    let h = Harness::new(&[]);
    let session = two_task_session(&h);
    let sid = session.to_string();
    let out_file = h.dir.path().join("out.json");
    ok(
        &h,
        &[
            "export",
            &sid,
            "--format",
            "json",
            "--out",
            out_file.to_str().unwrap(),
        ],
    );
    let x: Value = serde_json::from_slice(&std::fs::read(&out_file).unwrap()).unwrap();
    let stdout: Value =
        serde_json::from_str(&ok(&h, &["export", &sid, "--format", "json"])).unwrap();
    assert_eq!(x["format_version"], 1);
    // The same export to a file and to stdout, but for when it was written.
    let without_time = |v: &Value| {
        let mut v = v.clone();
        v.as_object_mut().unwrap().remove("exported_at");
        v
    };
    assert_eq!(without_time(&x), without_time(&stdout));

    let shown = h.json(&["session", "show", &sid, "--json"]);
    for key in ["id", "title", "workspace", "created_at", "updated_at"] {
        assert_eq!(x["session"][key], shown["session"][key], "session.{key}");
    }

    // Tasks: every one, field by field.
    let tasks = shown["tasks"].as_array().unwrap();
    let exported = x["tasks"].as_array().unwrap();
    assert_eq!(exported.len(), 2);
    assert_eq!(exported.len(), tasks.len());
    for (e, t) in exported.iter().zip(tasks) {
        for (ek, tk) in [
            ("id", "id"),
            ("goal", "goal"),
            ("status", "status"),
            ("trigger", "trigger"),
            ("provider", "provider"),
            ("follow_up_of", "follow_up_of"),
            ("final_answer", "final_answer"),
            ("error", "error"),
            ("steps", "step_count"),
            ("prompt_tokens", "prompt_tokens"),
            ("completion_tokens", "completion_tokens"),
            ("created_at", "created_at"),
            ("started_at", "started_at"),
            ("finished_at", "finished_at"),
        ] {
            assert_eq!(e[ek], t[tk], "task {}: {ek}", t["id"]);
        }
        assert_eq!(e["status"], "completed");
        let task = t["id"].as_i64().unwrap().to_string();

        // Tool calls against the task's recorded events: name, arguments, output.
        let events = h.json(&["show", &task, "--json"])["events"].clone();
        let started: Vec<&Value> = events
            .as_array()
            .unwrap()
            .iter()
            .filter(|ev| ev["type"] == "tool_call_started")
            .map(|ev| &ev["payload"])
            .collect();
        let completed: BTreeMap<String, &Value> = events
            .as_array()
            .unwrap()
            .iter()
            .filter(|ev| ev["type"] == "tool_call_completed")
            .map(|ev| {
                (
                    ev["payload"]["call_id"].as_str().unwrap().to_owned(),
                    &ev["payload"],
                )
            })
            .collect();
        let calls = e["tool_calls"].as_array().unwrap();
        assert!(!calls.is_empty(), "task {task} made calls");
        assert_eq!(calls.len(), started.len(), "task {task}: calls");
        for (c, s) in calls.iter().zip(&started) {
            assert_eq!(c["call_id"], s["call_id"]);
            assert_eq!(c["name"], s["name"]);
            let args: Value = serde_json::from_str(s["arguments"].as_str().unwrap()).unwrap();
            assert_eq!(c["arguments"], args);
            assert_eq!(c["status"], "done");
            assert_eq!(c["is_error"], false);
            let done = completed[c["call_id"].as_str().unwrap()];
            assert_eq!(c["output"], done["output"], "call {}", c["call_id"]);
        }

        // Files changed against `changes TASK`, diffs included.
        let changes = h.json(&["changes", &task, "--json"]);
        let files = e["files_changed"].as_array().unwrap();
        assert_eq!(files.len(), 1, "task {task}: {files:?}");
        assert_eq!(files.len(), changes["files"].as_array().unwrap().len());
        for (f, c) in files.iter().zip(changes["files"].as_array().unwrap()) {
            for key in ["path", "kind", "from", "before", "after", "diff", "call_id"] {
                assert_eq!(f[key], c[key], "task {task}: file {key}");
            }
        }
    }
    let first = &exported[0]["files_changed"][0];
    assert_eq!(
        (first["path"].as_str(), first["kind"].as_str()),
        (Some("plan.md"), Some("added"))
    );
    let second = &exported[1]["files_changed"][0];
    assert_eq!(second["kind"], "modified");
    let diff = second["diff"].as_str().unwrap();
    assert!(diff.contains("-- step two\n"), "{diff}");
    assert!(diff.contains("+- step 2, with ``` backticks\n"), "{diff}");

    // The transcript: every entry in order, with its words, calls and results.
    let entries = shown["entries"].as_array().unwrap();
    let transcript = x["transcript"].as_array().unwrap();
    assert_eq!(transcript.len(), entries.len());
    for (t, e) in transcript.iter().zip(entries) {
        for key in ["id", "task_id", "kind"] {
            assert_eq!(t[key], e[key], "entry {}: {key}", e["id"]);
        }
        assert_eq!(t["at"], e["created_at"]);
        assert_eq!(t["text"], e["content"]["text"], "entry {}", e["id"]);
        match e["kind"].as_str().unwrap() {
            "assistant" => assert_eq!(
                t.get("tool_calls").cloned().unwrap_or(json!([])),
                e["content"]["tool_calls"]
            ),
            "tool_result" => {
                assert_eq!(t["call_id"], e["content"]["call_id"]);
                assert_eq!(t["is_error"], e["content"]["is_error"]);
            }
            _ => {}
        }
    }
    let kinds: Vec<&str> = transcript
        .iter()
        .map(|t| t["kind"].as_str().unwrap())
        .collect();
    for kind in ["user", "assistant", "tool_result"] {
        assert!(kinds.contains(&kind), "{kinds:?}");
    }

    // Costs: every model turn, and the tokens its tasks recorded.
    assert_eq!(x["cost"]["turns"], 5);
    for key in ["prompt_tokens", "completion_tokens"] {
        let sum: i64 = tasks.iter().map(|t| t[key].as_i64().unwrap()).sum();
        assert_eq!(x["cost"][key], sum, "cost.{key}");
    }
}

#[test]
fn a_session_exported_as_markdown_has_its_words_calls_answers_and_diffs() {
    let h = Harness::new(&[]);
    let session = two_task_session(&h);
    let sid = session.to_string();
    let md = ok(&h, &["export", &sid]);
    let x: Value = serde_json::from_str(&ok(&h, &["export", &sid, "--format", "json"])).unwrap();
    assert!(
        md.starts_with(&format!("# {}\n", x["session"]["title"].as_str().unwrap())),
        "{md}"
    );
    for t in x["tasks"].as_array().unwrap() {
        assert!(
            md.contains(&format!(
                "## Task {}: {}",
                t["id"],
                t["goal"].as_str().unwrap()
            )),
            "{md}"
        );
        assert!(md.contains(t["final_answer"].as_str().unwrap()), "{md}");
        for c in t["tool_calls"].as_array().unwrap() {
            assert!(
                md.contains(&format!(
                    "Tool call `{}` ({})",
                    c["name"].as_str().unwrap(),
                    c["call_id"].as_str().unwrap()
                )),
                "{md}"
            );
        }
    }
    // The person's words, quoted; a result fenced; the diff in a fence longer than the
    // backticks it holds.
    assert!(md.contains("> Write a plan"), "{md}");
    assert!(md.contains("> Rewrite step two"), "{md}");
    assert!(md.contains("Tool result (call_"), "{md}");
    assert!(md.contains("- added `plan.md`"), "{md}");
    assert!(md.contains("- modified `plan.md`"), "{md}");
    assert!(
        md.contains("````diff\n--- a/plan.md\n+++ b/plan.md\n"),
        "{md}"
    );
    assert!(md.contains("\n+- step 2, with ``` backticks\n"), "{md}");
    // Each answer once, under its heading, after the calls of its task; tasks in order.
    assert_eq!(
        md.matches("Wrote plan.md with two steps.").count(),
        1,
        "{md}"
    );
    assert_eq!(md.matches("### Answer").count(), 2, "{md}");
    let a1 = md.find("Wrote plan.md with two steps.").unwrap();
    let t2 = md.find("## Task 2:").unwrap();
    let a2 = md.find("Step two is rewritten.").unwrap();
    assert!(a1 < t2 && t2 < a2, "{md}");

    let out = h.output(&["export", "999"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unknown session is a usage error"
    );
}

#[test]
fn export_all_writes_one_file_per_session_for_a_thousand_sessions() {
    const N: i64 = 1000;
    let h = Harness::new(&[]);
    let data = h.dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    {
        let store = pocketpilot_store::Store::open_in_dir(&data).unwrap();
        store
            .write(|c| {
                for i in 0..N {
                    let title = format!("Session {i}: fix / the build #{i}");
                    let s = pocketpilot_store::sessions::insert(c, &title, "/tmp/ws")?;
                    let goal = format!("goal {i}");
                    let t = pocketpilot_store::tasks::insert(
                        c,
                        &pocketpilot_store::tasks::NewTask {
                            session_id: s,
                            goal: &goal,
                            trigger: pocketpilot_protocol::RunSource::Cli,
                            provider: None,
                            follow_up_of: None,
                            grants: &[],
                            mcp: &[],
                        },
                    )?;
                    pocketpilot_store::entries::append(
                        c,
                        s,
                        Some(t),
                        &pocketpilot_protocol::EntryKind::User,
                        &json!({ "text": format!("words {i}") }),
                    )?;
                    pocketpilot_store::entries::append(
                        c,
                        s,
                        Some(t),
                        &pocketpilot_protocol::EntryKind::Assistant,
                        &json!({ "text": format!("answer {i}"), "tool_calls": [] }),
                    )?;
                }
                Ok(())
            })
            .unwrap();
    }
    for format in ["json", "md"] {
        let dir = h.dir.path().join(format!("all-{format}"));
        ok(
            &h,
            &["export", "--all", dir.to_str().unwrap(), "--format", format],
        );
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names.len(), N as usize, "{format}: one file per session");
        for id in 1..=N {
            let i = id - 1;
            let name = format!("{id}-session-{i}-fix-the-build-{i}.{format}");
            assert!(names.binary_search(&name).is_ok(), "{name} missing");
        }
        // A sample, read back.
        for id in (1..=N).step_by(97) {
            let i = id - 1;
            let text = std::fs::read_to_string(
                dir.join(format!("{id}-session-{i}-fix-the-build-{i}.{format}")),
            )
            .unwrap();
            if format == "json" {
                let x: Value = serde_json::from_str(&text).unwrap();
                assert_eq!(x["format_version"], 1);
                assert_eq!(x["session"]["id"], id);
                assert_eq!(
                    x["session"]["title"],
                    format!("Session {i}: fix / the build #{i}")
                );
                assert_eq!(x["tasks"][0]["goal"], format!("goal {i}"));
                assert_eq!(x["transcript"][0]["text"], format!("words {i}"));
                assert_eq!(x["transcript"][1]["text"], format!("answer {i}"));
            } else {
                assert!(
                    text.starts_with(&format!("# Session {i}: fix / the build #{i}\n")),
                    "{text}"
                );
                assert!(text.contains(&format!("> words {i}\n")), "{text}");
                assert!(text.contains(&format!("answer {i}")), "{text}");
            }
        }
        assert!(
            !names.iter().any(|n| n.ends_with(".part")),
            "no half-written file is left"
        );
    }
}
