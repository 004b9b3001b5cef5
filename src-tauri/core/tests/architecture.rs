//! The layering the crates promise, checked against what cargo actually resolves: the core
//! compiles without a window toolkit, an HTTP server or a command-line parser, and the wire
//! types without a database or an async runtime.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::process::Command;

/// The names of every package in `package`'s normal (non-dev, non-build) dependency graph.
fn normal_dependencies(package: &str) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "-e",
            "normal",
            "--prefix",
            "none",
            "-p",
            package,
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

fn assert_free_of(package: &str, forbidden: &[&str]) {
    let deps = normal_dependencies(package);
    assert!(
        deps.len() > 5,
        "{package}: suspiciously few dependencies: {deps:?}"
    );
    let found: Vec<&String> = deps
        .iter()
        .filter(|d| {
            forbidden
                .iter()
                .any(|f| d.as_str() == *f || d.starts_with(&format!("{f}-")))
        })
        .collect();
    assert!(found.is_empty(), "{package} depends on {found:?}");
}

#[test]
fn core_has_neither_tauri_nor_an_http_server_nor_a_cli_parser() {
    assert_free_of("pocketpilot-core", &["tauri", "axum", "clap", "wry"]);
}

#[test]
fn the_protocol_has_no_database_async_runtime_or_toolkit() {
    let deps = normal_dependencies("pocketpilot-protocol");
    for forbidden in ["rusqlite", "tokio", "tauri", "specta"] {
        assert!(
            !deps.iter().any(|d| d == forbidden),
            "pocketpilot-protocol depends on {forbidden}: {deps:?}"
        );
    }
}

#[test]
fn the_store_knows_nothing_of_runs() {
    // tokio only for the writer's async hand-off (its `sync` primitives), never a run.
    assert_free_of(
        "pocketpilot-store",
        &[
            "tauri",
            "axum",
            "clap",
            "pocketpilot-core",
            "pocketpilot-model",
        ],
    );
}

/// No two of core's modules name each other (`crate::a` in b and `crate::b` in a): the
/// dependencies between them read one way, top-down.
#[test]
fn no_two_core_modules_import_each_other() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut uses = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.extension().is_none_or(|e| e != "rs") || name.ends_with("_tests") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        // Unit tests may reach anywhere.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let mut named = std::collections::BTreeSet::new();
        for piece in code.split("crate::").skip(1) {
            let module: String = piece
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            if !module.is_empty() && module != name {
                named.insert(module);
            }
        }
        uses.insert(name, named);
    }
    assert!(
        uses.len() > 10,
        "core's modules not found in {}",
        src.display()
    );
    let mut cycles = Vec::new();
    for (a, named) in &uses {
        for b in named {
            if a < b && uses.get(b).is_some_and(|back| back.contains(a)) {
                cycles.push(format!("{a} <-> {b}"));
            }
        }
    }
    assert!(
        cycles.is_empty(),
        "modules that import each other: {cycles:?}"
    );
}
