//! Finding every piece of git metadata a workspace holds or leads to: each `.git` entry of
//! a working tree (the root's, nested repositories', submodules'), the git directories
//! they name (`gitdir:` files, symlinks), and what those lead to in turn (`commondir`,
//! `worktrees/*`, `modules/**`), plus the files their configs include.
//!
//! The walk does not follow symlinks (a `.git` symlink is resolved, not walked through)
//! and never enters a git directory's objects; it stops after [`MAX_ENTRIES`] entries.
use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use crate::gitconfig;

/// Files of a git directory a command may not change: a program named in a config runs
/// at the person's next git command; `commondir` says where the config is read from.
pub(crate) const PROTECTED_FILES: [&str; 3] = ["config", "config.worktree", "commondir"];
/// Folders of a git directory a command may not change: hooks run, `info/attributes`
/// selects filters and diff drivers.
pub(crate) const PROTECTED_DIRS: [&str; 2] = ["hooks", "info"];

/// Entries the workspace walk looks at before it gives up (and says so in the log).
pub(crate) const MAX_ENTRIES: usize = 200_000;
const MAX_DEPTH: usize = 64;
const MAX_MODULE_DEPTH: usize = 8;

#[derive(Debug, Default)]
pub(crate) struct Found {
    /// `.git` entries of working trees in the workspace (dirs, files, symlinks).
    pub dotgits: Vec<PathBuf>,
    /// Git directories reached, resolved, without duplicates, in the order found.
    pub gitdirs: Vec<PathBuf>,
    /// Files the configs of those git directories include (existing or not).
    pub included: BTreeSet<PathBuf>,
    pub truncated: bool,
}

pub(crate) fn find(workspace: &Path) -> Found {
    let mut found = Found::default();
    let mut queue: Vec<PathBuf> = Vec::new();
    let mut seen = 0usize;
    let mut stack = vec![(workspace.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES {
                found.truncated = true;
                break;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if entry.file_name() == ".git" {
                if let Some(gitdir) = resolve_dotgit(&path) {
                    queue.push(gitdir);
                }
                found.dotgits.push(path);
            } else if kind.is_dir() && depth < MAX_DEPTH {
                stack.push((path, depth + 1));
            }
        }
        if found.truncated {
            tracing::warn!(
                workspace = %workspace.display(),
                "more than {MAX_ENTRIES} entries: git metadata beyond them is not protected"
            );
            break;
        }
    }
    found.dotgits.sort();
    let mut done: BTreeSet<PathBuf> = BTreeSet::new();
    while let Some(gitdir) = queue.pop() {
        if !done.insert(gitdir.clone()) {
            continue;
        }
        expand(&gitdir, &mut queue, &mut found.included);
        found.gitdirs.push(gitdir);
    }
    found
}

/// The git directory a `.git` entry names: itself (a directory), its `gitdir:` line (a
/// file), or where it points (a symlink, as git follows it).
pub(crate) fn resolve_dotgit(dotgit: &Path) -> Option<PathBuf> {
    let meta = std::fs::symlink_metadata(dotgit).ok()?;
    if meta.is_file() {
        let text = std::fs::read(dotgit).ok()?;
        let text = String::from_utf8_lossy(&text);
        let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
        let base = dotgit.parent()?;
        return real_dir(&base.join(target));
    }
    real_dir(dotgit)
}

fn real_dir(path: &Path) -> Option<PathBuf> {
    let real = std::fs::canonicalize(path).ok()?;
    real.is_dir().then_some(real)
}

/// Queues what a git directory leads to and notes what its configs include.
fn expand(gitdir: &Path, queue: &mut Vec<PathBuf>, included: &mut BTreeSet<PathBuf>) {
    if let Ok(text) = std::fs::read(gitdir.join("commondir")) {
        let text = String::from_utf8_lossy(&text);
        if let Some(common) = real_dir(&gitdir.join(text.trim_end_matches(['\n', '\r']))) {
            queue.push(common);
        }
    }
    if let Ok(entries) = std::fs::read_dir(gitdir.join("worktrees")) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                queue.push(entry.path());
            }
        }
    }
    modules(&gitdir.join("modules"), 0, queue);
    for name in ["config", "config.worktree"] {
        let config = gitdir.join(name);
        included.extend(includes(&config));
    }
}

/// Submodules' git directories: `modules/<name>/` holding a `HEAD` (names may have
/// slashes, so a folder without one is looked into).
fn modules(dir: &Path, depth: usize, queue: &mut Vec<PathBuf>) {
    if depth > MAX_MODULE_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let path = entry.path();
        if path.join("HEAD").is_file() {
            queue.push(path);
        } else {
            modules(&path, depth + 1, queue);
        }
    }
}

/// The files a config includes (`include.path`, `includeIf.*.path`), made absolute.
pub(crate) fn includes(config: &Path) -> Vec<PathBuf> {
    let Ok(bytes) = std::fs::read(config) else {
        return Vec::new();
    };
    let Ok(entries) = gitconfig::parse(&bytes) else {
        return Vec::new();
    };
    let base = config.parent().unwrap_or(Path::new("/"));
    entries
        .iter()
        .filter(|e| matches!(e.section.as_str(), "include" | "includeif") && e.key == "path")
        .filter_map(|e| {
            let value = String::from_utf8_lossy(e.value.as_deref()?).into_owned();
            let path = match value.strip_prefix("~/") {
                Some(rest) => std::env::var_os("HOME").map(PathBuf::from)?.join(rest),
                None => base.join(value),
            };
            Some(normalize(&path))
        })
        .collect()
}

/// `..` and `.` taken out by name (the path may not exist yet).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}
