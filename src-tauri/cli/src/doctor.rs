//! `pocketpilot doctor`: what works here and what does not (issue 14): the OS sandbox and
//! its parts, the keychain, whether the app's own files are private, and the store (whole,
//! damaged, from a newer build; its backups, and the command that puts one back).
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::ExitCode;

use pocketpilot_sandbox::SandboxStatus;

/// Prints the report; exits 1 when commands would run unsandboxed or a private dir is not,
/// and 12 (`EXIT_STORE`) when the store cannot be used.
pub fn doctor(data_dir: &Path, out: &mut dyn Write) -> ExitCode {
    let status = pocketpilot_sandbox::probe();
    let mut ok = status.is_sandboxed();
    let _ = writeln!(out, "{}", status.line(false));
    let _ = writeln!(out, "  {}", status.details());
    if let SandboxStatus::Sandboxed {
        abi,
        network_blocking,
        landlock_tcp,
        scoped,
        git_metadata,
        ..
    } = &status
    {
        let yes = |b: bool| if b { "works" } else { "NOT available" };
        let _ = writeln!(out, "  landlock ABI: {abi}");
        let _ = writeln!(out, "  seccomp: {}", yes(*network_blocking));
        let _ = writeln!(
            out,
            "  landlock TCP rules (ABI >= 4): {}",
            yes(*landlock_tcp)
        );
        let _ = writeln!(
            out,
            "  unix socket / signal scoping (ABI >= 6): {}",
            yes(*scoped)
        );
        let _ = writeln!(
            out,
            "  user namespaces: {}",
            yes(*git_metadata == pocketpilot_sandbox::GitMetadata::ReadOnly)
        );
    }
    let _ = writeln!(
        out,
        "  switch: {}=off runs commands NOT sandboxed (each one then asks)",
        pocketpilot_sandbox::SWITCH_VAR
    );
    let _ = writeln!(
        out,
        "keychain: {}",
        pocketpilot_core::about::keychain_status()
    );
    for line in pocketpilot_core::engine::local_model::doctor_lines(data_dir) {
        let _ = writeln!(out, "{line}");
    }
    for dir in pocketpilot_core::policy::confinement::private_dirs(data_dir) {
        match private_problems(&dir) {
            Ok(problems) if problems.is_empty() => {
                let _ = writeln!(out, "private: {} (0700, files 0600)", dir.display());
            }
            Ok(problems) => {
                ok = false;
                let _ = writeln!(
                    out,
                    "NOT private: {}: {}",
                    dir.display(),
                    problems.join(", ")
                );
            }
            Err(_) => {
                let _ = writeln!(out, "absent: {}", dir.display());
            }
        }
    }
    // Last: what it says of the store ends the report, where the command to run stands out.
    if !store(data_dir, out) {
        ExitCode::from(super::EXIT_STORE)
    } else if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(super::EXIT_FAILED)
    }
}

/// The store's state, found without writing to it, and its backups; false when it cannot
/// be used.
fn store(data_dir: &Path, out: &mut dyn Write) -> bool {
    use pocketpilot_core::api::data::{self, StoreState};
    let backups = data::backups_in(data_dir).unwrap_or_default();
    let newest = backups.first().map_or("none yet".to_owned(), |b| {
        format!("{} ({})", b.name, b.taken_at)
    });
    let restore_line = |out: &mut dyn Write, b: &pocketpilot_store::backup::BackupFile| {
        let _ = writeln!(
            out,
            "  to put back {} (schema {}, {}); the current store is kept:\n    pocketpilot backup restore {}",
            b.name, b.schema_version, b.taken_at, b.name
        );
    };
    match data::store_state(data_dir) {
        Ok(StoreState::Absent) => {
            let _ = writeln!(
                out,
                "store: none yet ({})",
                data::store_path(data_dir).display()
            );
            true
        }
        Ok(StoreState::Good { schema_version }) => {
            let _ = writeln!(
                out,
                "store: whole (schema {schema_version}, quick_check ok); {} backup(s), newest: {newest}",
                backups.len()
            );
            true
        }
        Ok(StoreState::Newer {
            found,
            supported,
            backup,
        }) => {
            let _ = writeln!(
                out,
                "store: written by a newer PocketPilot (schema {found}; this build knows up to {supported}); left as it is. Update PocketPilot"
            );
            if let Some(b) = &backup {
                restore_line(out, b);
            }
            false
        }
        Ok(StoreState::Damaged { detail, backup }) => {
            let _ = writeln!(
                out,
                "store: DAMAGED, nothing is written to it: {}",
                crate::escape::shown(&detail)
            );
            match &backup {
                Some(b) => restore_line(out, b),
                None => {
                    let _ = writeln!(out, "  there is no backup to put back");
                }
            }
            false
        }
        Err(e) => {
            let _ = writeln!(out, "store: cannot be checked: {e}");
            false
        }
    }
}

/// Entries of `dir` readable or writable by others (the group included).
fn private_problems(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut problems = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let meta = std::fs::symlink_metadata(&d)?;
        if meta.permissions().mode() & 0o077 != 0 {
            problems.push(format!(
                "{} is {:o}",
                d.display(),
                meta.permissions().mode() & 0o777
            ));
        }
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let m = std::fs::symlink_metadata(entry.path())?;
            if m.is_dir() {
                stack.push(entry.path());
            } else if m.is_file() && m.nlink() == 1 && m.permissions().mode() & 0o077 != 0 {
                // (A file linked from elsewhere too, an imported model, keeps the person's mode.)
                problems.push(format!(
                    "{} is {:o}",
                    entry.path().display(),
                    m.permissions().mode() & 0o777
                ));
            }
        }
    }
    Ok(problems)
}
