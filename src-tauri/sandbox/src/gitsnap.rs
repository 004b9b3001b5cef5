//! Where no private mount namespace can make `.git/hooks` and `.git/config` read-only
//! (Ubuntu 24.04), they are copied before the call and put back after it.
//!
//! The danger of a changed hook or config is not the call itself — inside it, a hook
//! runs sandboxed like everything else — but the next `git commit` the person runs
//! unconfined. Putting them back when the call ends closes that. The restore runs in
//! the app (unconfined), so it never writes through a symlink: a replaced entry is
//! removed first, and a `.git` or `hooks` that became a symlink is not written into.
use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

#[derive(Debug)]
struct Saved {
    bytes: Vec<u8>,
    mode: u32,
}

#[derive(Debug)]
pub(crate) struct GitSnapshot {
    git: PathBuf,
    config: Option<Saved>,
    /// `None`: there was no real hooks directory.
    hooks: Option<Vec<(OsString, Saved)>>,
}

fn save(path: &Path) -> Option<Saved> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    Some(Saved {
        bytes: std::fs::read(path).ok()?,
        mode: meta.permissions().mode() & 0o7777,
    })
}

fn is_real_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

fn remove_any(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Writes `saved` at `path` unless it is already exactly that, as a new regular file
/// (whatever stood there — symlink, dir, other file — removed first). True if changed.
fn put_back(path: &Path, saved: &Saved) -> std::io::Result<bool> {
    if let Some(now) = save(path) {
        if now.bytes == saved.bytes && now.mode == saved.mode {
            return Ok(false);
        }
    }
    remove_any(path)?;
    std::fs::write(path, &saved.bytes)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(saved.mode))?;
    Ok(true)
}

impl GitSnapshot {
    pub(crate) fn take(workspace: &Path) -> Self {
        let git = workspace.join(".git");
        let hooks_dir = git.join("hooks");
        let hooks = is_real_dir(&hooks_dir).then(|| {
            std::fs::read_dir(&hooks_dir)
                .map(|entries| {
                    entries
                        .flatten()
                        .filter_map(|e| save(&e.path()).map(|s| (e.file_name(), s)))
                        .collect()
                })
                .unwrap_or_default()
        });
        Self {
            config: save(&git.join("config")),
            hooks,
            git,
        }
    }

    /// Puts everything back; returns the paths that had changed (or could not be fixed).
    pub(crate) fn restore(self) -> Vec<PathBuf> {
        let mut changed = Vec::new();
        if !is_real_dir(&self.git) {
            // Gone or replaced by a symlink: writing into it could land anywhere.
            tracing::warn!(git = %self.git.display(), "`.git` was replaced; not restoring into it");
            changed.push(self.git);
            return changed;
        }
        if let Some(config) = &self.config {
            let path = self.git.join("config");
            match put_back(&path, config) {
                Ok(false) => {}
                Ok(true) => changed.push(path),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "cannot restore");
                    changed.push(path);
                }
            }
        }
        if let Some(hooks) = &self.hooks {
            let dir = self.git.join("hooks");
            if !is_real_dir(&dir) {
                if remove_any(&dir)
                    .and_then(|_| std::fs::create_dir(&dir))
                    .is_err()
                {
                    changed.push(dir);
                    return changed;
                }
                changed.push(dir.clone());
            }
            if let Ok(entries) = std::fs::read_dir(&dir) {
                for entry in entries.flatten() {
                    let name = entry.file_name();
                    if !hooks.iter().any(|(n, _)| *n == name) {
                        let path = entry.path();
                        if remove_any(&path).is_ok() {
                            changed.push(path);
                        }
                    }
                }
            }
            for (name, saved) in hooks {
                let path = dir.join(name);
                match put_back(&path, saved) {
                    Ok(false) => {}
                    Ok(true) => changed.push(path),
                    Err(e) => {
                        tracing::warn!(path = %path.display(), error = %e, "cannot restore");
                        changed.push(path);
                    }
                }
            }
        }
        changed
    }
}
