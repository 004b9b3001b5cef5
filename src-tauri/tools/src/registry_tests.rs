use super::*;

#[test]
fn builtin_lists_every_tool_once_in_a_stable_order() {
    let registry = Registry::builtin();
    assert_eq!(
        registry.names(),
        vec![
            "read_file",
            "list_dir",
            "search_files",
            "write_file",
            "edit_file",
            "delete_path",
            "run_command",
            "fetch_url"
        ]
    );
    assert_eq!(registry.specs().len(), 8);
}

#[test]
fn get_finds_by_name_and_unknown_is_none() {
    let registry = Registry::builtin();
    assert_eq!(registry.get("edit_file").unwrap().capability(), "fs:write");
    assert!(registry.get("rm_rf").is_none());
}

#[test]
fn every_schema_is_a_closed_object() {
    for spec in Registry::builtin().specs() {
        assert_eq!(spec.parameters["type"], "object", "{}", spec.name);
        assert_eq!(
            spec.parameters["additionalProperties"], false,
            "{}",
            spec.name
        );
        assert!(!spec.description.is_empty());
    }
}

#[test]
fn only_read_only_tools_are_replay_safe() {
    let registry = Registry::builtin();
    for name in registry.names() {
        let tool = registry.get(name).unwrap();
        let read_only = matches!(tool.capability(), "fs:read" | "fs:list");
        assert_eq!(tool.replay_safe(), read_only, "{name}");
    }
}

#[test]
fn register_replaces_by_name() {
    let mut registry = Registry::builtin();
    registry.register(Arc::new(crate::builtin::ReadFile));
    assert_eq!(registry.names().len(), 8);
}
