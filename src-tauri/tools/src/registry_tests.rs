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

#[test]
fn lean_specs_are_short_and_keep_every_required_field() {
    let full = Registry::builtin();
    let mut lean = Registry::builtin();
    lean.set_lean(true);
    let (full, lean) = (full.specs(), lean.specs());
    assert_eq!(full.len(), lean.len());
    let size = |specs: &[ToolSpec]| serde_json::to_string(specs).unwrap().len();
    // The point of the lean specs: well under half the bytes of the full ones.
    assert!(
        size(&lean) * 2 < size(&full),
        "{} vs {}",
        size(&lean),
        size(&full)
    );
    for (f, l) in full.iter().zip(&lean) {
        assert_eq!(f.name, l.name);
        assert!(l.description.len() <= 80, "{}: {}", l.name, l.description);
        assert_eq!(l.parameters["type"], "object", "{}", l.name);
        assert_eq!(
            l.parameters["required"], f.parameters["required"],
            "{}",
            l.name
        );
        for name in f.parameters["required"].as_array().into_iter().flatten() {
            let name = name.as_str().unwrap();
            assert!(
                l.parameters["properties"].get(name).is_some(),
                "{}: {name}",
                l.name
            );
        }
        assert!(!serde_json::to_string(&l.parameters)
            .unwrap()
            .contains("\"description\""));
    }
}

#[test]
fn lean_schema_drops_optional_numeric_knobs_but_not_optional_text() {
    let lean = crate::lean_schema(&crate::builtin::SearchFiles.parameters());
    let props = lean["properties"].as_object().unwrap();
    assert!(props.contains_key("pattern") && props.contains_key("glob"));
    assert!(!props.contains_key("max_results"));
    let edit = crate::lean_schema(&crate::builtin::EditFile.parameters());
    assert_eq!(
        edit["properties"]["edits"]["items"]["required"],
        serde_json::json!(["old_text", "new_text"])
    );
    assert!(edit["properties"]["edits"].get("maxItems").is_none());
}

#[test]
fn withheld_tools_are_not_offered_yet_still_found_by_name() {
    let mut registry = Registry::builtin();
    registry.withhold(|t| t.capability() == "net:network");
    let offered: Vec<String> = registry.specs().into_iter().map(|s| s.name).collect();
    assert!(!offered.contains(&"fetch_url".to_owned()));
    assert_eq!(offered.len(), 7);
    assert!(registry.get("fetch_url").is_some());
}

#[test]
fn specs_are_byte_stable_across_calls() {
    let mut registry = Registry::builtin();
    registry.set_lean(true);
    let a = serde_json::to_string(&registry.specs()).unwrap();
    let b = serde_json::to_string(&registry.clone().specs()).unwrap();
    assert_eq!(a, b);
}
