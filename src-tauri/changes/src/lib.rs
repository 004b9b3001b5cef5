//! The change journal's file side (issue 16). Everything here works on a workspace folder
//! and a blob store; what a change set *is* in the database is the store's and core's.
//!
//! Layout:
//! - `blobs`: content-addressed blobs (`<data>/blobs/ab/cdef…`, SHA-256), written by
//!   rename, verified when read back.
//! - `scan`: a workspace (or a few of its paths) read into an [`Index`] of
//!   size/mtime/ctime/inode per entry, as git keeps one, so only entries whose stat changed
//!   are hashed; ignored directories are never entered.
//! - `diff`: two indexes → the [`Change`]s between them; change lists with renames and
//!   unified text diffs for people.
//! - `restore`: a list of transitions planned against the disk (applied, already there,
//!   or a conflict) and applied, every path re-checked against the workspace.
//!
//! Invariants:
//! - nothing is written inside the workspace except by `restore::apply`, and only at
//!   paths that pass [`restore::target_path`]: relative, no `..`, no symlinked or foreign
//!   parent (but a folder the task swapped for that very symlink, which goes first), never
//!   under `.git`, never in the app's own directories;
//! - a blob's name is the hash of its bytes; a blob that does not hash to its name is
//!   refused, never restored;
//! - symlinks are recorded as their target and never followed.
#![deny(clippy::print_stdout, clippy::print_stderr)]
pub mod blobs;
pub mod diff;
pub mod restore;
pub mod scan;

use std::path::PathBuf;

pub use blobs::BlobStore;
pub use pocketpilot_protocol::changes::{Change, Node};
pub use scan::{Index, ScanOptions, Scope};

#[derive(Debug, thiserror::Error)]
pub enum ChangesError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the journal names `{path}`, which is not a path undo may touch ({why}); nothing was changed")]
    Unsafe { path: String, why: &'static str },
    #[error("the kept content {hash} is gone (pruned or deleted)")]
    MissingBlob { hash: String },
    #[error("the kept content {hash} does not match its hash: the blob store was altered; nothing was restored from it")]
    CorruptBlob { hash: String },
    #[error("the index {what} does not parse: {detail}")]
    BadIndex { what: String, detail: String },
    #[error("{path}: {what}")]
    Refused { path: String, what: String },
}

impl ChangesError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        ChangesError::Io {
            path: path.into(),
            source,
        }
    }
}

pub type Result<T, E = ChangesError> = std::result::Result<T, E>;
