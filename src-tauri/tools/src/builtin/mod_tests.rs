use serde::Deserialize;
use serde_json::json;

use super::*;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    #[allow(dead_code)]
    path: String,
}

#[test]
fn unknown_field_is_a_clear_invalid_arguments_error() {
    let err = parse_args::<Args>(&json!({"path": "a", "bogus": 1})).unwrap_err();
    assert_eq!(err.kind().as_str(), "invalid_arguments");
    assert!(err.to_string().contains("bogus"), "{err}");
}

#[test]
fn missing_field_names_it() {
    let err = parse_args::<Args>(&json!({})).unwrap_err();
    assert!(err.to_string().contains("path"), "{err}");
}

#[test]
fn wrong_type_is_rejected() {
    let err = parse_args::<Args>(&json!({"path": 3})).unwrap_err();
    assert_eq!(err.kind().as_str(), "invalid_arguments");
}

#[test]
fn huge_arguments_are_rejected_before_parsing() {
    let big = "x".repeat(MAX_ARGS_BYTES + 1);
    let err = parse_args::<Args>(&json!({ "path": big })).unwrap_err();
    assert!(err.to_string().contains("at most"), "{err}");
}

#[test]
fn binary_detection_uses_nul_in_the_head() {
    assert!(looks_binary(b"abc\0def"));
    assert!(!looks_binary("héllo\n".as_bytes()));
}

#[test]
fn diff_of_a_new_file_is_against_dev_null() {
    let diff = unified_diff("a.txt", None, "one\n");
    assert!(diff.contains("--- /dev/null"), "{diff}");
    assert!(diff.contains("+++ b/a.txt"), "{diff}");
    assert!(diff.contains("+one"), "{diff}");
}

/// Each built-in says what it does: the hint for one of its outputs cut from the model's
/// view follows from that, whatever the tool is called.
#[test]
fn every_builtin_declares_what_it_does() {
    use crate::tool::Tool;
    use pocketpilot_model::ToolKind;
    let expected = [
        ("read_file", ToolKind::Read),
        ("list_dir", ToolKind::Search),
        ("search_files", ToolKind::Search),
        ("write_file", ToolKind::Write),
        ("edit_file", ToolKind::Write),
        ("delete_path", ToolKind::Write),
        ("run_command", ToolKind::Command),
        ("fetch_url", ToolKind::Fetch),
    ];
    let registry = crate::registry::Registry::builtin();
    assert_eq!(registry.names().len(), expected.len());
    for (name, kind) in expected {
        assert_eq!(registry.get(name).unwrap().kind(), kind, "{name}");
    }
    // Loading a skill again is how to see it again: the hint names the tool.
    assert_eq!(LoadSkill.kind(), ToolKind::Other);
}
