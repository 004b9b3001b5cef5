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
