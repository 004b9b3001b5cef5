//! `WorkspaceGuard`: turns a path argument into a real path inside the workspace, or a
//! typed refusal.
//!
//! Resolution follows the kernel's rules rather than string rules: components are walked
//! one by one from the (canonical) root, every existing symlink is resolved to its real
//! target, and `..` applies to the real parent, so `link/..` means what `open(2)` would
//! make of it. Once a walk is inside the workspace it may not leave it, not even briefly.
//!
//! Resolving is only half the job: between the check and the use a symlink can be swapped
//! in. The tools therefore resolve again when they execute and then act through
//! [`crate::sandbox::Sandbox`], which opens relative to a directory handle (cap-std), does
//! not follow a final symlink, writes by rename, and verifies the real path of what it
//! opened.
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::tool::{ToolContext, ToolError};

/// Longest path argument accepted, in bytes (Linux's `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;
/// Longest single file name accepted, in bytes (`NAME_MAX`).
pub const MAX_NAME_BYTES: usize = 255;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GuardError {
    #[error("the path is empty")]
    Empty,
    #[error("the path contains a NUL byte")]
    NulByte,
    #[error("the path is too long ({len} bytes; at most {max})")]
    TooLong { len: usize, max: usize },
    #[error("`~` is not expanded: give a path relative to the workspace")]
    HomeRelative,
    #[error("{path} is outside the workspace")]
    OutsideWorkspace { path: String },
    #[error("{path}: `..` leads out of the workspace")]
    ParentEscape { path: String },
    #[error("{path}: a symbolic link leads out of the workspace")]
    SymlinkEscape { path: String },
    #[error("{path}: a symbolic link points to nothing")]
    DanglingSymlink { path: String },
    #[error("{path}: `..` after a directory that does not exist")]
    ParentOfMissing { path: String },
    #[error("{path}: the application's own data and configuration are off limits")]
    Forbidden { path: String },
    #[error("{path}: the workspace's `.pocketpilot/` folder is never written by the agent")]
    ReadOnly { path: String },
    #[error("{path} does not exist")]
    NotFound { path: String },
    #[error("{path} is not a regular file (it is {kind})")]
    NotRegularFile { path: String, kind: &'static str },
    #[error("{path} is not a directory")]
    NotADirectory { path: String },
    #[error("{path} is the workspace root itself")]
    IsRoot { path: String },
    #[error("{path} changed while it was being used; nothing was done")]
    Changed { path: String },
    #[error("the workspace root {path} cannot be used: {message}")]
    BadRoot { path: String, message: String },
    #[error("{path} is hard-linked ({links} links) to a file outside the workspace; it is not read (allow a store of such links with `pocketpilot sandbox allow-links DIR`)")]
    HardLinked { path: String, links: u64 },
    #[error("{path}: {message}")]
    Io { path: String, message: String },
}

impl GuardError {
    /// A stable name for the UI and the logs; nobody should match on the message.
    pub fn kind(&self) -> &'static str {
        match self {
            GuardError::Empty => "empty",
            GuardError::NulByte => "nul_byte",
            GuardError::TooLong { .. } => "too_long",
            GuardError::HomeRelative => "home_relative",
            GuardError::OutsideWorkspace { .. } => "outside_workspace",
            GuardError::ParentEscape { .. } => "parent_escape",
            GuardError::SymlinkEscape { .. } => "symlink_escape",
            GuardError::DanglingSymlink { .. } => "dangling_symlink",
            GuardError::ParentOfMissing { .. } => "parent_of_missing",
            GuardError::Forbidden { .. } => "forbidden",
            GuardError::ReadOnly { .. } => "read_only",
            GuardError::NotFound { .. } => "not_found",
            GuardError::NotRegularFile { .. } => "not_regular_file",
            GuardError::NotADirectory { .. } => "not_a_directory",
            GuardError::IsRoot { .. } => "is_root",
            GuardError::Changed { .. } => "changed",
            GuardError::BadRoot { .. } => "bad_root",
            GuardError::HardLinked { .. } => "hard_linked",
            GuardError::Io { .. } => "io",
        }
    }

    pub(crate) fn io(path: &Path, err: &io::Error) -> Self {
        GuardError::Io {
            path: path.display().to_string(),
            message: err.to_string(),
        }
    }
}

impl From<GuardError> for ToolError {
    fn from(err: GuardError) -> Self {
        match err {
            // Not a policy refusal: the model asked for something that is not there.
            GuardError::NotFound { .. } | GuardError::Io { .. } => {
                ToolError::Failed(err.to_string())
            }
            other => ToolError::PathRejected(other.to_string()),
        }
    }
}

/// The outcome of a walk: the real path, and whether something exists there.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Walked {
    path: PathBuf,
    exists: bool,
}

/// The folder at the workspace root the agent may read but never write (issue 18).
pub const PROTECTED_DIR: &str = ".pocketpilot";

#[derive(Debug, Clone)]
pub struct WorkspaceGuard {
    root: PathBuf,
    forbidden: Vec<PathBuf>,
    /// Trees where the other links of a hard-linked file may be (see `links`).
    link_stores: Vec<PathBuf>,
}

impl WorkspaceGuard {
    /// `root` is canonicalised here, so a caller's non-canonical root cannot weaken the
    /// prefix checks. A forbidden directory that strictly contains the root is dropped: the
    /// root boundary already keeps everything else in it out of reach. One that *is* the
    /// root makes the whole workspace off limits, which is refused.
    pub fn new(root: impl AsRef<Path>, forbidden: &[PathBuf]) -> Result<Self, GuardError> {
        let given = root.as_ref();
        let root = std::fs::canonicalize(given).map_err(|e| GuardError::BadRoot {
            path: given.display().to_string(),
            message: e.to_string(),
        })?;
        if !root.is_dir() {
            return Err(GuardError::BadRoot {
                path: root.display().to_string(),
                message: "not a directory".into(),
            });
        }
        let mut kept = Vec::new();
        for dir in forbidden {
            let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| lexical_normalize(dir));
            if dir == root {
                return Err(GuardError::Forbidden {
                    path: root.display().to_string(),
                });
            }
            if !root.starts_with(&dir) {
                kept.push(dir);
            }
        }
        Ok(Self {
            root,
            forbidden: kept,
            link_stores: Vec::new(),
        })
    }

    pub fn for_context(ctx: &ToolContext) -> Result<Self, GuardError> {
        let mut guard = Self::new(&ctx.workspace, &ctx.forbidden)?;
        guard.link_stores = ctx.sandbox.link_stores.clone();
        Ok(guard)
    }

    /// A file with more than one link is read only when all its links are in the
    /// workspace or an allowed store (see `links`).
    pub fn check_links(&self, path: &Path, meta: &std::fs::Metadata) -> Result<(), GuardError> {
        use std::os::unix::fs::MetadataExt;
        if !meta.is_file() || meta.nlink() <= 1 {
            return Ok(());
        }
        let mut trees = vec![self.root.clone()];
        trees.extend(self.link_stores.iter().cloned());
        if crate::links::all_links_within(meta, &trees) {
            return Ok(());
        }
        Err(GuardError::HardLinked {
            path: self.relative(path),
            links: meta.nlink(),
        })
    }

    /// The canonical workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// An existing path, every symlink resolved; a directory or a file.
    pub fn resolve_existing(&self, raw: &str) -> Result<PathBuf, GuardError> {
        let walked = self.walk(raw, true)?;
        if !walked.exists {
            return Err(GuardError::NotFound {
                path: raw.to_string(),
            });
        }
        Ok(walked.path)
    }

    /// An existing regular file: directories, devices, FIFOs and sockets are refused.
    pub fn resolve_file(&self, raw: &str) -> Result<PathBuf, GuardError> {
        let path = self.resolve_existing(raw)?;
        let meta = std::fs::metadata(&path).map_err(|e| GuardError::io(&path, &e))?;
        check_regular(raw, &meta)?;
        Ok(path)
    }

    /// An existing directory (the root included).
    pub fn resolve_dir(&self, raw: &str) -> Result<PathBuf, GuardError> {
        let path = self.resolve_existing(raw)?;
        if !path.is_dir() {
            return Err(GuardError::NotADirectory {
                path: raw.to_string(),
            });
        }
        Ok(path)
    }

    /// The real path a write should create or replace. Missing parents are allowed (the
    /// nearest existing one must be inside); an existing target must be a regular file. A
    /// symlink to a file inside the workspace resolves to that file; a dangling symlink is
    /// refused, because `open(O_CREAT)` would create its target wherever it points.
    pub fn resolve_for_write(&self, raw: &str) -> Result<PathBuf, GuardError> {
        if raw.ends_with('/') {
            return Err(GuardError::NotRegularFile {
                path: raw.to_string(),
                kind: "a directory path (it ends with `/`)",
            });
        }
        let walked = self.walk(raw, true)?;
        if walked.path == self.root {
            return Err(GuardError::IsRoot {
                path: raw.to_string(),
            });
        }
        self.check_writable(raw, &walked.path)?;
        if walked.exists {
            let meta =
                std::fs::metadata(&walked.path).map_err(|e| GuardError::io(&walked.path, &e))?;
            check_regular(raw, &meta)?;
        }
        Ok(walked.path)
    }

    /// An existing entry *without* following a final symlink: deleting a link removes the
    /// link, wherever it points. The root itself is refused.
    pub fn resolve_entry(&self, raw: &str) -> Result<PathBuf, GuardError> {
        let walked = self.walk(raw, false)?;
        if !walked.exists {
            return Err(GuardError::NotFound {
                path: raw.to_string(),
            });
        }
        if walked.path == self.root {
            return Err(GuardError::IsRoot {
                path: raw.to_string(),
            });
        }
        self.check_writable(raw, &walked.path)?;
        Ok(walked.path)
    }

    /// The path relative to the root for display and `ToolOutput.changed`; `.` for the
    /// root. Non-UTF-8 names are shown lossily.
    pub fn relative(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".into(),
            Ok(rel) => rel.to_string_lossy().into_owned(),
            Err(_) => path.to_string_lossy().into_owned(),
        }
    }

    /// The workspace's read-only folders: `.pocketpilot/` at the root, and where it leads
    /// when it is a link to somewhere inside. Policy lives in the store; nothing the agent
    /// writes here may pass for it.
    pub fn read_only_dirs(&self) -> Vec<PathBuf> {
        let dir = self.root.join(PROTECTED_DIR);
        let mut out = vec![dir.clone()];
        if let Ok(real) = std::fs::canonicalize(&dir) {
            if real != dir && self.inside(&real) {
                out.push(real);
            }
        }
        out
    }

    /// Refuses a write to (or a delete of) `path` when it lies in a read-only folder, or
    /// would take one with it (a directory holding it). `raw` names it in the error.
    pub fn check_writable(&self, raw: &str, path: &Path) -> Result<(), GuardError> {
        let hit = self
            .read_only_dirs()
            .iter()
            .any(|d| path.starts_with(d) || (d.starts_with(path) && path != self.root));
        if hit {
            return Err(GuardError::ReadOnly {
                path: raw.to_string(),
            });
        }
        Ok(())
    }

    pub fn is_forbidden(&self, path: &Path) -> bool {
        self.forbidden.iter().any(|f| path.starts_with(f))
    }

    /// Whether a forbidden directory lies at or below `path` (a recursive delete of it
    /// would reach the app's data).
    pub fn contains_forbidden(&self, path: &Path) -> bool {
        self.forbidden.iter().any(|f| f.starts_with(path))
    }

    fn inside(&self, path: &Path) -> bool {
        path.starts_with(&self.root)
    }

    fn check_text(raw: &str) -> Result<(), GuardError> {
        if raw.is_empty() {
            return Err(GuardError::Empty);
        }
        if raw.contains('\0') {
            return Err(GuardError::NulByte);
        }
        if raw.len() > MAX_PATH_BYTES {
            return Err(GuardError::TooLong {
                len: raw.len(),
                max: MAX_PATH_BYTES,
            });
        }
        if let Some(long) = raw.split('/').find(|c| c.len() > MAX_NAME_BYTES) {
            return Err(GuardError::TooLong {
                len: long.len(),
                max: MAX_NAME_BYTES,
            });
        }
        if raw.starts_with('~') {
            return Err(GuardError::HomeRelative);
        }
        Ok(())
    }

    /// Walks `raw` component by component. Relative paths start at the root; absolute ones
    /// at `/` and must arrive inside. `current` is always a real (canonical) path, which
    /// is what makes `..` after a symlink resolve like the kernel does.
    fn walk(&self, raw: &str, follow_last: bool) -> Result<Walked, GuardError> {
        Self::check_text(raw)?;
        let given = Path::new(raw);
        let escape = |kind: fn(String) -> GuardError| kind(raw.to_string());
        let mut current = if given.is_absolute() {
            PathBuf::from("/")
        } else {
            self.root.clone()
        };
        let components: Vec<Component<'_>> = given.components().collect();
        let last_normal = components
            .iter()
            .rposition(|c| matches!(c, Component::Normal(_)));
        let mut missing_from: Option<usize> = None;
        for (i, component) in components.iter().enumerate() {
            let was_inside = self.inside(&current);
            match component {
                Component::RootDir | Component::Prefix(_) => current = PathBuf::from("/"),
                Component::CurDir => {}
                Component::ParentDir => {
                    if let Some(parent) = current.parent() {
                        current = parent.to_path_buf();
                    }
                    if was_inside && !self.inside(&current) {
                        return Err(escape(|path| GuardError::ParentEscape { path }));
                    }
                }
                Component::Normal(name) => {
                    let follow = follow_last || Some(i) != last_normal;
                    match self.enter(&current, name, follow, was_inside, raw)? {
                        Some(next) => current = next,
                        None => {
                            missing_from = Some(i);
                            break;
                        }
                    }
                }
            }
        }
        let exists = missing_from.is_none();
        if let Some(first_missing) = missing_from {
            for component in &components[first_missing..] {
                match component {
                    Component::Normal(name) => current.push(name),
                    Component::CurDir => {}
                    _ => return Err(escape(|path| GuardError::ParentOfMissing { path })),
                }
            }
        }
        self.check_landing(raw, &current, exists)?;
        Ok(Walked {
            path: current,
            exists,
        })
    }

    /// One step of a walk into what exists: `current` joined with `name`, resolved when it
    /// is a symlink to `follow` (which may not lead out of the workspace from inside it);
    /// `None` when nothing is there.
    fn enter(
        &self,
        current: &Path,
        name: &std::ffi::OsStr,
        follow: bool,
        was_inside: bool,
        raw: &str,
    ) -> Result<Option<PathBuf>, GuardError> {
        let candidate = current.join(name);
        let meta = match std::fs::symlink_metadata(&candidate) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
                return Err(GuardError::NotADirectory {
                    path: current.display().to_string(),
                });
            }
            Err(e) => return Err(GuardError::io(&candidate, &e)),
        };
        if !(meta.file_type().is_symlink() && follow) {
            return Ok(Some(candidate));
        }
        let real = match std::fs::canonicalize(&candidate) {
            Ok(real) => real,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(GuardError::DanglingSymlink {
                    path: raw.to_string(),
                });
            }
            Err(e) => return Err(GuardError::io(&candidate, &e)),
        };
        if was_inside && !self.inside(&real) {
            return Err(GuardError::SymlinkEscape {
                path: raw.to_string(),
            });
        }
        Ok(Some(real))
    }

    /// Where a walk of `raw` landed must be inside the workspace and not forbidden, and a
    /// path written as a folder must be one.
    fn check_landing(&self, raw: &str, landed: &Path, exists: bool) -> Result<(), GuardError> {
        let given = Path::new(raw);
        let escape = |kind: fn(String) -> GuardError| kind(raw.to_string());
        if !self.inside(landed) {
            // An absolute path that names the workspace lexically but lands elsewhere went
            // through a link; say so rather than "outside".
            let lexical = lexical_normalize(given);
            if given.is_absolute() && lexical.starts_with(&self.root) {
                return Err(escape(|path| GuardError::SymlinkEscape { path }));
            }
            return Err(escape(|path| GuardError::OutsideWorkspace { path }));
        }
        if self.is_forbidden(landed) {
            return Err(escape(|path| GuardError::Forbidden { path }));
        }
        if exists && raw.ends_with('/') && !landed.is_dir() {
            return Err(GuardError::NotADirectory {
                path: raw.to_string(),
            });
        }
        Ok(())
    }
}

pub(crate) fn check_regular(raw: &str, meta: &std::fs::Metadata) -> Result<(), GuardError> {
    if meta.is_file() {
        return Ok(());
    }
    Err(GuardError::NotRegularFile {
        path: raw.to_string(),
        kind: file_kind(&meta.file_type()),
    })
}

pub(crate) fn file_kind(ft: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_dir() {
        "a directory"
    } else if ft.is_symlink() {
        "a symbolic link"
    } else if ft.is_char_device() || ft.is_block_device() {
        "a device"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_file() {
        "a file"
    } else {
        "something else"
    }
}

/// `..` and `.` removed textually; only for messages and for forbidden dirs that do not
/// exist yet, never for access decisions.
fn lexical_normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
#[path = "guard_tests.rs"]
mod tests;
