use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use serde_json::json;

use super::*;
use crate::builtin::test_support::Fixture;

#[tokio::test]
async fn lists_sorted_with_markers() {
    let f = Fixture::new();
    f.write("b.txt", "12345");
    f.write("a/inner.txt", "");
    std::os::unix::fs::symlink("b.txt", f.path("link")).unwrap();
    let out = f.call(&ListDir, json!({})).await.unwrap();
    assert_eq!(out.text, "a/\nb.txt  (5 bytes)\nlink@");
    let out = f.call(&ListDir, json!({"path": "a/"})).await.unwrap();
    assert_eq!(out.text, "inner.txt  (0 bytes)");
}

#[tokio::test]
async fn non_utf8_names_are_shown_lossily() {
    let f = Fixture::new();
    std::fs::write(f.root().join(OsStr::from_bytes(b"caf\xe9.txt")), "x").unwrap();
    let out = f.call(&ListDir, json!({"path": "."})).await.unwrap();
    assert!(out.text.contains("caf\u{fffd}.txt"), "{}", out.text);
}

#[tokio::test]
async fn empty_directory_says_so() {
    let f = Fixture::new();
    std::fs::create_dir(f.path("empty")).unwrap();
    let out = f.call(&ListDir, json!({"path": "empty"})).await.unwrap();
    assert_eq!(out.text, "empty is empty");
}

#[tokio::test]
async fn data_dir_is_hidden_and_refused() {
    let mut f = Fixture::new();
    f.write("appdata/db", "");
    f.write("src/main.rs", "");
    f.ctx.forbidden = vec![f.path("appdata")];
    let out = f.call(&ListDir, json!({})).await.unwrap();
    assert_eq!(out.text, "src/");
    let err = f
        .call(&ListDir, json!({"path": "appdata"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind().as_str(), "path_rejected");
}

#[tokio::test]
async fn outside_and_files_are_refused() {
    let f = Fixture::new();
    f.write("a.txt", "");
    assert_eq!(
        f.call(&ListDir, json!({"path": ".."}))
            .await
            .unwrap_err()
            .kind()
            .as_str(),
        "path_rejected"
    );
    assert_eq!(
        f.call(&ListDir, json!({"path": "/"}))
            .await
            .unwrap_err()
            .kind()
            .as_str(),
        "path_rejected"
    );
    assert_eq!(
        f.call(&ListDir, json!({"path": "a.txt"}))
            .await
            .unwrap_err()
            .kind()
            .as_str(),
        "path_rejected"
    );
}
