#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::*;

fn ws() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/a.txt"), "a").unwrap();
    std::fs::write(dir.path().join("secret.txt"), "s").unwrap();
    (dir, root)
}

#[test]
fn a_file_inside_resolves_to_its_real_absolute_path() {
    let (_d, root) = ws();
    let p = inside(&root, "src/a.txt").unwrap();
    assert!(p.is_absolute());
    assert_eq!(p, std::fs::canonicalize(root.join("src/a.txt")).unwrap());
    assert_eq!(inside(&root, "./src/a.txt").unwrap(), p);
}

#[test]
fn dotdot_absolute_missing_and_symlink_escapes_are_refused() {
    let (d, root) = ws();
    let outside = d.path().join("secret.txt");
    std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
    std::os::unix::fs::symlink("..", root.join("up")).unwrap();
    std::os::unix::fs::symlink("a.txt", root.join("src/ok")).unwrap();
    for bad in [
        "../secret.txt",
        "src/../../secret.txt",
        outside.to_str().unwrap(),
        "/etc/passwd",
        "",
        "link",
        "up/secret.txt",
        "missing.txt",
    ] {
        let e = inside(&root, bad).unwrap_err();
        assert!(matches!(e, RuntimeError::NotOpenable { .. }), "{bad}: {e}");
        assert_eq!(
            e.kind(),
            pocketpilot_protocol::ErrorKind::OutsideWorkspace,
            "{bad}"
        );
    }
    // A symlink that stays inside is followed.
    assert_eq!(
        inside(&root, "src/ok").unwrap(),
        std::fs::canonicalize(root.join("src/a.txt")).unwrap()
    );
}
