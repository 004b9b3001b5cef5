use serde_json::json;

use super::*;
use crate::builtin::test_support::Fixture;

fn tree() -> Fixture {
    let f = Fixture::new();
    f.write("src/main.rs", "fn main() {\n    println!(\"hello\");\n}\n");
    f.write("src/lib.rs", "pub fn hello() {}\n");
    f.write("README.md", "Hello world\n");
    f.write("target/debug/out.rs", "fn hello_generated() {}\n");
    f.write(".gitignore", "target/\n");
    f.write("blob.bin", b"hello\0binary");
    f
}

#[tokio::test]
async fn regex_over_contents_respects_gitignore_and_skips_binary() {
    let f = tree();
    let out = f
        .call(&SearchFiles, json!({"pattern": "hello"}))
        .await
        .unwrap();
    assert_eq!(
        out.text,
        "src/lib.rs:1: pub fn hello() {}\nsrc/main.rs:2:     println!(\"hello\");"
    );
}

#[tokio::test]
async fn case_insensitive_and_glob_combined() {
    let f = tree();
    let out = f
        .call(
            &SearchFiles,
            json!({"pattern": "hello", "glob": "*.md", "case_insensitive": true}),
        )
        .await
        .unwrap();
    assert_eq!(out.text, "README.md:1: Hello world");
}

#[tokio::test]
async fn glob_alone_lists_names_and_path_globs_need_a_slash() {
    let f = tree();
    let out = f.call(&SearchFiles, json!({"glob": "*.rs"})).await.unwrap();
    assert_eq!(out.text, "src/lib.rs\nsrc/main.rs");
    let out = f
        .call(&SearchFiles, json!({"glob": "src/m*.rs"}))
        .await
        .unwrap();
    assert_eq!(out.text, "src/main.rs");
}

#[tokio::test]
async fn result_cap_is_reported() {
    let f = Fixture::new();
    f.write("many.txt", "x\n".repeat(50));
    let out = f
        .call(&SearchFiles, json!({"pattern": "x", "max_results": 10}))
        .await
        .unwrap();
    assert_eq!(
        out.text
            .lines()
            .filter(|l| l.starts_with("many.txt:"))
            .count(),
        10
    );
    assert!(
        out.text.contains("[result cap reached: 10 shown"),
        "{}",
        out.text
    );
}

#[tokio::test]
async fn symlinks_out_are_not_followed() {
    let f = Fixture::new();
    std::fs::write(f.outside().join("secret.txt"), "needle").unwrap();
    std::os::unix::fs::symlink(f.outside(), f.path("out")).unwrap();
    std::os::unix::fs::symlink(f.outside().join("secret.txt"), f.path("s.txt")).unwrap();
    let out = f
        .call(&SearchFiles, json!({"pattern": "needle"}))
        .await
        .unwrap();
    assert_eq!(out.text, "no matches");
}

#[tokio::test]
async fn bad_arguments_are_clear() {
    let f = tree();
    let err = f.call(&SearchFiles, json!({})).await.unwrap_err();
    assert!(err.to_string().contains("pattern"), "{err}");
    let err = f
        .call(&SearchFiles, json!({"pattern": "("}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("bad regex"), "{err}");
    let err = f
        .call(&SearchFiles, json!({"glob": "a[" }))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("bad glob"), "{err}");
    let err = f
        .call(&SearchFiles, json!({"pattern": "x", "max_results": 100000}))
        .await
        .unwrap_err();
    assert_eq!(err.kind().as_str(), "invalid_arguments");
    let err = f
        .call(&SearchFiles, json!({"pattern": "x", "path": "../"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind().as_str(), "path_rejected");
}

#[tokio::test]
async fn cancelled_search_stops() {
    let f = tree();
    f.ctx.cancel.cancel();
    let err = f
        .call(&SearchFiles, json!({"pattern": "x"}))
        .await
        .unwrap_err();
    assert_eq!(err, ToolError::Cancelled);
}

#[tokio::test]
async fn data_dir_is_skipped() {
    let mut f = tree();
    f.write("appdata/secrets.txt", "hello from the db");
    f.ctx.forbidden = vec![f.path("appdata")];
    let out = f
        .call(&SearchFiles, json!({"pattern": "from the db"}))
        .await
        .unwrap();
    assert_eq!(out.text, "no matches");
}
