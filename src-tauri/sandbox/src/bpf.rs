//! The seccomp filter: what Landlock cannot express.
//!
//! Written out by hand (a dozen instructions) rather than through a filter compiler so the
//! x32 syscall range on x86_64 — which a plain per-number deny list lets through — is
//! refused too, and so nothing but a pointer is needed after `fork`.
use libc::sock_filter;

const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JEQ_K: u16 = 0x15;
const BPF_JGE_K: u16 = 0x35;
const BPF_JSET_K: u16 = 0x45;
const BPF_RET_K: u16 = 0x06;

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ERRNO: u32 = 0x0005_0000;
const RET_KILL_PROCESS: u32 = 0x8000_0000;

const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;
/// Low 32 bits of args[0] (little-endian).
const OFFSET_ARG0: u32 = 16;
/// Low 32 bits of args[1]: the kernel reads an ioctl request as a 32-bit `unsigned int`.
const OFFSET_ARG1: u32 = 24;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xc000_003e;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xc000_00b7;

/// Always refused: reading or steering other processes (ptrace, process_vm_*), io_uring
/// (its socket/connect operations bypass the socket() check below), the kernel keyring
/// (may hold the person's secrets), eBPF and perf (kernel attack surface).
const DENIED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    // New namespaces would let the command mount its own /proc or a new root, and joining
    // one (setns) reaches another process's view; commands never need either.
    libc::SYS_unshare,
    libc::SYS_setns,
];

/// Terminal requests refused whatever `dev.tty.legacy_tiocsti` says: TIOCSTI types into a
/// terminal's input queue (answering a prompt, or queueing a command for the person's
/// shell), TIOCLINUX can do the same through the console's selection paste.
const DENIED_IOCTLS: &[u32] = &[libc::TIOCSTI as u32, libc::TIOCLINUX as u32];

/// `clone` flags that create namespaces (`unshare` by another name).
const CLONE_NS_FLAGS: u32 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWCGROUP
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET) as u32;

#[derive(Clone, Copy, PartialEq)]
enum Label {
    Socket,
    Ioctl,
    Clone,
    NoSys,
    Errno,
    Allow,
}

/// The filter for one call. `network`: sockets of the internet families are allowed;
/// without it `socket()` fails for every family. Unix sockets are always refused —
/// `socketpair()` stays available — because a pathname socket outside the workspace (the
/// session bus, a keyring, ssh-agent) cannot be told apart by Landlock before ABI 9.
/// `clone3` answers `ENOSYS` (its flags sit in memory a filter cannot read), so the C
/// library falls back to `clone`, whose namespace flags are checked.
pub(crate) fn program(network: bool) -> Vec<sock_filter> {
    let mut p: Vec<sock_filter> = Vec::new();
    let mut fixups: Vec<(usize, Label)> = Vec::new();
    let mut jump = |p: &mut Vec<sock_filter>, code: u16, k: u32, to: Label| {
        fixups.push((p.len(), to));
        p.push(sock_filter {
            code,
            jt: 0,
            jf: 0,
            k,
        });
    };
    p.push(stmt(BPF_LD_W_ABS, OFFSET_ARCH));
    // A foreign-arch call could reuse numbers differently: kill rather than guess.
    p.push(sock_filter {
        code: BPF_JEQ_K,
        jt: 1,
        jf: 0,
        k: AUDIT_ARCH,
    });
    p.push(stmt(BPF_RET_K, RET_KILL_PROCESS));
    p.push(stmt(BPF_LD_W_ABS, OFFSET_NR));
    #[cfg(target_arch = "x86_64")]
    jump(&mut p, BPF_JGE_K, 0x4000_0000, Label::Errno);
    for &nr in DENIED {
        jump(&mut p, BPF_JEQ_K, nr as u32, Label::Errno);
    }
    jump(&mut p, BPF_JEQ_K, libc::SYS_socket as u32, Label::Socket);
    jump(&mut p, BPF_JEQ_K, libc::SYS_ioctl as u32, Label::Ioctl);
    jump(&mut p, BPF_JEQ_K, libc::SYS_clone as u32, Label::Clone);
    jump(&mut p, BPF_JEQ_K, libc::SYS_clone3 as u32, Label::NoSys);
    p.push(stmt(BPF_RET_K, RET_ALLOW));
    let ioctl_at = p.len();
    p.push(stmt(BPF_LD_W_ABS, OFFSET_ARG1));
    for &request in DENIED_IOCTLS {
        jump(&mut p, BPF_JEQ_K, request, Label::Errno);
    }
    p.push(stmt(BPF_RET_K, RET_ALLOW));
    let clone_at = p.len();
    p.push(stmt(BPF_LD_W_ABS, OFFSET_ARG0));
    jump(&mut p, BPF_JSET_K, CLONE_NS_FLAGS, Label::Errno);
    p.push(stmt(BPF_RET_K, RET_ALLOW));
    let nosys_at = p.len();
    p.push(stmt(BPF_RET_K, RET_ERRNO | libc::ENOSYS as u32));
    let socket_at = p.len();
    if network {
        p.push(stmt(BPF_LD_W_ABS, OFFSET_ARG0));
        jump(&mut p, BPF_JEQ_K, libc::AF_INET as u32, Label::Allow);
        jump(&mut p, BPF_JEQ_K, libc::AF_INET6 as u32, Label::Allow);
    }
    let errno_at = p.len();
    p.push(stmt(BPF_RET_K, RET_ERRNO | libc::EPERM as u32));
    let allow_at = p.len();
    p.push(stmt(BPF_RET_K, RET_ALLOW));
    for (at, label) in fixups {
        let target = match label {
            Label::Socket => socket_at,
            Label::Ioctl => ioctl_at,
            Label::Clone => clone_at,
            Label::NoSys => nosys_at,
            Label::Errno => errno_at,
            Label::Allow => allow_at,
        };
        // The program is a few dozen instructions: every jump fits in a u8.
        p[at].jt = u8::try_from(target - at - 1).unwrap_or(u8::MAX);
    }
    p
}

fn stmt(code: u16, k: u32) -> sock_filter {
    sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}
