//! Execution-time file operations, done so that a symlink swapped in after the guard's
//! check cannot win.
//!
//! Every operation goes through a cap-std `Dir` opened on the workspace root: paths are
//! resolved relative to that handle and can never leave it (openat2 `RESOLVE_BENEATH` or
//! cap-std's own walk). On top of that:
//! - a final component is opened with `O_NOFOLLOW`, and files with `O_NONBLOCK` so a FIFO
//!   swapped in cannot hang a read;
//! - what was opened is checked against the path the guard resolved (via `/proc/self/fd`
//!   or `F_GETPATH`), which also keeps the app's data dir out if it lies in the workspace;
//! - writes go to a fresh temporary file (`O_EXCL`) and are renamed over the target.
//!   `rename(2)` replaces a symlink rather than following it, and replaces a hard link's
//!   directory entry rather than writing into the shared inode.
use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, OpenOptions, OpenOptionsExt, PermissionsExt};

use crate::guard::{GuardError, WorkspaceGuard};

/// One directory entry, as `list_dir` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: OsString,
    pub kind: EntryKind,
    pub size: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
    Other,
}

/// A file's first bytes and its full length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub bytes: Vec<u8>,
    pub total_len: u64,
}

pub struct Sandbox {
    guard: WorkspaceGuard,
    root: Dir,
}

impl Sandbox {
    pub fn open(guard: &WorkspaceGuard) -> Result<Self, GuardError> {
        let root = Dir::open_ambient_dir(guard.root(), cap_std::ambient_authority())
            .map_err(|e| GuardError::io(guard.root(), &e))?;
        verify_fd(root.as_raw_fd(), guard.root())?;
        Ok(Self {
            guard: guard.clone(),
            root,
        })
    }

    pub fn guard(&self) -> &WorkspaceGuard {
        &self.guard
    }

    fn rel<'a>(&self, path: &'a Path) -> Result<&'a Path, GuardError> {
        path.strip_prefix(self.guard.root())
            .map_err(|_| GuardError::OutsideWorkspace {
                path: path.display().to_string(),
            })
    }

    fn open_dir(&self, path: &Path) -> Result<Dir, GuardError> {
        let rel = self.rel(path)?;
        let dir = if rel.as_os_str().is_empty() {
            self.root.try_clone()
        } else {
            self.root.open_dir(rel)
        }
        .map_err(|e| escape_or_io(path, &e))?;
        verify_fd(dir.as_raw_fd(), path)?;
        Ok(dir)
    }

    fn split<'a>(&self, path: &'a Path) -> Result<(&'a Path, &'a std::ffi::OsStr), GuardError> {
        match (path.parent(), path.file_name()) {
            (Some(parent), Some(name)) if path != self.guard.root() => Ok((parent, name)),
            _ => Err(GuardError::IsRoot {
                path: path.display().to_string(),
            }),
        }
    }

    /// Opens a regular file for reading; returns it with its length.
    pub fn open_file(&self, path: &Path) -> Result<(std::fs::File, u64), GuardError> {
        let (parent, name) = self.split(path)?;
        let dir = self.open_dir(parent)?;
        let mut options = OpenOptions::new();
        options
            .read(true)
            .follow(FollowSymlinks::No)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
        let file = dir
            .open_with(name, &options)
            .map_err(|e| escape_or_io(path, &e))?;
        verify_fd(file.as_raw_fd(), path)?;
        let meta = file.metadata().map_err(|e| GuardError::io(path, &e))?;
        if !meta.is_file() {
            return Err(GuardError::NotRegularFile {
                path: self.guard.relative(path),
                kind: file_kind_cap(&meta.file_type()),
            });
        }
        let file = file.into_std();
        // Checked on the opened file: its links are what this read would reach.
        let std_meta = file.metadata().map_err(|e| GuardError::io(path, &e))?;
        self.guard.check_links(path, &std_meta)?;
        Ok((file, meta.len()))
    }

    /// Reads at most `cap` bytes of a regular file.
    pub fn read_head(&self, path: &Path, cap: u64) -> Result<Head, GuardError> {
        let (file, total_len) = self.open_file(path)?;
        let mut bytes = Vec::new();
        file.take(cap)
            .read_to_end(&mut bytes)
            .map_err(|e| GuardError::io(path, &e))?;
        Ok(Head { bytes, total_len })
    }

    /// `None` when nothing is there.
    pub fn read_if_exists(&self, path: &Path, cap: u64) -> Result<Option<Head>, GuardError> {
        match self.read_head(path, cap) {
            Ok(head) => Ok(Some(head)),
            Err(GuardError::NotFound { .. }) if !exists_no_follow(path) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Replaces (or creates) `path` with `bytes`, creating missing parent directories. The
    /// target is never opened: a temporary file is written and renamed over it.
    pub fn write_atomic(&self, path: &Path, bytes: &[u8]) -> Result<(), GuardError> {
        let (parent, name) = self.split(path)?;
        let dir = match self.open_dir(parent) {
            Err(GuardError::NotFound { .. }) => {
                let rel_parent = self.rel(parent)?;
                self.root
                    .create_dir_all(rel_parent)
                    .map_err(|e| escape_or_io(parent, &e))?;
                self.open_dir(parent)?
            }
            other => other?,
        };
        let existing = dir.symlink_metadata(name).ok();
        if let Some(meta) = &existing {
            if !meta.is_file() {
                return Err(GuardError::NotRegularFile {
                    path: self.guard.relative(path),
                    kind: file_kind_cap(&meta.file_type()),
                });
            }
        }
        let tmp = temp_name(name);
        let mut options = OpenOptions::new();
        options.write(true).create_new(true).mode(0o666);
        let mut file = dir
            .open_with(&tmp, &options)
            .map_err(|e| GuardError::io(path, &e))?;
        let written = (|| -> io::Result<()> {
            file.write_all(bytes)?;
            if let Some(meta) = &existing {
                file.set_permissions(cap_std::fs::Permissions::from_mode(
                    meta.permissions().mode(),
                ))?;
            }
            file.sync_all()?;
            drop(file);
            dir.rename(&tmp, &dir, name)
        })();
        if let Err(e) = written {
            let _ = dir.remove_file(&tmp);
            return Err(GuardError::io(path, &e));
        }
        Ok(())
    }

    /// Removes a file or a symlink (never its target), or a directory tree when
    /// `recursive`; cap-std's `remove_dir_all` does not follow links inside the tree.
    pub fn remove(&self, path: &Path, recursive: bool) -> Result<(), GuardError> {
        let (parent, name) = self.split(path)?;
        let dir = self.open_dir(parent)?;
        let meta = dir
            .symlink_metadata(name)
            .map_err(|e| escape_or_io(path, &e))?;
        let result = if meta.is_dir() {
            if !recursive {
                return Err(GuardError::Io {
                    path: self.guard.relative(path),
                    message:
                        "is a directory; pass `recursive: true` to delete it and everything in it"
                            .into(),
                });
            }
            dir.remove_dir_all(name)
        } else {
            dir.remove_file(name)
        };
        result.map_err(|e| GuardError::io(path, &e))
    }

    /// The entries of a directory, unsorted. Names may be non-UTF-8.
    pub fn read_dir(&self, path: &Path) -> Result<Vec<Entry>, GuardError> {
        let dir = self.open_dir(path)?;
        let mut out = Vec::new();
        for entry in dir.entries().map_err(|e| GuardError::io(path, &e))? {
            let entry = entry.map_err(|e| GuardError::io(path, &e))?;
            let name = entry.file_name();
            let meta = entry.metadata().ok();
            let (kind, size) = match &meta {
                Some(m) if m.file_type().is_symlink() => (EntryKind::Symlink, 0),
                Some(m) if m.is_dir() => (EntryKind::Dir, 0),
                Some(m) if m.is_file() => (EntryKind::File, m.len()),
                _ => (EntryKind::Other, 0),
            };
            out.push(Entry { name, kind, size });
        }
        Ok(out)
    }
}

fn exists_no_follow(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

fn file_kind_cap(ft: &cap_std::fs::FileType) -> &'static str {
    use cap_std::fs::FileTypeExt;
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
    } else {
        "something else"
    }
}

fn temp_name(name: &std::ffi::OsStr) -> OsString {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut tmp = OsString::from(".");
    // Keep the temporary name short enough for NAME_MAX whatever the target's length.
    let lossy = name.to_string_lossy();
    let stem: String = lossy.chars().take(100).collect();
    tmp.push(stem);
    tmp.push(format!(".pocketpilot-{}-{n}.tmp", std::process::id()));
    tmp
}

/// A cap-std refusal to leave the root surfaces as an I/O error; name it for what it is.
fn escape_or_io(path: &Path, err: &io::Error) -> GuardError {
    let text = err.to_string();
    if err.raw_os_error() == Some(libc::ELOOP) {
        return GuardError::Changed {
            path: format!("{} (a symbolic link appeared)", path.display()),
        };
    }
    let cap_std_refusal = err.kind() == io::ErrorKind::PermissionDenied && text.contains("outside");
    if cap_std_refusal || err.raw_os_error() == Some(libc::EXDEV) {
        return GuardError::SymlinkEscape {
            path: path.display().to_string(),
        };
    }
    if err.kind() == io::ErrorKind::NotFound {
        return GuardError::NotFound {
            path: path.display().to_string(),
        };
    }
    GuardError::io(path, err)
}

/// Checks that `fd` refers to `expected`. Where the platform cannot tell, cap-std's
/// containment is the guarantee that remains.
fn verify_fd(fd: RawFd, expected: &Path) -> Result<(), GuardError> {
    match fd_path(fd) {
        Some(actual) if actual != expected => Err(GuardError::Changed {
            path: expected.display().to_string(),
        }),
        _ => Ok(()),
    }
}

#[cfg(target_os = "linux")]
fn fd_path(fd: RawFd) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()
}

#[cfg(target_os = "macos")]
fn fd_path(fd: RawFd) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: F_GETPATH writes at most PATH_MAX bytes into `buf`, which has that size.
    let rc = unsafe { libc::fcntl(fd, libc::F_GETPATH, buf.as_mut_ptr()) };
    if rc == -1 {
        return None;
    }
    let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Some(PathBuf::from(std::ffi::OsStr::from_bytes(&buf[..len])))
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn fd_path(_fd: RawFd) -> Option<PathBuf> {
    None
}
