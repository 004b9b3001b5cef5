//! A fake home with a canary, an app data dir standing for the database, a workspace and
//! an outside dir, all in one temp dir; and a way to run `sh -c` confined.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(dead_code)]
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;

pub mod git;

use pocketpilot_sandbox::{confine, Mode, SandboxPolicy};

pub const CANARY: &str = "CANARY-7f3a-home";
pub const DB_SECRET: &str = "DB-SECRET-91c2";

pub struct World {
    pub _dir: tempfile::TempDir,
    pub home: PathBuf,
    pub data: PathBuf,
    pub ws: PathBuf,
    pub outside: PathBuf,
}

impl World {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let home = root.join("home");
        let data = home.join(".local/share/pocketpilot");
        let ws = root.join("ws");
        let outside = root.join("outside");
        for d in [&home, &data, &ws, &outside] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(home.join("canary.txt"), CANARY).unwrap();
        std::fs::write(data.join("pocketpilot.db"), DB_SECRET).unwrap();
        Self {
            _dir: dir,
            home,
            data,
            ws,
            outside,
        }
    }

    /// This process's environment with HOME pointing at the fake home.
    pub fn env(&self) -> Vec<(OsString, OsString)> {
        let mut env: Vec<(OsString, OsString)> =
            std::env::vars_os().filter(|(k, _)| k != "HOME").collect();
        env.push(("HOME".into(), self.home.clone().into()));
        env.push(("WS".into(), self.ws.clone().into()));
        env.push(("OUT".into(), self.outside.clone().into()));
        env.push(("DB".into(), self.data.join("pocketpilot.db").into()));
        env
    }

    pub fn policy(&self) -> SandboxPolicy {
        SandboxPolicy::new(&self.ws)
            .deny(&self.data)
            .base_env(self.env())
    }

    pub fn exists(&self, p: &Path) -> bool {
        p.symlink_metadata().is_ok()
    }
}

pub struct Ran {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub out: String,
}

/// `sh -c SCRIPT` in the workspace under `policy`, stdout and stderr together.
pub async fn sh(policy: &SandboxPolicy, script: &str) -> Ran {
    use std::os::unix::process::ExitStatusExt;
    let mut cmd = tokio::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(format!("exec 2>&1\n{script}"))
        .current_dir(&policy.workspace)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let guard = confine(&mut cmd, policy).expect("confine");
    let output = cmd.output().await.expect("spawn");
    drop(guard);
    Ran {
        code: output.status.code(),
        signal: output.status.signal(),
        out: String::from_utf8_lossy(&output.stdout).into_owned(),
    }
}

pub fn off(policy: SandboxPolicy) -> SandboxPolicy {
    policy.mode(Mode::Off)
}
