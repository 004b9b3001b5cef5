//! Preparing a command: everything is built here, before `fork`; the child only applies.
use std::ffi::{CString, OsString};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use landlock::{
    Access, AccessFs, AccessNet, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr,
    Scope, ABI,
};

use crate::child::{Bind, ChildPlan, MountPlan};
use crate::env::scrub_env;
use crate::gitfind::{self, Found, PROTECTED_DIRS, PROTECTED_FILES};
use crate::gitsnap::{GitSnapshot, RestoreAction, RestoreReason, Restored};
use crate::hints::Reach;
use crate::policy::{etc_hidden, Mode, SandboxPolicy, DEVICE_FILES, SYSTEM_READ_ROOTS};
use crate::probe::{
    id_map, kernel, mount_flags, mount_ns_enabled, pid_ns_enabled, probe, SandboxStatus,
};
use crate::{bpf, SandboxError};

/// Held for as long as the command (or server) may run. Dropping it — or [`CallGuard::end`]
/// — closes the lifeline: the supervisor kills every process of the tree and exits. Keep
/// it until the child has been spawned; the `pre_exec` hook refers to its descriptors.
#[derive(Debug)]
pub struct CallGuard {
    lifeline: Option<OwnedFd>,
    _lifeline_read: OwnedFd,
    _ruleset: Option<OwnedFd>,
    tmp: Option<tempfile::TempDir>,
    tmp_path: PathBuf,
    confined: bool,
    reach: Reach,
    /// Git metadata as it was, checked and put back when the call ends.
    git_snapshot: Option<GitSnapshot>,
    /// Without user namespaces and no `.pocketpilot/` before the call: one the command
    /// made is removed when the call ends.
    own_dir_absent: Option<PathBuf>,
}

impl CallGuard {
    /// The call's private temp dir (also `TMPDIR`), removed with the guard.
    pub fn tmp_dir(&self) -> &Path {
        &self.tmp_path
    }

    /// Whether Landlock and seccomp were applied (false only for an explicit `Mode::Off`).
    pub fn confined(&self) -> bool {
        self.confined
    }

    /// Ends the call: the supervisor kills the whole tree, then exits (with SIGKILL's
    /// status if the command was still running). Idempotent.
    pub fn end(&mut self) {
        if self.lifeline.take().is_some() {
            tracing::debug!("sandbox lifeline closed");
        }
    }

    /// Checks the git metadata the workspace holds or leads to against its state before
    /// the call, puts back what changed, removes what the call added, and cuts the keys
    /// that run programs out of configs of repositories the call created; returns what it
    /// did and why (the call's result should say so). Call after the child has exited
    /// (the supervisor's exit means the whole tree is gone); the guard's drop does it too.
    /// Without user namespaces this is what protects the metadata; with them, existing
    /// files could not change, but new files beside them and new repositories could.
    pub fn restore_git_metadata(&mut self) -> Vec<Restored> {
        let mut restored = match self.git_snapshot.take() {
            Some(snapshot) => snapshot.restore(),
            None => Vec::new(),
        };
        if let Some(own) = self.own_dir_absent.take() {
            if remove_planted(&own) {
                restored.push(Restored {
                    path: own,
                    action: RestoreAction::Removed,
                    reason: RestoreReason::OwnFolder,
                });
            }
        }
        restored
    }

    /// "blocked by the sandbox: …" lines for what the output shows was refused.
    pub fn blocked_hints(&self, output: &str) -> Vec<String> {
        if !self.confined {
            return Vec::new();
        }
        self.reach.hints(output)
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.end();
        let restored = self.restore_git_metadata();
        if !restored.is_empty() {
            tracing::warn!(
                ?restored,
                "git metadata changed by the command was restored"
            );
        }
        if let Some(tmp) = self.tmp.take() {
            if let Err(e) = tmp.close() {
                tracing::debug!(error = %e, "call temp dir not fully removed");
            }
        }
    }
}

/// Prepares `cmd` to run confined by `policy` and returns the guard of its lifetime.
///
/// Replaces the command's environment with the scrubbed base environment (set
/// variables meant for the child after this call), sets `TMPDIR` to a private dir, puts
/// the child in its own process group and installs the `pre_exec` hook. With
/// `Mode::Enforce` it fails rather than run unconfined.
pub fn confine(
    cmd: &mut tokio::process::Command,
    policy: &SandboxPolicy,
) -> Result<CallGuard, SandboxError> {
    let span = tracing::info_span!(
        "sandbox.confine",
        workspace = %policy.workspace.display(),
        network = policy.network,
        mode = ?policy.mode
    );
    let _entered = span.enter();
    let workspace =
        std::fs::canonicalize(&policy.workspace).map_err(|source| SandboxError::Workspace {
            path: policy.workspace.clone(),
            source,
        })?;
    let enforce = policy.mode == Mode::Enforce;
    let k = kernel();
    if enforce {
        enforceable(policy, k.seccomp)?;
    } else {
        tracing::warn!("running without the sandbox (explicit \"no sandbox\" policy)");
    }
    let (tmp, tmp_path) = call_tmp_dir()?;
    let (write_roots, read_roots) = roots(policy, &workspace, &tmp_path);
    if enforce {
        check_deny(&policy.deny, &write_roots, &read_roots)?;
    }
    set_env(cmd, policy, &tmp_path);

    let (lifeline_read, lifeline) = pipe()?;
    let ruleset = enforce
        .then(|| build_ruleset(k.abi, policy.network, &write_roots, &read_roots))
        .transpose()?;
    let use_mounts = enforce && mount_ns_enabled();
    let own_dir = workspace.join(crate::PROTECTED_DIR);
    let own_dir_absent = own_dir.symlink_metadata().is_err();
    if use_mounts && own_dir_absent {
        make_own_dir(&own_dir);
    }
    let protection = protect(&workspace, &write_roots, enforce, use_mounts);
    let plan = ChildPlan {
        ruleset_fd: ruleset.as_ref().map(|fd| fd.as_raw_fd()),
        filter: enforce.then(|| bpf::program(policy.network)),
        lifeline: lifeline_read.as_raw_fd(),
        mounts: protection.mounts,
        proc_access: AccessFs::from_read(ABI::from(k.abi)).bits(),
    };
    cmd.process_group(0);
    // SAFETY: ChildPlan::run only makes raw system calls on data prepared above; the
    // descriptors it names live in the guard, which outlives the spawn.
    unsafe {
        cmd.pre_exec(move || plan.run());
    }
    tracing::debug!(tmp = %tmp_path.display(), "command prepared");
    Ok(CallGuard {
        lifeline: Some(lifeline),
        _lifeline_read: lifeline_read,
        _ruleset: ruleset,
        tmp: Some(tmp),
        tmp_path,
        confined: enforce,
        reach: Reach {
            write: write_roots,
            read: read_roots,
            protected: if use_mounts {
                protection.protected
            } else {
                Vec::new()
            },
            network: policy.network,
        },
        git_snapshot: protection.git_snapshot,
        own_dir_absent: (enforce && !use_mounts && own_dir_absent).then_some(own_dir),
    })
}

/// How the call keeps the git metadata and the workspace's own folder: read-only mounts
/// where user namespaces work, a snapshot put back after the call otherwise.
struct Protection {
    /// The paths bound read-only.
    protected: Vec<PathBuf>,
    mounts: Option<MountPlan>,
    git_snapshot: Option<GitSnapshot>,
}

fn protect(
    workspace: &Path,
    write_roots: &[PathBuf],
    enforce: bool,
    use_mounts: bool,
) -> Protection {
    let found = if enforce {
        gitfind::find(workspace)
    } else {
        Found::default()
    };
    let binds = protected_binds(workspace, write_roots, &found);
    let protected: Vec<PathBuf> = binds
        .iter()
        .filter(|(_, read_only)| *read_only)
        .map(|(p, _)| p.clone())
        .collect();
    let mounts = if use_mounts {
        mount_plan(&binds, pid_ns_enabled())
    } else {
        None
    };
    if enforce && !use_mounts && !found.gitdirs.is_empty() {
        tracing::info!("no user namespaces: git metadata is restored after the call");
    }
    let read_only: std::collections::BTreeSet<PathBuf> = if use_mounts {
        protected.iter().cloned().collect()
    } else {
        Default::default()
    };
    let git_snapshot =
        enforce.then(|| GitSnapshot::take(workspace, write_roots, &found, &read_only));
    Protection {
        protected,
        mounts,
        git_snapshot,
    }
}

/// Whether `policy` can be enforced here: the sandbox works, and the network can be
/// blocked when it must be.
fn enforceable(policy: &SandboxPolicy, seccomp: bool) -> Result<(), SandboxError> {
    if let SandboxStatus::NotSandboxed { reason } = probe() {
        return Err(SandboxError::Unavailable { reason });
    }
    if !policy.network && !seccomp {
        return Err(SandboxError::Unavailable {
            reason: "seccomp is unavailable, so the network cannot be blocked".into(),
        });
    }
    Ok(())
}

/// The call's private temp dir, and its resolved path.
fn call_tmp_dir() -> Result<(tempfile::TempDir, PathBuf), SandboxError> {
    let tmp = tempfile::Builder::new()
        .prefix("pocketpilot-call-")
        .tempdir()
        .map_err(|source| SandboxError::Io {
            what: "cannot create the call's temp dir",
            source,
        })?;
    let tmp_path = std::fs::canonicalize(tmp.path()).map_err(|source| SandboxError::Io {
        what: "cannot resolve the call's temp dir",
        source,
    })?;
    Ok((tmp, tmp_path))
}

/// Where the command may write (the workspace, its temp dir, the policy's extra ones)
/// and read (the system's roots, `/etc` entry by entry, the policy's extra ones).
fn roots(policy: &SandboxPolicy, workspace: &Path, tmp: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut write_roots = vec![workspace.to_path_buf(), tmp.to_path_buf()];
    write_roots.extend(existing(&policy.extra_write));
    let mut read_roots: Vec<PathBuf> = existing(
        SYSTEM_READ_ROOTS
            .iter()
            .filter(|r| **r != "/etc")
            .map(Path::new),
    );
    read_roots.extend(etc_entries());
    read_roots.extend(existing(&policy.extra_read));
    (write_roots, read_roots)
}

/// The command's environment: the scrubbed base, with the temp variables pointing at the
/// call's own dir.
fn set_env(cmd: &mut tokio::process::Command, policy: &SandboxPolicy, tmp: &Path) {
    let base: Vec<(OsString, OsString)> = match &policy.base_env {
        Some(env) => env.clone(),
        None => std::env::vars_os().collect(),
    };
    let env: Vec<(OsString, OsString)> = scrub_env(base, &policy.env_pass)
        .into_iter()
        .filter(|(k, _)| !matches!(k.to_str(), Some("TMPDIR" | "TMP" | "TEMP")))
        .collect();
    cmd.env_clear().envs(env);
    for name in ["TMPDIR", "TMP", "TEMP"] {
        cmd.env(name, tmp);
    }
}

/// A folder that does not exist cannot be mounted read-only, and a command must not be
/// the one to create it: made here (empty, private) so it can be.
fn make_own_dir(own_dir: &Path) {
    if let Err(e) = std::fs::DirBuilder::new().mode(0o700).create(own_dir) {
        tracing::warn!(error = %e, "cannot create the workspace's .pocketpilot folder");
    }
}

/// `/etc`'s entries but the hidden ones, resolved. An entry that resolves to a hidden
/// file, to `/etc` itself or to a tree above it (a symlink planted by an admin or a
/// package) is left out too: granting it would grant what is hidden.
fn etc_entries() -> Vec<PathBuf> {
    let etc = Path::new("/etc");
    let Ok(entries) = std::fs::read_dir(etc) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        if etc_hidden(&name.to_string_lossy()) {
            continue;
        }
        let Ok(real) = std::fs::canonicalize(entry.path()) else {
            continue;
        };
        let hidden_target = real.starts_with(etc)
            && real
                .file_name()
                .is_some_and(|n| etc_hidden(&n.to_string_lossy()));
        if hidden_target || etc.starts_with(&real) {
            continue;
        }
        out.push(real);
    }
    out
}

/// Removes what a command planted at `path` (a folder it had no right to create).
/// Returns whether something was there.
fn remove_planted(path: &Path) -> bool {
    let Ok(meta) = path.symlink_metadata() else {
        return false;
    };
    let removed = if meta.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    if let Err(e) = removed {
        tracing::warn!(path = %path.display(), error = %e, "cannot remove what the command created");
    }
    true
}

fn existing<I, P>(paths: I) -> Vec<PathBuf>
where
    I: IntoIterator<Item = P>,
    P: AsRef<Path>,
{
    paths
        .into_iter()
        .filter_map(|p| match std::fs::canonicalize(p.as_ref()) {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::debug!(path = %p.as_ref().display(), error = %e, "sandbox root skipped");
                None
            }
        })
        .collect()
}

/// Landlock cannot subtract a subtree from a granted tree, so a deny path inside one
/// cannot be honoured: refuse instead of pretending.
fn check_deny(
    deny: &[PathBuf],
    write_roots: &[PathBuf],
    read_roots: &[PathBuf],
) -> Result<(), SandboxError> {
    for d in deny {
        let resolved = std::fs::canonicalize(d).unwrap_or_else(|_| d.clone());
        for root in write_roots.iter().chain(read_roots) {
            if resolved.starts_with(root) {
                return Err(SandboxError::DenyInsideAllowed {
                    deny: resolved,
                    root: root.clone(),
                });
            }
        }
    }
    Ok(())
}

fn pipe() -> Result<(OwnedFd, OwnedFd), SandboxError> {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid two-int array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(SandboxError::Io {
            what: "cannot create the lifeline pipe",
            source: std::io::Error::last_os_error(),
        });
    }
    use std::os::fd::FromRawFd;
    // SAFETY: pipe2 just returned these two fresh descriptors; each is owned once.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn build_ruleset(
    abi: i32,
    network: bool,
    write_roots: &[PathBuf],
    read_roots: &[PathBuf],
) -> Result<OwnedFd, SandboxError> {
    let err = |e: &dyn std::fmt::Display| SandboxError::Landlock(e.to_string());
    let abi = ABI::from(abi);
    let all = AccessFs::from_all(abi);
    let read = AccessFs::from_read(abi);
    let file_only = AccessFs::from_file(abi);
    let device =
        (AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev) & all;
    let mut ruleset = Ruleset::default().handle_access(all).map_err(|e| err(&e))?;
    if !network && abi >= ABI::V4 {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(|e| err(&e))?;
    }
    if abi >= ABI::V6 {
        ruleset = ruleset
            .scope(Scope::AbstractUnixSocket | Scope::Signal)
            .map_err(|e| err(&e))?;
    }
    let mut created = ruleset.create().map_err(|e| err(&e))?;
    // `/etc` itself may be listed; its files are granted one by one (see `etc_entries`).
    let grants = std::iter::once((PathBuf::from("/etc"), all & AccessFs::ReadDir))
        .chain(read_roots.iter().map(|p| (p.clone(), read)))
        .chain(DEVICE_FILES.iter().map(|p| (PathBuf::from(p), device)))
        .chain(write_roots.iter().map(|p| (p.clone(), all)));
    for (path, access) in grants {
        let fd = match PathFd::new(&path) {
            Ok(fd) => fd,
            Err(e) => {
                tracing::debug!(path = %path.display(), error = %e, "not granted");
                continue;
            }
        };
        let access = if path.is_dir() {
            access
        } else {
            access & file_only
        };
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(|e| err(&e))?;
    }
    let fd: Option<OwnedFd> = created.into();
    fd.ok_or_else(|| SandboxError::Unavailable {
        reason: "the kernel did not create a Landlock ruleset".into(),
    })
}

/// What is bound in the command's mount namespace, in mount order, `true` for read-only:
/// every git directory inside the write roots and every `.git` entry of the workspace
/// onto itself (a mount point cannot be renamed or removed, so the command cannot swap in
/// metadata of its own; a `.git` file is bound read-only), then their config, hooks,
/// info, `commondir` and included files read-only, and the workspace's `.pocketpilot/`
/// folder (never writable by the agent, issue 18). Symlinks are left alone: binding one
/// would protect wherever it points, not the entry; the check after the call covers them.
fn protected_binds(workspace: &Path, roots: &[PathBuf], found: &Found) -> Vec<(PathBuf, bool)> {
    let inside = |p: &Path| roots.iter().any(|r| p.starts_with(r));
    let real = |p: &Path| p.symlink_metadata().ok().filter(|m| !m.is_symlink());
    let mut binds: Vec<(PathBuf, bool)> = Vec::new();
    for dotgit in &found.dotgits {
        match real(dotgit) {
            Some(m) if m.is_dir() => binds.push((dotgit.clone(), false)),
            Some(m) if m.is_file() => binds.push((dotgit.clone(), true)),
            _ => {}
        }
    }
    for gitdir in found.gitdirs.iter().filter(|g| inside(g)) {
        binds.push((gitdir.clone(), false));
        for name in PROTECTED_FILES.iter().chain(PROTECTED_DIRS.iter()) {
            let p = gitdir.join(name);
            if real(&p).is_some() {
                binds.push((p, true));
            }
        }
    }
    for inc in found.included.iter().filter(|p| inside(p)) {
        if real(inc).is_some_and(|m| m.is_file()) {
            binds.push((inc.clone(), true));
        }
    }
    let own = workspace.join(crate::PROTECTED_DIR);
    if real(&own).is_some_and(|m| m.is_dir()) {
        binds.push((own, true));
    }
    let mut unique: std::collections::BTreeMap<PathBuf, bool> = Default::default();
    for (p, read_only) in binds {
        *unique.entry(p).or_default() |= read_only;
    }
    let mut binds: Vec<(PathBuf, bool)> = unique.into_iter().collect();
    // Outer mounts first: a bind made later over a parent would hide the inner ones.
    binds.sort_by_key(|(p, read_only)| (p.components().count(), *read_only));
    binds
}

fn mount_plan(binds: &[(PathBuf, bool)], pid_ns: bool) -> Option<MountPlan> {
    if binds.is_empty() && !pid_ns {
        return None;
    }
    let cstr = |p: &Path| CString::new(p.as_os_str().as_encoded_bytes()).ok();
    let mut planned = Vec::with_capacity(binds.len());
    for (p, read_only) in binds {
        planned.push(Bind {
            path: cstr(p)?,
            read_only: *read_only,
            keep_flags: if *read_only { mount_flags(p) } else { 0 },
        });
    }
    // SAFETY: plain id queries.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    Some(MountPlan {
        uid_map: id_map(uid),
        gid_map: id_map(gid),
        binds: planned,
        pid_ns,
    })
}
