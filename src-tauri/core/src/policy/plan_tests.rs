use super::*;
use crate::policy::command_rules::Judgement;
use pocketpilot_protocol::{PlanSource, PlanStatus};
use serde_json::json;

fn plan(files: &[&str], commands: &[&str]) -> Plan {
    Plan {
        id: 7,
        session_id: 1,
        task_id: 1,
        status: PlanStatus::Approved,
        source: PlanSource::Tool,
        content: PlanContent {
            steps: vec!["one".into()],
            files: files.iter().map(|s| s.to_string()).collect(),
            commands: commands.iter().map(|s| s.to_string()).collect(),
        },
        done: Vec::new(),
        edited: false,
        run_task_id: Some(2),
        created_at: "2025-12-02T10:00:00.000Z".into(),
        decided_at: Some("2025-12-02T10:01:00.000Z".into()),
    }
}

#[test]
fn planning_refuses_all_but_reading_and_fetching() {
    let s = PlanScope::Planning;
    for cap in [
        "fs:write",
        "fs:delete",
        "shell:execute",
        "memory:write",
        "mcp:files:write:execute",
    ] {
        assert!(s.refuses(cap), "{cap}");
    }
    for cap in ["fs:read", "fs:list", "net:network"] {
        assert!(!s.refuses(cap), "{cap}");
    }
    assert!(!PlanScope::Act.refuses("shell:execute"));
    assert!(!PlanScope::carrying(&plan(&[], &[])).refuses("shell:execute"));
}

#[test]
fn an_approved_plan_covers_writes_to_its_files_only() {
    let s = PlanScope::carrying(&plan(&["src/a.rs", "./notes.txt"], &[]));
    let ws = "/w";
    let write = |p: &str| json!({ "path": p, "content": "x" });
    assert!(s.covers_write("fs:write", &write("src/a.rs"), ws));
    assert!(s.covers_write("fs:write", &write("./src//a.rs"), ws));
    assert!(s.covers_write("fs:write", &write("notes.txt"), ws));
    assert!(s.covers_write("fs:write", &write("/w/notes.txt"), ws));
    assert!(!s.covers_write("fs:write", &write("/wx/notes.txt"), ws));
    assert!(!s.covers_write("fs:write", &write("src/b.rs"), ws));
    assert!(!s.covers_write("fs:write", &write("src/../notes.txt"), ws));
    assert!(!s.covers_write("fs:delete", &json!({ "path": "notes.txt" }), ws));
    assert!(!PlanScope::Planning.covers_write("fs:write", &write("notes.txt"), ws));
}

#[test]
fn a_plan_s_commands_are_exact_rules_for_its_run() {
    let p = plan(
        &[],
        &[
            "cargo test -p core",
            "cargo build *",
            "make && make install",
        ],
    );
    let rules = with_plan_commands(Vec::new(), &p);
    let Judgement::Allowed(uses) = rules.judge("cargo test -p core") else {
        panic!("the listed command asks");
    };
    assert_eq!(uses[0].origin, CommandRuleOrigin::Plan);
    // Exact: other arguments, a chain onto it, or the `*` widened are not covered.
    for other in [
        "cargo test -p core --release",
        "cargo test",
        "cargo test -p core; rm -rf x",
        "cargo build --release",
        "make && make install",
    ] {
        assert!(
            matches!(rules.judge(other), Judgement::Asked(_)),
            "{other} is covered"
        );
    }
}

#[test]
fn a_plan_is_read_from_json_or_markdown_answers() {
    let fenced = "Here is my plan:\n```json\n{\"steps\": [\"a\", \"b\"], \"files\": [\"x.txt\"], \"commands\": []}\n```";
    let p = from_answer(fenced).unwrap();
    assert_eq!(p.steps, ["a", "b"]);
    assert_eq!(p.files, ["x.txt"]);

    let md = "## Plan\n1. Read `a.rs`\n2. Fix the bug\n\n**Files:**\n- `src/a.rs`\n\nCommands:\n- `cargo test -p a`\n";
    let p = from_answer(md).unwrap();
    assert_eq!(p.steps, ["Read `a.rs`", "Fix the bug"]);
    assert_eq!(p.files, ["src/a.rs"]);
    assert_eq!(p.commands, ["cargo test -p a"]);

    let bare = "I will:\n1) look\n2) write notes.txt\n";
    assert_eq!(
        from_answer(bare).unwrap().steps,
        ["look", "write notes.txt"]
    );

    assert_eq!(from_answer("The file says hello."), None);
    assert_eq!(from_answer("```json\n{\"steps\": []}\n```"), None);
}
