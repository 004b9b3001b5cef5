use serde_json::json;

use super::*;
use crate::builtin::test_support::Fixture;

#[tokio::test]
async fn reads_a_text_file() {
    let f = Fixture::new();
    f.write("a.txt", "hello\nworld\n");
    let out = f.call(&ReadFile, json!({"path": "a.txt"})).await.unwrap();
    assert_eq!(out.text, "hello\nworld\n");
    assert!(out.changed.is_empty());
    assert_eq!(
        f.effect(&ReadFile, json!({"path": "a.txt"})).unwrap(),
        Effect::None
    );
}

#[tokio::test]
async fn binary_file_is_rejected_clearly() {
    let f = Fixture::new();
    f.write("img.png", b"\x89PNG\r\n\x1a\n\0\0\0");
    let err = f
        .call(&ReadFile, json!({"path": "img.png"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind().as_str(), "failed");
    assert!(err.to_string().contains("binary"), "{err}");
}

#[tokio::test]
async fn large_file_is_truncated_with_a_note() {
    let f = Fixture::new();
    let line = "0123456789abcdef\n";
    f.write("big.txt", line.repeat(20_000));
    let out = f.call(&ReadFile, json!({"path": "big.txt"})).await.unwrap();
    assert!(out.text.len() < READ_CAP_BYTES as usize + 300);
    assert!(
        out.text.contains("[truncated: 340000 bytes"),
        "{}",
        &out.text[out.text.len() - 200..]
    );
}

#[tokio::test]
async fn line_range_reaches_past_the_cap() {
    let f = Fixture::new();
    let text: String = (1..=30_000).map(|i| format!("line {i}\n")).collect();
    f.write("big.txt", text);
    let out = f
        .call(
            &ReadFile,
            json!({"path": "big.txt", "start_line": 29_999, "max_lines": 5}),
        )
        .await
        .unwrap();
    assert_eq!(out.text, "line 29999\nline 30000\n");
}

#[tokio::test]
async fn utf8_split_at_the_cap_is_not_mangled() {
    let f = Fixture::new();
    let mut text = "a".repeat(READ_CAP_BYTES as usize - 1);
    text.push('é');
    text.push_str("tail");
    f.write("u.txt", text);
    let out = f.call(&ReadFile, json!({"path": "u.txt"})).await.unwrap();
    assert!(!out.text.contains('\u{fffd}'));
}

#[tokio::test]
async fn missing_file_unknown_field_and_nul_are_clear_errors() {
    let f = Fixture::new();
    let err = f
        .call(&ReadFile, json!({"path": "nope.txt"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
    let err = f
        .call(&ReadFile, json!({"path": "a", "mode": "x"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind().as_str(), "invalid_arguments");
    let err = f
        .call(&ReadFile, json!({"path": "a\u{0}b"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind().as_str(), "path_rejected");
    let err = f
        .call(&ReadFile, json!({"path": "a", "start_line": 0}))
        .await
        .unwrap_err();
    assert_eq!(err.kind().as_str(), "invalid_arguments");
}

#[tokio::test]
async fn reading_outside_or_the_data_dir_is_rejected() {
    let mut f = Fixture::new();
    std::fs::write(f.outside().join("secret"), "s").unwrap();
    std::os::unix::fs::symlink(f.outside().join("secret"), f.path("link")).unwrap();
    let err = f
        .call(&ReadFile, json!({"path": "link"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind().as_str(), "path_rejected");
    f.write("appdata/db", "db");
    f.ctx.forbidden = vec![f.path("appdata")];
    let err = f
        .call(&ReadFile, json!({"path": "appdata/db"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind().as_str(), "path_rejected");
}

// Hard links (issue 15): a workspace name for an outside inode is not read.

#[tokio::test]
async fn a_file_hard_linked_to_one_outside_is_not_read() {
    let f = Fixture::new();
    std::fs::write(f.outside().join("secret.txt"), "TOP-SECRET").unwrap();
    std::fs::hard_link(f.outside().join("secret.txt"), f.path("notes.txt")).unwrap();
    let err = f
        .call(&ReadFile, json!({"path": "notes.txt"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind().as_str(), "path_rejected", "{err}");
    assert!(err.to_string().contains("hard-linked (2 links)"), "{err}");
    let found = f
        .call(
            &crate::builtin::search_files::SearchFiles,
            json!({"pattern": "SECRET"}),
        )
        .await
        .unwrap();
    assert!(!found.text.contains("TOP-SECRET"), "{}", found.text);
}

#[tokio::test]
async fn hard_links_that_stay_inside_the_workspace_are_read() {
    let f = Fixture::new();
    f.write("node_modules/.pnpm/pkg@1/index.js", "module.exports = 1;\n");
    std::fs::create_dir_all(f.path("node_modules/pkg")).unwrap();
    std::fs::hard_link(
        f.path("node_modules/.pnpm/pkg@1/index.js"),
        f.path("node_modules/pkg/index.js"),
    )
    .unwrap();
    let out = f
        .call(&ReadFile, json!({"path": "node_modules/pkg/index.js"}))
        .await
        .unwrap();
    assert_eq!(out.text, "module.exports = 1;\n");
}

#[tokio::test]
async fn hard_links_into_an_allowed_store_are_read_and_others_are_not() {
    let mut f = Fixture::new();
    let store = f.outside().join("pnpm-store");
    std::fs::create_dir_all(store.join("v3/files/ab")).unwrap();
    std::fs::write(store.join("v3/files/ab/cdef"), "export const x = 1;\n").unwrap();
    std::fs::create_dir_all(f.path("node_modules/pkg")).unwrap();
    std::fs::hard_link(
        store.join("v3/files/ab/cdef"),
        f.path("node_modules/pkg/index.js"),
    )
    .unwrap();
    let args = json!({"path": "node_modules/pkg/index.js"});
    let err = f.call(&ReadFile, args.clone()).await.unwrap_err();
    assert_eq!(err.kind().as_str(), "path_rejected", "{err}");
    f.ctx.sandbox.link_stores = vec![store.clone()];
    let out = f.call(&ReadFile, args).await.unwrap();
    assert_eq!(out.text, "export const x = 1;\n");
    // The store covers its own files only: a link to a file elsewhere is still refused.
    std::fs::write(f.outside().join("secret.txt"), "TOP-SECRET").unwrap();
    std::fs::hard_link(
        f.outside().join("secret.txt"),
        f.path("node_modules/pkg/x.js"),
    )
    .unwrap();
    let err = f
        .call(&ReadFile, json!({"path": "node_modules/pkg/x.js"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind().as_str(), "path_rejected", "{err}");
}

#[tokio::test]
async fn a_write_to_a_hard_linked_file_replaces_the_name_and_leaves_the_outside_file() {
    let f = Fixture::new();
    std::fs::write(f.outside().join("secret.txt"), "TOP-SECRET").unwrap();
    std::fs::hard_link(f.outside().join("secret.txt"), f.path("notes.txt")).unwrap();
    f.call(
        &crate::builtin::write_file::WriteFile,
        json!({"path": "notes.txt", "content": "mine\n"}),
    )
    .await
    .unwrap();
    assert_eq!(f.read("notes.txt"), "mine\n");
    assert_eq!(
        std::fs::read_to_string(f.outside().join("secret.txt")).unwrap(),
        "TOP-SECRET"
    );
}
