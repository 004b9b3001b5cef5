//! What the root tests share: the real `pocketpilot` binary on a store of its own,
//! started, asked and killed the way a person's machine would; a real OpenAI-compatible
//! server (`llmock`); a tree's whole content to compare before and after.
#![allow(dead_code)]
pub mod llmock;
pub mod pty;
pub mod tree;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

pub struct Harness {
    pub dir: tempfile::TempDir,
    /// The data dir when it is not `dir/data` (a small filesystem of its own, say).
    data: Option<PathBuf>,
    /// Set for every command (limits the harness needs, such as more steps).
    env: Vec<(String, String)>,
    /// Removed from every command: what the test command sets for every test but this one.
    unset: Vec<String>,
}

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_pocketpilot");

impl Harness {
    /// A fresh data dir, HOME and an empty workspace `ws`.
    pub fn new(env: &[(&str, &str)]) -> Self {
        let h = Self {
            dir: tempfile::tempdir().unwrap(),
            data: None,
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            unset: Vec::new(),
        };
        std::fs::create_dir_all(h.ws()).unwrap();
        h
    }
    /// The same, with the data dir at `data`.
    pub fn with_data(data: PathBuf) -> Self {
        Self {
            data: Some(data),
            ..Self::new(&[])
        }
    }
    /// Sets `key` for every later command.
    pub fn set_env(&mut self, key: &str, value: impl Into<String>) {
        self.env.push((key.to_owned(), value.into()));
    }
    /// Removes `key` from every later command.
    pub fn remove_env(&mut self, key: &str) {
        self.unset.push(key.to_owned());
    }
    pub fn ws(&self) -> PathBuf {
        self.dir.path().join("ws")
    }
    /// The workspace as an argument.
    pub fn wss(&self) -> String {
        self.ws().display().to_string()
    }
    /// A path in the harness's temp dir (beside the workspace, not in it).
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    pub fn data(&self) -> PathBuf {
        self.data.clone().unwrap_or_else(|| self.path("data"))
    }
    /// Writes a scripted model's file `name` and returns the provider spec naming it.
    pub fn script(&self, name: &str, v: Value) -> String {
        let p = self.path(name);
        std::fs::write(&p, v.to_string()).unwrap();
        format!("scripted:{}", p.display())
    }
    /// The binary with `args` on this harness's store; output is captured by `.output()`
    /// and inherited by `.spawn()` unless set.
    pub fn command(&self, args: &[&str]) -> Command {
        self.command_of(BIN, args)
    }
    /// `command` with another program: a copy of the binary, or one that starts it (such
    /// as `dbus-run-session`), on the same store and environment.
    pub fn command_of(&self, program: impl AsRef<OsStr>, args: &[&str]) -> Command {
        let mut c = Command::new(program);
        c.args(args)
            .env("POCKETPILOT_DATA_DIR", self.data())
            .env("HOME", self.dir.path())
            // Where HOME would put it anyway: a developer's own XDG_CONFIG_HOME (their
            // hooks, skills, autostart) never reaches a test.
            .env("XDG_CONFIG_HOME", self.path(".config"))
            // What is configured in the developer's environment never reaches a test's runs.
            .env_remove("POCKETPILOT_BASE_URL")
            .env_remove("POCKETPILOT_MODEL")
            .env_remove("POCKETPILOT_MAX_TASK_SECONDS")
            .env_remove("POCKETPILOT_SKILLS_DIR")
            .env_remove("POCKETPILOT_SANDBOX")
            .env_remove("POCKETPILOT_PROVIDER")
            .env_remove("POCKETPILOT_LLAMA_SERVER");
        for key in &self.unset {
            c.env_remove(key);
        }
        c.envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null());
        c
    }
    /// `command` with its output discarded (a process left running in the background).
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = self.command(args);
        c.stdout(Stdio::null()).stderr(Stdio::null());
        c
    }
    pub fn output(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }
    /// Stdout of a command that must succeed.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.output(args);
        assert!(
            out.status.success(),
            "{args:?} exited {:?}: {}{}",
            out.status.code(),
            text(&out.stdout),
            text(&out.stderr)
        );
        text(&out.stdout)
    }
    pub fn json(&self, args: &[&str]) -> Value {
        serde_json::from_str(&self.ok(args)).unwrap()
    }
}

/// A process's exit code (-1 when a signal ended it).
pub fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

/// A process's output as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The events of `kind` among a task's (`show --json`).
pub fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// Sends `sig` to `pid`, a process the test started (or its child).
pub fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: kill(2) on a process of the test's own; it only sends a signal.
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
}

pub fn kill9(child: &mut Child) {
    // SAFETY: sending SIGKILL to our own child process.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGKILL);
    }
    let _ = child.wait();
}

/// A program of the tests' Python environment (`tests/setup-python.sh`), or the one the
/// variable `var` names.
pub fn test_venv(program: &str, var: &str) -> PathBuf {
    let path = std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(".venv-test/bin")
            .join(program)
    });
    assert!(
        path.exists(),
        "{} not found: run tests/setup-python.sh",
        path.display()
    );
    path
}

/// Where `scripts/setup-model-server.sh` builds the real model server and puts its model.
pub fn peers() -> PathBuf {
    match std::env::var_os("POCKETPILOT_PEERS").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/pocketpilot-peers"),
    }
}

/// The real model server and its model (`scripts/setup-model-server.sh`): `None`, said
/// loudly, when they are not installed; a failure then when
/// `POCKETPILOT_REQUIRE_MODEL_SERVER` is set (a CI run must not pass by skipping).
pub fn model_server() -> Option<(PathBuf, PathBuf)> {
    let server = peers().join("llama.cpp/build-portable/bin/llama-server");
    let model = peers().join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    if server.exists() && model.exists() {
        return Some((server, model));
    }
    let msg = format!(
        "the real model server is not installed under {} (run scripts/setup-model-server.sh)",
        peers().display()
    );
    assert!(
        std::env::var_os("POCKETPILOT_REQUIRE_MODEL_SERVER").is_none(),
        "{msg}"
    );
    eprintln!("\n*** SKIPPED: {msg} ***\n");
    None
}
