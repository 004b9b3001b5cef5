use super::*;

fn file(text: &str) -> HooksFile {
    HooksFile::parse(
        Path::new("hooks.json"),
        HookScope::Workspace,
        text.as_bytes(),
    )
    .unwrap()
}

#[test]
fn a_claude_code_file_reads_with_its_matchers_and_timeouts() {
    let f = file(
        r#"{"hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "a.sh", "timeout": 5}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "b.sh"}]}],
            "Notification": [{"hooks": [{"type": "command", "command": "c.sh"}]}]
        }}"#,
    );
    assert_eq!(f.hooks.len(), 2);
    let pre = f
        .hooks
        .iter()
        .find(|h| h.event == HookEvent::PreToolUse)
        .unwrap();
    assert_eq!(pre.timeout_secs, 5);
    assert!(pre.matches(HookEvent::PreToolUse, Some("run_command")));
    assert!(!pre.matches(HookEvent::PreToolUse, Some("read_file")));
    assert!(!pre.matches(HookEvent::PostToolUse, Some("run_command")));
    let stop = f.hooks.iter().find(|h| h.event == HookEvent::Stop).unwrap();
    assert_eq!(stop.timeout_secs, DEFAULT_TIMEOUT_SECS);
    assert_eq!(f.problems.len(), 1, "{:?}", f.problems);
}

#[test]
fn matchers_are_whole_name_patterns_and_star_matches_all() {
    let f = file(
        r#"{"hooks": {"PostToolUse": [
            {"matcher": "Edit|Write", "hooks": [{"command": "x"}]},
            {"matcher": "*", "hooks": [{"command": "y"}]},
            {"matcher": "read", "hooks": [{"command": "z"}]}
        ]}}"#,
    );
    let [edit, all, read] = &f.hooks[..] else {
        panic!("{:?}", f.hooks)
    };
    assert!(edit.matches(HookEvent::PostToolUse, Some("write_file")));
    assert!(edit.matches(HookEvent::PostToolUse, Some("edit_file")));
    assert!(!edit.matches(HookEvent::PostToolUse, Some("read_file")));
    assert!(all.matches(HookEvent::PostToolUse, Some("anything")));
    assert!(!read.matches(HookEvent::PostToolUse, Some("read_file")));
}

#[test]
fn a_different_file_has_a_different_hash() {
    let a = file(r#"{"hooks": {}}"#);
    let b = file(r#"{"hooks": {} }"#);
    assert_ne!(a.hash, b.hash);
    assert_eq!(a.hash.len(), 64);
}

#[test]
fn exit_codes_follow_the_contract() {
    let r = read_reply(HookEvent::PreToolUse, Some(2), "", "no rm here\n");
    assert_eq!(r.blocked.as_deref(), Some("no rm here"));
    let r = read_reply(HookEvent::PreToolUse, Some(1), "", "oops");
    assert!(r.error && r.blocked.is_none());
    assert_eq!(r.note.as_deref(), Some("oops"));
    let r = read_reply(HookEvent::PreToolUse, Some(0), "fine", "");
    assert_eq!(r, Reply::default());
    let r = read_reply(
        HookEvent::UserPromptSubmit,
        Some(0),
        "today is Monday\n",
        "",
    );
    assert_eq!(r.context.as_deref(), Some("today is Monday"));
    let r = read_reply(HookEvent::PreToolUse, None, "", "");
    assert!(r.error);
}

#[test]
fn json_replies_deny_block_and_add_but_never_allow() {
    let r = read_reply(
        HookEvent::PreToolUse,
        Some(0),
        r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "not on Fridays"}}"#,
        "",
    );
    assert_eq!(r.blocked.as_deref(), Some("not on Fridays"));
    let r = read_reply(
        HookEvent::PreToolUse,
        Some(0),
        r#"{"decision": "approve", "hookSpecificOutput": {"permissionDecision": "allow", "additionalContext": "use -n"}}"#,
        "",
    );
    assert_eq!(r.blocked, None);
    assert_eq!(r.context.as_deref(), Some("use -n"));
    let r = read_reply(
        HookEvent::Stop,
        Some(0),
        r#"{"decision": "block", "reason": "run the tests"}"#,
        "",
    );
    assert_eq!(r.blocked.as_deref(), Some("run the tests"));
    let r = read_reply(
        HookEvent::Stop,
        Some(0),
        r#"{"continue": false, "decision": "block", "reason": "x"}"#,
        "",
    );
    assert!(r.halt && r.blocked.is_none());
    let r = read_reply(HookEvent::PostToolUse, Some(0), "{not json", "");
    assert!(r.error);
}
