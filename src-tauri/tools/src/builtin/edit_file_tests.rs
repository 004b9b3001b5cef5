use serde_json::json;

use super::*;
use crate::builtin::test_support::{snapshot, Fixture};

fn fixture() -> Fixture {
    let f = Fixture::new();
    f.write("code.rs", "fn a() {}\nfn b() {}\nfn a2() {}\n");
    f
}

#[tokio::test]
async fn single_edit_applies() {
    let f = fixture();
    let out = f
        .call(
            &EditFile,
            json!({"path": "code.rs", "edits": [{"old_text": "fn b() {}", "new_text": "fn b() { 1 }"}]}),
        )
        .await
        .unwrap();
    assert_eq!(f.read("code.rs"), "fn a() {}\nfn b() { 1 }\nfn a2() {}\n");
    assert_eq!(out.changed, vec!["code.rs".to_string()]);
}

#[tokio::test]
async fn several_edits_apply_in_order() {
    let f = fixture();
    f.call(
        &EditFile,
        json!({"path": "code.rs", "edits": [
            {"old_text": "fn b() {}", "new_text": "fn c() {}"},
            {"old_text": "fn c() {}", "new_text": "fn d() {}"}
        ]}),
    )
    .await
    .unwrap();
    assert_eq!(f.read("code.rs"), "fn a() {}\nfn d() {}\nfn a2() {}\n");
}

#[tokio::test]
async fn no_match_is_an_error_and_nothing_changes() {
    let f = fixture();
    let before = snapshot(f.root());
    let err = f
        .call(
            &EditFile,
            json!({"path": "code.rs", "edits": [{"old_text": "fn z()", "new_text": ""}]}),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not found"), "{err}");
    assert_eq!(snapshot(f.root()), before);
}

#[tokio::test]
async fn two_matches_is_an_error_and_nothing_changes() {
    let f = fixture();
    let before = snapshot(f.root());
    let err = f
        .call(
            &EditFile,
            json!({"path": "code.rs", "edits": [{"old_text": "fn a", "new_text": "fn x"}]}),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("occurs 2 times"), "{err}");
    assert_eq!(snapshot(f.root()), before);
}

#[tokio::test]
async fn several_edits_are_all_or_nothing() {
    let f = fixture();
    let before = snapshot(f.root());
    let err = f
        .call(
            &EditFile,
            json!({"path": "code.rs", "edits": [
                {"old_text": "fn b() {}", "new_text": "fn c() {}"},
                {"old_text": "does not exist", "new_text": "x"}
            ]}),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().starts_with("edit 2:"), "{err}");
    assert_eq!(snapshot(f.root()), before);
}

#[tokio::test]
async fn effect_is_the_exact_diff_and_writes_nothing() {
    let f = fixture();
    let before = snapshot(f.root());
    let effect = f
        .effect(&EditFile, json!({"path": "code.rs", "edits": [{"old_text": "fn b() {}", "new_text": "fn bee() {}"}]}))
        .unwrap();
    let Effect::Diff { path, diff, .. } = effect else {
        panic!("not a diff")
    };
    assert_eq!(path, "code.rs");
    assert!(diff.contains("-fn b() {}\n+fn bee() {}"), "{diff}");
    assert_eq!(snapshot(f.root()), before);
}

#[tokio::test]
async fn bad_arguments_are_rejected() {
    let f = fixture();
    for args in [
        json!({"path": "code.rs", "edits": []}),
        json!({"path": "code.rs", "edits": [{"old_text": "", "new_text": "x"}]}),
        json!({"path": "code.rs", "edits": [{"old_text": "a", "new": "x"}]}),
        json!({"path": "code.rs", "old_text": "a", "new_text": "b"}),
    ] {
        let err = f.call(&EditFile, args.clone()).await.unwrap_err();
        assert_eq!(err.kind().as_str(), "invalid_arguments", "{args}: {err}");
    }
}

#[tokio::test]
async fn binary_and_missing_files_are_refused() {
    let f = fixture();
    f.write("b.bin", b"abc\0def");
    let err = f
        .call(
            &EditFile,
            json!({"path": "b.bin", "edits": [{"old_text": "abc", "new_text": "x"}]}),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("binary"), "{err}");
    let err = f
        .call(
            &EditFile,
            json!({"path": "nope.rs", "edits": [{"old_text": "a", "new_text": "x"}]}),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
}

#[tokio::test]
async fn edit_through_a_link_out_is_rejected() {
    let f = fixture();
    std::fs::write(f.outside().join("o.rs"), "fn a() {}").unwrap();
    std::os::unix::fs::symlink(f.outside().join("o.rs"), f.path("o.rs")).unwrap();
    let err = f
        .call(
            &EditFile,
            json!({"path": "o.rs", "edits": [{"old_text": "fn a", "new_text": "fn x"}]}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind().as_str(), "path_rejected");
    assert_eq!(
        std::fs::read_to_string(f.outside().join("o.rs")).unwrap(),
        "fn a() {}"
    );
}
