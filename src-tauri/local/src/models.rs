//! The models the person keeps: `<data>/models/<name>.gguf`, each with a manifest
//! `<name>.json`; the chosen one's name in `<data>/models/default`.
//!
//! Invariants:
//! - a model is listed only when its manifest parses and names a file that exists; a
//!   download in progress (`<name>.gguf.part`) never is;
//! - a `.gguf` reaches its final name only after its checks passed (magic, header, memory
//!   fit, checksum), and its manifest is written after it (tmp + rename), so a crash leaves
//!   a part or an unlisted file, never a listed model that is not whole;
//! - removing a model deletes only what is inside `models/`: a bundled model's file, which
//!   stays where the app installed it, is never touched.
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::gguf::{self, GgufError, GgufFacts};
use crate::machine::MachineFacts;

mod pull;

/// Room a download or an import leaves free beyond the model: the store and the runs'
/// records share the disk, and a run pauses when it runs short.
const KEEP_FREE: u64 = 64 << 20;

pub use pull::PullProgress;

/// The file in `models/` naming the chosen model.
const DEFAULT_FILE: &str = "default";
const MAX_NAME_LEN: usize = 64;
const MIB: u64 = 1024 * 1024;
const GIB: u64 = 1024 * MIB;
/// What a model needs beyond its weights to run: the KV cache, compute buffers, the
/// server itself. A quarter of the weights plus a fixed floor covers the default context
/// sizes of the models people run on a laptop.
const WORKING_FLOOR: u64 = 256 * MIB;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub name: String,
    /// Absolute path of the GGUF file.
    pub file: PathBuf,
    pub size: u64,
    pub sha256: String,
    pub source: ModelSource,
    pub facts: GgufFacts,
    pub added_unix: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ModelSource {
    Imported {
        path: String,
    },
    Pulled {
        url: String,
    },
    /// Shipped with the app; the file stays where the app installed it.
    Bundled {
        path: String,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("there is no model named {0}")]
    NotFound(String),
    #[error("{0:?} is not a valid model name: use 1 to 64 of a-z, 0-9, '.', '_' and '-'")]
    InvalidName(String),
    #[error("{0:?} is not a sha256: 64 hexadecimal digits are expected")]
    InvalidSha256(String),
    #[error("{path} is not a GGUF model file")]
    NotGguf { path: String },
    #[error("cannot read the model's header: {0}")]
    Header(#[source] GgufError),
    #[error(
        "this model needs about {} of memory; this computer has {} available",
        human_bytes(memory_needed(*model_bytes)),
        human_bytes(*available)
    )]
    TooLarge { model_bytes: u64, available: u64 },
    #[error(
        "the model needs {} of disk space (and some room left for PocketPilot's own data); {} is free",
        human_bytes(*needed),
        human_bytes(*free)
    )]
    NoDiskSpace { needed: u64, free: u64 },
    #[error("the download's sha256 is {actual}, not the expected {expected}; it was removed")]
    Checksum { expected: String, actual: String },
    #[error("download failed: {0}")]
    Http(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("the download was cancelled; pulling it again resumes it")]
    Cancelled,
    #[error("a model named {0} already exists")]
    Exists(String),
    #[error("{0} is already being downloaded")]
    Busy(String),
}

impl From<GgufError> for ModelError {
    fn from(e: GgufError) -> Self {
        match e {
            GgufError::NotGguf { path } => ModelError::NotGguf {
                path: path.display().to_string(),
            },
            GgufError::Io(io) => ModelError::Io(io),
            malformed => ModelError::Header(malformed),
        }
    }
}

/// Memory a model of `model_bytes` needs to run: the weights plus a working margin.
pub fn memory_needed(model_bytes: u64) -> u64 {
    model_bytes
        .saturating_add(model_bytes / 4)
        .saturating_add(WORKING_FLOOR)
}

/// Refuses a model that, with its working margin, needs more memory than is available.
pub fn check_fits_memory(model_bytes: u64, available: u64) -> Result<(), ModelError> {
    if memory_needed(model_bytes) > available {
        return Err(ModelError::TooLarge {
            model_bytes,
            available,
        });
    }
    Ok(())
}

/// `1.5 GiB`, `300 MiB`, `12 KiB`: the units people read sizes in.
pub fn human_bytes(bytes: u64) -> String {
    // The conversion to f64 only loses precision past 2^53 bytes, far beyond display needs.
    #[allow(clippy::cast_precision_loss)]
    let b = bytes as f64;
    if bytes >= GIB {
        format!("{:.1} GiB", b / GIB as f64)
    } else if bytes >= MIB {
        format!("{:.0} MiB", b / MIB as f64)
    } else if bytes >= 1024 {
        format!("{:.0} KiB", b / 1024.0)
    } else {
        format!("{bytes} bytes")
    }
}

/// Whether `name` is a model name: 1 to 64 of `[a-z0-9._-]`, not starting with a dot (a
/// hidden file is not a model the person would find).
pub fn validate_name(name: &str) -> Result<(), ModelError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(ModelError::InvalidName(name.to_owned()))
    }
}

/// The name a file called `file_name` gets: lowercased, `.gguf` dropped, other characters
/// made `-`, cut to 64.
pub fn name_from_file(file_name: &str) -> Result<String, ModelError> {
    let lower = file_name.to_lowercase();
    let stem = lower.strip_suffix(".gguf").unwrap_or(&lower);
    let name: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    let mut name = name.trim_start_matches('.').to_owned();
    name.truncate(MAX_NAME_LEN);
    validate_name(&name).map_err(|_| ModelError::InvalidName(file_name.to_owned()))?;
    Ok(name)
}

pub struct ModelStore {
    dir: PathBuf,
    machine: MachineFacts,
}

impl ModelStore {
    /// The store in `data_dir/models`, measuring the machine (the environment overrides
    /// apply).
    pub fn new(data_dir: &Path) -> Self {
        Self::with_machine(data_dir, MachineFacts::default())
    }

    /// The store with fixed memory and disk figures where `machine` gives them.
    pub fn with_machine(data_dir: &Path, machine: MachineFacts) -> Self {
        let data_dir = std::path::absolute(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
        Self {
            dir: data_dir.join("models"),
            machine,
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Every model, sorted by name.
    pub fn list(&self) -> Result<Vec<Manifest>, ModelError> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let mut models = Vec::new();
        for entry in entries {
            let file_name = entry?.file_name();
            let Some(name) = file_name.to_str().and_then(|f| f.strip_suffix(".json")) else {
                continue;
            };
            if validate_name(name).is_err() {
                continue;
            }
            if let Some(m) = self.load(name)? {
                models.push(m);
            }
        }
        models.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(models)
    }

    pub fn get(&self, name: &str) -> Result<Manifest, ModelError> {
        validate_name(name)?;
        self.load(name)?
            .ok_or_else(|| ModelError::NotFound(name.to_owned()))
    }

    /// Adds the GGUF file at `path`: a hard link when it is on the same filesystem, else a
    /// copy (the disk must hold it). Refused when it is not GGUF or would not fit in memory.
    pub fn import(&self, path: &Path, name: Option<&str>) -> Result<Manifest, ModelError> {
        let source = std::path::absolute(path)?;
        let meta = fs::metadata(&source).map_err(|e| with_path(e, &source))?;
        if !meta.is_file() {
            return Err(ModelError::NotGguf {
                path: source.display().to_string(),
            });
        }
        let facts = gguf::read_facts(&source)?;
        check_fits_memory(meta.len(), self.machine.memory_available())?;
        let name = match name {
            Some(n) => {
                validate_name(n)?;
                n.to_owned()
            }
            None => name_from_file(
                &source
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            )?,
        };
        if self.taken(&name) {
            return Err(ModelError::Exists(name));
        }
        self.ensure_dir()?;
        let target = self.gguf_path(&name);
        let (size, sha256) = match fs::hard_link(&source, &target) {
            Ok(()) => match hash_file(&target) {
                Ok(h) => h,
                Err(e) => {
                    let _ = fs::remove_file(&target);
                    return Err(e.into());
                }
            },
            Err(e) => {
                tracing::debug!("no hard link to {} ({e}); copying", source.display());
                self.copy_in(&source, &target, meta.len())?
            }
        };
        let manifest = Manifest {
            name,
            file: target.clone(),
            size,
            sha256,
            source: ModelSource::Imported {
                path: source.display().to_string(),
            },
            facts,
            added_unix: now_unix(),
        };
        if let Err(e) = self.write_manifest(&manifest) {
            let _ = fs::remove_file(&target);
            return Err(e);
        }
        Ok(manifest)
    }

    /// Makes `name` the model the runtime uses.
    pub fn use_model(&self, name: &str) -> Result<(), ModelError> {
        self.get(name)?;
        self.ensure_dir()?;
        write_private_atomic(&self.dir.join(DEFAULT_FILE), format!("{name}\n").as_bytes())?;
        Ok(())
    }

    /// The model in use: the one `default` names when it is still there, else the first by
    /// name (the only one, when there is one); `None` when there are none.
    pub fn chosen(&self) -> Result<Option<Manifest>, ModelError> {
        if let Some(name) = self.default_name()? {
            if let Some(m) = self.load(&name)? {
                return Ok(Some(m));
            }
        }
        Ok(self.list()?.into_iter().next())
    }

    /// Removes a model: its manifest, its file when that is inside `models/`, a download in
    /// progress; and `default` when it named it.
    pub fn remove(&self, name: &str) -> Result<(), ModelError> {
        validate_name(name)?;
        let mut found = false;
        for path in [
            self.manifest_path(name),
            self.gguf_path(name),
            self.part_path(name),
        ] {
            match fs::remove_file(&path) {
                Ok(()) => found = true,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(with_path(e, &path).into()),
            }
        }
        if !found {
            return Err(ModelError::NotFound(name.to_owned()));
        }
        if self.default_name()?.as_deref() == Some(name) {
            match fs::remove_file(self.dir.join(DEFAULT_FILE)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Records the model shipped with the app, whose file stays at `path`. Calling it again
    /// for the same file is cheap (nothing is re-read); a new file under the same name (an
    /// app update) replaces the record. Memory is not checked: the app chose to ship it.
    pub fn register_bundled(&self, path: &Path, name: &str) -> Result<Manifest, ModelError> {
        validate_name(name)?;
        let file = std::path::absolute(path)?;
        let meta = fs::metadata(&file).map_err(|e| with_path(e, &file))?;
        if let Some(existing) = self.load(name)? {
            match &existing.source {
                ModelSource::Bundled { .. }
                    if existing.file == file && existing.size == meta.len() =>
                {
                    return Ok(existing);
                }
                ModelSource::Bundled { .. } => {}
                _ => return Err(ModelError::Exists(name.to_owned())),
            }
        } else if self.gguf_path(name).exists() {
            return Err(ModelError::Exists(name.to_owned()));
        }
        let facts = gguf::read_facts(&file)?;
        let (size, sha256) = hash_file(&file)?;
        let manifest = Manifest {
            name: name.to_owned(),
            file: file.clone(),
            size,
            sha256,
            source: ModelSource::Bundled {
                path: file.display().to_string(),
            },
            facts,
            added_unix: now_unix(),
        };
        self.ensure_dir()?;
        self.write_manifest(&manifest)?;
        Ok(manifest)
    }

    fn manifest_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.json"))
    }

    fn gguf_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.gguf"))
    }

    fn part_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.gguf.part"))
    }

    /// A manifest or a finished file holds the name (a download in progress does not).
    fn taken(&self, name: &str) -> bool {
        self.manifest_path(name).exists() || self.gguf_path(name).exists()
    }

    fn default_name(&self) -> Result<Option<String>, ModelError> {
        match fs::read_to_string(self.dir.join(DEFAULT_FILE)) {
            Ok(text) => {
                let name = text.trim();
                Ok(validate_name(name).ok().map(|()| name.to_owned()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The model called `name` when its manifest is sound and its file exists.
    fn load(&self, name: &str) -> Result<Option<Manifest>, ModelError> {
        let path = self.manifest_path(name);
        let text = match fs::read(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(with_path(e, &path).into()),
        };
        let mut manifest: Manifest = match serde_json::from_slice(&text) {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!("{} is not a model manifest: {e}", path.display());
                return Ok(None);
            }
        };
        if manifest.name != name {
            tracing::warn!("{} names another model", path.display());
            return Ok(None);
        }
        if !manifest.file.is_file() {
            // The data folder may have moved since: a file kept in models/ is found there.
            let local = self.gguf_path(name);
            if matches!(manifest.source, ModelSource::Bundled { .. }) || !local.is_file() {
                tracing::warn!("{}: {} is gone", path.display(), manifest.file.display());
                return Ok(None);
            }
            manifest.file = local;
        }
        Ok(Some(manifest))
    }

    fn ensure_dir(&self) -> std::io::Result<()> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
    }

    fn write_manifest(&self, manifest: &Manifest) -> Result<(), ModelError> {
        let text = serde_json::to_vec_pretty(manifest)
            .map_err(|e| ModelError::Io(std::io::Error::other(e)))?;
        write_private_atomic(&self.manifest_path(&manifest.name), &text)?;
        Ok(())
    }

    /// Copies `source` to `target` through a `.part`, hashing on the way.
    fn copy_in(
        &self,
        source: &Path,
        target: &Path,
        size: u64,
    ) -> Result<(u64, String), ModelError> {
        let free = self.machine.disk_free(&self.dir)?;
        if size.saturating_add(KEEP_FREE) > free {
            return Err(ModelError::NoDiskSpace { needed: size, free });
        }
        let part = part_of(target);
        let copied = (|| -> std::io::Result<(u64, String)> {
            let mut from = File::open(source)?;
            let mut to = private_file(&part, true)?;
            let mut hasher = Sha256::new();
            let mut buf = vec![0u8; 1024 * 1024];
            let mut total = 0u64;
            loop {
                let n = from.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                let chunk = buf.get(..n).unwrap_or_default();
                hasher.update(chunk);
                to.write_all(chunk)?;
                total += n as u64;
            }
            to.sync_all()?;
            fs::rename(&part, target)?;
            Ok((total, hex::encode(hasher.finalize())))
        })();
        if copied.is_err() {
            let _ = fs::remove_file(&part);
        }
        Ok(copied?)
    }
}

fn part_of(target: &Path) -> PathBuf {
    let mut s = target.as_os_str().to_owned();
    s.push(".part");
    PathBuf::from(s)
}

/// Opens `path` for writing, created 0600; `truncate` empties it.
fn private_file(path: &Path, truncate: bool) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(truncate)
        .mode(0o600)
        .open(path)
}

fn write_private_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let written = (|| {
        let mut f = private_file(&tmp, true)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// Size and sha256 of a file, read once.
fn hash_file(path: &Path) -> std::io::Result<(u64, String)> {
    let mut f = File::open(path)?;
    let mut hasher = Sha256::new();
    let size = std::io::copy(&mut f, &mut hasher)?;
    Ok((size, hex::encode(hasher.finalize())))
}

fn with_path(e: std::io::Error, path: &Path) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .and_then(|d| i64::try_from(d.as_secs()).ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(
            name_from_file("SmolLM2-135M-Instruct.Q4_1.gguf").unwrap(),
            "smollm2-135m-instruct.q4_1"
        );
        assert_eq!(
            name_from_file("My Model (v2).GGUF").unwrap(),
            "my-model--v2-"
        );
        assert_eq!(name_from_file(&"a".repeat(80)).unwrap().len(), 64);
        assert!(name_from_file(".gguf").is_err());
        assert!(validate_name("ok-1.2_x").is_ok());
        for bad in ["", "Up", "a/b", "..", ".hidden", &"a".repeat(65)] {
            assert!(validate_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn memory_margin() {
        let gib = 1024 * 1024 * 1024;
        assert!(check_fits_memory(gib, 2 * gib).is_ok());
        // 3 GiB + a quarter + 256 MiB.
        let err = check_fits_memory(3 * gib, 2 * gib).unwrap_err();
        assert_eq!(
            err.to_string(),
            "this model needs about 4.0 GiB of memory; this computer has 2.0 GiB available"
        );
    }
}
