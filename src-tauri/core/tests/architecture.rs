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
