//! The file side on real folders: the stat index hashes only what changed, restore puts
//! back bytes, modes and symlinks, refuses conflicts, and never leaves the workspace.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::fs;
use std::os::unix::fs::PermissionsExt;

use pocketpilot_changes::diff::changes;
use pocketpilot_changes::restore::{apply, plan, target_path, Step};
use pocketpilot_changes::scan::{scan, ScanOptions, Scope};
use pocketpilot_changes::{BlobStore, Change, ChangesError};
use pocketpilot_tools::guard::WorkspaceGuard;

struct Fixture {
    _dir: tempfile::TempDir,
    ws: std::path::PathBuf,
    outside: std::path::PathBuf,
    blobs: BlobStore,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let outside = dir.path().join("outside");
    fs::create_dir_all(ws.join("src/deep")).unwrap();
    fs::create_dir_all(ws.join("node_modules/pkg")).unwrap();
    fs::create_dir_all(&outside).unwrap();
    fs::write(ws.join("src/a.txt"), "a\n").unwrap();
    fs::write(ws.join("src/deep/b.bin"), [0u8, 1, 2, 255]).unwrap();
    fs::write(ws.join("node_modules/pkg/index.js"), "x").unwrap();
    fs::write(outside.join("victim.txt"), "keep\n").unwrap();
    std::os::unix::fs::symlink("a.txt", ws.join("src/link")).unwrap();
    let blobs = BlobStore::open(dir.path().join("data/blobs")).unwrap();
    Fixture {
        ws: fs::canonicalize(&ws).unwrap(),
        outside,
        blobs,
        _dir: dir,
    }
}

fn guard(f: &Fixture) -> WorkspaceGuard {
    WorkspaceGuard::new(&f.ws, &[f.blobs.root().to_path_buf()]).unwrap()
}

#[test]
fn an_unchanged_workspace_is_not_read_again_and_a_change_is_found() {
    let f = fixture();
    let opts = ScanOptions::default();
    let (first, s1) = scan(&f.ws, &Scope::Workspace, None, &f.blobs, &opts).unwrap();
    assert_eq!(s1.hashed, 2);
    assert!(!first.entries.keys().any(|p| p.starts_with("node_modules")));
    // sleep: the workspace's mtimes must fall outside the racy window (scan.rs) so the next scans trust them unhashed; only the clock moving past them does that.
    std::thread::sleep(std::time::Duration::from_millis(250));
    let (second, _) = scan(&f.ws, &Scope::Workspace, Some(&first), &f.blobs, &opts).unwrap();
    let (third, s3) = scan(&f.ws, &Scope::Workspace, Some(&second), &f.blobs, &opts).unwrap();
    assert_eq!(s3.hashed, 0, "nothing changed: nothing hashed");
    fs::write(f.ws.join("src/a.txt"), "b\n").unwrap();
    let (fourth, s4) = scan(&f.ws, &Scope::Workspace, Some(&third), &f.blobs, &opts).unwrap();
    assert_eq!(s4.hashed, 1);
    let c = changes(&third, &fourth);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].path, "src/a.txt");
}

#[test]
fn restore_brings_back_bytes_modes_and_symlinks_and_refuses_a_conflict() {
    let f = fixture();
    let opts = ScanOptions::default();
    fs::set_permissions(f.ws.join("src/a.txt"), fs::Permissions::from_mode(0o751)).unwrap();
    let (before, _) = scan(&f.ws, &Scope::Workspace, None, &f.blobs, &opts).unwrap();
    fs::remove_dir_all(f.ws.join("src")).unwrap();
    fs::write(f.ws.join("new.txt"), "new\n").unwrap();
    let (after, _) = scan(&f.ws, &Scope::Workspace, Some(&before), &f.blobs, &opts).unwrap();
    let undo: Vec<Change> = changes(&before, &after)
        .iter()
        .map(Change::inverted)
        .collect();

    // The person edits a file the task created: refused.
    fs::write(f.ws.join("new.txt"), "theirs\n").unwrap();
    let planned = plan(&guard(&f), &f.blobs, &undo).unwrap();
    let conflict = planned.iter().find(|p| p.change.path == "new.txt").unwrap();
    assert!(matches!(conflict.step, Step::Conflict { .. }));

    fs::write(f.ws.join("new.txt"), "new\n").unwrap();
    let planned = plan(&guard(&f), &f.blobs, &undo).unwrap();
    assert!(planned.iter().all(|p| p.step == Step::Apply));
    apply(&guard(&f), &f.blobs, &planned).unwrap();
    assert_eq!(
        fs::read(f.ws.join("src/deep/b.bin")).unwrap(),
        [0u8, 1, 2, 255]
    );
    assert_eq!(
        fs::metadata(f.ws.join("src/a.txt"))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777,
        0o751
    );
    assert_eq!(
        fs::read_link(f.ws.join("src/link")).unwrap().to_str(),
        Some("a.txt")
    );
    assert!(!f.ws.join("new.txt").exists());
}

#[test]
fn no_journal_path_leads_outside_the_workspace_or_into_git() {
    let f = fixture();
    let g = guard(&f);
    std::os::unix::fs::symlink(&f.outside, f.ws.join("out")).unwrap();
    let escapes = [
        "../outside/victim.txt".to_owned(),
        f.outside.join("victim.txt").display().to_string(),
        "out/victim.txt".into(),
        ".git/config".into(),
        "src/../../outside/victim.txt".into(),
        String::new(),
    ];
    for p in &escapes {
        assert!(
            matches!(target_path(&g, p), Err(ChangesError::Unsafe { .. })),
            "{p:?} was accepted"
        );
        let change = Change {
            path: p.clone(),
            before: None,
            after: None,
        };
        assert!(plan(&g, &f.blobs, &[change]).is_err(), "{p:?} was planned");
    }
    assert_eq!(
        fs::read_to_string(f.outside.join("victim.txt")).unwrap(),
        "keep\n"
    );
    assert!(target_path(&g, "src/a.txt").is_ok());
}

#[test]
fn an_altered_blob_is_refused_before_anything_is_restored() {
    let f = fixture();
    let opts = ScanOptions::default();
    let (before, _) = scan(&f.ws, &Scope::Workspace, None, &f.blobs, &opts).unwrap();
    fs::remove_file(f.ws.join("src/a.txt")).unwrap();
    fs::remove_file(f.ws.join("src/deep/b.bin")).unwrap();
    let (after, _) = scan(&f.ws, &Scope::Workspace, Some(&before), &f.blobs, &opts).unwrap();
    let undo: Vec<Change> = changes(&before, &after)
        .iter()
        .map(Change::inverted)
        .collect();
    let hash = match &before.entries["src/a.txt"].node {
        pocketpilot_changes::Node::File { hash, .. } => hash.clone(),
        _ => unreachable!(),
    };
    fs::write(f.blobs.path_of(&hash).unwrap(), "tampered").unwrap();
    let planned = plan(&guard(&f), &f.blobs, &undo).unwrap();
    assert!(matches!(
        apply(&guard(&f), &f.blobs, &planned),
        Err(ChangesError::CorruptBlob { .. })
    ));
    assert!(
        !f.ws.join("src/deep/b.bin").exists(),
        "nothing restored from a store that was altered"
    );
}

#[test]
fn a_folder_swapped_for_a_symlink_is_brought_back_without_writing_through_it() {
    let f = fixture();
    let opts = ScanOptions::default();
    let (before, _) = scan(&f.ws, &Scope::Workspace, None, &f.blobs, &opts).unwrap();
    // The task replaced `src` (and everything in it) by a symlink leading out.
    fs::remove_dir_all(f.ws.join("src")).unwrap();
    std::os::unix::fs::symlink(&f.outside, f.ws.join("src")).unwrap();
    let (after, _) = scan(&f.ws, &Scope::Workspace, Some(&before), &f.blobs, &opts).unwrap();
    let undo: Vec<Change> = changes(&before, &after)
        .iter()
        .map(Change::inverted)
        .collect();
    assert!(undo.iter().any(|c| c.path == "src/deep/b.bin"), "{undo:?}");

    let planned = plan(&guard(&f), &f.blobs, &undo).unwrap();
    assert!(
        planned.iter().all(|p| p.step == Step::Apply),
        "{planned:#?}"
    );
    apply(&guard(&f), &f.blobs, &planned).unwrap();
    assert!(fs::symlink_metadata(f.ws.join("src")).unwrap().is_dir());
    assert_eq!(fs::read_to_string(f.ws.join("src/a.txt")).unwrap(), "a\n");
    assert_eq!(
        fs::read(f.ws.join("src/deep/b.bin")).unwrap(),
        [0u8, 1, 2, 255]
    );
    assert_eq!(
        fs::read_link(f.ws.join("src/link")).unwrap().to_str(),
        Some("a.txt")
    );
    // Nothing landed where the symlink pointed.
    let outside: Vec<_> = fs::read_dir(&f.outside)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(outside, ["victim.txt"]);
}

#[test]
fn a_swapped_folder_whose_symlink_changed_since_is_still_refused() {
    let f = fixture();
    let opts = ScanOptions::default();
    let (before, _) = scan(&f.ws, &Scope::Workspace, None, &f.blobs, &opts).unwrap();
    fs::remove_dir_all(f.ws.join("src")).unwrap();
    std::os::unix::fs::symlink("elsewhere", f.ws.join("src")).unwrap();
    let (after, _) = scan(&f.ws, &Scope::Workspace, Some(&before), &f.blobs, &opts).unwrap();
    let undo: Vec<Change> = changes(&before, &after)
        .iter()
        .map(Change::inverted)
        .collect();
    // Someone pointed it elsewhere since: not the journal's symlink, so not removed.
    fs::remove_file(f.ws.join("src")).unwrap();
    std::os::unix::fs::symlink(&f.outside, f.ws.join("src")).unwrap();
    assert!(matches!(
        plan(&guard(&f), &f.blobs, &undo),
        Err(ChangesError::Unsafe { .. })
    ));
    assert_eq!(
        fs::read_dir(&f.outside).unwrap().count(),
        1,
        "nothing written outside"
    );
}
