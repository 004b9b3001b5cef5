//! Between two indexes: the changes; for people: the files changed, renames paired, and
//! unified diffs of text.
use std::collections::BTreeMap;

use pocketpilot_protocol::changes::{FileChange, FileChangeKind};

use crate::scan::Index;
use crate::{BlobStore, Change, Node};

/// Text larger than this is not diffed (shown as changed, sizes only).
pub const MAX_DIFF_BYTES: u64 = 1 << 20;

/// Every path whose entry differs between `before` and `after`, in path order.
pub fn changes(before: &Index, after: &Index) -> Vec<Change> {
    let mut out = Vec::new();
    let mut a = before.entries.iter().peekable();
    let mut b = after.entries.iter().peekable();
    loop {
        let step = match (a.peek(), b.peek()) {
            (None, None) => break,
            (Some((pa, _)), Some((pb, _))) => pa.cmp(pb),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
        };
        match step {
            std::cmp::Ordering::Less => {
                if let Some((p, e)) = a.next() {
                    out.push(change(p, Some(&e.node), None));
                }
            }
            std::cmp::Ordering::Greater => {
                if let Some((p, e)) = b.next() {
                    out.push(change(p, None, Some(&e.node)));
                }
            }
            std::cmp::Ordering::Equal => {
                if let (Some((p, x)), Some((_, y))) = (a.next(), b.next()) {
                    if x.node != y.node {
                        out.push(change(p, Some(&x.node), Some(&y.node)));
                    }
                }
            }
        }
    }
    out
}

fn change(path: &str, before: Option<&Node>, after: Option<&Node>) -> Change {
    Change {
        path: path.to_owned(),
        before: before.cloned(),
        after: after.cloned(),
    }
}

/// Several change sets in order, folded into one transition per path: from what the
/// first set found to what the last one left. Paths that end as they began are dropped.
pub fn collapse<'a>(sets: impl IntoIterator<Item = &'a [Change]>) -> Vec<Change> {
    let mut by_path: BTreeMap<String, Change> = BTreeMap::new();
    for set in sets {
        for c in set {
            by_path
                .entry(c.path.clone())
                .and_modify(|e| e.after = c.after.clone())
                .or_insert_with(|| c.clone());
        }
    }
    by_path
        .into_values()
        .filter(|c| c.before != c.after)
        .collect()
}

/// A file or a symlink (what a change list shows), not a directory nor nothing.
fn is_entry(n: &Option<Node>) -> bool {
    matches!(n, Some(Node::File { .. } | Node::Symlink { .. }))
}

/// The files (and symlinks) of a change list, with diffs; directories are left out and a
/// deleted file whose content reappears under a new name is one rename. `call_of` names
/// the call a path's change came from.
pub fn file_changes(
    changes: &[Change],
    blobs: &BlobStore,
    call_of: &dyn Fn(&str) -> Option<String>,
) -> Vec<FileChange> {
    let files: Vec<&Change> = changes
        .iter()
        .filter(|c| is_entry(&c.before) || is_entry(&c.after))
        .collect();
    let mut deleted_by_hash: BTreeMap<&str, &Change> = BTreeMap::new();
    for c in &files {
        if let (Some(Node::File { hash, .. }), None) = (&c.before, &c.after) {
            deleted_by_hash.insert(hash.as_str(), c);
        }
    }
    let mut renamed_from: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for c in &files {
        let mut fc = FileChange {
            path: c.path.clone(),
            kind: c.kind(),
            from: None,
            before: c.before.clone().filter(|n| !matches!(n, Node::Dir { .. })),
            after: c.after.clone().filter(|n| !matches!(n, Node::Dir { .. })),
            diff: None,
            call_id: call_of(&c.path),
            undone_by: None,
        };
        if let (None, Some(Node::File { hash, .. })) = (&c.before, &c.after) {
            if let Some(old) = deleted_by_hash.remove(hash.as_str()) {
                fc.kind = FileChangeKind::Renamed;
                fc.from = Some(old.path.clone());
                fc.before = old.before.clone();
                renamed_from.push(old.path.clone());
            }
        }
        if fc.kind != FileChangeKind::Renamed {
            fc.diff = text_diff(blobs, &c.path, fc.before.as_ref(), fc.after.as_ref());
        }
        out.push(fc);
    }
    out.retain(|f| !(f.kind == FileChangeKind::Deleted && renamed_from.contains(&f.path)));
    out
}

/// A file's text for a diff: `Some("")` for nothing there, `None` when it is not text
/// (binary, too large, a symlink, or its content is no longer kept).
fn text_of(blobs: &BlobStore, node: Option<&Node>) -> Option<String> {
    match node {
        None => Some(String::new()),
        Some(Node::File { hash, size, .. }) if *size <= MAX_DIFF_BYTES => {
            let bytes = blobs.read(hash).ok()?;
            if bytes.contains(&0) {
                return None;
            }
            String::from_utf8(bytes).ok()
        }
        Some(Node::Symlink { target }) => Some(format!("-> {target}\n")),
        _ => None,
    }
}

/// A unified diff (3 lines of context) of two versions of `path`, when both are text.
pub fn text_diff(
    blobs: &BlobStore,
    path: &str,
    before: Option<&Node>,
    after: Option<&Node>,
) -> Option<String> {
    let old = text_of(blobs, before)?;
    let new = text_of(blobs, after)?;
    let a = if before.is_some() {
        format!("a/{path}")
    } else {
        "/dev/null".into()
    };
    let b = if after.is_some() {
        format!("b/{path}")
    } else {
        "/dev/null".into()
    };
    Some(
        similar::TextDiff::from_lines(&old, &new)
            .unified_diff()
            .context_radius(3)
            .header(&a, &b)
            .to_string(),
    )
}
