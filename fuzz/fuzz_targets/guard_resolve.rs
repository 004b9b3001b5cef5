//! `WorkspaceGuard` path resolution against a real temporary workspace holding files,
//! folders, symlinks inside and out, a dangling link and a forbidden app-data folder.
//!
//! Property: whatever the input, every `Ok` path is inside the canonical root, outside the
//! forbidden folder, and — where it exists — its real path (symlinks followed) is inside the
//! root too. Errors are fine; panics and escapes are not.
#![no_main]
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use pocketpilot_tools::WorkspaceGuard;

struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
    forbidden: PathBuf,
    guard: WorkspaceGuard,
}

fn world() -> &'static World {
    static W: OnceLock<World> = OnceLock::new();
    W.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = std::fs::canonicalize(dir.path()).expect("canonical");
        let root = base.join("ws");
        let outside = base.join("outside");
        for d in ["ws/a/b", "ws/.data", "outside/x"] {
            std::fs::create_dir_all(base.join(d)).expect("mkdir");
        }
        std::fs::write(root.join("a/file.txt"), "in").expect("file");
        std::fs::write(outside.join("secret.txt"), "out").expect("file");
        let link = |target: &Path, at: &str| std::os::unix::fs::symlink(target, root.join(at)).expect("symlink");
        link(&outside, "out");
        link(Path::new("../outside/secret.txt"), "rel_out");
        link(Path::new("a/b"), "in_link");
        link(Path::new("a/missing"), "dangling");
        link(Path::new("/"), "slash");
        link(Path::new(".data"), "to_data");
        let forbidden = root.join(".data");
        let guard = WorkspaceGuard::new(&root, std::slice::from_ref(&forbidden)).expect("guard");
        World {
            _dir: dir,
            root,
            forbidden,
            guard,
        }
    })
}

fn check(w: &World, what: &str, raw: &str, resolved: Result<PathBuf, pocketpilot_tools::GuardError>) {
    let Ok(p) = resolved else { return };
    assert!(p.starts_with(&w.root), "{what}({raw:?}) = {p:?} is outside the root");
    assert!(!p.starts_with(&w.forbidden), "{what}({raw:?}) = {p:?} is in the forbidden folder");
    // `resolve_entry` names the entry itself (a symlink is removed, not followed): its
    // parent must be inside; the others are followed to the end.
    let followed = if what == "resolve_entry" { p.parent().map(Path::to_path_buf) } else { Some(p.clone()) };
    if let Some(real) = followed.and_then(|f| std::fs::canonicalize(f).ok()) {
        assert!(real.starts_with(&w.root), "{what}({raw:?}) = {p:?} really is {real:?}");
        assert!(!real.starts_with(&w.forbidden), "{what}({raw:?}) = {p:?} really is {real:?}");
    }
}

fuzz_target!(|data: &[u8]| {
    let w = world();
    let raw = String::from_utf8_lossy(data);
    // Bias towards the interesting names: a leading byte picks a prefix.
    let prefixes = ["", "out/", "rel_out", "in_link/", "dangling/", "slash/", "to_data/", "a/b/../../", "/", "../"];
    let raw = match data.first() {
        Some(b) if (*b as usize) < prefixes.len() => format!("{}{}", prefixes[*b as usize], &raw[1..]),
        _ => raw.into_owned(),
    };
    let g = &w.guard;
    check(w, "resolve_existing", &raw, g.resolve_existing(&raw));
    check(w, "resolve_file", &raw, g.resolve_file(&raw));
    check(w, "resolve_dir", &raw, g.resolve_dir(&raw));
    check(w, "resolve_for_write", &raw, g.resolve_for_write(&raw));
    check(w, "resolve_entry", &raw, g.resolve_entry(&raw));
});
