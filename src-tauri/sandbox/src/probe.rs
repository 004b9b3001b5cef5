//! What this kernel lets us enforce, checked for real.
use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::sync::OnceLock;

use crate::child::{probe_namespaces, Bind, MountPlan};

/// `POCKETPILOT_SANDBOX=off` makes [`probe`] report "not sandboxed" whatever the kernel
/// can do, so the degraded path can be exercised (tests, kernels without Landlock).
pub const SWITCH_VAR: &str = "POCKETPILOT_SANDBOX";

/// `POCKETPILOT_SANDBOX=no-userns` behaves as if user namespaces were unavailable (as on
/// Ubuntu 24.04): `.git` metadata is then restored after each call instead of mounted
/// read-only.
const NO_USERNS: &str = "no-userns";

/// How the git metadata of the workspace's repositories (configs, hooks, info, `commondir`,
/// `.git` files) is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GitMetadata {
    /// Bind-mounted read-only in the command's private mount namespace.
    ReadOnly,
    /// No user namespaces: writable during the call, put back as they were when the call
    /// ends (changes reported).
    RestoredAfterCall,
}

/// Landlock ABI from which TCP connect/bind rules exist.
const ABI_NET: i32 = 4;
/// Landlock ABI from which abstract unix sockets and signals are scoped.
const ABI_SCOPE: i32 = 6;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxStatus {
    Sandboxed {
        /// Landlock ABI version of the kernel.
        abi: i32,
        /// seccomp filters work: without the network grant no socket can be made (TCP,
        /// UDP, netlink, unix) — and with it only TCP/UDP.
        network_blocking: bool,
        /// Landlock also denies TCP connect/bind itself (ABI ≥ 4).
        landlock_tcp: bool,
        /// Landlock scopes abstract unix sockets and signals to the tree (ABI ≥ 6).
        scoped: bool,
        /// `ReadOnly` where unprivileged user + mount namespaces work; not e.g. under
        /// Ubuntu 24.04's default AppArmor policy.
        git_metadata: GitMetadata,
        /// Always true: the supervisor (child subreaper) kills the whole tree.
        tree_killed: bool,
    },
    NotSandboxed {
        reason: String,
    },
}

impl SandboxStatus {
    pub fn is_sandboxed(&self) -> bool {
        matches!(self, SandboxStatus::Sandboxed { .. })
    }

    /// The line shown beside an approval (dialog, CLI prompt) for a call with or without
    /// the network grant.
    pub fn line(&self, network: bool) -> String {
        match self {
            SandboxStatus::Sandboxed { .. } if network => {
                "sandboxed: writes in the workspace only, network allowed".to_string()
            }
            SandboxStatus::Sandboxed { .. } => {
                "sandboxed: writes in the workspace only, no network".to_string()
            }
            SandboxStatus::NotSandboxed { reason } => format!("NOT sandboxed: {reason}"),
        }
    }

    /// Longer account for `doctor`.
    pub fn details(&self) -> String {
        match self {
            SandboxStatus::Sandboxed {
                abi,
                network_blocking,
                landlock_tcp,
                scoped,
                git_metadata,
                tree_killed,
            } => {
                let yes = |b: &bool| if *b { "yes" } else { "no" };
                format!(
                    "sandbox: Landlock ABI {abi}; network blocking (seccomp): {}; Landlock TCP rules: {}; \
                     unix-socket/signal scoping: {}; git metadata of every repository: {}; \
                     whole process tree killed at the end of a call: {}; \
                     /proc shows only the command's own processes: {}",
                    yes(network_blocking),
                    yes(landlock_tcp),
                    yes(scoped),
                    match git_metadata {
                        GitMetadata::ReadOnly => "read-only",
                        GitMetadata::RestoredAfterCall =>
                            "restored after each call (user namespaces unavailable)",
                    },
                    yes(tree_killed),
                    yes(&pid_ns_enabled()),
                )
            }
            SandboxStatus::NotSandboxed { reason } => format!("NOT sandboxed: {reason}"),
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Kernel {
    pub abi: i32,
    pub seccomp: bool,
    pub mount_ns: bool,
    /// A PID namespace with its own `/proc` works too (needs user namespaces, and a
    /// `/proc` not partly hidden by over-mounts, as in some containers).
    pub pid_ns: bool,
}

/// Checks the kernel once per process (the user-namespace check starts one short child).
pub(crate) fn kernel() -> &'static Kernel {
    static KERNEL: OnceLock<Kernel> = OnceLock::new();
    KERNEL.get_or_init(|| {
        let mount_ns = namespaces_work(false);
        let kernel = Kernel {
            abi: landlock_abi(),
            seccomp: seccomp_available(),
            mount_ns,
            pid_ns: mount_ns && namespaces_work(true),
        };
        tracing::info!(?kernel, "sandbox probe");
        kernel
    })
}

/// What a call would get now. Reads [`SWITCH_VAR`] each time, so a process can be told to
/// degrade without restarting the probe.
pub fn probe() -> SandboxStatus {
    if std::env::var_os(SWITCH_VAR).is_some_and(|v| v.eq_ignore_ascii_case("off")) {
        return SandboxStatus::NotSandboxed {
            reason: format!("{SWITCH_VAR}=off is set"),
        };
    }
    let k = kernel();
    if k.abi < 1 {
        return SandboxStatus::NotSandboxed {
            reason:
                "this kernel has no Landlock (needs Linux ≥ 5.13 with landlock in the LSM list)"
                    .to_string(),
        };
    }
    SandboxStatus::Sandboxed {
        abi: k.abi,
        network_blocking: k.seccomp,
        landlock_tcp: k.abi >= ABI_NET,
        scoped: k.abi >= ABI_SCOPE,
        git_metadata: if mount_ns_enabled() {
            GitMetadata::ReadOnly
        } else {
            GitMetadata::RestoredAfterCall
        },
        tree_killed: true,
    }
}

/// A call's processes get their own PID namespace and `/proc`.
pub(crate) fn pid_ns_enabled() -> bool {
    mount_ns_enabled() && kernel().pid_ns
}

/// User + mount namespaces work and are not switched off.
pub(crate) fn mount_ns_enabled() -> bool {
    let switched_off =
        std::env::var_os(SWITCH_VAR).is_some_and(|v| v.eq_ignore_ascii_case(NO_USERNS));
    kernel().mount_ns && !switched_off
}

fn landlock_abi() -> i32 {
    const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1;
    // SAFETY: the version query takes no pointer (NULL, size 0) and creates nothing.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    i32::try_from(rc).unwrap_or(0).max(0)
}

fn seccomp_available() -> bool {
    // SAFETY: a read-only query; EINVAL when the kernel has no seccomp.
    unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 }
}

/// Starts `/bin/true` in a fresh user + mount namespace with a read-only bind mount (and,
/// with `pid_ns`, as PID 1 of a new PID namespace with its own `/proc`): the exact steps a
/// call takes. Ubuntu 24.04 lets `unshare` succeed but denies the mount.
fn namespaces_work(pid_ns: bool) -> bool {
    let Ok(dir) = tempfile::tempdir() else {
        return false;
    };
    let Ok(path) = CString::new(dir.path().as_os_str().as_encoded_bytes()) else {
        return false;
    };
    let plan = MountPlan {
        uid_map: id_map(unsafe { libc::geteuid() }),
        gid_map: id_map(unsafe { libc::getegid() }),
        binds: vec![Bind {
            keep_flags: mount_flags(dir.path()),
            path,
            read_only: true,
        }],
        pid_ns,
    };
    let mut cmd = std::process::Command::new("/bin/true");
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: probe_namespaces makes raw system calls only, on data prepared here.
    unsafe {
        cmd.pre_exec(move || probe_namespaces(&plan));
    }
    match cmd.status() {
        Ok(status) => status.success(),
        Err(e) => {
            tracing::debug!(error = %e, pid_ns, "no private namespaces");
            false
        }
    }
}

pub(crate) fn id_map(id: u32) -> CString {
    // Digits and spaces only: no interior NUL possible.
    CString::new(format!("{id} {id} 1")).unwrap_or_default()
}

/// Flags of the mount holding `path` that a read-only remount must repeat.
pub(crate) fn mount_flags(path: &std::path::Path) -> libc::c_ulong {
    let Ok(c) = CString::new(path.as_os_str().as_encoded_bytes()) else {
        return 0;
    };
    // SAFETY: `st` is a valid out-pointer; `c` is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return 0;
    }
    let f = st.f_flag;
    let mut out = 0;
    for (st_flag, ms_flag) in [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ] {
        if f & st_flag != 0 {
            out |= ms_flag;
        }
    }
    out
}
