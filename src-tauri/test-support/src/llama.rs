//! The real model server tier: llama.cpp's `llama-server` with SmolLM2-135M, as built by
//! `scripts/setup-model-server.sh` into `${POCKETPILOT_PEERS:-$HOME/.cache/pocketpilot-peers}`.
//!
//! [`LlamaServer::start`] starts one on a free 127.0.0.1 port, waits for `/health`, and
//! kills it when dropped (and, should the test process die first, the kernel kills it:
//! `PR_SET_PDEATHSIG`). Servers are started one at a time ([`LlamaServer::lock`]): the
//! machine has two cores and the model needs both.
//!
//! When the server is not built, a test skips with a loud message, unless
//! `POCKETPILOT_REQUIRE_MODEL_SERVER` is set (the test command sets it), in which case
//! it fails: CI must not pass by skipping.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Paths {
    pub server: PathBuf,
    pub model: PathBuf,
    pub template: PathBuf,
}

pub fn peers_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("POCKETPILOT_PEERS").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
    home.join(".cache/pocketpilot-peers")
}

pub fn paths() -> Paths {
    let w = peers_dir();
    Paths {
        server: w.join("llama.cpp/build-portable/bin/llama-server"),
        model: w.join("models/SmolLM2-135M-Instruct.Q4_1.gguf"),
        template: w.join("llama.cpp/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"),
    }
}

/// Whether the server can be started; `Err` says what is missing.
pub fn available() -> Result<Paths, String> {
    let p = paths();
    for (what, path) in [
        ("llama-server", &p.server),
        ("the SmolLM2 model", &p.model),
        ("the Qwen2.5 chat template", &p.template),
    ] {
        if !path.exists() {
            return Err(format!(
                "{what} is missing at {}: run scripts/setup-model-server.sh",
                path.display()
            ));
        }
    }
    Ok(p)
}

pub fn required() -> bool {
    std::env::var_os("POCKETPILOT_REQUIRE_MODEL_SERVER").is_some_and(|v| !v.is_empty())
}

/// A running `llama-server`; killed when dropped.
pub struct LlamaServer {
    child: Child,
    pub port: u16,
    pub window: u32,
    _turn: tokio::sync::MutexGuard<'static, ()>,
}

static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl LlamaServer {
    /// Starts a server with a window of `window` tokens, or returns `None` (after saying
    /// so loudly) when it is not built and not required.
    pub async fn start(window: u32) -> Option<Self> {
        let paths = match available() {
            Ok(p) => p,
            Err(why) if required() => {
                panic!("POCKETPILOT_REQUIRE_MODEL_SERVER is set but {why}")
            }
            Err(why) => {
                eprintln!("\n*** SKIPPED (real model server): {why} ***\n");
                return None;
            }
        };
        let turn = ONE_AT_A_TIME.lock().await;
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
            l.local_addr().expect("its address").port()
        };
        let log = std::env::temp_dir().join(format!("pocketpilot-llama-{port}.log"));
        let stderr = std::fs::File::create(&log)
            .map(Stdio::from)
            .unwrap_or_else(|_| Stdio::null());
        let mut command = Command::new(&paths.server);
        command
            .args(["-m"])
            .arg(&paths.model)
            .args([
                "-a",
                "smollm2",
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
            ])
            .args(["-c", &window.to_string(), "-t", "2", "--jinja"])
            .arg("--chat-template-file")
            .arg(&paths.template)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", paths.server.display()));
        let server = Self {
            child,
            port,
            window,
            _turn: turn,
        };
        let http = reqwest::Client::new();
        let started = Instant::now();
        loop {
            let health = http
                .get(format!("{}/health", server.root()))
                .timeout(Duration::from_secs(2))
                .send()
                .await;
            if let Ok(r) = health {
                if r.status().is_success() {
                    return Some(server);
                }
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "llama-server did not become healthy within 60 s; its log: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub fn root(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn base_url(&self) -> String {
        format!("{}/v1", self.root())
    }
}
