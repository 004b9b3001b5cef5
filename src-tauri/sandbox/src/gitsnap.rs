//! Git metadata as it was before a call, and the check after it.
//!
//! The danger of a changed hook or config is not the call itself — inside it, a hook
//! runs sandboxed like everything else — but the next git command the person runs
//! unconfined (`git status` runs `core.fsmonitor`). So, after every confined call:
//! - each protected file of a repository that existed before (`config`,
//!   `config.worktree`, `commondir`, `hooks/*`, `info/*`, the `.git` file of a working
//!   tree, files its config includes) is put back as it was, or removed if the call
//!   created it. With user namespaces these could not change during the call, but a new
//!   `commondir` or `config.worktree` could still be created next to them;
//! - a repository the call created keeps working: keys that run a program are cut out
//!   of its configs (an unreadable config is removed), hooks other than git's `*.sample`
//!   and its `info/attributes` are removed.
//!
//! The restore runs in the app (unconfined), so it never writes through a symlink: a
//! replaced entry is removed first, and a git directory that is no longer where it was
//! (a symlink in its place or on its way) is not written into.
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::gitconfig;
use crate::gitfind::{self, Found, PROTECTED_DIRS, PROTECTED_FILES};

/// A piece of git metadata the sandbox put back (or could not) after a call, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    pub path: PathBuf,
    pub action: RestoreAction,
    pub reason: RestoreReason,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestoreAction {
    /// Written back as it was before the call.
    PutBack,
    /// Removed: it did not exist before the call.
    Removed,
    /// The named keys were cut out of it (a config of a repository the call created).
    KeysStripped,
    /// Left as it is: restoring would mean writing through something the command
    /// replaced.
    NotRestored,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RestoreReason {
    /// Git metadata of an existing repository is read-only to commands.
    ReadOnly,
    /// The config sets keys that make git run a program (or read another file).
    RunsProgram { keys: Vec<String> },
    /// Not readable as a git config, so its keys cannot be checked.
    UnreadableConfig,
    /// A hook would run at the person's next git command.
    Hook,
    /// `info/attributes` can select filters and diff drivers.
    Attributes,
    /// The repository's metadata was replaced or moved away.
    Replaced,
    /// The workspace's `.pocketpilot/` folder, created by the command.
    OwnFolder,
}

impl std::fmt::Display for Restored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = self.path.display();
        match self.action {
            RestoreAction::PutBack => write!(f, "the sandbox restored {path}")?,
            RestoreAction::Removed => write!(f, "the sandbox removed {path}")?,
            RestoreAction::KeysStripped => write!(f, "the sandbox removed keys from {path}")?,
            RestoreAction::NotRestored => write!(f, "the sandbox could not restore {path}")?,
        }
        match &self.reason {
            RestoreReason::ReadOnly => {
                write!(
                    f,
                    " (changed by the command; git metadata is read-only to commands)"
                )
            }
            RestoreReason::RunsProgram { keys } => write!(
                f,
                " (it set {}, which would run a program at your next git command)",
                keys.join(", ")
            ),
            RestoreReason::UnreadableConfig => {
                write!(
                    f,
                    " (a git config the command wrote that cannot be checked)"
                )
            }
            RestoreReason::Hook => {
                write!(
                    f,
                    " (a hook the command installed would run at your next git command)"
                )
            }
            RestoreReason::Attributes => write!(
                f,
                " (git attributes the command wrote could select filters that run programs)"
            ),
            RestoreReason::Replaced => write!(
                f,
                " (the command replaced or moved the repository's git metadata)"
            ),
            RestoreReason::OwnFolder => write!(f, " (created by the command)"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    File { bytes: Vec<u8>, mode: u32 },
    Symlink(PathBuf),
    Dir,
    Other,
}

fn node(path: &Path) -> Option<Node> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let ft = meta.file_type();
    Some(if ft.is_symlink() {
        Node::Symlink(std::fs::read_link(path).ok()?)
    } else if ft.is_file() {
        Node::File {
            bytes: std::fs::read(path).ok()?,
            mode: meta.permissions().mode() & 0o7777,
        }
    } else if ft.is_dir() {
        Node::Dir
    } else {
        Node::Other
    })
}

/// Git never runs a hook named `*.sample`: those are neither copied nor compared (a
/// repository has a dozen of them, and copying them was most of the check's cost).
fn is_sample(name: &std::ffi::OsStr) -> bool {
    name.as_encoded_bytes().ends_with(b".sample")
}

/// A protected folder: its entries (one level) when it was a real folder.
#[derive(Debug)]
enum Folder {
    Absent,
    Entries(Vec<(OsString, Node)>),
    Other(Node),
}

fn folder(path: &Path) -> Folder {
    match node(path) {
        None => Folder::Absent,
        Some(Node::Dir) => Folder::Entries(
            std::fs::read_dir(path)
                .map(|entries| {
                    entries
                        .flatten()
                        .filter(|e| !is_sample(&e.file_name()))
                        .filter_map(|e| node(&e.path()).map(|n| (e.file_name(), n)))
                        .collect()
                })
                .unwrap_or_default(),
        ),
        Some(other) => Folder::Other(other),
    }
}

#[derive(Debug)]
pub(crate) struct GitSnapshot {
    /// Only metadata under these (the command's write roots) can change.
    roots: Vec<PathBuf>,
    workspace: PathBuf,
    dotgits: Vec<(PathBuf, Node)>,
    gitdirs: BTreeSet<PathBuf>,
    files: BTreeMap<PathBuf, Option<Node>>,
    folders: BTreeMap<PathBuf, Folder>,
}

fn remove_any(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Puts `saved` at `path` as a new entry (whatever stands there removed first, never
/// written through). `None`: removes what is there.
fn put_back(path: &Path, saved: Option<&Node>) -> std::io::Result<()> {
    remove_any(path)?;
    match saved {
        None => Ok(()),
        Some(Node::File { bytes, mode }) => {
            std::fs::write(path, bytes)?;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(*mode))
        }
        Some(Node::Symlink(target)) => std::os::unix::fs::symlink(target, path),
        Some(Node::Dir) => std::fs::create_dir(path),
        Some(Node::Other) => Ok(()),
    }
}

/// Keys of a config's bytes that run a program; `Err` when it does not parse.
fn program_keys(bytes: &[u8]) -> Result<Vec<String>, gitconfig::ParseError> {
    let mut keys: Vec<String> = gitconfig::parse(bytes)?
        .iter()
        .filter(|e| e.runs_program())
        .map(gitconfig::Entry::name)
        .collect();
    keys.dedup();
    Ok(keys)
}

/// Why a protected file that changed matters, for the person (`commondir` is no config;
/// the rest — configs and the files they include — are read as one).
fn reason_for(path: &Path) -> RestoreReason {
    if path.ends_with("commondir") {
        return RestoreReason::ReadOnly;
    }
    match std::fs::read(path).map(|bytes| program_keys(&bytes)) {
        Ok(Ok(keys)) if !keys.is_empty() => RestoreReason::RunsProgram { keys },
        _ => RestoreReason::ReadOnly,
    }
}

/// Why an entry of a protected folder matters.
fn folder_reason(dir: &Path, name: &std::ffi::OsStr) -> RestoreReason {
    if dir.ends_with("hooks") {
        RestoreReason::Hook
    } else if name == "attributes" {
        RestoreReason::Attributes
    } else {
        RestoreReason::ReadOnly
    }
}

impl GitSnapshot {
    /// `read_only`: paths bound read-only for the call (they cannot change, so their
    /// contents are not copied).
    pub(crate) fn take(
        workspace: &Path,
        roots: &[PathBuf],
        found: &Found,
        read_only: &BTreeSet<PathBuf>,
    ) -> Self {
        let inside = |p: &Path| roots.iter().any(|r| p.starts_with(r));
        let mut files = BTreeMap::new();
        let mut folders = BTreeMap::new();
        for gitdir in found.gitdirs.iter().filter(|g| inside(g)) {
            for name in PROTECTED_FILES {
                let p = gitdir.join(name);
                if !read_only.contains(&p) {
                    files.insert(p.clone(), node(&p));
                }
            }
            for name in PROTECTED_DIRS {
                let p = gitdir.join(name);
                if !read_only.contains(&p) {
                    folders.insert(p.clone(), folder(&p));
                }
            }
        }
        for inc in found.included.iter().filter(|p| inside(p)) {
            if !read_only.contains(inc) {
                files.insert(inc.clone(), node(inc));
            }
        }
        Self {
            roots: roots.to_vec(),
            workspace: workspace.to_path_buf(),
            dotgits: found
                .dotgits
                .iter()
                .filter(|d| !read_only.contains(*d))
                .filter_map(|d| node(d).map(|n| (d.clone(), n)))
                .collect(),
            gitdirs: found.gitdirs.iter().cloned().collect(),
            files,
            folders,
        }
    }

    fn inside(&self, p: &Path) -> bool {
        self.roots.iter().any(|r| p.starts_with(r))
    }

    /// Whether `path`'s parent is still the real folder it was (no symlink on its way).
    fn parent_intact(path: &Path) -> bool {
        path.parent()
            .is_some_and(|parent| std::fs::canonicalize(parent).is_ok_and(|c| c == parent))
    }

    /// Puts everything back and checks what the call created; returns what it did.
    pub(crate) fn restore(self) -> Vec<Restored> {
        let mut out = Vec::new();
        let mut record = |path: &Path, action, reason| {
            out.push(Restored {
                path: path.to_path_buf(),
                action,
                reason,
            })
        };
        self.restore_dotgits(&mut record);
        self.restore_files(&mut record);
        for (dir, saved) in &self.folders {
            if !Self::parent_intact(dir) {
                continue;
            }
            restore_folder(dir, saved, &mut record);
        }
        // What the call created: repositories it made keep working, without programs.
        let found = gitfind::find(&self.workspace);
        for gitdir in &found.gitdirs {
            if self.gitdirs.contains(gitdir) || !self.inside(gitdir) {
                continue;
            }
            check_new_repo(gitdir, &mut record);
        }
        out
    }

    /// The `.git` entries as they were: a file or link put back, a folder's replacement
    /// removed (a folder itself cannot be brought back).
    fn restore_dotgits(&self, record: &mut impl FnMut(&Path, RestoreAction, RestoreReason)) {
        for (path, saved) in &self.dotgits {
            let now = node(path);
            if now.as_ref() == Some(saved) {
                continue;
            }
            if !Self::parent_intact(path) {
                record(path, RestoreAction::NotRestored, RestoreReason::Replaced);
                continue;
            }
            match saved {
                // A `.git` folder cannot be brought back; what stands in its place (a
                // symlink or file leading to a repository of the command's) is removed.
                Node::Dir => match now {
                    Some(Node::Dir) => {}
                    None => record(path, RestoreAction::NotRestored, RestoreReason::Replaced),
                    Some(_) => {
                        let action = match remove_any(path) {
                            Ok(()) => RestoreAction::Removed,
                            Err(_) => RestoreAction::NotRestored,
                        };
                        record(path, action, RestoreReason::Replaced);
                    }
                },
                saved => {
                    let action = match put_back(path, Some(saved)) {
                        Ok(()) => RestoreAction::PutBack,
                        Err(e) => {
                            tracing::warn!(path = %path.display(), error = %e, "cannot restore");
                            RestoreAction::NotRestored
                        }
                    };
                    record(path, action, RestoreReason::ReadOnly);
                }
            }
        }
    }

    /// The protected files as they were: put back, or removed when the call made them.
    fn restore_files(&self, record: &mut impl FnMut(&Path, RestoreAction, RestoreReason)) {
        for (path, saved) in &self.files {
            let now = node(path);
            if now == *saved {
                continue;
            }
            if !Self::parent_intact(path) {
                if path.parent().is_some_and(|p| p.symlink_metadata().is_ok()) {
                    record(path, RestoreAction::NotRestored, RestoreReason::Replaced);
                }
                continue;
            }
            let reason = reason_for(path);
            let action = match (put_back(path, saved.as_ref()), saved) {
                (Ok(()), Some(_)) => RestoreAction::PutBack,
                (Ok(()), None) => RestoreAction::Removed,
                (Err(e), _) => {
                    tracing::warn!(path = %path.display(), error = %e, "cannot restore");
                    RestoreAction::NotRestored
                }
            };
            record(path, action, reason);
        }
    }
}

fn restore_folder(
    dir: &Path,
    saved: &Folder,
    record: &mut impl FnMut(&Path, RestoreAction, RestoreReason),
) {
    let now = folder(dir);
    let fail = |e: std::io::Error| {
        tracing::warn!(path = %dir.display(), error = %e, "cannot restore");
        RestoreAction::NotRestored
    };
    match (saved, now) {
        (Folder::Absent, Folder::Absent) => {}
        (Folder::Absent, _) => {
            let action = remove_any(dir).map_or_else(fail, |()| RestoreAction::Removed);
            record(dir, action, RestoreReason::ReadOnly);
        }
        (Folder::Other(was), Folder::Other(is)) if *was == is => {}
        (Folder::Other(was), _) => {
            let action = put_back(dir, Some(was)).map_or_else(fail, |()| RestoreAction::PutBack);
            record(dir, action, RestoreReason::ReadOnly);
        }
        (Folder::Entries(entries), now) => {
            if !matches!(now, Folder::Entries(_)) {
                if let Err(e) = put_back(dir, Some(&Node::Dir)) {
                    record(dir, fail(e), RestoreReason::ReadOnly);
                    return;
                }
                record(dir, RestoreAction::PutBack, RestoreReason::ReadOnly);
            }
            let current = match folder(dir) {
                Folder::Entries(e) => e,
                _ => Vec::new(),
            };
            for (name, is) in &current {
                let path = dir.join(name);
                match entries.iter().find(|(n, _)| n == name) {
                    Some((_, was)) if was == is => {}
                    Some((_, Node::Dir)) if *is == Node::Dir => {}
                    Some((_, was)) => {
                        let action = put_back(&path, Some(was))
                            .map_or_else(fail, |()| RestoreAction::PutBack);
                        record(&path, action, folder_reason(dir, name));
                    }
                    None => {
                        let action =
                            remove_any(&path).map_or_else(fail, |()| RestoreAction::Removed);
                        record(&path, action, folder_reason(dir, name));
                    }
                }
            }
            for (name, was) in entries {
                if current.iter().any(|(n, _)| n == name) {
                    continue;
                }
                let path = dir.join(name);
                let action =
                    put_back(&path, Some(was)).map_or_else(fail, |()| RestoreAction::PutBack);
                record(&path, action, folder_reason(dir, name));
            }
        }
    }
}

/// A repository the call created: its configs lose the keys that run programs, its
/// hooks (git's `*.sample` files aside) and `info/attributes` go.
fn check_new_repo(gitdir: &Path, record: &mut impl FnMut(&Path, RestoreAction, RestoreReason)) {
    if std::fs::canonicalize(gitdir).is_ok_and(|c| c != gitdir) {
        return;
    }
    let fail = |path: &Path, e: std::io::Error| {
        tracing::warn!(path = %path.display(), error = %e, "cannot clean");
        RestoreAction::NotRestored
    };
    for name in ["config", "config.worktree"] {
        let path = gitdir.join(name);
        let Some(Node::File { bytes, mode }) = node(&path) else {
            if node(&path).is_some() {
                let action =
                    remove_any(&path).map_or_else(|e| fail(&path, e), |()| RestoreAction::Removed);
                record(&path, action, RestoreReason::UnreadableConfig);
            }
            continue;
        };
        match gitconfig::parse(&bytes) {
            Ok(entries) => {
                let bad: Vec<&gitconfig::Entry> =
                    entries.iter().filter(|e| e.runs_program()).collect();
                if bad.is_empty() {
                    continue;
                }
                let mut keys: Vec<String> = bad.iter().map(|e| e.name()).collect();
                keys.dedup();
                let kept = Node::File {
                    bytes: gitconfig::without(&bytes, &bad),
                    mode,
                };
                let action = put_back(&path, Some(&kept))
                    .map_or_else(|e| fail(&path, e), |()| RestoreAction::KeysStripped);
                record(&path, action, RestoreReason::RunsProgram { keys });
            }
            Err(_) => {
                let action =
                    remove_any(&path).map_or_else(|e| fail(&path, e), |()| RestoreAction::Removed);
                record(&path, action, RestoreReason::UnreadableConfig);
            }
        }
    }
    let hooks = gitdir.join("hooks");
    match node(&hooks) {
        Some(Node::Dir) => {
            if let Ok(entries) = std::fs::read_dir(&hooks) {
                for entry in entries.flatten() {
                    if is_sample(&entry.file_name()) {
                        continue;
                    }
                    let path = entry.path();
                    let action = remove_any(&path)
                        .map_or_else(|e| fail(&path, e), |()| RestoreAction::Removed);
                    record(&path, action, RestoreReason::Hook);
                }
            }
        }
        Some(_) => {
            let action =
                remove_any(&hooks).map_or_else(|e| fail(&hooks, e), |()| RestoreAction::Removed);
            record(&hooks, action, RestoreReason::Hook);
        }
        None => {}
    }
    let attributes = gitdir.join("info/attributes");
    if node(&attributes).is_some() && GitSnapshot::parent_intact(&attributes) {
        let action = remove_any(&attributes)
            .map_or_else(|e| fail(&attributes, e), |()| RestoreAction::Removed);
        record(&attributes, action, RestoreReason::Attributes);
    }
}
