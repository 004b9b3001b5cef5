//! `pocketpilot doctor`: what works here and what does not (issue 14): the OS sandbox and
//! its parts, the keychain, and whether the app's own files are private.
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::ExitCode;

use pocketpilot_sandbox::SandboxStatus;

/// Prints the report; exits 1 when commands would run unsandboxed or a private dir is not.
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
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(super::EXIT_FAILED)
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
