//! What a confined command may reach.
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Whether to confine at all. `Off` is an explicit choice of the person ("no sandbox"),
/// shown in red by the UI; it is never taken silently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    #[default]
    Enforce,
    /// No Landlock, no seccomp. The environment is still scrubbed and the process tree is
    /// still killed at the end of the call: those protect the person, not the kernel.
    Off,
}

/// Directories every command may read and execute from (when they exist).
pub const SYSTEM_READ_ROOTS: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/proc",
    "/sys",
    // /etc/resolv.conf points here on systemd-resolved systems; DNS needs it with network.
    "/run/systemd/resolve",
];

/// Device files every command may read and write. No terminal: `/dev/tty`, `/dev/pts/*`
/// and `/dev/ptmx` would reach the person's terminal (type into it, draw on it), and
/// Landlock cannot tell the person's pseudo-terminals from one the command opens.
pub(crate) const DEVICE_FILES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// `/etc` is granted entry by entry, without these: password hashes and who may become
/// root. (Landlock cannot take a file away from a granted tree.)
pub(crate) fn etc_hidden(name: &str) -> bool {
    matches!(name, "shadow" | "shadow-" | "gshadow" | "gshadow-")
        || name.starts_with("sudoers")
        || name.starts_with(".pwd.lock")
}

#[derive(Debug, Clone, Default)]
pub struct SandboxPolicy {
    /// The only tree the command may write (besides its private temp dir).
    pub workspace: PathBuf,
    /// Extra trees it may read and execute from (toolchains, a server's install dir).
    pub extra_read: Vec<PathBuf>,
    /// Extra trees it may also write (a widening the person granted).
    pub extra_write: Vec<PathBuf>,
    /// Paths that must stay unreachable (the app's data and config dirs). One that lies
    /// inside a readable or writable root makes [`crate::confine`] refuse: Landlock
    /// cannot take a subtree away from a granted tree.
    pub deny: Vec<PathBuf>,
    /// The call holds the network grant: TCP and UDP allowed.
    pub network: bool,
    pub mode: Mode,
    /// Names of variables kept even though they look secret.
    pub env_pass: Vec<String>,
    /// The environment to start from; `None` = this process's.
    pub base_env: Option<Vec<(OsString, OsString)>>,
}

impl SandboxPolicy {
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        Self {
            workspace: workspace.into(),
            ..Self::default()
        }
    }

    pub fn network(mut self, granted: bool) -> Self {
        self.network = granted;
        self
    }

    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    pub fn read(mut self, path: impl Into<PathBuf>) -> Self {
        self.extra_read.push(path.into());
        self
    }

    pub fn write(mut self, path: impl Into<PathBuf>) -> Self {
        self.extra_write.push(path.into());
        self
    }

    pub fn deny(mut self, path: impl Into<PathBuf>) -> Self {
        self.deny.push(path.into());
        self
    }

    pub fn pass_env(mut self, name: impl Into<String>) -> Self {
        self.env_pass.push(name.into());
        self
    }

    pub fn base_env(mut self, env: Vec<(OsString, OsString)>) -> Self {
        self.base_env = Some(env);
        self
    }

    /// Every root the command may write, as given (not canonical).
    pub(crate) fn write_roots(&self) -> impl Iterator<Item = &Path> {
        std::iter::once(self.workspace.as_path())
            .chain(self.extra_write.iter().map(|p| p.as_path()))
    }
}

/// Toolchain directories under `home` that commands commonly need to read (compilers,
/// interpreters, package caches), read-only, when they exist. `~/.cargo` is granted piece
/// by piece so `credentials.toml` (a registry token) stays out. Git's per-user config is
/// included: git refuses to run when it cannot read it.
pub fn toolchain_read_paths(home: &Path) -> Vec<PathBuf> {
    const UNDER_HOME: &[&str] = &[
        ".cargo/bin",
        ".cargo/registry",
        ".cargo/git",
        ".cargo/config.toml",
        ".cargo/config",
        ".cargo/env",
        ".rustup",
        ".pyenv",
        ".nvm",
        ".volta",
        ".bun",
        ".deno",
        ".local/bin",
        ".local/lib",
        "go/pkg/mod",
        ".gitconfig",
        ".config/git",
    ];
    UNDER_HOME
        .iter()
        .map(|rel| home.join(rel))
        .filter(|p| p.exists())
        .collect()
}
