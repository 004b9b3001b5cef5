//! The git commit the binary is built from, as `POCKETPILOT_GIT_COMMIT` for
//! `pocketpilot --version` and the About view. A packager building outside git (a source
//! tarball) may set `POCKETPILOT_GIT_COMMIT` itself; with neither, the app says `unknown`.
use std::path::{Path, PathBuf};
use std::process::Command;

const VAR: &str = "POCKETPILOT_GIT_COMMIT";

pub fn emit() {
    println!("cargo:rerun-if-env-changed={VAR}");
    if let Some(given) = std::env::var(VAR).ok().filter(|v| !v.trim().is_empty()) {
        println!("cargo:rustc-env={VAR}={}", given.trim());
        return;
    }
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .args(args)
            .current_dir(&dir)
            .output()
            .ok()?;
        let text = String::from_utf8(out.stdout).ok()?;
        (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_owned())
    };
    let Some(commit) = git(&["rev-parse", "--short=12", "HEAD"]) else {
        return;
    };
    println!("cargo:rustc-env={VAR}={commit}");
    // Run again when HEAD moves: HEAD itself (a checkout), the branch it names (a commit)
    // and packed-refs (a gc). Only existing files: a missing one would rerun every build.
    let mut watch = vec![git(&["rev-parse", "--git-path", "HEAD"])];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch.push(git(&["rev-parse", "--git-path", &branch]));
    }
    watch.push(git(&["rev-parse", "--git-path", "packed-refs"]));
    for path in watch.into_iter().flatten() {
        let path = dir.join(Path::new(&path));
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
}
