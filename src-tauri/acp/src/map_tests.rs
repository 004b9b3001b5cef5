#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::*;
use serde_json::json;

#[test]
fn kinds_follow_the_capability() {
    assert_eq!(tool_kind(None), acp::ToolKind::Read);
    assert_eq!(tool_kind(Some(name::FS_WRITE)), acp::ToolKind::Edit);
    assert_eq!(tool_kind(Some(name::FS_DELETE)), acp::ToolKind::Delete);
    assert_eq!(tool_kind(Some(name::SHELL_EXECUTE)), acp::ToolKind::Execute);
    assert_eq!(tool_kind(Some(name::NET_NETWORK)), acp::ToolKind::Fetch);
    assert_eq!(tool_kind(Some("mcp:files:read:read")), acp::ToolKind::Other);
}

#[test]
fn a_write_or_an_edit_is_a_whole_file_diff() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
    let effect = Effect::Diff {
        path: "a.txt".into(),
        diff: "-two\n+2\n".into(),
        base_sha256: None,
    };
    let edit = json!({ "path": "a.txt", "edits": [{ "old_text": "two", "new_text": "2" }] });
    let content = effect_content(dir.path(), &effect, &edit);
    let [acp::ToolCallContent::Diff(d)] = content.as_slice() else {
        panic!("{content:?}")
    };
    assert_eq!(d.old_text.as_deref(), Some("one\ntwo\n"));
    assert_eq!(d.new_text, "one\n2\n");
    assert_eq!(d.path, dir.path().join("a.txt"));

    let new_file = Effect::Diff {
        path: "b.txt".into(),
        diff: "+hi\n".into(),
        base_sha256: None,
    };
    let write = json!({ "path": "b.txt", "content": "hi\n" });
    let content = effect_content(dir.path(), &new_file, &write);
    let [acp::ToolCallContent::Diff(d)] = content.as_slice() else {
        panic!("{content:?}")
    };
    assert_eq!(d.old_text, None);
    assert_eq!(d.new_text, "hi\n");

    // An edit whose text is not there any more: the unified diff, as the person sees it.
    let stale = json!({ "path": "a.txt", "edits": [{ "old_text": "three", "new_text": "3" }] });
    let content = effect_content(dir.path(), &effect, &stale);
    assert!(matches!(
        content.as_slice(),
        [acp::ToolCallContent::Content(_)]
    ));
}

#[test]
fn every_status_has_a_stop_reason_or_is_an_error() {
    assert_eq!(
        stop_reason(TaskStatus::Completed),
        Some(acp::StopReason::EndTurn)
    );
    assert_eq!(
        stop_reason(TaskStatus::Cancelled),
        Some(acp::StopReason::Cancelled)
    );
    assert_eq!(
        stop_reason(TaskStatus::Paused),
        Some(acp::StopReason::MaxTurnRequests)
    );
    assert_eq!(stop_reason(TaskStatus::Failed), None);
}

#[test]
fn titles_name_what_the_call_acts_on() {
    assert_eq!(
        title("run_command", &json!({"command": "ls"})),
        "run_command ls"
    );
    assert_eq!(title("list_dir", &json!({})), "list_dir");
    assert_eq!(arguments_value("{\"a\":1}"), json!({"a": 1}));
    assert_eq!(arguments_value("not json"), json!("not json"));
}
