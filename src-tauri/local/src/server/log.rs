//! The server's log: stdout and stderr of every start, appended to one file in a directory
//! only the person can read (prompts may appear in it).

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

pub(crate) const LOG_FILE: &str = "llama-server.log";
/// How much of the log's end is read for its last lines: the lines are short, and a
/// crash's cause is among the last of them.
const TAIL_BYTES: u64 = 64 * 1024;

pub(crate) fn path(log_dir: &Path) -> PathBuf {
    log_dir.join(LOG_FILE)
}

/// Opens the log for appending, creating its directory (0700) and the file (0600).
pub(crate) fn open(log_dir: &Path) -> std::io::Result<File> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(log_dir)?;
    // An existing directory keeps its mode from `create`; tighten it.
    fs::set_permissions(log_dir, fs::Permissions::from_mode(0o700))?;
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path(log_dir))?;
    file.set_permissions(fs::Permissions::from_mode(0o600))?;
    Ok(file)
}

/// Writes one line of the supervisor's own into the log (a start, a crash), so the log
/// reads as a history of the server's lives.
pub(crate) fn note(log_dir: &Path, line: &str) {
    if let Ok(mut file) = OpenOptions::new().append(true).open(path(log_dir)) {
        let at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let _ = writeln!(file, "[pocketpilot {at}] {line}");
    }
}

/// The last `n` lines of the log (fewer when it is shorter or missing).
pub(crate) fn tail(log_dir: &Path, n: usize) -> Vec<String> {
    let Ok(mut file) = File::open(path(log_dir)) else {
        return Vec::new();
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let start = len.saturating_sub(TAIL_BYTES);
    if file.seek(SeekFrom::Start(start)).is_err() {
        return Vec::new();
    }
    let mut bytes = Vec::new();
    if file.read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<&str> = text.lines().collect();
    // A read that starts mid-file starts mid-line.
    if start > 0 && !lines.is_empty() {
        lines.remove(0);
    }
    let lines: Vec<String> = lines
        .into_iter()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    lines[lines.len().saturating_sub(n)..].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_directory_is_private_and_tail_keeps_the_last_lines() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("logs");
        let mut file = open(&dir).unwrap();
        let mode = fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        for i in 0..30 {
            writeln!(file, "line {i}").unwrap();
        }
        note(&dir, "stopped");
        let tail = tail(&dir, 20);
        assert_eq!(tail.len(), 20);
        assert_eq!(tail[0], "line 11");
        assert!(tail[19].ends_with("] stopped"), "{:?}", tail[19]);
        assert!(super::tail(&root.path().join("none"), 20).is_empty());
    }
}
