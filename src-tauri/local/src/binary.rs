//! Where `llama-server` is, and whether it runs.
//!
//! The places are tried in a fixed order, first match wins:
//! 1. next to the app's own executable, as `pocketpilot-llama-server` (the packages install
//!    it there as a sidecar), so an installed app never depends on the environment;
//! 2. the path in `POCKETPILOT_LLAMA_SERVER`, for a build of one's own;
//! 3. where `scripts/setup-model-server.sh` builds it, under
//!    `${POCKETPILOT_PEERS:-$HOME/.cache/pocketpilot-peers}`, for a development checkout.
//!
//! A place counts only when it holds an executable regular file: a stale variable or a
//! half-installed package falls through to the next place instead of failing a start later.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Serialize;

use crate::server::ServerError;

/// The sidecar's file name next to the app's executable.
pub const SIDECAR_NAME: &str = "pocketpilot-llama-server";
/// The variable naming a server binary of one's own.
pub const ENV_VAR: &str = "POCKETPILOT_LLAMA_SERVER";
/// The variable naming the cache `scripts/setup-model-server.sh` builds into.
pub const PEERS_ENV_VAR: &str = "POCKETPILOT_PEERS";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BinaryOrigin {
    NextToApp,
    Environment,
    SetupScript,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerBinary {
    pub path: PathBuf,
    pub origin: BinaryOrigin,
}

/// The setup script's cache: `POCKETPILOT_PEERS`, else `$HOME/.cache/pocketpilot-peers`.
pub fn peers_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(PEERS_ENV_VAR).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
    home.join(".cache/pocketpilot-peers")
}

/// Where the setup script leaves the server inside `peers`.
pub fn setup_script_path(peers: &Path) -> PathBuf {
    peers.join("llama.cpp/build-portable/bin/llama-server")
}

/// Finds the server binary for this process (its executable's directory, its environment).
pub fn find() -> Option<ServerBinary> {
    let exe_dir = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf));
    let env = std::env::var_os(ENV_VAR);
    find_in(exe_dir.as_deref(), env.as_deref(), &peers_dir())
}

/// [`find`] with its inputs given, so the order can be tested.
pub fn find_in(exe_dir: Option<&Path>, env: Option<&OsStr>, peers: &Path) -> Option<ServerBinary> {
    let candidates = [
        exe_dir.map(|dir| (dir.join(SIDECAR_NAME), BinaryOrigin::NextToApp)),
        env.filter(|value| !value.is_empty())
            .map(|value| (PathBuf::from(value), BinaryOrigin::Environment)),
        Some((setup_script_path(peers), BinaryOrigin::SetupScript)),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|(path, _)| is_executable_file(path))
        .map(|(path, origin)| ServerBinary { path, origin })
}

fn is_executable_file(path: &Path) -> bool {
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// Runs `bin --version` and returns its version line, so `doctor` can tell a binary that
/// runs on this CPU from one that does not (a build for newer instructions dies with
/// SIGILL, which the error names).
pub fn version(bin: &Path) -> Result<String, ServerError> {
    let output = Command::new(bin)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|source| ServerError::Spawn {
            binary: bin.to_path_buf(),
            source,
        })?;
    // llama.cpp prints its version on stderr; other builds may use stdout.
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if !output.status.success() {
        return Err(ServerError::VersionFailed {
            binary: bin.to_path_buf(),
            reason: crate::server::describe_exit(output.status),
            signal: output.status.signal(),
            output: lines
                .iter()
                .rev()
                .take(20)
                .rev()
                .map(|l| l.to_string())
                .collect(),
        });
    }
    let line = lines
        .iter()
        .find(|l| l.starts_with("version"))
        .or_else(|| lines.first())
        .map(|l| l.to_string());
    line.ok_or_else(|| ServerError::VersionFailed {
        binary: bin.to_path_buf(),
        reason: "it printed no version".to_string(),
        signal: None,
        output: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn executable(path: &Path) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, "#!/bin/sh\necho 'version: 42 (test)' >&2\n").unwrap();
        fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
    }

    struct Layout {
        _root: tempfile::TempDir,
        app: PathBuf,
        env: PathBuf,
        peers: PathBuf,
    }

    fn layout() -> Layout {
        let root = tempfile::tempdir().unwrap();
        let app = root.path().join("app");
        let env = root.path().join("own/llama-server");
        let peers = root.path().join("peers");
        fs::create_dir_all(&app).unwrap();
        fs::create_dir_all(&peers).unwrap();
        Layout {
            _root: root,
            app,
            env,
            peers,
        }
    }

    #[test]
    fn next_to_app_wins_over_environment_and_setup_script() {
        let l = layout();
        executable(&l.app.join(SIDECAR_NAME));
        executable(&l.env);
        executable(&setup_script_path(&l.peers));
        let found = find_in(Some(&l.app), Some(l.env.as_os_str()), &l.peers).unwrap();
        assert_eq!(found.origin, BinaryOrigin::NextToApp);
        assert_eq!(found.path, l.app.join(SIDECAR_NAME));
    }

    #[test]
    fn environment_wins_over_setup_script() {
        let l = layout();
        executable(&l.env);
        executable(&setup_script_path(&l.peers));
        let found = find_in(Some(&l.app), Some(l.env.as_os_str()), &l.peers).unwrap();
        assert_eq!(found.origin, BinaryOrigin::Environment);
        assert_eq!(found.path, l.env);
    }

    #[test]
    fn setup_script_build_is_the_last_resort() {
        let l = layout();
        executable(&setup_script_path(&l.peers));
        let found = find_in(Some(&l.app), None, &l.peers).unwrap();
        assert_eq!(found.origin, BinaryOrigin::SetupScript);
        assert_eq!(found.path, setup_script_path(&l.peers));
        let empty = OsStr::new("");
        let found = find_in(None, Some(empty), &l.peers).unwrap();
        assert_eq!(found.origin, BinaryOrigin::SetupScript);
    }

    #[test]
    fn missing_or_non_executable_places_fall_through() {
        let l = layout();
        // Not executable: a half-installed sidecar.
        fs::write(l.app.join(SIDECAR_NAME), "").unwrap();
        // A directory is not a binary.
        fs::create_dir_all(&l.env).unwrap();
        assert_eq!(
            find_in(Some(&l.app), Some(l.env.as_os_str()), &l.peers),
            None
        );
        executable(&setup_script_path(&l.peers));
        let found = find_in(Some(&l.app), Some(l.env.as_os_str()), &l.peers).unwrap();
        assert_eq!(found.origin, BinaryOrigin::SetupScript);
    }

    #[test]
    fn origin_serializes_in_snake_case() {
        assert_eq!(
            serde_json::to_string(&BinaryOrigin::NextToApp).unwrap(),
            "\"next_to_app\""
        );
        assert_eq!(
            serde_json::to_string(&BinaryOrigin::SetupScript).unwrap(),
            "\"setup_script\""
        );
    }

    /// A script just written may still be open for writing in a child forked meanwhile by
    /// another test thread (until that child execs); exec then fails with ETXTBSY.
    fn version_of_fresh_script(bin: &Path) -> Result<String, ServerError> {
        loop {
            match version(bin) {
                Err(ServerError::Spawn { source, .. })
                    if source.raw_os_error() == Some(libc::ETXTBSY) =>
                {
                    std::thread::yield_now();
                }
                other => return other,
            }
        }
    }

    #[test]
    fn version_reads_the_version_line() {
        let l = layout();
        let bin = l.app.join("fake-server");
        executable(&bin);
        assert_eq!(version_of_fresh_script(&bin).unwrap(), "version: 42 (test)");
    }

    #[test]
    fn version_names_the_signal_of_a_binary_that_dies() {
        let l = layout();
        let bin = l.app.join("dies");
        fs::write(&bin, "#!/bin/sh\nulimit -c 0\nkill -ILL $$\n").unwrap();
        fs::set_permissions(&bin, fs::Permissions::from_mode(0o755)).unwrap();
        match version_of_fresh_script(&bin) {
            Err(ServerError::VersionFailed { reason, signal, .. }) => {
                assert_eq!(signal, Some(libc::SIGILL));
                assert!(reason.contains("SIGILL"), "{reason}");
            }
            other => panic!("expected a failure, got {other:?}"),
        }
    }

    #[test]
    fn version_of_a_missing_binary_is_a_spawn_error() {
        let l = layout();
        assert!(matches!(
            version(&l.app.join("absent")),
            Err(ServerError::Spawn { .. })
        ));
    }
}
