//! What the crash harnesses share: the real `pocketpilot` binary on a store of its own,
//! started, asked and killed the way a person's machine would.
#![allow(dead_code)]
pub mod pty;

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

pub struct Harness {
    pub dir: tempfile::TempDir,
    /// Set for every command (limits the harness needs, such as more steps).
    env: Vec<(&'static str, &'static str)>,
}

impl Harness {
    /// A fresh data dir, HOME and an empty workspace `ws`.
    pub fn new(env: &[(&'static str, &'static str)]) -> Self {
        let h = Self {
            dir: tempfile::tempdir().unwrap(),
            env: env.to_vec(),
        };
        std::fs::create_dir_all(h.ws()).unwrap();
        h
    }
    pub fn ws(&self) -> PathBuf {
        self.dir.path().join("ws")
    }
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_pocketpilot"));
        c.args(args)
            .env("POCKETPILOT_DATA_DIR", self.dir.path().join("data"))
            .env("HOME", self.dir.path())
            .envs(self.env.iter().copied())
            // A model configured in the developer's environment never reaches a test's runs.
            .env_remove("POCKETPILOT_BASE_URL")
            .env_remove("POCKETPILOT_MODEL")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    }
    pub fn output(&self, args: &[&str]) -> Output {
        let mut c = self.cmd(args);
        c.stdout(Stdio::piped()).stderr(Stdio::piped());
        c.output().unwrap()
    }
    pub fn json(&self, args: &[&str]) -> Value {
        let out = self.output(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

/// A process's output as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The events of `kind` among a task's (`show --json`).
pub fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

pub fn kill9(child: &mut Child) {
    // SAFETY: sending SIGKILL to our own child process.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGKILL);
    }
    let _ = child.wait();
}
