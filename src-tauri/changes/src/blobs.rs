//! Content-addressed blobs in the data dir: `<root>/ab/cdef…` named by the SHA-256 of
//! their bytes. A blob is written to `<root>/tmp/` and renamed into place, so a reader
//! never sees half of one; an existing blob is never rewritten.
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

use crate::{ChangesError, Result};

/// Files up to this size are hashed in memory first, so content already kept is never
/// written again; larger ones stream through a temporary file.
const IN_MEMORY: u64 = 1 << 20;

#[derive(Debug)]
pub struct BlobStore {
    root: PathBuf,
    seq: AtomicU64,
}

impl BlobStore {
    /// The store under `root` (created, private).
    pub fn open(root: impl Into<PathBuf>) -> Result<Self> {
        let root = root.into();
        let tmp = root.join("tmp");
        fs::create_dir_all(&tmp).map_err(|e| ChangesError::io(&tmp, e))?;
        Ok(Self {
            root,
            seq: AtomicU64::new(0),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the blob `hash` lives; a name that is not 64 hex digits is refused (it could
    /// come from a tampered journal).
    pub fn path_of(&self, hash: &str) -> Result<PathBuf> {
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(ChangesError::Refused {
                path: hash.to_owned(),
                what: "not a blob name".into(),
            });
        }
        Ok(self.root.join(&hash[..2]).join(&hash[2..]))
    }

    pub fn contains(&self, hash: &str) -> bool {
        self.path_of(hash).map(|p| p.is_file()).unwrap_or(false)
    }

    /// Keeps `bytes`; returns their hash.
    pub fn put_bytes(&self, bytes: &[u8]) -> Result<String> {
        let hash = hex::encode(Sha256::digest(bytes));
        let dest = self.path_of(&hash)?;
        if dest.exists() {
            freshen(&dest);
        } else {
            let tmp = self.temp_path();
            write_new(&tmp, bytes)?;
            self.settle(&tmp, &dest)?;
        }
        Ok(hash)
    }

    /// Keeps the content of the regular file at `path` (never following a symlink);
    /// returns its hash and size.
    pub fn put_file(&self, path: &Path) -> Result<(String, u64)> {
        let mut file = OpenOptions::new()
            .read(true)
            .custom_flags(libc_nofollow())
            .open(path)
            .map_err(|e| ChangesError::io(path, e))?;
        let len = file
            .metadata()
            .map_err(|e| ChangesError::io(path, e))?
            .len();
        if len <= IN_MEMORY {
            let mut bytes = Vec::with_capacity(len as usize);
            file.read_to_end(&mut bytes)
                .map_err(|e| ChangesError::io(path, e))?;
            let size = bytes.len() as u64;
            return Ok((self.put_bytes(&bytes)?, size));
        }
        let tmp = self.temp_path();
        let mut out = create_new(&tmp)?;
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 256 * 1024];
        let mut size = 0u64;
        loop {
            let n = file.read(&mut buf).map_err(|e| ChangesError::io(path, e))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            out.write_all(&buf[..n])
                .map_err(|e| ChangesError::io(&tmp, e))?;
            size += n as u64;
        }
        drop(out);
        let hash = hex::encode(hasher.finalize());
        let dest = self.path_of(&hash)?;
        if dest.exists() {
            let _ = fs::remove_file(&tmp);
            freshen(&dest);
        } else {
            self.settle(&tmp, &dest)?;
        }
        Ok((hash, size))
    }

    /// The hash of a file's content without keeping it.
    pub fn hash_file(path: &Path) -> Result<String> {
        let mut file = OpenOptions::new()
            .read(true)
            .custom_flags(libc_nofollow())
            .open(path)
            .map_err(|e| ChangesError::io(path, e))?;
        let mut hasher = Sha256::new();
        std::io::copy(&mut file, &mut hasher).map_err(|e| ChangesError::io(path, e))?;
        Ok(hex::encode(hasher.finalize()))
    }

    /// The blob's bytes, verified against its name.
    pub fn read(&self, hash: &str) -> Result<Vec<u8>> {
        let path = self.path_of(hash)?;
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(ChangesError::MissingBlob {
                    hash: hash.to_owned(),
                })
            }
            Err(e) => return Err(ChangesError::io(path, e)),
        };
        if hex::encode(Sha256::digest(&bytes)) != hash {
            return Err(ChangesError::CorruptBlob {
                hash: hash.to_owned(),
            });
        }
        Ok(bytes)
    }

    /// Every blob kept, with its size on disk and when it was last kept (for retention).
    pub fn list(&self) -> Result<Vec<(String, u64, std::time::SystemTime)>> {
        let mut out = Vec::new();
        let top = fs::read_dir(&self.root).map_err(|e| ChangesError::io(&self.root, e))?;
        for dir in top.flatten() {
            let prefix = dir.file_name().to_string_lossy().into_owned();
            if prefix.len() != 2 {
                continue;
            }
            let Ok(inner) = fs::read_dir(dir.path()) else {
                continue;
            };
            for blob in inner.flatten() {
                let Ok(meta) = blob.metadata() else { continue };
                let at = meta.modified().unwrap_or(std::time::SystemTime::UNIX_EPOCH);
                let name = format!("{prefix}{}", blob.file_name().to_string_lossy());
                out.push((name, meta.len(), at));
            }
        }
        Ok(out)
    }

    pub fn remove(&self, hash: &str) -> Result<()> {
        let path = self.path_of(hash)?;
        match fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(ChangesError::io(path, e)),
        }
    }

    fn temp_path(&self) -> PathBuf {
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        self.root
            .join("tmp")
            .join(format!("{}-{n}", std::process::id()))
    }

    fn settle(&self, tmp: &Path, dest: &Path) -> Result<()> {
        if let Some(parent) = dest.parent() {
            fs::create_dir_all(parent).map_err(|e| ChangesError::io(parent, e))?;
        }
        fs::rename(tmp, dest).map_err(|e| ChangesError::io(dest, e))
    }
}

/// A path that became a symlink since it was listed is refused, not read through.
/// A blob kept again is marked as just kept, so retention (which spares recent blobs a
/// snapshot in progress may not have committed yet) does not take it.
fn freshen(path: &Path) {
    if let Ok(f) = File::options().write(true).open(path) {
        let _ = f.set_modified(std::time::SystemTime::now());
    }
}

fn libc_nofollow() -> i32 {
    libc::O_NOFOLLOW
}

fn create_new(path: &Path) -> Result<File> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| ChangesError::io(path, e))
}

fn write_new(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = create_new(path)?;
    f.write_all(bytes).map_err(|e| ChangesError::io(path, e))
}
