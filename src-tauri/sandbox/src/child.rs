//! What runs between `fork` and `exec`.
//!
//! The app is multi-threaded, so after `fork` only async-signal-safe work is allowed: raw
//! system calls on data prepared before the fork. Nothing here allocates, locks, formats
//! or logs.
//!
//! The forked child becomes a supervisor: it forks once more; the grandchild confines
//! itself and execs the command, while the supervisor — a child subreaper, so every
//! orphan of the tree is re-parented to it — waits. When the command exits, when the app
//! closes the lifeline pipe (call ended, cancelled, guard dropped, or the app died) the
//! supervisor kills every process left in the tree, then exits with the command's status.
//!
//! Where user namespaces work, the supervisor first enters a new user, mount and PID
//! namespace; its child is then PID 1 there (a small init that mounts the namespace's own
//! `/proc`, forks the command and reaps), so the command sees only its own processes, and
//! when that init exits the kernel kills everything left in the namespace.
use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::RawFd;

/// A path made read-only inside the command's private mount namespace.
pub(crate) struct Bind {
    pub path: CString,
    pub read_only: bool,
    /// Flags of the underlying mount a read-only remount must keep (the kernel refuses
    /// to drop nosuid/nodev/noexec from a mount locked in a user namespace).
    pub keep_flags: libc::c_ulong,
}

pub(crate) struct MountPlan {
    pub uid_map: CString,
    pub gid_map: CString,
    pub binds: Vec<Bind>,
    /// Also a PID namespace with its own `/proc`.
    pub pid_ns: bool,
}

pub(crate) struct ChildPlan {
    pub ruleset_fd: Option<RawFd>,
    pub filter: Option<Vec<libc::sock_filter>>,
    pub lifeline: RawFd,
    pub mounts: Option<MountPlan>,
    /// Landlock read rights for the namespace's own `/proc` (a rule on the app's `/proc`
    /// does not cover a filesystem mounted over it: a path check skips mount points).
    pub proc_access: u64,
}

/// Signals the supervisor forwards to the command's process group.
const FORWARDED: &[libc::c_int] = &[
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
];

fn last_error() -> io::Error {
    io::Error::last_os_error()
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(last_error())
    } else {
        Ok(())
    }
}

impl ChildPlan {
    /// Runs in the forked child (the future supervisor). Returns only in the grandchild,
    /// which then execs the command.
    ///
    /// # Safety
    /// Must be called between `fork` and `exec` (a `pre_exec` hook).
    pub(crate) unsafe fn run(&self) -> io::Result<()> {
        // Both take effect before the second fork so the grandchild cannot slip out:
        // orphans come back to us, and nothing can read this copy of the app's memory.
        check(libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))?;
        check(libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0))?;
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        for &sig in FORWARDED {
            libc::sigaddset(&mut set, sig);
        }
        // Blocked before the fork: a signal arriving in between stays pending for the
        // signalfd instead of killing the supervisor.
        check(libc::sigprocmask(
            libc::SIG_BLOCK,
            &set,
            std::ptr::null_mut(),
        ))?;
        if let Some(mounts) = &self.mounts {
            enter_namespaces(mounts)?;
            if mounts.pid_ns {
                return self.run_with_init(mounts, &set);
            }
        }
        let supervisor = libc::getpid();
        let pid = libc::fork();
        if pid < 0 {
            return Err(last_error());
        }
        if pid == 0 {
            if let Some(mounts) = &self.mounts {
                mount_binds(mounts)?;
            }
            return self.confine_grandchild(supervisor);
        }
        supervise(pid, self.lifeline, &set, None)
    }

    /// The supervisor is in the new namespaces already; its child is PID 1 of the new PID
    /// namespace. That init prepares the mounts (an error there is the spawn's error: it
    /// returns from the `pre_exec` hook like the command would), forks the command and
    /// reaps until the command exits.
    unsafe fn run_with_init(&self, mounts: &MountPlan, set: &libc::sigset_t) -> io::Result<()> {
        let mut status_pipe = [0; 2];
        check(libc::pipe2(status_pipe.as_mut_ptr(), libc::O_CLOEXEC))?;
        let init = libc::fork();
        if init < 0 {
            return Err(last_error());
        }
        if init > 0 {
            libc::close(status_pipe[1]);
            supervise(init, self.lifeline, set, Some(status_pipe[0]));
        }
        libc::close(status_pipe[0]);
        // A copy of the app until the namespace ends: named for what it is in `ps`.
        libc::prctl(libc::PR_SET_NAME, c"pocketpilot-init".as_ptr(), 0, 0, 0);
        // The supervisor is outside this namespace: if it dies, so does the namespace.
        check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0))?;
        mount_binds(mounts)?;
        mount_proc()?;
        if let Some(ruleset) = self.ruleset_fd {
            grant_proc(ruleset, self.proc_access)?;
        }
        let pid = libc::fork();
        if pid < 0 {
            return Err(last_error());
        }
        if pid == 0 {
            return self.confine_grandchild(1);
        }
        init_loop(pid, self.lifeline, set, status_pipe[1])
    }

    unsafe fn confine_grandchild(&self, supervisor: libc::pid_t) -> io::Result<()> {
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        check(libc::sigprocmask(
            libc::SIG_SETMASK,
            &empty,
            std::ptr::null_mut(),
        ))?;
        // Its own session, so its own group (the supervisor forwards signals to it as a
        // whole) and no controlling terminal: nothing it starts can reach the person's
        // terminal through /dev/tty.
        check(libc::setsid())?;
        check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0))?;
        if libc::getppid() != supervisor {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        drop_capabilities();
        check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
        if let Some(fd) = self.ruleset_fd {
            let rc = libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32);
            if rc < 0 {
                return Err(last_error());
            }
        }
        if let Some(filter) = &self.filter {
            let prog = libc::sock_fprog {
                len: filter.len() as libc::c_ushort,
                filter: filter.as_ptr() as *mut libc::sock_filter,
            };
            check(libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &prog as *const libc::sock_fprog,
                0,
                0,
            ))?;
        }
        Ok(())
    }
}

/// Empties the bounding and ambient sets, so a command started by a privileged app (root,
/// or one with file capabilities) execs with no capability at all: CAP_SYS_PTRACE would
/// otherwise let it read /proc/PID/environ of the non-dumpable supervisor and app, which
/// Landlock alone does not stop for read-mode access on every kernel (6.18 here).
/// EPERM (no CAP_SETPCAP: an unprivileged app, nothing to drop) and EINVAL (past the
/// last capability) are expected.
unsafe fn drop_capabilities() {
    libc::prctl(
        libc::PR_CAP_AMBIENT,
        libc::PR_CAP_AMBIENT_CLEAR_ALL,
        0,
        0,
        0,
    );
    for cap in 0..64 {
        if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno() == libc::EINVAL {
            break;
        }
    }
}

unsafe fn write_file(path: &CStr, data: &CStr) -> io::Result<()> {
    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return Err(last_error());
    }
    let bytes = data.to_bytes();
    let n = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
    let err = last_error();
    libc::close(fd);
    if n < 0 || n as usize != bytes.len() {
        return Err(err);
    }
    Ok(())
}

/// A user namespace (own uid/gid mapped to themselves) owning a mount namespace — and a
/// PID namespace for this process's children when asked.
pub(crate) unsafe fn enter_namespaces(plan: &MountPlan) -> io::Result<()> {
    let mut flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNS;
    if plan.pid_ns {
        flags |= libc::CLONE_NEWPID;
    }
    check(libc::unshare(flags))?;
    write_file(c"/proc/self/setgroups", c"deny")?;
    write_file(c"/proc/self/uid_map", &plan.uid_map)?;
    write_file(c"/proc/self/gid_map", &plan.gid_map)?;
    Ok(())
}

/// The protected paths bind-mounted onto themselves, read-only where asked, in the
/// private mount namespace. Landlock, applied afterwards, forbids undoing the mounts.
pub(crate) unsafe fn mount_binds(plan: &MountPlan) -> io::Result<()> {
    check(libc::mount(
        std::ptr::null(),
        c"/".as_ptr(),
        std::ptr::null(),
        libc::MS_REC | libc::MS_PRIVATE,
        std::ptr::null(),
    ))?;
    for bind in &plan.binds {
        check(libc::mount(
            bind.path.as_ptr(),
            bind.path.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND | libc::MS_REC,
            std::ptr::null(),
        ))?;
        if bind.read_only {
            check(libc::mount(
                std::ptr::null(),
                bind.path.as_ptr(),
                std::ptr::null(),
                libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | bind.keep_flags,
                std::ptr::null(),
            ))?;
        }
    }
    Ok(())
}

/// The PID namespace's own procfs over `/proc`: it lists the namespace's processes only.
/// (Landlock's grant of `/proc` still covers it: a path check walks up through the
/// mount point.)
pub(crate) unsafe fn mount_proc() -> io::Result<()> {
    check(libc::mount(
        c"proc".as_ptr(),
        c"/proc".as_ptr(),
        c"proc".as_ptr(),
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        std::ptr::null(),
    ))
}

/// Adds the namespace's `/proc` to the (not yet applied) Landlock ruleset.
unsafe fn grant_proc(ruleset: RawFd, access: u64) -> io::Result<()> {
    const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;
    #[repr(C, packed)]
    struct PathBeneath {
        allowed_access: u64,
        parent_fd: i32,
    }
    let fd = libc::open(
        c"/proc".as_ptr(),
        libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
    );
    if fd < 0 {
        return Err(last_error());
    }
    let attr = PathBeneath {
        allowed_access: access,
        parent_fd: fd,
    };
    let rc = libc::syscall(
        libc::SYS_landlock_add_rule,
        ruleset,
        LANDLOCK_RULE_PATH_BENEATH,
        &attr as *const PathBeneath,
        0u32,
    );
    let err = last_error();
    libc::close(fd);
    if rc < 0 {
        return Err(err);
    }
    Ok(())
}

/// All of [`enter_namespaces`], [`mount_binds`] and [`mount_proc`] the way a call does
/// them, for the probe: returns in the namespace's init, which then execs.
pub(crate) unsafe fn probe_namespaces(plan: &MountPlan) -> io::Result<()> {
    enter_namespaces(plan)?;
    if !plan.pid_ns {
        return mount_binds(plan);
    }
    let pid = libc::fork();
    if pid < 0 {
        return Err(last_error());
    }
    if pid == 0 {
        mount_binds(plan)?;
        return mount_proc();
    }
    let mut st: libc::c_int = 0;
    while libc::waitpid(pid, &mut st, 0) < 0 && errno() == libc::EINTR {}
    exit_like(st)
}

/// PID 1 of the call's PID namespace. fd 0 is the lifeline, fd 1 the signalfd, fd 2 the
/// pipe that hands the command's wait status to the supervisor (a PID namespace's init
/// cannot die by a signal it sends itself, so its own status could not carry it).
/// Forwards signals to the command's group, reaps orphans, and exits when the command has
/// exited or the lifeline closed; its exit makes the kernel kill the rest of the namespace.
unsafe fn init_loop(
    child: libc::pid_t,
    lifeline: RawFd,
    set: &libc::sigset_t,
    status_fd: RawFd,
) -> ! {
    let sfd = libc::signalfd(-1, set, libc::SFD_CLOEXEC);
    if sfd < 0
        || libc::dup2(lifeline, 0) < 0
        || libc::dup2(sfd, 1) < 0
        || libc::dup2(status_fd, 2) < 0
    {
        libc::_exit(126);
    }
    close_from(3);
    loop {
        let mut fds = poll_fds();
        if libc::poll(fds.as_mut_ptr(), 2, -1) < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            libc::_exit(126);
        }
        if fds[1].revents & libc::POLLIN != 0 {
            if let Some(sig) = read_signal() {
                libc::kill(-child, sig);
                libc::kill(child, sig);
            }
            loop {
                let mut st: libc::c_int = 0;
                let pid = libc::waitpid(-1, &mut st, libc::WNOHANG);
                if pid <= 0 {
                    break;
                }
                if pid == child {
                    let bytes = st.to_ne_bytes();
                    libc::write(2, bytes.as_ptr().cast(), bytes.len());
                    libc::_exit(0);
                }
            }
        }
        if fds[0].revents != 0 {
            libc::_exit(126);
        }
    }
}

fn poll_fds() -> [libc::pollfd; 2] {
    [
        libc::pollfd {
            fd: 0,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: 1,
            events: libc::POLLIN,
            revents: 0,
        },
    ]
}

/// The signal read from the signalfd at fd 1, unless it is SIGCHLD.
unsafe fn read_signal() -> Option<libc::c_int> {
    let mut info: libc::signalfd_siginfo = std::mem::zeroed();
    let size = std::mem::size_of::<libc::signalfd_siginfo>();
    let n = libc::read(1, (&mut info as *mut libc::signalfd_siginfo).cast(), size);
    let sig = info.ssi_signo as libc::c_int;
    (n as usize == size && sig != libc::SIGCHLD).then_some(sig)
}

unsafe fn close_from(first: u32) {
    if libc::syscall(libc::SYS_close_range, first, u32::MAX, 0u32) < 0 {
        for fd in first as libc::c_int..4096 {
            libc::close(fd);
        }
    }
}

/// The supervisor's loop. fd 0 becomes the lifeline, fd 1 the signalfd (fd 2 the status
/// pipe of a PID namespace's init); everything else is closed so no other call's lifeline,
/// no output pipe and no app socket stays open here.
unsafe fn supervise(
    child: libc::pid_t,
    lifeline: RawFd,
    set: &libc::sigset_t,
    status_fd: Option<RawFd>,
) -> ! {
    let sfd = libc::signalfd(-1, set, libc::SFD_CLOEXEC);
    if sfd < 0 || libc::dup2(lifeline, 0) < 0 || libc::dup2(sfd, 1) < 0 {
        kill_all(Some(child));
        libc::_exit(126);
    }
    match status_fd {
        Some(fd) => {
            if libc::dup2(fd, 2) < 0 {
                kill_all(Some(child));
                libc::_exit(126);
            }
            close_from(3);
        }
        None => close_from(2),
    }
    let mut status: Option<libc::c_int> = None;
    loop {
        let mut fds = poll_fds();
        if libc::poll(fds.as_mut_ptr(), 2, -1) < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            kill_all(Some(child));
            libc::_exit(126);
        }
        if fds[1].revents & libc::POLLIN != 0 {
            if let Some(sig) = read_signal() {
                libc::kill(-child, sig);
                libc::kill(child, sig);
            }
            // Reap what has exited (orphans too); the command's own status is kept.
            loop {
                let mut st: libc::c_int = 0;
                let pid = libc::waitpid(-1, &mut st, libc::WNOHANG);
                if pid <= 0 {
                    break;
                }
                if pid == child {
                    status = Some(match status_fd {
                        Some(_) => command_status(st),
                        None => st,
                    });
                }
            }
            if let Some(st) = status {
                // Reaped already: its pid may be reused, so the rest is found via /proc.
                kill_all(None);
                exit_like(st);
            }
        }
        if fds[0].revents != 0 {
            kill_all(Some(child));
            die_by(libc::SIGKILL);
        }
    }
}

/// The command's wait status as the init passed it on (fd 2), else the init's own.
unsafe fn command_status(init_status: libc::c_int) -> libc::c_int {
    let mut bytes = [0u8; 4];
    let n = libc::read(2, bytes.as_mut_ptr().cast(), bytes.len());
    if n == 4 {
        libc::c_int::from_ne_bytes(bytes)
    } else {
        init_status
    }
}

fn errno() -> libc::c_int {
    last_error().raw_os_error().unwrap_or(0)
}

/// Kills the command's group (while `child` is not yet reaped, so its pid cannot have been
/// reused), then every descendant until none is left. Orphans are re-parented to this
/// subreaper, so "no child left" means "no descendant left".
unsafe fn kill_all(child: Option<libc::pid_t>) {
    if let Some(child) = child {
        libc::kill(-child, libc::SIGKILL);
        libc::kill(child, libc::SIGKILL);
    }
    let me = libc::getpid();
    loop {
        let mut st: libc::c_int = 0;
        let pid = libc::waitpid(-1, &mut st, libc::WNOHANG);
        if pid > 0 {
            continue;
        }
        if pid < 0 && errno() != libc::EINTR {
            return; // ECHILD: nothing left.
        }
        kill_children_of(me);
        // Blocks until one of them is gone; its own children are ours by then.
        let pid = libc::waitpid(-1, &mut st, 0);
        if pid < 0 && errno() == libc::ECHILD {
            return;
        }
    }
}

/// SIGKILL to every process whose parent is `me`, found by walking /proc with raw calls.
unsafe fn kill_children_of(me: libc::pid_t) {
    let dir = libc::open(
        c"/proc".as_ptr(),
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
    );
    if dir < 0 {
        return;
    }
    let mut buf = [0u8; 4096];
    loop {
        let n = libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len());
        if n <= 0 {
            break;
        }
        let mut off = 0usize;
        while off + 19 < n as usize {
            let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
            if reclen == 0 {
                break;
            }
            let name = &buf[off + 19..(off + reclen).min(n as usize)];
            if let Some(pid) = parse_pid(name) {
                if parent_of(pid) == Some(me) {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
            off += reclen;
        }
    }
    libc::close(dir);
}

fn parse_pid(name: &[u8]) -> Option<libc::pid_t> {
    let mut pid: libc::pid_t = 0;
    let mut any = false;
    for &b in name {
        match b {
            0 => break,
            b'0'..=b'9' => {
                pid = pid
                    .checked_mul(10)?
                    .checked_add((b - b'0') as libc::pid_t)?;
                any = true;
            }
            _ => return None,
        }
    }
    any.then_some(pid)
}

/// The parent pid from /proc/PID/stat ("pid (comm) state ppid ..."; comm may hold spaces
/// and parentheses, so parse after the last ')').
unsafe fn parent_of(pid: libc::pid_t) -> Option<libc::pid_t> {
    let mut path = [0u8; 32];
    let prefix = b"/proc/";
    path[..prefix.len()].copy_from_slice(prefix);
    let mut at = prefix.len();
    let mut digits = [0u8; 12];
    let mut len = 0;
    let mut v = pid;
    loop {
        digits[len] = b'0' + (v % 10) as u8;
        len += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for i in (0..len).rev() {
        path[at] = digits[i];
        at += 1;
    }
    let suffix = b"/stat\0";
    path[at..at + suffix.len()].copy_from_slice(suffix);
    let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return None;
    }
    let mut buf = [0u8; 1024];
    let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
    libc::close(fd);
    if n <= 0 {
        return None;
    }
    let text = &buf[..n as usize];
    let close = text.iter().rposition(|&b| b == b')')?;
    // ") S 1234 ..."
    let rest = text.get(close + 4..)?;
    let mut ppid: libc::pid_t = 0;
    let mut any = false;
    for &b in rest {
        if !b.is_ascii_digit() {
            break;
        }
        ppid = ppid
            .checked_mul(10)?
            .checked_add((b - b'0') as libc::pid_t)?;
        any = true;
    }
    any.then_some(ppid)
}

/// Ends the supervisor the way the command ended, so the app sees the command's status.
unsafe fn exit_like(status: libc::c_int) -> ! {
    if libc::WIFSIGNALED(status) {
        die_by(libc::WTERMSIG(status));
    }
    libc::_exit(libc::WEXITSTATUS(status))
}

unsafe fn die_by(sig: libc::c_int) -> ! {
    let limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    libc::setrlimit(libc::RLIMIT_CORE, &limit);
    libc::signal(sig, libc::SIG_DFL);
    let mut set: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut set);
    libc::sigaddset(&mut set, sig);
    libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
    libc::kill(libc::getpid(), sig);
    libc::_exit(128 + sig)
}
