use serde_json::json;

use super::*;
use crate::builtin::test_support::{snapshot, Fixture};

#[tokio::test]
async fn deletes_a_file() {
    let f = Fixture::new();
    f.write("a.txt", "x");
    assert_eq!(
        f.effect(&DeletePath, json!({"path": "a.txt"})).unwrap(),
        Effect::Delete {
            path: "a.txt".into()
        }
    );
    assert!(f.path("a.txt").exists(), "effect() deletes nothing");
    let out = f.call(&DeletePath, json!({"path": "a.txt"})).await.unwrap();
    assert!(!f.path("a.txt").exists());
    assert_eq!(out.changed, vec!["a.txt".to_string()]);
}

#[tokio::test]
async fn directory_needs_recursive() {
    let f = Fixture::new();
    f.write("d/x.txt", "x");
    f.write("d/e/y.txt", "y");
    let before = snapshot(f.root());
    let err = f.call(&DeletePath, json!({"path": "d"})).await.unwrap_err();
    assert!(err.to_string().contains("recursive"), "{err}");
    assert_eq!(snapshot(f.root()), before);
    assert_eq!(
        f.effect(&DeletePath, json!({"path": "d", "recursive": true}))
            .unwrap(),
        Effect::Delete { path: "d/".into() }
    );
    let out = f
        .call(&DeletePath, json!({"path": "d", "recursive": true}))
        .await
        .unwrap();
    assert!(!f.path("d").exists());
    let mut changed = out.changed.clone();
    changed.sort();
    assert_eq!(changed, vec!["d", "d/e", "d/e/y.txt", "d/x.txt"]);
}

#[tokio::test]
async fn deleting_a_link_removes_the_link_not_the_target() {
    let f = Fixture::new();
    std::fs::write(f.outside().join("keep.txt"), "keep").unwrap();
    std::os::unix::fs::symlink(f.outside().join("keep.txt"), f.path("link")).unwrap();
    std::os::unix::fs::symlink(f.outside(), f.path("dirlink")).unwrap();
    f.call(&DeletePath, json!({"path": "link"})).await.unwrap();
    f.call(&DeletePath, json!({"path": "dirlink", "recursive": true}))
        .await
        .unwrap();
    assert!(std::fs::symlink_metadata(f.path("link")).is_err());
    assert!(std::fs::symlink_metadata(f.path("dirlink")).is_err());
    assert_eq!(
        std::fs::read_to_string(f.outside().join("keep.txt")).unwrap(),
        "keep"
    );
}

#[tokio::test]
async fn recursive_delete_does_not_follow_links_inside_the_tree() {
    let f = Fixture::new();
    std::fs::write(f.outside().join("keep.txt"), "keep").unwrap();
    f.write("d/x.txt", "x");
    std::os::unix::fs::symlink(f.outside(), f.path("d/out")).unwrap();
    f.call(&DeletePath, json!({"path": "d", "recursive": true}))
        .await
        .unwrap();
    assert!(!f.path("d").exists());
    assert_eq!(
        std::fs::read_to_string(f.outside().join("keep.txt")).unwrap(),
        "keep"
    );
}

#[tokio::test]
async fn root_outside_missing_and_data_dir_are_refused() {
    let mut f = Fixture::new();
    f.write("appdata/db", "db");
    f.write("parent/appdata2/db", "db");
    f.ctx.forbidden = vec![f.path("appdata"), f.path("parent/appdata2")];
    let before = snapshot(f.root());
    for (path, kind) in [
        (".", "path_rejected"),
        ("", "path_rejected"),
        ("..", "path_rejected"),
        ("../outside", "path_rejected"),
        ("appdata", "path_rejected"),
        ("appdata/db", "path_rejected"),
        ("parent", "path_rejected"),
        ("missing", "failed"),
    ] {
        let err = f
            .call(&DeletePath, json!({"path": path, "recursive": true}))
            .await
            .unwrap_err();
        assert_eq!(err.kind().as_str(), kind, "{path}: {err}");
    }
    assert_eq!(snapshot(f.root()), before);
    assert!(f.outside().exists());
}
