//! Issue 14 end to end: the real `pocketpilot` binary, a scripted model that runs
//! `run_command`, the real kernel's sandbox. Each test checks an effect on the machine (a
//! file, a connection, a mode), not only what the command printed.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod support;

use std::io::Read;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use support::{text, Harness, BIN};

struct Env(Harness);

impl std::ops::Deref for Env {
    type Target = Harness;
    fn deref(&self) -> &Harness {
        &self.0
    }
}

impl Env {
    fn new() -> Self {
        Self(Harness::new(&[]))
    }
    /// HOME of the app's runs.
    fn home(&self) -> &Path {
        self.dir.path()
    }
    /// Runs the commands one after the other (one `run_command` call each), then answers.
    fn run_commands(&self, commands: &[&str], extra: &[&str]) -> Output {
        self.run_commands_with(commands, extra, |_| {})
    }
    fn run_commands_with(
        &self,
        commands: &[&str],
        extra: &[&str],
        f: impl FnOnce(&mut Command),
    ) -> Output {
        let mut turns: Vec<Value> = commands
            .iter()
            .map(|c| json!({ "tool_calls": [{ "name": "run_command", "arguments": { "command": c } }] }))
            .collect();
        turns.push(json!({ "text": "done" }));
        let provider = self.script("script.json", Value::Array(turns));
        let ws = self.wss();
        let mut args = vec![
            "run",
            "--workspace",
            &ws,
            "--goal",
            "g",
            "--provider",
            &provider,
        ];
        args.extend_from_slice(extra);
        let mut c = self.command(&args);
        f(&mut c);
        c.output().unwrap()
    }
    /// Every event of the latest task as JSON text (the command outputs are in it).
    fn events(&self) -> String {
        let tasks = self.json(&["tasks", "--json"]);
        let last = tasks
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["id"].as_i64())
            .max()
            .unwrap()
            .to_string();
        self.ok(&["show", &last, "--json"])
    }
    /// The outputs of the task's `run_command` calls, in order.
    fn outputs(&self) -> Vec<String> {
        let v: Value = serde_json::from_str(&self.events()).unwrap();
        v["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "tool_call_completed" || e["type"] == "tool_call_failed")
            .map(|e| {
                let p = &e["payload"];
                p["output"]
                    .as_str()
                    .or(p["error"].as_str())
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect()
    }
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

const SHELL: &[&str] = &["--allow", "shell:execute"];

#[test]
fn cannot_read_a_canary_in_home_nor_the_database() {
    let e = Env::new();
    std::fs::write(e.home().join("canary.txt"), "HOME-CANARY-1234\n").unwrap();
    // A first run creates the database; the second tries to read it.
    let out = e.run_commands(&["true"], SHELL);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let db = e.data().join("pocketpilot.db");
    assert!(db.exists());
    let home = e.home().display().to_string();
    let cmd = format!(
        "cat {home}/canary.txt; head -c 16 {} | od -c | head -1",
        db.display()
    );
    let out = e.run_commands(&[&cmd], SHELL);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let outputs = e.outputs();
    let last = outputs.last().unwrap();
    assert!(!last.contains("HOME-CANARY-1234"), "{last}");
    assert!(!last.contains("S   Q   L   i   t   e"), "{last}");
    assert!(last.contains("blocked by the sandbox"), "{last}");
    // The control: the same files are readable outside the sandbox.
    let plain = Command::new("sh").arg("-c").arg(&cmd).output().unwrap();
    assert!(text(&plain.stdout).contains("HOME-CANARY-1234"));
    assert!(text(&plain.stdout).contains("S   Q   L   i   t   e"));
}

#[test]
fn cannot_write_outside_the_workspace_not_even_through_its_own_symlink() {
    let e = Env::new();
    let home = e.home().display().to_string();
    let cmd = format!(
        "echo x > {home}/direct.txt; ln -s {home}/via-link.txt link; echo y > link; echo inside > inside.txt"
    );
    let out = e.run_commands(&[&cmd], SHELL);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!e.home().join("direct.txt").exists());
    assert!(!e.home().join("via-link.txt").exists());
    assert_eq!(
        std::fs::read_to_string(e.ws().join("inside.txt")).unwrap(),
        "inside\n"
    );
}

/// A listener that counts the connections it accepted within the test.
fn listener() -> (u16, std::sync::mpsc::Receiver<()>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let _ = tx.send(());
            drop(s);
        }
    });
    (port, rx)
}

fn connect(port: u16) -> String {
    format!("bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED'")
}

#[test]
fn no_network_without_net_network_and_network_with_it() {
    let e = Env::new();
    let (port, accepted) = listener();
    let out = e.run_commands(&[&connect(port)], SHELL);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let denied = e.outputs().pop().unwrap();
    assert!(!denied.contains("CONNECTED"), "{denied}");
    assert!(
        denied.contains("blocked by the sandbox: network"),
        "{denied}"
    );
    assert!(accepted.recv_timeout(Duration::from_millis(300)).is_err());

    let e = Env::new();
    let out = e.run_commands(
        &[&connect(port)],
        &["--allow", "shell:execute", "--allow", "net:network"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(e.outputs().pop().unwrap().contains("CONNECTED"));
    assert!(accepted.recv_timeout(Duration::from_secs(2)).is_ok());

    // A workspace rule grants it too; a deny rule beats it.
    let e = Env::new();
    let ws = e.wss();
    e.ok(&["policy", "allow", "net:network", "--workspace", &ws]);
    e.run_commands(&[&connect(port)], SHELL);
    assert!(e.outputs().pop().unwrap().contains("CONNECTED"));
    assert!(accepted.recv_timeout(Duration::from_secs(2)).is_ok());
    e.ok(&["policy", "deny", "net", "--workspace", &ws]);
    e.run_commands(
        &[&connect(port)],
        &["--allow", "shell:execute", "--allow", "net:network"],
    );
    assert!(!e.outputs().pop().unwrap().contains("CONNECTED"));
    assert!(accepted.recv_timeout(Duration::from_millis(300)).is_err());
}

#[test]
fn the_webhook_port_of_a_running_serve_is_out_of_reach() {
    let e = Env::new();
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut serve = e
        .command(&["serve", "--port", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until it listens.
    let mut up = false;
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            up = true;
            break;
        }
        // sleep: the poll interval of the bounded wait for the server to listen (no readiness signal).
        std::thread::sleep(Duration::from_millis(100));
    }
    if !up {
        let _ = serve.kill();
        let mut err = String::new();
        serve
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        panic!("serve did not listen on {port}: {err}");
    }
    let hook = format!(
        "bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port} && printf \"POST /hooks/x HTTP/1.0\\r\\n\\r\\n\" >&3 && echo CONNECTED'"
    );
    e.run_commands(&[&hook], SHELL);
    let out = e.outputs().pop().unwrap();
    let _ = serve.kill();
    let _ = serve.wait();
    assert!(!out.contains("CONNECTED"), "{out}");
    assert!(out.contains("blocked by the sandbox: network"), "{out}");
}

#[test]
fn cannot_reach_the_session_dbus() {
    let e = Env::new();
    let probe = "dbus-send --session --dest=org.freedesktop.DBus --type=method_call --print-reply /org/freedesktop/DBus org.freedesktop.DBus.ListNames && echo DBUS-OK";
    // The control: in the same session, outside the sandbox, the bus answers.
    let control = Command::new("dbus-run-session")
        .args(["--", "sh", "-c", probe])
        .output()
        .unwrap();
    assert!(
        text(&control.stdout).contains("DBUS-OK"),
        "{}",
        text(&control.stderr)
    );
    let provider = e.script(
        "dbus.json",
        json!([{ "tool_calls": [{ "name": "run_command", "arguments": { "command": probe } }] }, { "text": "done" }]),
    );
    let ws = e.wss();
    let out = e
        .command_of(
            "dbus-run-session",
            &[
                "--",
                BIN,
                "run",
                "--workspace",
                &ws,
                "--goal",
                "g",
                "--provider",
                &provider,
            ],
        )
        .args(SHELL)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = e.outputs().pop().unwrap();
    assert!(!o.contains("DBUS-OK"), "{o}");
}

#[test]
fn git_hooks_stay_unchanged_and_git_works_inside() {
    let e = Env::new();
    let git = "git init -q . && git -c user.name=t -c user.email=t@t add -A && echo a > a.txt && git add a.txt && git -c user.name=t -c user.email=t@t commit -qm first && git status --short && echo GIT-OK";
    let out = e.run_commands(&[git, "echo 'touch /tmp/pwned' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; echo '[core] hooksPath = /tmp' >> .git/config"], SHELL);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let outputs = e.outputs();
    assert!(outputs[0].contains("GIT-OK"), "{}", outputs[0]);
    assert!(!e.ws().join(".git/hooks/pre-commit").exists());
    let config = std::fs::read_to_string(e.ws().join(".git/config")).unwrap();
    assert!(!config.contains("hooksPath"), "{config}");
}

#[test]
fn python_venv_works_inside() {
    let e = Env::new();
    let out = e.run_commands(
        &["/usr/bin/python3 -m venv .venv && .venv/bin/python -c 'print(\"VENV-OK\")'"],
        SHELL,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = e.outputs().pop().unwrap();
    assert!(o.contains("VENV-OK"), "{o}");
}

#[test]
fn parent_environ_and_command_env_are_free_of_secrets_unless_passed() {
    let e = Env::new();
    let ws = e.wss();
    e.ok(&["sandbox", "pass-env", "PASSED_TOKEN", "--workspace", &ws]);
    let shown = e.output(&["sandbox", "show", "--workspace", &ws]);
    assert!(
        text(&shown.stdout).contains("env PASSED_TOKEN"),
        "{}",
        text(&shown.stdout)
    );
    let out = e.run_commands_with(
        &["tr '\\0' '\\n' < /proc/$PPID/environ; echo ---; env"],
        SHELL,
        |c| {
            c.env("MY_SECRET_KEY", "SECRET-CANARY-1")
                .env("GITHUB_TOKEN", "SECRET-CANARY-2")
                .env("PASSED_TOKEN", "PASSED-VALUE")
                .env("DB_URL", "postgres://u:SECRET-CANARY-3@h/db");
        },
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = e.outputs().pop().unwrap();
    for canary in ["SECRET-CANARY-1", "SECRET-CANARY-2", "SECRET-CANARY-3"] {
        assert!(!o.contains(canary), "{canary} leaked: {o}");
    }
    // Named for this workspace, it reaches the command (through the app's start without
    // its secrets, `secret_env`), and still not the app's own /proc environ.
    let (parent, command) = o.split_once("---").unwrap();
    assert!(command.contains("PASSED_TOKEN=PASSED-VALUE"), "{o}");
    assert!(!parent.contains("PASSED-VALUE"), "{o}");
    assert!(!o.contains("POCKETPILOT_DATA_DIR"), "{o}");
}

#[test]
fn data_dir_database_and_logs_are_private_and_an_old_install_is_tightened() {
    let e = Env::new();
    // An install from before: world-readable.
    std::fs::create_dir_all(e.data().join("logs")).unwrap();
    std::fs::write(e.data().join("old.txt"), "x").unwrap();
    std::fs::set_permissions(e.data(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(
        e.data().join("logs"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::fs::set_permissions(
        e.data().join("old.txt"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    // While a run holds the database open, its WAL and shm exist: look then.
    let data = e.data().display().to_string();
    let out = e.run_commands(&["true"], SHELL);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(mode(&e.data()), 0o700);
    assert_eq!(mode(&e.data().join("logs")), 0o700);
    assert_eq!(mode(&e.data().join("old.txt")), 0o600);
    assert_eq!(mode(&e.data().join("pocketpilot.db")), 0o600);
    let mut logs = 0;
    for f in std::fs::read_dir(e.data().join("logs")).unwrap() {
        let f = f.unwrap().path();
        assert_eq!(mode(&f), 0o600, "{}", f.display());
        logs += 1;
    }
    assert!(logs > 0);
    // WAL and shm: a `serve` keeps the database open.
    let mut serve = e.cmd(&["serve", "--port", "0"]).spawn().unwrap();
    let wal = e.data().join("pocketpilot.db-wal");
    let shm = e.data().join("pocketpilot.db-shm");
    for _ in 0..100 {
        if wal.exists() && shm.exists() {
            break;
        }
        // sleep: the poll interval of the bounded wait for SQLite's WAL files to appear.
        std::thread::sleep(Duration::from_millis(50));
    }
    let modes = (
        wal.exists().then(|| mode(&wal)),
        shm.exists().then(|| mode(&shm)),
    );
    let _ = serve.kill();
    let _ = serve.wait();
    assert_eq!(modes, (Some(0o600), Some(0o600)), "{data}");
}

#[test]
fn a_detached_child_does_not_survive_the_call() {
    let e = Env::new();
    let ws = e.wss();
    let cmd = format!("setsid -f sh -c 'sleep 2; echo late > {ws}/late.txt'; ( sleep 2; echo late2 > {ws}/late2.txt ) & echo started");
    let out = e.run_commands(&[&cmd], SHELL);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // sleep: the detached children write 2 s after the call; real time must pass for a survivor to show.
    std::thread::sleep(Duration::from_secs(4));
    assert!(!e.ws().join("late.txt").exists());
    assert!(!e.ws().join("late2.txt").exists());
}

#[test]
fn cannot_change_the_policy_through_the_apps_own_cli() {
    let e = Env::new();
    let ws = e.wss();
    // The binary inside the workspace, so the command can run it at all.
    let inside = e.ws().join("pp");
    if std::fs::hard_link(BIN, &inside).is_err() {
        std::fs::copy(BIN, &inside).unwrap();
    }
    let cmd = format!(
        "POCKETPILOT_DATA_DIR={} HOME={} ./pp policy allow shell:execute --workspace {ws}; echo rc=$?",
        e.data().display(),
        e.home().display()
    );
    let out = e.run_commands(&[&cmd], SHELL);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = e.outputs().pop().unwrap();
    assert!(!o.contains("rc=0"), "{o}");
    let rules = e.json(&["policy", "show", "--workspace", &ws, "--json"]);
    assert_eq!(rules["allow"], json!([]), "{rules}");
    let _ = std::fs::remove_file(inside);
}

#[test]
fn unsandboxed_it_says_so_each_command_asks_and_session_grants_are_refused() {
    let e = Env::new();
    let off = |c: &mut Command| {
        c.env("POCKETPILOT_SANDBOX", "off");
    };
    // `--allow shell:execute` does not run an unsandboxed command without asking.
    let out = e.run_commands_with(&["echo one > one.txt", "echo two > two.txt"], SHELL, off);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("NOT sandboxed: POCKETPILOT_SANDBOX=off is set"),
        "{err}"
    );
    assert!(!e.ws().join("one.txt").exists());
    let pending = e.json(&["approvals", "--json"]);
    let id = pending[0]["id"].as_i64().unwrap().to_string();
    // "Allow for this session" becomes a one-off approval; the next command asks again.
    let mut c = e.command(&["approve", &id, "--session-grant"]);
    off(&mut c);
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(e.ws().join("one.txt").exists());
    assert!(!e.ws().join("two.txt").exists());
    let events = e.events();
    assert!(events.contains("session grant refused"), "{events}");
    let v: Value = serde_json::from_str(&events).unwrap();
    let resolved: Vec<&Value> = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "approval_resolved")
        .collect();
    assert_eq!(resolved[0]["payload"]["session_grant"], json!(false));
    let required: Vec<&Value> = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "approval_required")
        .collect();
    assert_eq!(required.len(), 2);
    assert_eq!(
        required[0]["payload"]["sandbox"],
        json!("NOT sandboxed: POCKETPILOT_SANDBOX=off is set")
    );
}

#[test]
fn sandboxed_approvals_say_so_and_widenings_are_audited() {
    let e = Env::new();
    let out = e.run_commands(&["true"], &[]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("sandboxed: writes in the workspace only, no network"),
        "{}",
        text(&out.stderr)
    );
    // A widened workspace: the extra writable dir works, and the source says why.
    let e = Env::new();
    let ws = e.wss();
    let extra = e.home().join("extra");
    std::fs::create_dir_all(&extra).unwrap();
    let extra_s = extra.display().to_string();
    e.ok(&["sandbox", "allow-write", &extra_s, "--workspace", &ws]);
    let show = e.output(&["sandbox", "show", "--workspace", &ws]);
    assert!(text(&show.stdout).contains(&format!("widened by the workspace: write {extra_s}")));
    let out = e.run_commands(&[&format!("echo w > {extra_s}/w.txt")], SHELL);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(extra.join("w.txt").exists());
    let events = e.events();
    assert!(
        events.contains("\"decision_source\": \"workspace_sandbox\""),
        "{events}"
    );
}

#[test]
fn doctor_reports_the_sandbox_and_private_dirs() {
    let e = Env::new();
    let out = e.output(&["doctor"]);
    let o = text(&out.stdout);
    assert!(out.status.success(), "{o}");
    assert!(
        o.starts_with("sandboxed: writes in the workspace only, no network"),
        "{o}"
    );
    assert!(o.contains("landlock ABI: "), "{o}");
    assert!(o.contains("seccomp: works"), "{o}");
    assert!(o.contains("keychain: "), "{o}");
    assert!(
        o.contains(&format!("private: {}", e.data().display())),
        "{o}"
    );
    let out = e
        .command(&["doctor"])
        .env("POCKETPILOT_SANDBOX", "off")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).starts_with("NOT sandboxed: POCKETPILOT_SANDBOX=off is set"));
}

#[test]
fn the_workspace_pocketpilot_folder_is_read_only_to_commands() {
    let e = Env::new();
    let own = e.ws().join(".pocketpilot");
    std::fs::create_dir_all(&own).unwrap();
    std::fs::write(own.join("policy.json"), "{\"allow\":[]}\n").unwrap();
    let out = e.run_commands(
        &[
            "echo '{\"allow\":[\"*\"]}' > .pocketpilot/policy.json; echo planted > .pocketpilot/rules.md; rm -rf .pocketpilot; mv .pocketpilot moved; echo outside > ok.txt; echo RAN",
        ],
        SHELL,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = e.outputs().pop().unwrap();
    assert!(o.contains("RAN"), "{o}");
    assert_eq!(
        std::fs::read_to_string(own.join("policy.json")).unwrap(),
        "{\"allow\":[]}\n"
    );
    assert!(!own.join("rules.md").exists());
    assert!(!e.ws().join("moved").exists());
    // The rest of the workspace stays writable.
    assert_eq!(
        std::fs::read_to_string(e.ws().join("ok.txt")).unwrap(),
        "outside\n"
    );
}

#[test]
fn a_command_cannot_create_the_workspace_pocketpilot_folder() {
    let e = Env::new();
    let own = e.ws().join(".pocketpilot");
    let out = e.run_commands(
        &["mkdir -p .pocketpilot; echo '{\"allow\":[\"*\"]}' > .pocketpilot/policy.json; echo RAN"],
        SHELL,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(e.outputs().pop().unwrap().contains("RAN"));
    assert!(!own.join("policy.json").exists());
    // What is there, if anything, is an empty folder the app made, not the command's.
    if own.exists() {
        assert_eq!(std::fs::read_dir(&own).unwrap().count(), 0);
    }
}

#[test]
fn processes_shadow_and_namespaces_are_out_of_reach() {
    let e = Env::new();
    // A process of the same user outside the call, with a name to look for.
    let marker = e.home().join("outside-marker-5d2b");
    std::fs::copy("/bin/sleep", &marker).unwrap();
    let mut outside = Command::new(&marker).arg("300").spawn().unwrap();
    let out = e.run_commands(
        &[
            "ps aux; echo ---; ps -e | wc -l",
            "cat /etc/shadow && echo SHADOW-READ; head -c 5 /etc/passwd; echo; ls /etc/sudoers.d && echo SUDOERS-LISTED",
            "unshare -U true && echo USERNS-MADE; unshare -Urn true && echo NETNS-MADE; echo END",
        ],
        SHELL,
    );
    outside.kill().unwrap();
    outside.wait().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = e.outputs();
    assert_eq!(o.len(), 3, "{o:?}");
    let doctor = e.output(&["doctor"]);
    let own_pids = text(&doctor.stdout).contains("own processes: yes");
    if own_pids {
        assert!(!o[0].contains("outside-marker-5d2b"), "{}", o[0]);
        assert!(o[0].contains("ps aux"), "{}", o[0]);
        // PID 1 is the sandbox's init (a copy of the app, hence its command line), then
        // the command's own: nothing else of the machine.
        let (listing, _) = o[0].split_once("---").unwrap();
        let pids: Vec<u32> = listing
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().nth(1)?.parse().ok())
            .collect();
        assert!(
            !pids.is_empty() && pids.iter().all(|p| *p <= 10),
            "{}",
            o[0]
        );
    } else {
        // Without user namespaces there is no PID namespace (see the sandbox's README).
        assert!(o[0].contains("outside-marker-5d2b"), "{}", o[0]);
    }
    assert!(!o[1].contains("SHADOW-READ"), "{}", o[1]);
    assert!(!o[1].contains("SUDOERS-LISTED"), "{}", o[1]);
    assert!(o[1].contains("root:"), "{}", o[1]);
    assert!(o[1].contains("read of /etc/shadow"), "{}", o[1]);
    assert!(
        !o[2].contains("USERNS-MADE") && !o[2].contains("NETNS-MADE"),
        "{}",
        o[2]
    );
    assert!(o[2].contains("END"), "{}", o[2]);
}

#[test]
fn the_scrub_catches_more_secrets_and_pass_env_refuses_the_apps_own() {
    let e = Env::new();
    let ws = e.wss();
    for refused in ["POCKETPILOT_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"] {
        let out = e.output(&["sandbox", "pass-env", refused, "--workspace", &ws]);
        assert!(!out.status.success(), "{refused} accepted");
        assert!(
            text(&out.stderr).contains("never passed to commands"),
            "{}",
            text(&out.stderr)
        );
    }
    let shown = e.output(&["sandbox", "show", "--workspace", &ws]);
    assert!(
        !text(&shown.stdout).contains("env "),
        "{}",
        text(&shown.stdout)
    );
    let out = e.run_commands_with(
        &["tr '\\0' '\\n' < /proc/$PPID/environ; echo ---; env"],
        SHELL,
        |c| {
            for (k, v) in [
                ("MYSQL_PWD", "CANARY-A1"),
                ("BW_SESSION", "CANARY-A2"),
                ("OP_SESSION_team", "CANARY-A3"),
                ("CI_JOB_JWT", "CANARY-A4"),
                ("NPM_CONFIG__AUTH", "CANARY-A5"),
                ("DOCKER_AUTH_CONFIG", "CANARY-A6"),
                ("SLACK_WEBHOOK_URL", "https://hooks.example/CANARY-A7"),
                ("DATABASE_URL", "postgres://db/app?password=CANARY-A8"),
                ("UPSTREAM", "https://bob:CANARY-A9@git.example/x"),
                ("PLAIN_SETTING", "VISIBLE-VALUE"),
            ] {
                c.env(k, v);
            }
        },
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = e.outputs().pop().unwrap();
    for n in 1..=9 {
        let canary = format!("CANARY-A{n}");
        assert!(!o.contains(&canary), "{canary} leaked: {o}");
    }
    assert!(o.contains("PLAIN_SETTING=VISIBLE-VALUE"), "{o}");
}

/// Drives `script -qc CMDLINE /dev/null` (a real pseudo-terminal around the app): what it
/// shows, and a way to type into it.
struct Pty {
    child: std::process::Child,
    seen: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
}

impl Pty {
    fn start(cmdline: &str, h: &Harness) -> Self {
        let mut child = h
            .command_of("script", &["-qfec", cmdline, "/dev/null"])
            .env("TERM", "xterm")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = seen.clone();
        let mut out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = out.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Self { child, seen }
    }
    fn shown(&self) -> String {
        text(&self.seen.lock().unwrap())
    }
    fn wait_for(&self, what: &str) {
        let t0 = std::time::Instant::now();
        while !self.shown().contains(what) {
            assert!(
                t0.elapsed() < Duration::from_secs(90),
                "the terminal never showed {what:?}:\n{}",
                self.shown()
            );
            // sleep: the poll interval of the bounded wait for the terminal's output.
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    fn type_in(&mut self, s: &str) {
        use std::io::Write;
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(s.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }
}

#[test]
fn a_command_cannot_type_into_the_persons_terminal() {
    let e = Env::new();
    // Types "y" + newline (the next approval's answer) and a command for the shell after
    // the app, through /dev/tty and through each standard descriptor, and draws on it.
    let inject = r#"
import fcntl, os, termios
def sti(fd, data):
    for ch in data:
        fcntl.ioctl(fd, termios.TIOCSTI, bytes([ch]))
payload = b"y\ntouch INJECTED\n"
try:
    fd = os.open("/dev/tty", os.O_RDWR)
    sti(fd, payload)
    os.write(fd, b"\x1b]52;c;aGk=\x07\x1b[2J")
    print("TTY-OPENED")
except OSError as e:
    print("dev-tty refused:", e.errno)
for fd in (0, 1, 2):
    try:
        sti(fd, payload)
        print("STI-OK", fd)
    except OSError as e:
        print("sti refused on", fd, e.errno)
print("\x1b]52;c;aGk=\x07\x1b[2J\rINJECT-DONE")
"#;
    std::fs::write(e.ws().join("inject.py"), inject).unwrap();
    let turns = json!([
        { "tool_calls": [{ "name": "run_command", "arguments": { "command": "python3 inject.py" } }] },
        { "tool_calls": [{ "name": "write_file", "arguments": { "path": "approved.txt", "content": "x" } }] },
        { "text": "finished" }
    ]);
    let provider = e.script("inject-script.json", turns);
    let cmdline = format!(
        "'{BIN}' run --workspace '{}' --goal g --provider '{provider}' --allow shell:execute; \
         echo AFTER-RUN; read -r line; echo \"SHELL-READ:[$line]\"",
        e.ws().display(),
    );
    let mut pty = Pty::start(&cmdline, &e);
    // The write needs approval: had the command typed "y", the prompt would be answered
    // already and no answer of ours would be read.
    pty.wait_for("Approve?");
    pty.type_in("n\n");
    pty.wait_for("Reason:");
    pty.type_in("no\n");
    pty.wait_for("AFTER-RUN");
    pty.type_in("clean\n");
    pty.wait_for("SHELL-READ:");
    let status = pty.child.wait().unwrap();
    assert!(status.success(), "{status:?}\n{}", pty.shown());
    let shown = pty.shown();
    assert!(shown.contains("SHELL-READ:[clean]"), "{shown}");
    assert!(!e.ws().join("approved.txt").exists(), "{shown}");
    assert!(!e.ws().join("INJECTED").exists() && !e.home().join("INJECTED").exists());
    let o = e.outputs();
    assert!(o[0].contains("INJECT-DONE"), "{o:?}");
    assert!(
        !o[0].contains("TTY-OPENED") && !o[0].contains("STI-OK"),
        "{}",
        o[0]
    );
    // The command's own escapes were shown as text, none raw.
    let bytes = pty.seen.lock().unwrap().clone();
    assert!(
        !bytes.contains(&0x1b),
        "a raw ESC reached the terminal:\n{shown:?}"
    );
    assert!(
        !bytes.contains(&0x07),
        "a raw BEL reached the terminal:\n{shown:?}"
    );
}

/// `git ARGS` in `dir` as the person runs it: unconfined, no global or system config.
fn persons_git(dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "p")
        .env("GIT_AUTHOR_EMAIL", "p@e")
        .env("GIT_COMMITTER_NAME", "p")
        .env("GIT_COMMITTER_EMAIL", "p@e")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Three routes to the person's next `git status` (a `commondir` to a config of the
/// command's, a nested repository's config, a repository the command creates), each with
/// a fsmonitor that would leave a marker; with user namespaces and without.
fn no_route_makes_the_persons_git_run_a_program(no_userns: bool) {
    let e = Env::new();
    let marker = e.home().join("PWNED");
    let lib = e.ws().join("vendor/lib");
    std::fs::create_dir_all(&lib).unwrap();
    for dir in [e.ws(), lib.clone()] {
        assert!(persons_git(&dir, &["init", "-q"]).status.success());
        std::fs::write(dir.join("README"), "hi\n").unwrap();
        persons_git(&dir, &["add", "README"]);
        assert!(persons_git(&dir, &["commit", "-qm", "first"])
            .status
            .success());
    }
    let evil = format!(
        "printf '#!/bin/sh\\ntouch {}\\n' > evil.sh; chmod +x evil.sh; E=\"$PWD/evil.sh\"; \
         export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1;",
        marker.display()
    );
    let commands = [
        format!(
            "{evil} mkdir -p evil/objects evil/refs; printf '[core]\\n\\tfsmonitor = %s\\n' \"$E\" > evil/config; \
             echo \"$PWD/evil\" > .git/commondir; echo ONE"
        ),
        format!(
            "{evil} printf '[core]\\n\\tfsmonitor = %s\\n' \"$E\" >> vendor/lib/.git/config; \
             git -C vendor/lib config core.fsmonitor \"$E\"; echo TWO"
        ),
        format!("{evil} git init -q fresh && git -C fresh config core.fsmonitor \"$E\"; echo THREE"),
    ];
    let commands: Vec<&str> = commands.iter().map(String::as_str).collect();
    let out = e.run_commands_with(&commands, SHELL, |c| {
        if no_userns {
            c.env("POCKETPILOT_SANDBOX", "no-userns");
        }
    });
    assert!(out.status.success(), "{}", text(&out.stderr));
    let outputs = e.outputs();
    for (o, word) in outputs.iter().zip(["ONE", "TWO", "THREE"]) {
        assert!(o.contains(word), "{o}");
    }
    for dir in [e.ws(), lib.clone(), e.ws().join("fresh")] {
        let status = persons_git(&dir, &["status", "--short"]);
        assert!(status.status.success(), "{}", text(&status.stderr));
    }
    assert!(
        !marker.exists(),
        "the person's git ran the command's program: {outputs:#?}"
    );
    // The call's result names each file put back and why.
    assert!(
        outputs[0].contains(".git/commondir (changed by the command; git metadata is read-only"),
        "{}",
        outputs[0]
    );
    assert!(
        outputs[2].contains("removed keys from")
            && outputs[2].contains("fresh/.git/config (it set core.fsmonitor"),
        "{}",
        outputs[2]
    );
    if no_userns {
        assert!(
            outputs[1].contains("restored")
                && outputs[1].contains("vendor/lib/.git/config (it set core.fsmonitor"),
            "{}",
            outputs[1]
        );
    } else {
        assert!(
            outputs[1].contains("Read-only file system"),
            "{}",
            outputs[1]
        );
    }
}

#[test]
fn git_metadata_everywhere_stays_the_persons() {
    no_route_makes_the_persons_git_run_a_program(false);
}

#[test]
fn git_metadata_everywhere_is_put_back_without_user_namespaces() {
    no_route_makes_the_persons_git_run_a_program(true);
}
