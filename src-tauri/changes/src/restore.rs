//! Bringing paths back to a recorded state. A list of transitions (`before`: what the
//! journal says is there now, `after`: what it should become) is first planned against
//! the disk: each path is either to apply, already as it should be, or a conflict
//! (someone changed it since). Applying then works deepest-first for removals and
//! parents-first for creations, writes files by rename, and re-checks every path just
//! before touching it.
use std::collections::BTreeSet;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use pocketpilot_tools::guard::WorkspaceGuard;

use crate::{BlobStore, Change, ChangesError, Node, Result};

/// What planning found for one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The path is as the journal says: it will be restored.
    Apply,
    /// It already is what it should become.
    Already,
    /// Someone changed it since; what is there now.
    Conflict { current: Option<Node> },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    pub change: Change,
    pub step: Step,
}

/// The real path of `rel` inside the workspace, refused unless it is plainly inside: a
/// relative path of normal components, no existing parent that is a symlink or leads out,
/// nothing under `.git`, nothing in the app's own directories. A tampered journal cannot
/// name anything else.
pub fn target_path(guard: &WorkspaceGuard, rel: &str) -> Result<PathBuf> {
    target_path_within(guard, rel, &BTreeSet::new())
}

/// [`target_path`], but a parent listed in `swapped` may be a symlink: the same restore
/// removes that symlink (never writing through it) and recreates the folder first.
fn target_path_within(
    guard: &WorkspaceGuard,
    rel: &str,
    swapped: &BTreeSet<String>,
) -> Result<PathBuf> {
    let unsafe_path = |why| ChangesError::Unsafe {
        path: rel.to_owned(),
        why,
    };
    let p = Path::new(rel);
    if rel.is_empty() || rel.contains('\0') {
        return Err(unsafe_path("empty"));
    }
    if !p.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(unsafe_path("not a plain relative path"));
    }
    if p.components().any(|c| c.as_os_str() == ".git") {
        return Err(unsafe_path("inside the workspace's .git"));
    }
    let root = guard.root();
    let full = root.join(p);
    let mut cur = root.to_path_buf();
    let parents: Vec<Component<'_>> = p
        .parent()
        .map(|q| q.components().collect())
        .unwrap_or_default();
    let mut cur_rel = PathBuf::new();
    for comp in parents {
        cur.push(comp);
        cur_rel.push(comp);
        match fs::symlink_metadata(&cur) {
            // Nothing below it is looked at through it: it goes before they are written.
            Ok(m)
                if m.file_type().is_symlink() && swapped.contains(&*cur_rel.to_string_lossy()) =>
            {
                break
            }
            Ok(m) if m.file_type().is_symlink() => {
                return Err(unsafe_path("a parent is a symlink"))
            }
            Ok(m) if m.is_dir() => {}
            // A file in the way is replaced by a directory earlier in the same apply.
            Ok(_) => break,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
            Err(e) => return Err(ChangesError::io(cur, e)),
        }
    }
    if !full.starts_with(root) || guard.is_forbidden(&full) || guard.contains_forbidden(&full) {
        return Err(unsafe_path(
            "outside the workspace or in the app's own data",
        ));
    }
    Ok(full)
}

/// What is at `path` now, as a node (a file's content kept in `blobs`, so a conflict can
/// show it). `None`: nothing there.
pub fn current_node(blobs: &BlobStore, path: &Path) -> Result<Option<Node>> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ChangesError::io(path, e)),
    };
    let mode = meta.permissions().mode() & 0o7777;
    let ft = meta.file_type();
    Ok(Some(if ft.is_symlink() {
        let t = fs::read_link(path).map_err(|e| ChangesError::io(path, e))?;
        Node::Symlink {
            target: t.to_string_lossy().into_owned(),
        }
    } else if ft.is_dir() {
        Node::Dir { mode }
    } else if ft.is_file() {
        let (hash, size) = blobs.put_file(path)?;
        Node::File { hash, size, mode }
    } else {
        return Err(ChangesError::Refused {
            path: path.display().to_string(),
            what: "a special file (device, FIFO or socket) is in the way".into(),
        });
    }))
}

/// Folders the list brings back where the symlink that replaced them still stands as
/// the journal says: the restore removes the symlink, recreates the folder, then its
/// contents, so a parent swapped for a symlink does not refuse the whole restore.
fn swapped_parents(guard: &WorkspaceGuard, transitions: &[Change]) -> Result<BTreeSet<String>> {
    let mut out = BTreeSet::new();
    for c in transitions {
        let (Some(Node::Symlink { target }), Some(Node::Dir { .. })) = (&c.before, &c.after) else {
            continue;
        };
        if below_swapped(&c.path, &out) {
            continue;
        }
        let full = target_path_within(guard, &c.path, &out)?;
        let now = match fs::read_link(&full) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            // Not a symlink (EINVAL) or unreadable: planned like any other path.
            Err(_) => continue,
        };
        if now.to_string_lossy() == target.as_str() {
            out.insert(c.path.clone());
        }
    }
    Ok(out)
}

/// Whether `rel` lies below one of `swapped` (whose symlink goes before it is written).
fn below_swapped(rel: &str, swapped: &BTreeSet<String>) -> bool {
    Path::new(rel)
        .ancestors()
        .skip(1)
        .any(|a| swapped.contains(&*a.to_string_lossy()))
}

/// Plans `transitions` (see the module doc). Any unsafe path refuses the whole plan.
pub fn plan(
    guard: &WorkspaceGuard,
    blobs: &BlobStore,
    transitions: &[Change],
) -> Result<Vec<Planned>> {
    let mut sorted: Vec<&Change> = transitions.iter().collect();
    // Parents first, so a swapped parent is known before its children are looked at.
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    let owned: Vec<Change> = sorted.into_iter().cloned().collect();
    let swapped = swapped_parents(guard, &owned)?;
    let removed: BTreeSet<&str> = transitions
        .iter()
        .filter(|c| c.after.is_none())
        .map(|c| c.path.as_str())
        .collect();
    let mut out = Vec::with_capacity(transitions.len());
    for c in transitions {
        let full = target_path_within(guard, &c.path, &swapped)?;
        // Below a swapped parent nothing is read through the symlink: once it is removed
        // and the folder recreated, nothing is there.
        let current = if below_swapped(&c.path, &swapped) {
            None
        } else {
            current_node(blobs, &full)?
        };
        let step = if current == c.after {
            Step::Already
        } else if current == c.before && dir_empties(&full, &c.path, c, &removed)? {
            Step::Apply
        } else {
            Step::Conflict { current }
        };
        out.push(Planned {
            change: c.clone(),
            step,
        });
    }
    Ok(out)
}

/// A directory to remove may hold only what the same list removes: anything else in it
/// was put there since.
fn dir_empties(full: &Path, rel: &str, c: &Change, removed: &BTreeSet<&str>) -> Result<bool> {
    let replaced =
        matches!(c.before, Some(Node::Dir { .. })) && !matches!(c.after, Some(Node::Dir { .. }));
    if !replaced {
        return Ok(true);
    }
    let list = fs::read_dir(full).map_err(|e| ChangesError::io(full, e))?;
    for item in list {
        let item = item.map_err(|e| ChangesError::io(full, e))?;
        let child = format!("{rel}/{}", item.file_name().to_string_lossy());
        if !removed.contains(child.as_str()) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Applies the `Apply` steps; returns the paths restored. Paths are checked again here.
pub fn apply(
    guard: &WorkspaceGuard,
    blobs: &BlobStore,
    planned: &[Planned],
) -> Result<Vec<String>> {
    let mut todo: Vec<&Change> = planned
        .iter()
        .filter(|p| p.step == Step::Apply)
        .map(|p| &p.change)
        .collect();
    // Every blob is checked before anything is touched: a missing or altered one stops
    // the whole restore.
    for c in &todo {
        if let Some(Node::File { hash, .. }) = &c.after {
            blobs.read(hash)?;
        }
    }
    todo.sort_by(|a, b| b.path.cmp(&a.path));
    for c in todo.iter().filter(|c| needs_clearing(c)) {
        remove_entry(&target_path(guard, &c.path)?)?;
    }
    todo.reverse();
    let mut dirs: Vec<(PathBuf, u32)> = Vec::new();
    for c in &todo {
        let full = target_path(guard, &c.path)?;
        match &c.after {
            None => {}
            Some(Node::Dir { mode }) => {
                if !full.is_dir() {
                    fs::create_dir_all(&full).map_err(|e| ChangesError::io(&full, e))?;
                }
                dirs.push((full, *mode));
            }
            Some(Node::File { hash, mode, .. }) => write_file(blobs, &full, hash, *mode)?,
            Some(Node::Symlink { target }) => write_symlink(&full, target)?,
        }
    }
    // Deepest first, so a read-only directory is closed only after its contents exist.
    for (dir, mode) in dirs.iter().rev() {
        fs::set_permissions(dir, fs::Permissions::from_mode(*mode))
            .map_err(|e| ChangesError::io(dir, e))?;
    }
    Ok(todo.iter().map(|c| c.path.clone()).collect())
}

/// Whether what is there must go first: removed, or a directory replaced by a file or a
/// symlink (a file replaced by a file is renamed over instead).
fn needs_clearing(c: &Change) -> bool {
    match (&c.before, &c.after) {
        (Some(_), None) => true,
        (Some(Node::Dir { .. }), Some(Node::Dir { .. })) => false,
        (Some(Node::Dir { .. }), Some(_)) => true,
        (Some(_), Some(Node::Dir { .. })) => true,
        _ => false,
    }
}

fn remove_entry(full: &Path) -> Result<()> {
    let meta = match fs::symlink_metadata(full) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(ChangesError::io(full, e)),
    };
    let r = if meta.is_dir() {
        fs::remove_dir(full)
    } else {
        fs::remove_file(full)
    };
    r.map_err(|e| ChangesError::io(full, e))
}

/// The prefix of the temporary names a restore writes beside `name` before renaming.
fn temp_prefix(name: &str) -> String {
    format!(".{name}.pocketpilot-restore-")
}

/// Removes what a restore cut off by a crash left beside `paths`: its temporary files
/// (written, not yet renamed into place). Only names of that exact form are touched.
pub fn remove_leftovers(guard: &WorkspaceGuard, paths: &[&str]) -> Result<usize> {
    let mut removed = 0;
    for rel in paths {
        let full = target_path(guard, rel)?;
        let (Some(parent), Some(name)) = (full.parent(), full.file_name()) else {
            continue;
        };
        let prefix = temp_prefix(&name.to_string_lossy());
        let Ok(list) = fs::read_dir(parent) else {
            continue;
        };
        for item in list.flatten() {
            let n = item.file_name();
            let n = n.to_string_lossy();
            let pid_part = n.strip_prefix(&prefix);
            if pid_part.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())) {
                remove_entry(&item.path())?;
                removed += 1;
            }
        }
    }
    Ok(removed)
}

fn temp_beside(full: &Path) -> Result<PathBuf> {
    let parent = full.parent().ok_or_else(|| ChangesError::Refused {
        path: full.display().to_string(),
        what: "no parent directory".into(),
    })?;
    fs::create_dir_all(parent).map_err(|e| ChangesError::io(parent, e))?;
    let name = full
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(parent.join(format!("{}{}", temp_prefix(&name), std::process::id())))
}

fn write_file(blobs: &BlobStore, full: &Path, hash: &str, mode: u32) -> Result<()> {
    let bytes = blobs.read(hash)?;
    let tmp = temp_beside(full)?;
    let _ = fs::remove_file(&tmp);
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| ChangesError::io(&tmp, e))?;
    f.write_all(&bytes).map_err(|e| ChangesError::io(&tmp, e))?;
    f.sync_all().map_err(|e| ChangesError::io(&tmp, e))?;
    fs::set_permissions(&tmp, fs::Permissions::from_mode(mode))
        .map_err(|e| ChangesError::io(&tmp, e))?;
    fs::rename(&tmp, full).map_err(|e| ChangesError::io(full, e))
}

fn write_symlink(full: &Path, target: &str) -> Result<()> {
    let tmp = temp_beside(full)?;
    let _ = fs::remove_file(&tmp);
    std::os::unix::fs::symlink(target, &tmp).map_err(|e| ChangesError::io(&tmp, e))?;
    fs::rename(&tmp, full).map_err(|e| ChangesError::io(full, e))
}
