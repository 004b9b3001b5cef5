//! Everyday work still succeeds inside the sandbox: toolchains are read-only extra paths
//! (`toolchain_read_paths`), builds write only into the workspace and the call's TMPDIR.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod common;

use common::{sh, World};
use pocketpilot_sandbox::{probe, toolchain_read_paths, SandboxPolicy};

/// The real HOME (toolchains live there) but nothing of it writable.
fn policy(w: &World) -> SandboxPolicy {
    assert!(probe().is_sandboxed(), "{}", probe().details());
    let home = std::env::var_os("HOME").expect("HOME");
    let mut env: Vec<_> = std::env::vars_os().collect();
    env.retain(|(k, _)| k != "CARGO_TARGET_DIR");
    let mut p = SandboxPolicy::new(&w.ws).base_env(env);
    p.extra_read = toolchain_read_paths(home.as_ref());
    p
}

#[tokio::test]
async fn python_venv_and_a_script() {
    let w = World::new();
    let ran = sh(
        &policy(&w),
        "python3 -m venv .venv && .venv/bin/python -c 'import sys; print(\"venv\", sys.prefix)' \
         && printf 'import tempfile\\nwith tempfile.NamedTemporaryFile() as f: print(\"tmp\", f.name)\\n' > s.py \
         && .venv/bin/python s.py",
    )
    .await;
    assert_eq!(ran.code, Some(0), "{}", ran.out);
    assert!(
        ran.out.contains(&format!("venv {}/.venv", w.ws.display())),
        "{}",
        ran.out
    );
    assert!(
        ran.out.contains("tmp /tmp/pocketpilot-call-"),
        "{}",
        ran.out
    );
}

#[tokio::test]
async fn c_compile_with_temp_files() {
    let w = World::new();
    let ran = sh(
        &policy(&w),
        "printf '#include <stdio.h>\\nint main(void){puts(\"hello from c\");return 0;}\\n' > h.c \
         && cc -save-temps=obj -o h h.c && ./h && cc -pipe -O1 -o h2 h.c && ./h2",
    )
    .await;
    assert_eq!(ran.code, Some(0), "{}", ran.out);
    assert_eq!(ran.out.matches("hello from c").count(), 2, "{}", ran.out);
}

#[tokio::test]
async fn cargo_builds_a_tiny_crate() {
    let w = World::new();
    let ran = sh(
        &policy(&w),
        "cargo --version && cargo new -q --vcs none tiny && cd tiny \
         && CARGO_TARGET_DIR=\"$PWD/target\" cargo build -q --offline && ./target/debug/tiny",
    )
    .await;
    assert_eq!(ran.code, Some(0), "{}", ran.out);
    assert!(ran.out.contains("Hello, world!"), "{}", ran.out);
}

#[tokio::test]
async fn npm_version() {
    let w = World::new();
    let ran = sh(&policy(&w), "npm --version").await;
    assert_eq!(ran.code, Some(0), "{}", ran.out);
    assert!(ran.out.trim().split('.').count() >= 3, "{}", ran.out);
}
