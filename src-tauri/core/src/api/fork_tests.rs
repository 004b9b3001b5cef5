//! Where a fork goes when the caller does not say, decided against real folders and real
//! git repositories.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::*;

fn git_in(dir: &Path, args: &[&str]) {
    let out = git(dir)
        .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A repository with one commit holding `sub/a.txt`.
fn repo() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("sub")).unwrap();
    std::fs::write(d.path().join("sub/a.txt"), "a\n").unwrap();
    git_in(d.path(), &["init", "-q"]);
    git_in(d.path(), &["add", "-A"]);
    git_in(d.path(), &["commit", "-qm", "start"]);
    d
}

#[test]
fn a_folder_outside_git_is_copied() {
    let d = tempfile::tempdir().unwrap();
    assert_eq!(plan(d.path(), None).unwrap(), Plan::Copy);
}

#[test]
fn a_git_work_tree_gets_a_worktree_at_its_top_or_below_it() {
    let d = repo();
    let top = d.path().canonicalize().unwrap();
    assert_eq!(
        plan(d.path(), None).unwrap(),
        Plan::Worktree(Repo {
            top: top.clone(),
            prefix: PathBuf::new()
        })
    );
    // A workspace below the top: the worktree is of the whole repository, the workspace
    // the same folder inside it.
    assert_eq!(
        plan(&d.path().join("sub"), None).unwrap(),
        Plan::Worktree(Repo {
            top,
            prefix: PathBuf::from("sub")
        })
    );
}

#[test]
fn a_worktree_would_not_hold_the_workspace_so_it_is_copied() {
    // No commit yet: a worktree has nothing to start from.
    let empty = tempfile::tempdir().unwrap();
    git_in(empty.path(), &["init", "-q"]);
    std::fs::write(empty.path().join("a.txt"), "a\n").unwrap();
    assert_eq!(plan(empty.path(), None).unwrap(), Plan::Copy);
    // A folder git does not track would not be in the worktree.
    let d = repo();
    let untracked = d.path().join("scratch");
    std::fs::create_dir_all(&untracked).unwrap();
    std::fs::write(untracked.join("b.txt"), "b\n").unwrap();
    assert_eq!(plan(&untracked, None).unwrap(), Plan::Copy);
}

#[test]
fn a_worktree_asked_for_where_there_can_be_none_is_refused_with_the_reason() {
    let d = tempfile::tempdir().unwrap();
    let e = plan(d.path(), Some(ForkPlace::Worktree)).unwrap_err();
    assert!(e.to_string().contains("not in a git work tree"), "{e}");
    // What is asked for is what is made.
    assert_eq!(
        plan(repo().path(), Some(ForkPlace::Copy)).unwrap(),
        Plan::Copy
    );
    assert_eq!(
        plan(repo().path(), Some(ForkPlace::Same)).unwrap(),
        Plan::Same
    );
}
