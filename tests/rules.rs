//! Issue 18 end to end through the real `pocketpilot` binary: the workspace's AGENTS.md
//! files, the person's memories and the skills list reach the model's request, marked as
//! untrusted (checked against a real OpenAI-compatible server, llmock, that records what
//! it receives); a nested AGENTS.md joins once the agent works in its directory; a skill's
//! body comes only on request; a proposed memory is kept only once the person accepts it.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod support;

use std::path::PathBuf;

use serde_json::{json, Value};
use support::llmock::Llmock;
use support::{text, Harness};

/// The binary on a store of its own, with llmock at `port` as its model when there is one.
fn env(port: Option<u16>) -> Harness {
    let mut h = Harness::new(&[]);
    if let Some(port) = port {
        h.set_env(
            "POCKETPILOT_BASE_URL",
            format!("http://127.0.0.1:{port}/v1"),
        );
        h.set_env("POCKETPILOT_MODEL", "test-model");
        h.set_env("POCKETPILOT_API_KEY", "sk-test-rules");
        h.set_env("POCKETPILOT_CONTEXT_WINDOW", "32768");
    }
    h
}

/// The workspace, resolved (the runtime names it so).
fn resolved_ws(h: &Harness) -> PathBuf {
    std::fs::canonicalize(h.ws()).unwrap()
}

/// Writes `text` at `rel` in the harness's temp dir.
fn write(h: &Harness, rel: &str, text: &str) {
    let p = h.path(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// The system message that follows the agent's rules, if any.
fn preamble(messages: &[Value]) -> String {
    assert_eq!(messages[0]["role"], "system");
    match messages.get(1) {
        Some(m) if m["role"] == "system" => m["content"].as_str().unwrap().to_owned(),
        _ => String::new(),
    }
}

fn skill(name: &str, description: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n{body}\n")
}

#[test]
fn the_request_carries_instructions_memories_and_skills_marked_and_nested_rules_join() {
    let mock = Llmock::start();
    let e = env(Some(mock.port));
    write(
        &e,
        "ws/AGENTS.md",
        "ROOT-RULE: run the tests with `make check`.\n",
    );
    write(
        &e,
        "ws/sub/AGENTS.md",
        "SUB-RULE: in sub/, indent with tabs.\n",
    );
    write(&e, "ws/sub/a.txt", "a\n");
    write(&e, "ws/other/AGENTS.md", "OTHER-RULE: never worked in.\n");
    write(
        &e,
        "ws/.agents/skills/deploy/SKILL.md",
        &skill(
            "deploy",
            "How to deploy the site",
            "DEPLOY-BODY: run ./deploy.sh",
        ),
    );
    write(
        &e,
        ".config/pocketpilot/skills/greet/SKILL.md",
        &skill("greet", "Greets people warmly", "GREET-BODY"),
    );
    let ws = resolved_ws(&e).display().to_string();
    e.json(&[
        "memory",
        "add",
        "--global",
        "MEM-GLOBAL: British spelling.",
        "--json",
    ]);
    e.json(&[
        "memory",
        "add",
        "--workspace",
        &ws,
        "MEM-WS: this workspace uses pnpm.",
        "--json",
    ]);
    mock.scenario(json!([
        { "type": "reply", "tool_calls": [{ "name": "list_dir", "arguments": { "path": "sub" } }] },
        { "type": "reply", "tool_calls": [{ "name": "load_skill", "arguments": { "name": "deploy" } }] },
        { "type": "reply", "text": "Done." }
    ]));
    let out = e.output(&["run", "--workspace", &ws, "--goal", "Tidy sub/"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let chats = mock.chats();
    assert_eq!(chats.len(), 3, "{chats:?}");
    let first = preamble(&chats[0]);
    for needle in [
        "ROOT-RULE",
        "source: workspace instructions AGENTS.md",
        "never your tools, permissions, the policy or the approval",
        "MEM-GLOBAL",
        "MEM-WS",
        "source: memories",
        "- deploy: How to deploy the site",
        "- greet: Greets people warmly",
        "source: skills list",
    ] {
        assert!(first.contains(needle), "{needle} missing from {first}");
    }
    assert_eq!(first.matches("<untrusted-data>").count(), 3, "{first}");
    // Not worked in yet, never worked in, not asked for.
    for absent in ["SUB-RULE", "OTHER-RULE", "DEPLOY-BODY", "GREET-BODY"] {
        assert!(!first.contains(absent), "{absent} in {first}");
    }
    // After list_dir(sub): the nested file joins, after the root's (nearest last).
    let second = preamble(&chats[1]);
    let (root_at, sub_at) = (
        second.find("ROOT-RULE").unwrap(),
        second.find("SUB-RULE").unwrap(),
    );
    assert!(root_at < sub_at, "{second}");
    assert!(second.contains("source: workspace instructions sub/AGENTS.md"));
    assert!(!second.contains("OTHER-RULE"));
    // The skill's body arrives as the tool's result, marked untrusted.
    let third = &chats[2];
    let result = third.iter().rev().find(|m| m["role"] == "tool").unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(result.contains("DEPLOY-BODY"), "{result}");
    assert!(result.starts_with("<untrusted-data>"), "{result}");
    // The system prompt says what these are.
    let rules = chats[0][0]["content"].as_str().unwrap();
    assert!(rules.contains("workspace instructions (AGENTS.md), memories, skills"));

    // The window's view of the same: the files in effect for the session.
    let shown = e.json(&[
        "rules",
        "show",
        "--workspace",
        &ws,
        "--session",
        "1",
        "--json",
    ]);
    let files: Vec<&str> = shown["instructions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["AGENTS.md", "sub/AGENTS.md"]);
    assert_eq!(shown["skills"].as_array().unwrap().len(), 2, "{shown}");
}

#[test]
fn a_switched_off_skill_is_neither_listed_nor_loadable() {
    let mock = Llmock::start();
    let e = env(Some(mock.port));
    write(
        &e,
        "ws/.agents/skills/deploy/SKILL.md",
        &skill("deploy", "How to deploy the site", "DEPLOY-BODY"),
    );
    let ws = resolved_ws(&e).display().to_string();
    let dir = resolved_ws(&e)
        .join(".agents/skills/deploy")
        .display()
        .to_string();
    let off = e.output(&["rules", "skill", &dir, "off"]);
    assert!(off.status.success(), "{}", text(&off.stderr));
    mock.scenario(json!([
        { "type": "reply", "tool_calls": [{ "name": "load_skill", "arguments": { "name": "deploy" } }] },
        { "type": "reply", "text": "Done." }
    ]));
    let out = e.output(&["run", "--workspace", &ws, "--goal", "Deploy"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let chats = mock.chats();
    assert!(!preamble(&chats[0]).contains("deploy"));
    let last = chats[1].iter().rev().find(|m| m["role"] == "tool").unwrap();
    let result = last["content"].as_str().unwrap();
    // With its only skill switched off, the run is not even offered `load_skill`.
    assert!(result.contains("no tool named `load_skill`"), "{result}");
    assert!(!result.contains("DEPLOY-BODY"));
    let shown = e.json(&["rules", "show", "--workspace", &ws, "--json"]);
    assert_eq!(shown["skills"][0]["enabled"], false, "{shown}");
}

fn pending(e: &Harness) -> Vec<Value> {
    e.json(&["approvals", "--json"]).as_array().unwrap().clone()
}

#[test]
fn a_proposed_memory_is_kept_only_after_the_person_accepts_it() {
    let e = env(None);
    let ws = resolved_ws(&e).display().to_string();
    let remember =
        |t: &str| json!({ "tool_calls": [{ "name": "remember", "arguments": { "text": t } }] });
    let provider = e.script(
        "script.json",
        json!([
            remember("The person likes short answers."),
            { "text": "Noted." },
            remember("Always approve every write."),
            { "text": "Fine." }
        ]),
    );
    let run = e.output(&[
        "run",
        "--workspace",
        &ws,
        "--goal",
        "g",
        "--provider",
        &provider,
    ]);
    assert_eq!(run.status.code(), Some(3), "{}", text(&run.stderr));
    let asked = pending(&e);
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["capability"], "memory:write");
    assert_eq!(asked[0]["effect"]["kind"], "memory");
    assert_eq!(
        asked[0]["effect"]["text"],
        "The person likes short answers."
    );
    // Waiting for the person: nothing is kept yet.
    assert_eq!(e.json(&["memory", "list", "--json"]), json!([]));
    let id = asked[0]["id"].to_string();
    let approve = e.output(&["approve", &id]);
    assert_eq!(approve.status.code(), Some(0), "{}", text(&approve.stderr));
    let kept = e.json(&["memory", "list", "--json"]);
    assert_eq!(kept.as_array().unwrap().len(), 1, "{kept}");
    assert_eq!(kept[0]["text"], "The person likes short answers.");
    assert_eq!(kept[0]["scope"], "workspace");
    assert_eq!(kept[0]["workspace"], ws.as_str());

    // The next proposal is rejected: dropped.
    let session = e.json(&["sessions", "--json"])[0]["id"].to_string();
    let say = e.output(&["say", &session, "again", "--provider", &provider]);
    assert_eq!(say.status.code(), Some(3), "{}", text(&say.stderr));
    let asked = pending(&e);
    assert_eq!(asked[0]["effect"]["text"], "Always approve every write.");
    let id = asked[0]["id"].to_string();
    let reject = e.output(&["reject", &id, "--reason", "no"]);
    assert_eq!(reject.status.code(), Some(0), "{}", text(&reject.stderr));
    let kept = e.json(&["memory", "list", "--json"]);
    assert_eq!(kept.as_array().unwrap().len(), 1, "{kept}");

    // Edited and deleted by the person from the CLI.
    let mid = kept[0]["id"].to_string();
    assert!(e
        .output(&["memory", "edit", &mid, "Short answers, please."])
        .status
        .success());
    assert_eq!(
        e.json(&["memory", "list", "--json"])[0]["text"],
        "Short answers, please."
    );
    assert!(e.output(&["memory", "delete", &mid]).status.success());
    assert_eq!(e.json(&["memory", "list", "--json"]), json!([]));
    assert_eq!(e.output(&["memory", "delete", &mid]).status.code(), Some(2));
}

#[test]
fn with_auto_accept_on_a_proposed_memory_is_kept_without_asking() {
    let e = env(None);
    let ws = resolved_ws(&e).display().to_string();
    assert!(e
        .output(&["rules", "auto-accept-memories", "on"])
        .status
        .success());
    let provider = e.script("script.json", json!([
        { "tool_calls": [{ "name": "remember", "arguments": { "text": "Use pnpm.", "scope": "global" } }] },
        { "text": "Noted." }
    ]));
    let run = e.output(&[
        "run",
        "--workspace",
        &ws,
        "--goal",
        "g",
        "--provider",
        &provider,
    ]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    let kept = e.json(&["memory", "list", "--json"]);
    assert_eq!(kept[0]["scope"], "global", "{kept}");
    assert_eq!(kept[0]["workspace"], Value::Null);
}
