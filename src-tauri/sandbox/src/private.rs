//! Keeping the app's own files and memory away from other processes of the same user.
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

/// Makes `dir` private: the directory and every directory below it 0700, every file 0600.
/// Symlinks are neither followed nor changed. Returns the number of entries changed.
pub fn make_private(dir: &Path) -> io::Result<usize> {
    let mut changed = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let meta = std::fs::symlink_metadata(&d)?;
        if !meta.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a directory", d.display()),
            ));
        }
        changed += set_mode(&d, &meta, 0o700)?;
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let meta = entry.file_type()?;
            if meta.is_dir() {
                stack.push(entry.path());
            } else if meta.is_file() {
                let m = std::fs::symlink_metadata(entry.path())?;
                // A file linked from elsewhere too (a model imported by a hard link) is
                // also the person's file there: its mode is theirs.
                if m.nlink() > 1 {
                    continue;
                }
                changed += set_mode(&entry.path(), &m, 0o600)?;
            }
        }
    }
    tracing::debug!(dir = %dir.display(), changed, "made private");
    Ok(changed)
}

fn set_mode(path: &Path, meta: &std::fs::Metadata, mode: u32) -> io::Result<usize> {
    if meta.permissions().mode() & 0o7777 == mode {
        return Ok(0);
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    Ok(1)
}

/// Call once at app start: marks the app non-dumpable, so processes of the same user
/// (unconfined ones included) cannot ptrace it or read its /proc/PID/mem and environ,
/// and it leaves no core dump with secrets in it.
pub fn harden_parent() -> io::Result<()> {
    // SAFETY: prctl with integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dirs_0700_files_0600_symlinks_untouched() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("data");
        std::fs::create_dir_all(d.join("sub")).unwrap();
        std::fs::write(d.join("db.sqlite"), "x").unwrap();
        std::fs::write(d.join("sub/log"), "y").unwrap();
        let outside = t.path().join("outside");
        std::fs::write(&outside, "z").unwrap();
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::os::unix::fs::symlink(&outside, d.join("link")).unwrap();
        for p in [&d, &d.join("sub")] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::set_permissions(d.join("db.sqlite"), std::fs::Permissions::from_mode(0o644))
            .unwrap();
        let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777;
        assert!(make_private(&d).unwrap() >= 4);
        assert_eq!(mode(&d), 0o700);
        assert_eq!(mode(&d.join("sub")), 0o700);
        assert_eq!(mode(&d.join("db.sqlite")), 0o600);
        assert_eq!(mode(&d.join("sub/log")), 0o600);
        assert_eq!(
            mode(&outside),
            0o644,
            "the symlink's target must not change"
        );
        assert_eq!(make_private(&d).unwrap(), 0, "second run changes nothing");
        assert!(make_private(&d.join("db.sqlite")).is_err());
    }

    #[test]
    fn a_file_hard_linked_from_elsewhere_keeps_the_persons_mode() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("data");
        std::fs::create_dir_all(d.join("models")).unwrap();
        let theirs = t.path().join("model.gguf");
        std::fs::write(&theirs, "GGUF").unwrap();
        std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::hard_link(&theirs, d.join("models/model.gguf")).unwrap();
        make_private(&d).unwrap();
        let mode = std::fs::metadata(&theirs).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o644, "the person's own file was made private");
    }
}
