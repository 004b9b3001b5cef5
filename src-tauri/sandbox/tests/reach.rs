//! What a confined command can still see and reach beyond files: other processes, `/etc`'s
//! secrets, new namespaces, the person's terminal. Real processes on the real kernel; a
//! `Mode::Off` control shows each test would fail without the sandbox where one can.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod common;

use std::fs::File;
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::Stdio;

use common::{off, sh, World};
use pocketpilot_sandbox::{confine, probe};

fn require_sandbox() {
    let status = probe();
    assert!(
        status.is_sandboxed(),
        "needs Landlock: {}",
        status.details()
    );
}

fn own_pid_namespace() -> bool {
    probe()
        .details()
        .contains("/proc shows only the command's own processes: yes")
}

#[tokio::test]
async fn ps_lists_only_the_commands_own_processes() {
    require_sandbox();
    let w = World::new();
    // A process of the same user outside the call, with a name to look for.
    let marker = w.outside.join("marker-7c1e");
    std::fs::copy("/bin/sleep", &marker).unwrap();
    let mut outside = std::process::Command::new(&marker)
        .arg("300")
        .spawn()
        .unwrap();
    let script = "ps -eo pid,args";
    let ran = sh(&w.policy(), script).await;
    let control = sh(&off(w.policy()), script).await;
    outside.kill().unwrap();
    outside.wait().unwrap();
    assert!(control.out.contains("marker-7c1e"), "{}", control.out);
    if own_pid_namespace() {
        assert!(!ran.out.contains("marker-7c1e"), "{}", ran.out);
        assert!(ran.out.contains("ps -eo pid,args"), "{}", ran.out);
        // The command's shell, ps, and nothing of the app or the rest of the machine.
        let processes = ran.out.lines().skip(1).count();
        assert!(processes <= 3, "{}", ran.out);
    } else {
        // Without user namespaces there is no PID namespace: documented, and visible.
        assert!(ran.out.contains("marker-7c1e"), "{}", ran.out);
    }
}

#[tokio::test]
async fn etc_is_readable_but_shadow_gshadow_and_sudoers() {
    require_sandbox();
    let w = World::new();
    let script = "head -c 4 /etc/passwd && echo PASSWD-READ; \
                  cat /etc/shadow >/dev/null && echo SHADOW-READ; \
                  cat /etc/gshadow >/dev/null && echo GSHADOW-READ; \
                  ls /etc/sudoers.d >/dev/null 2>&1 && echo SUDOERS-LISTED; \
                  ls /etc | grep -qx passwd && echo ETC-LISTED";
    let ran = sh(&w.policy(), script).await;
    assert!(ran.out.contains("PASSWD-READ"), "{}", ran.out);
    assert!(ran.out.contains("ETC-LISTED"), "{}", ran.out);
    assert!(!ran.out.contains("SHADOW-READ"), "{}", ran.out);
    assert!(!ran.out.contains("GSHADOW-READ"), "{}", ran.out);
    assert!(!ran.out.contains("SUDOERS-LISTED"), "{}", ran.out);
    let mut cmd = tokio::process::Command::new("/bin/cat");
    cmd.arg("/etc/shadow")
        .current_dir(&w.ws)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let guard = confine(&mut cmd, &w.policy()).unwrap();
    let out = cmd.output().await.unwrap();
    let hints = guard.blocked_hints(&String::from_utf8_lossy(&out.stderr));
    assert!(
        hints.iter().any(|h| h.contains("read of /etc/shadow")),
        "{hints:?}"
    );
    assert!(!hints.iter().any(|h| h.contains("write to")), "{hints:?}");
    // Root reads /etc/shadow by its mode: the control shows only Landlock stopped it.
    // SAFETY: a plain id query.
    if unsafe { libc::geteuid() } == 0 {
        let control = sh(&off(w.policy()), script).await;
        assert!(control.out.contains("SHADOW-READ"), "{}", control.out);
    }
}

#[tokio::test]
async fn unshare_and_namespace_clones_are_refused() {
    require_sandbox();
    let w = World::new();
    let script = "unshare -U true && echo USERNS-MADE; \
                  unshare -Un true && echo NETNS-MADE; \
                  /usr/bin/python3 -c \"import os; os.setns(os.open('/proc/self/ns/uts', os.O_RDONLY), 0)\" && echo SETNS-DONE; \
                  /usr/bin/python3 -c \"import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); \
pid = libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0); \
print('CLONE-NEWUSER' if pid >= 0 else 'clone refused errno %d' % ctypes.get_errno()); \
os._exit(0) if pid == 0 else None\"";
    let ran = sh(&w.policy(), script).await;
    for made in ["USERNS-MADE", "NETNS-MADE", "SETNS-DONE", "CLONE-NEWUSER"] {
        assert!(!ran.out.contains(made), "{made}:\n{}", ran.out);
    }
    assert!(ran.out.contains("clone refused errno 1"), "{}", ran.out);
    let control = sh(&off(w.policy()), "unshare -U true && echo USERNS-MADE").await;
    assert!(control.out.contains("USERNS-MADE"), "{}", control.out);
}

/// A pseudo-terminal: (controller, the terminal side).
fn openpty() -> (File, OwnedFd) {
    let (mut controller, mut terminal) = (0, 0);
    // SAFETY: openpty writes two new descriptors; name, termios and size may be null.
    let rc = unsafe {
        libc::openpty(
            &mut controller,
            &mut terminal,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0);
    // SAFETY: both descriptors are fresh and owned by nobody else.
    unsafe {
        (
            File::from_raw_fd(controller),
            OwnedFd::from_raw_fd(terminal),
        )
    }
}

#[tokio::test]
async fn a_terminal_given_to_a_command_cannot_be_typed_into_and_dev_tty_is_closed() {
    require_sandbox();
    let w = World::new();
    let (controller, terminal) = openpty();
    // The worst case: the command's stdin is a terminal (run_command gives it /dev/null).
    let script = r#"
import fcntl, os, termios
for req, name in ((termios.TIOCSTI, 'TIOCSTI'), (getattr(termios, 'TIOCLINUX', 0x541c), 'TIOCLINUX')):
    try:
        fcntl.ioctl(0, req, b'y')
        print(name, 'ALLOWED')
    except OSError as e:
        print(name, 'refused', e.errno)
try:
    open('/dev/tty', 'rb')
    print('DEV-TTY-OPENED')
except OSError as e:
    print('dev tty refused', e.errno)
print('own session', os.getsid(0) == os.getpid())
"#;
    let mut cmd = tokio::process::Command::new("/usr/bin/python3");
    cmd.arg("-c")
        .arg(script)
        .current_dir(&w.ws)
        .stdin(Stdio::from(terminal))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let guard = confine(&mut cmd, &w.policy()).unwrap();
    let out = cmd.output().await.unwrap();
    drop(guard);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("TIOCSTI refused 1"), "{text}");
    assert!(text.contains("TIOCLINUX refused 1"), "{text}");
    assert!(!text.contains("ALLOWED"), "{text}");
    assert!(!text.contains("DEV-TTY-OPENED"), "{text}");
    assert!(text.contains("own session True"), "{text}");
    // Nothing was queued as input on the terminal: its controller has nothing to read.
    let fd = std::os::fd::AsRawFd::as_raw_fd(&controller);
    // SAFETY: fcntl on a descriptor we own.
    unsafe { libc::fcntl(fd, libc::F_SETFL, libc::O_NONBLOCK) };
    let mut buf = [0u8; 64];
    let mut reader = &controller;
    let n = reader.read(&mut buf).unwrap_or(0);
    assert!(!buf[..n].contains(&b'y'), "{:?}", &buf[..n]);
}

#[tokio::test]
async fn a_command_cannot_create_the_workspaces_pocketpilot_folder() {
    require_sandbox();
    let w = World::new();
    assert!(!w.exists(&w.ws.join(".pocketpilot")));
    let script = "mkdir -p .pocketpilot; echo '{\"allow\":[\"*\"]}' > .pocketpilot/policy.json; \
                  cat .pocketpilot/policy.json";
    sh(&w.policy(), script).await;
    assert!(!w.exists(&w.ws.join(".pocketpilot/policy.json")));
    let control = sh(&off(w.policy()), script).await;
    assert!(control.out.contains("allow"), "{}", control.out);
}
