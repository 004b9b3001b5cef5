use serde_json::json;

use super::*;
use crate::builtin::test_support::{snapshot, Fixture};
use crate::builtin::MAX_CONTENT_BYTES;

#[tokio::test]
async fn creates_a_file_and_its_parents() {
    let f = Fixture::new();
    let out = f
        .call(&WriteFile, json!({"path": "a/b/c.txt", "content": "hi\n"}))
        .await
        .unwrap();
    assert_eq!(f.read("a/b/c.txt"), "hi\n");
    assert_eq!(out.changed, vec!["a/b/c.txt".to_string()]);
    assert!(out.text.starts_with("created"), "{}", out.text);
}

#[tokio::test]
async fn replaces_a_file_keeping_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let f = Fixture::new();
    f.write("run.sh", "old\n");
    std::fs::set_permissions(f.path("run.sh"), std::fs::Permissions::from_mode(0o750)).unwrap();
    let out = f
        .call(&WriteFile, json!({"path": "run.sh", "content": "new\n"}))
        .await
        .unwrap();
    assert!(out.text.starts_with("replaced"));
    assert_eq!(f.read("run.sh"), "new\n");
    let mode = std::fs::metadata(f.path("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o750);
}

#[tokio::test]
async fn effect_is_a_diff_and_changes_nothing() {
    let f = Fixture::new();
    f.write("a.txt", "one\ntwo\n");
    let before = snapshot(f.root());
    let effect = f
        .effect(
            &WriteFile,
            json!({"path": "a.txt", "content": "one\nthree\n"}),
        )
        .unwrap();
    let Effect::Diff { path, diff, .. } = effect else {
        panic!("not a diff")
    };
    assert_eq!(path, "a.txt");
    assert!(diff.contains("--- a/a.txt\n+++ b/a.txt"), "{diff}");
    assert!(diff.contains("-two\n+three"), "{diff}");
    let Effect::Diff { diff, .. } = f
        .effect(&WriteFile, json!({"path": "new/x.txt", "content": "x\n"}))
        .unwrap()
    else {
        panic!("not a diff")
    };
    assert!(diff.starts_with("--- /dev/null\n+++ b/new/x.txt"), "{diff}");
    assert_eq!(snapshot(f.root()), before, "effect() must not write");
    assert!(!f.path("new").exists());
}

#[tokio::test]
async fn write_through_a_symlink_pointing_outside_is_rejected_and_nothing_written() {
    let f = Fixture::new();
    std::fs::write(f.outside().join("target.txt"), "keep").unwrap();
    std::os::unix::fs::symlink(f.outside().join("target.txt"), f.path("link.txt")).unwrap();
    std::os::unix::fs::symlink(f.outside(), f.path("outdir")).unwrap();
    for path in [
        "link.txt",
        "outdir/new.txt",
        "../outside/target.txt",
        "/tmp/pp-x.txt",
    ] {
        let err = f
            .call(&WriteFile, json!({"path": path, "content": "pwned"}))
            .await
            .unwrap_err();
        assert_eq!(err.kind().as_str(), "path_rejected", "{path}: {err}");
        assert!(f
            .effect(&WriteFile, json!({"path": path, "content": "x"}))
            .is_err());
    }
    assert_eq!(
        std::fs::read_to_string(f.outside().join("target.txt")).unwrap(),
        "keep"
    );
    assert!(!f.outside().join("new.txt").exists());
}

#[tokio::test]
async fn symlink_to_a_file_inside_writes_the_target() {
    let f = Fixture::new();
    f.write("real.txt", "old");
    std::os::unix::fs::symlink("real.txt", f.path("alias.txt")).unwrap();
    let out = f
        .call(&WriteFile, json!({"path": "alias.txt", "content": "new"}))
        .await
        .unwrap();
    assert_eq!(out.changed, vec!["real.txt".to_string()]);
    assert_eq!(f.read("real.txt"), "new");
    assert!(std::fs::symlink_metadata(f.path("alias.txt"))
        .unwrap()
        .file_type()
        .is_symlink());
}

#[tokio::test]
async fn toctou_checked_then_swapped_then_written_is_refused() {
    let f = Fixture::new();
    std::fs::create_dir(f.path("sub")).unwrap();
    let args = json!({"path": "sub/f.txt", "content": "x"});
    f.effect(&WriteFile, args.clone()).unwrap();
    std::fs::remove_dir(f.path("sub")).unwrap();
    std::os::unix::fs::symlink(f.outside(), f.path("sub")).unwrap();
    let err = f.call(&WriteFile, args).await.unwrap_err();
    assert_eq!(err.kind().as_str(), "path_rejected");
    assert!(!f.outside().join("f.txt").exists());
}

#[tokio::test]
async fn huge_content_and_bad_arguments_write_nothing() {
    let f = Fixture::new();
    let before = snapshot(f.root());
    let big = "x".repeat(MAX_CONTENT_BYTES + 1);
    let err = f
        .call(&WriteFile, json!({"path": "big.txt", "content": big}))
        .await
        .unwrap_err();
    assert_eq!(err.kind().as_str(), "invalid_arguments");
    assert!(err.to_string().contains("at most"), "{err}");
    for args in [
        json!({"path": "a.txt"}),
        json!({"path": "a.txt", "content": 5}),
        json!({"path": "a.txt", "content": "x", "append": true}),
        json!({"path": "", "content": "x"}),
        json!({"path": "a\u{0}.txt", "content": "x"}),
        json!({"path": "data/", "content": "x"}),
        json!("a string"),
    ] {
        assert!(f.call(&WriteFile, args.clone()).await.is_err(), "{args}");
    }
    assert_eq!(snapshot(f.root()), before);
}

#[tokio::test]
async fn writing_into_the_data_dir_is_refused() {
    let mut f = Fixture::new();
    f.write("appdata/config.toml", "x");
    f.ctx.forbidden = vec![f.path("appdata")];
    let err = f
        .call(
            &WriteFile,
            json!({"path": "appdata/config.toml", "content": "y"}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind().as_str(), "path_rejected");
    assert_eq!(f.read("appdata/config.toml"), "x");
}
