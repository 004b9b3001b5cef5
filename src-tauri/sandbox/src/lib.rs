//! OS-level confinement of the processes PocketPilot starts for an approved call
//! (`run_command`) and of MCP stdio servers.
//!
//! Approval means "run this", not "run this with all of my rights". [`confine`] prepares a
//! `tokio::process::Command` so that, between `fork` and `exec`, the child
//! - is limited by Landlock to writing inside the workspace and a private temp dir, and to
//!   reading system directories, the workspace and the caller's extra paths;
//! - has no network unless the call holds the network grant (seccomp denies every
//!   `socket()` but TCP/UDP, or all of them without the grant; Landlock denies TCP
//!   connect/bind as a second layer) and never opens unix sockets leading out;
//! - cannot ptrace or signal anything outside its own tree (Landlock scoping + seccomp);
//! - sees all git metadata of the workspace (every repository's config, hooks, info,
//!   `commondir`, `.git` files) and the workspace's `.pocketpilot/` read-only where user
//!   namespaces allow a private mount namespace; after the call, what changed anyway is
//!   put back and new repositories lose config keys that run programs;
//! - runs below a small supervisor process that is a child subreaper, so every
//!   descendant — `setsid -f`, double forks — is killed when the call ends, is cancelled,
//!   or the app itself dies.
//!
//! [`probe`] tells what this kernel allows; [`SandboxStatus::line`] is what the UI shows.
//! `POCKETPILOT_SANDBOX=off` forces the degraded path: `Mode::Enforce` then refuses to
//! spawn, and only an explicit `Mode::Off` policy runs unconfined.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod bpf;
mod child;
mod confine;
mod env;
mod gitconfig;
mod gitfind;
mod gitsnap;
mod hints;
mod policy;
mod private;
mod probe;

pub use confine::{confine, CallGuard};
pub use env::{is_secret_name, is_secret_value, looks_secret_name, scrub_env};
pub use gitsnap::{RestoreAction, RestoreReason, Restored};
pub use hints::blocked_hints;
pub use policy::{toolchain_read_paths, Mode, SandboxPolicy, SYSTEM_READ_ROOTS};
pub use private::{harden_parent, make_private};
pub use probe::{probe, GitMetadata, SandboxStatus, SWITCH_VAR};

use std::path::PathBuf;

/// The workspace folder no command may write (policy lives in the store, never here).
pub const PROTECTED_DIR: &str = ".pocketpilot";

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// Confinement was asked for (`Mode::Enforce`) and cannot be applied here.
    #[error("the sandbox is unavailable: {reason}; the command was not started (choose \"no sandbox\" explicitly to run it unconfined)")]
    Unavailable { reason: String },
    /// A path that must stay unreachable lies inside a directory the command may use.
    #[error("cannot sandbox: {deny} must stay unreachable but lies inside {root}, which the command may access; pick a workspace that does not contain it")]
    DenyInsideAllowed { deny: PathBuf, root: PathBuf },
    #[error("the workspace {path} cannot be used: {source}")]
    Workspace {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("building the Landlock ruleset failed: {0}")]
    Landlock(String),
    #[error("{what}: {source}")]
    Io {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
}
