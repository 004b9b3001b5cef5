//! Reading a workspace into an [`Index`]. An entry whose size, mtime, ctime, inode and mode
//! are those of the previous index is taken from it without reading the file; every other
//! file is hashed and its content kept in the blob store, so the prior contents of what a
//! command changes are already kept before it runs.
//!
//! Racy entries (git's term): a file whose mtime is not safely older than the previous
//! scan may have been changed within the clock's granularity after it was hashed, so it is
//! hashed again.
use std::collections::BTreeMap;
use std::fs::{self, Metadata};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::{BlobStore, ChangesError, Node, Result};

pub use pocketpilot_protocol::changes::DEFAULT_IGNORED;

/// Files larger than this are recorded (so their change is listed) but their content is
/// not kept by default; undo says so instead of restoring them.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// A file is racy when its mtime is this close to (or after) the previous scan's start.
const RACY_NS: i64 = 100_000_000;

#[derive(Debug, Clone, PartialEq)]
pub struct ScanOptions {
    /// Directory names never entered.
    pub ignored: Vec<String>,
    pub max_file_bytes: u64,
}

impl Default for ScanOptions {
    fn default() -> Self {
        Self {
            ignored: DEFAULT_IGNORED.iter().map(|s| (*s).to_owned()).collect(),
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
        }
    }
}

/// What a scan covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "paths", rename_all = "snake_case")]
pub enum Scope {
    /// The whole workspace (a command, an MCP tool with file effects).
    Workspace,
    /// These paths (relative; directories with everything below them).
    Paths(Vec<String>),
}

/// One entry and the stat it was read with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub node: Node,
    #[serde(rename = "s")]
    pub size: u64,
    #[serde(rename = "m")]
    pub mtime_ns: i64,
    #[serde(rename = "c")]
    pub ctime_ns: i64,
    #[serde(rename = "i")]
    pub ino: u64,
}

/// A scan's result: entries by relative path (`/`-separated), and when the scan began.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Index {
    pub scanned_at_ns: i64,
    pub entries: BTreeMap<String, Entry>,
    /// Entries that could not be read or kept (non-UTF-8 names, special files, files over
    /// the size limit, read errors): listed so undo can say what it cannot restore.
    #[serde(default)]
    pub skipped: Vec<String>,
}

impl Index {
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        serde_json::to_vec(self).map_err(|e| ChangesError::BadIndex {
            what: "(writing)".into(),
            detail: e.to_string(),
        })
    }

    pub fn from_bytes(what: &str, bytes: &[u8]) -> Result<Self> {
        serde_json::from_slice(bytes).map_err(|e| ChangesError::BadIndex {
            what: what.to_owned(),
            detail: e.to_string(),
        })
    }

    /// The entries at or below `paths` (for a scoped scan's counterpart).
    pub fn restricted(&self, paths: &[String]) -> Index {
        let entries = self
            .entries
            .iter()
            .filter(|(p, _)| paths.iter().any(|s| under(p, s)))
            .map(|(p, e)| (p.clone(), e.clone()))
            .collect();
        Index {
            scanned_at_ns: self.scanned_at_ns,
            entries,
            skipped: Vec::new(),
        }
    }

    /// This index with `scoped`'s entries in place of those at or below `paths`.
    pub fn merged(&self, paths: &[String], scoped: &Index) -> Index {
        let mut entries: BTreeMap<String, Entry> = self
            .entries
            .iter()
            .filter(|(p, _)| !paths.iter().any(|s| under(p, s)))
            .map(|(p, e)| (p.clone(), e.clone()))
            .collect();
        entries.extend(scoped.entries.iter().map(|(p, e)| (p.clone(), e.clone())));
        Index {
            scanned_at_ns: self.scanned_at_ns.min(scoped.scanned_at_ns),
            entries,
            skipped: self.skipped.clone(),
        }
    }
}

/// Whether `path` is `scope` or below it.
pub fn under(path: &str, scope: &str) -> bool {
    path == scope
        || (path.len() > scope.len()
            && path.starts_with(scope)
            && path.as_bytes()[scope.len()] == b'/')
}

/// What a scan did besides its index.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanStats {
    pub entries: usize,
    /// Files read and hashed (the rest came from the previous index).
    pub hashed: usize,
}

struct Walk<'a> {
    root: &'a Path,
    prev: Option<&'a Index>,
    blobs: &'a BlobStore,
    opts: &'a ScanOptions,
    out: Index,
    stats: ScanStats,
}

/// Scans `scope` under `root`, reusing `prev` where the stat shows nothing changed.
pub fn scan(
    root: &Path,
    scope: &Scope,
    prev: Option<&Index>,
    blobs: &BlobStore,
    opts: &ScanOptions,
) -> Result<(Index, ScanStats)> {
    let mut w = Walk {
        root,
        prev,
        blobs,
        opts,
        out: Index {
            scanned_at_ns: now_ns(),
            ..Index::default()
        },
        stats: ScanStats::default(),
    };
    match scope {
        Scope::Workspace => w.dir("")?,
        Scope::Paths(paths) => {
            for rel in paths {
                let full = root.join(rel);
                match fs::symlink_metadata(&full) {
                    Ok(meta) => w.entry(rel.clone(), &meta)?,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(ChangesError::io(full, e)),
                }
            }
        }
    }
    w.stats.entries = w.out.entries.len();
    Ok((w.out, w.stats))
}

impl Walk<'_> {
    fn dir(&mut self, rel: &str) -> Result<()> {
        let full = self.root.join(rel);
        // An unreadable directory below the root is listed as skipped, not fatal: one
        // root-owned folder must not stop every command in the workspace.
        let list = match fs::read_dir(&full) {
            Ok(l) => l,
            Err(_) if !rel.is_empty() => {
                self.out.skipped.push(rel.to_owned());
                return Ok(());
            }
            Err(e) => return Err(ChangesError::io(&full, e)),
        };
        for item in list {
            let Ok(item) = item else {
                self.out.skipped.push(rel.to_owned());
                continue;
            };
            let Some(name) = item.file_name().to_str().map(str::to_owned) else {
                self.out
                    .skipped
                    .push(format!("{rel}/{}", item.file_name().to_string_lossy()));
                continue;
            };
            let child = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            let is_dir = item.file_type().map(|t| t.is_dir()).unwrap_or(false);
            if is_dir && self.opts.ignored.contains(&name) {
                continue;
            }
            // `DirEntry::metadata` does not follow a symlink.
            match item.metadata() {
                Ok(meta) => self.entry(child, &meta)?,
                Err(_) => self.out.skipped.push(child),
            }
        }
        Ok(())
    }

    fn entry(&mut self, rel: String, meta: &Metadata) -> Result<()> {
        let ft = meta.file_type();
        let mode = meta.permissions().mode() & 0o7777;
        let node = if ft.is_dir() {
            Some(Node::Dir { mode })
        } else if ft.is_symlink() {
            let full = self.root.join(&rel);
            fs::read_link(&full)
                .ok()
                .and_then(|t| t.to_str().map(str::to_owned))
                .map(|target| Node::Symlink { target })
        } else if ft.is_file() {
            self.file_node(&rel, meta, mode)?
        } else {
            None
        };
        let Some(node) = node else {
            self.out.skipped.push(rel);
            return Ok(());
        };
        let recurse = ft.is_dir();
        self.out.entries.insert(
            rel.clone(),
            Entry {
                node,
                size: meta.len(),
                mtime_ns: meta.mtime() * 1_000_000_000 + meta.mtime_nsec(),
                ctime_ns: meta.ctime() * 1_000_000_000 + meta.ctime_nsec(),
                ino: meta.ino(),
            },
        );
        if recurse {
            self.dir(&rel)?;
        }
        Ok(())
    }

    fn file_node(&mut self, rel: &str, meta: &Metadata, mode: u32) -> Result<Option<Node>> {
        let mtime_ns = meta.mtime() * 1_000_000_000 + meta.mtime_nsec();
        let ctime_ns = meta.ctime() * 1_000_000_000 + meta.ctime_nsec();
        if let Some(prev) = self.prev {
            if let Some(e) = prev.entries.get(rel) {
                let same = e.size == meta.len()
                    && e.mtime_ns == mtime_ns
                    && e.ctime_ns == ctime_ns
                    && e.ino == meta.ino()
                    && matches!(e.node, Node::File { mode: m, .. } if m == mode);
                let racy = mtime_ns >= prev.scanned_at_ns - RACY_NS;
                if same && !racy {
                    return Ok(Some(e.node.clone()));
                }
            }
        }
        if meta.len() > self.opts.max_file_bytes {
            return Ok(None);
        }
        let full = self.root.join(rel);
        self.stats.hashed += 1;
        match self.blobs.put_file(&full) {
            Ok((hash, size)) => Ok(Some(Node::File { hash, size, mode })),
            // The file itself could not be read (gone since the listing, unreadable):
            // skipped. A failure to keep it (the data dir's disk) is an error.
            Err(ChangesError::Io { path, .. }) if path == full => Ok(None),
            Err(e) => Err(e),
        }
    }
}

pub fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}
