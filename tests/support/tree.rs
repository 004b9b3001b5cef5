//! A tree's whole content, to compare a workspace before a task and after its undo.
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// What a tree holds: per relative path, its kind, mode and bytes (a symlink's target).
pub type Snapshot = BTreeMap<String, (char, u32, Vec<u8>)>;

/// Everything under `root` but the top-level entries named in `skip`.
pub fn snapshot(root: &Path, skip: &[&str]) -> Snapshot {
    let mut out = Snapshot::new();
    walk(root, root, skip, &mut out);
    out
}

fn walk(root: &Path, dir: &Path, skip: &[&str], out: &mut Snapshot) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        if skip.contains(&rel.as_str()) {
            continue;
        }
        let m = std::fs::symlink_metadata(&p).unwrap();
        let mode = m.permissions().mode() & 0o7777;
        if m.file_type().is_symlink() {
            let t = std::fs::read_link(&p).unwrap();
            out.insert(rel, ('l', 0, t.to_string_lossy().as_bytes().to_vec()));
        } else if m.is_dir() {
            out.insert(rel, ('d', mode, Vec::new()));
            walk(root, &p, skip, out);
        } else {
            out.insert(rel, ('f', mode, std::fs::read(&p).unwrap()));
        }
    }
}
