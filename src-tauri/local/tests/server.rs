//! The supervisor against the real `llama-server` and SmolLM2-135M, as built by
//! `scripts/setup-model-server.sh`.
//!
//! When they are missing a test skips loudly, unless `POCKETPILOT_REQUIRE_MODEL_SERVER` is
//! set: then it fails, so CI cannot pass by skipping. One server runs at a time across
//! these tests (the machine has two cores and the model wants both).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::BufRead;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures::StreamExt;
use pocketpilot_local::binary;
use pocketpilot_local::server::{LocalServer, ServerError, ServerOptions, ServerState};
use tokio::sync::watch;

static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

struct Real {
    binary: PathBuf,
    model: PathBuf,
    template: PathBuf,
}

fn real() -> Option<Real> {
    let peers = binary::peers_dir();
    let real = Real {
        binary: binary::setup_script_path(&peers),
        model: peers.join("models/SmolLM2-135M-Instruct.Q4_1.gguf"),
        template: peers.join("llama.cpp/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"),
    };
    let missing = [&real.binary, &real.model, &real.template]
        .into_iter()
        .find(|p| !p.exists());
    match missing {
        None => Some(real),
        Some(path) => {
            let why = format!(
                "{} is missing: run scripts/setup-model-server.sh",
                path.display()
            );
            if std::env::var_os("POCKETPILOT_REQUIRE_MODEL_SERVER").is_some_and(|v| !v.is_empty()) {
                panic!("POCKETPILOT_REQUIRE_MODEL_SERVER is set but {why}");
            }
            eprintln!("\n*** SKIPPED (real model server): {why} ***\n");
            None
        }
    }
}

fn options(real: &Real, dir: &Path, idle: Duration) -> ServerOptions {
    ServerOptions {
        binary: real.binary.clone(),
        model_path: real.model.clone(),
        model_name: "smollm2".to_string(),
        context: 1024,
        template: Some(real.template.clone()),
        threads: Some(2),
        log_dir: dir.join("logs"),
        idle,
        state_file: Some(dir.join("run/llama-server.owner")),
    }
}

fn http() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

fn chat(stream: bool, max_tokens: u32) -> serde_json::Value {
    serde_json::json!({
        "model": "smollm2",
        "messages": [{"role": "user", "content": "Count from one to fifty in words."}],
        "max_tokens": max_tokens,
        "stream": stream,
    })
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Waits, without polling, until `pid` (any process, child or not) has exited; false if it
/// is still running after `bound`.
fn wait_gone(pid: u32, bound: Duration) -> bool {
    // SAFETY: pidfd_open takes a pid and flags; the result is checked.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        // ESRCH: already gone (and reaped).
        return !alive(pid);
    }
    // SAFETY: a fresh descriptor we own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    let mut poll = libc::pollfd {
        fd: std::os::fd::AsRawFd::as_raw_fd(&fd),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let ready = unsafe { libc::poll(&mut poll, 1, bound.as_millis() as i32) };
    ready > 0
}

/// Waits for a state matching `pred` on the supervisor's channel (bounded: a hang must
/// fail the test, not the run).
async fn wait_state(
    states: &mut watch::Receiver<ServerState>,
    bound: Duration,
    pred: impl FnMut(&ServerState) -> bool,
) -> ServerState {
    tokio::time::timeout(bound, states.wait_for(pred))
        .await
        .expect("the awaited state within the bound")
        .expect("the supervisor alive")
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ensure_serves_chat_with_its_key_and_refuses_other_callers() {
    let Some(real) = real() else { return };
    let _turn = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let opts = options(&real, dir.path(), Duration::from_secs(600));
    let server = LocalServer::new();

    let started = Instant::now();
    let endpoint = server.ensure(&opts).await.unwrap();
    let to_healthy = started.elapsed();
    let pid = server.pid().unwrap();
    let ServerState::Ready {
        rss_bytes: rss_idle,
        ..
    } = server.state()
    else {
        panic!("not ready: {:?}", server.state())
    };
    assert_eq!(
        endpoint.base_url,
        format!("http://127.0.0.1:{}/v1", endpoint.port)
    );
    assert_eq!(endpoint.model, "smollm2");
    assert_eq!(endpoint.context, 1024);
    assert_eq!(endpoint.api_key.len(), 64);
    assert!(endpoint.api_key.chars().all(|c| c.is_ascii_hexdigit()));

    let client = http();
    let root = format!("http://127.0.0.1:{}", endpoint.port);
    let health = client.get(format!("{root}/health")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    let body: serde_json::Value = health.json().await.unwrap();
    assert_eq!(body["status"], "ok");

    let url = format!("{}/chat/completions", endpoint.base_url);
    let answer = client
        .post(&url)
        .bearer_auth(&endpoint.api_key)
        .json(&chat(false, 8))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let answer: serde_json::Value = answer.json().await.unwrap();
    assert!(
        answer["choices"][0]["message"]["content"].is_string(),
        "{answer}"
    );

    let refused = client
        .post(&url)
        .json(&chat(false, 8))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let wrong = client
        .post(&url)
        .bearer_auth("0".repeat(64))
        .json(&chat(false, 8))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);

    // The key is not on the command line, which every user of the machine can read.
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    assert!(!String::from_utf8_lossy(&cmdline).contains(&endpoint.api_key));

    let ServerState::Ready {
        port,
        pid: ready_pid,
        rss_bytes,
        context,
        ..
    } = server.state()
    else {
        panic!("not ready: {:?}", server.state())
    };
    assert_eq!((port, ready_pid, context), (endpoint.port, pid, 1024));
    assert!(rss_bytes > 0);
    eprintln!(
        "figures: start to healthy {:.2} s, RSS idle {} MiB, after one short answer {} MiB",
        to_healthy.as_secs_f64(),
        rss_idle / (1024 * 1024),
        rss_bytes / (1024 * 1024)
    );

    // The same options reuse the running server.
    assert_eq!(server.ensure(&opts).await.unwrap(), endpoint);
    assert_eq!(server.pid(), Some(pid));

    let record = std::fs::read_to_string(opts.state_file.as_ref().unwrap()).unwrap();
    assert_eq!(
        record.split_whitespace().next(),
        Some(pid.to_string().as_str())
    );
    let log = std::fs::read_to_string(opts.log_dir.join("llama-server.log")).unwrap();
    assert!(log.contains("starting on port"), "{log}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&opts.log_dir)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);

    // Other options restart it.
    let other = ServerOptions {
        context: 2048,
        ..opts.clone()
    };
    let restarted = server.ensure(&other).await.unwrap();
    assert_eq!(restarted.context, 2048);
    let new_pid = server.pid().unwrap();
    assert_ne!(new_pid, pid);
    assert!(wait_gone(pid, Duration::from_secs(10)));
    let props: serde_json::Value = client
        .get(format!("http://127.0.0.1:{}/props", restarted.port))
        .bearer_auth(&restarted.api_key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        props["default_generation_settings"]["n_ctx"], 2048,
        "{props}"
    );

    server.stop().await;
    assert_eq!(server.state(), ServerState::Stopped);
    assert_eq!(server.pid(), None);
    assert!(!alive(new_pid));
    assert!(!opts.state_file.as_ref().unwrap().exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_restarts_on_the_same_port_and_a_retried_request_succeeds() {
    let Some(real) = real() else { return };
    let _turn = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let opts = options(&real, dir.path(), Duration::from_secs(600));
    let server = LocalServer::new();
    let _busy = server.busy();
    let endpoint = server.ensure(&opts).await.unwrap();
    let first_pid = server.pid().unwrap();
    let mut states = server.subscribe();
    let client = http();
    let url = format!("{}/chat/completions", endpoint.base_url);

    let response = client
        .post(&url)
        .bearer_auth(&endpoint.api_key)
        .json(&chat(true, 400))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut stream = response.bytes_stream();
    let first = stream.next().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("data:"));

    // SAFETY: kill(2) on the server's pid, which the supervisor has not reaped.
    assert_eq!(unsafe { libc::kill(first_pid as i32, libc::SIGKILL) }, 0);
    let killed = Instant::now();
    // The stream breaks (or ends without its final `[DONE]`).
    let mut rest = String::new();
    let mut broken = false;
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(bytes) => rest.push_str(&String::from_utf8_lossy(&bytes)),
            Err(_) => {
                broken = true;
                break;
            }
        }
    }
    assert!(
        broken || !rest.contains("[DONE]"),
        "the stream finished: {rest}"
    );

    // A client retrying with the usual backoff reaches the restarted server.
    let mut answer = None;
    for backoff in [0.5, 1.0, 2.0, 4.0, 8.0, 16.0] {
        // sleep: the backoff of a client retrying a refused connection, as the provider does.
        tokio::time::sleep(Duration::from_secs_f64(backoff)).await;
        match client
            .post(&url)
            .bearer_auth(&endpoint.api_key)
            .json(&chat(false, 8))
            .send()
            .await
        {
            Ok(r) if r.status() == 200 => {
                answer = Some(r.json::<serde_json::Value>().await.unwrap());
                break;
            }
            Ok(r) if r.status() == 503 => {} // still loading
            Ok(r) => panic!("unexpected answer {}", r.status()),
            Err(e) => assert!(e.is_connect() || e.is_request(), "{e}"),
        }
    }
    let answer = answer.expect("an answer from the restarted server");
    assert!(answer["choices"][0]["message"]["content"].is_string());

    let ready = wait_state(
        &mut states,
        Duration::from_secs(60),
        |s| matches!(s, ServerState::Ready { pid, .. } if *pid != first_pid),
    )
    .await;
    let ServerState::Ready { port, pid, .. } = ready else {
        unreachable!()
    };
    eprintln!(
        "figures: kill -9 to an answer from the restarted server {:.2} s",
        killed.elapsed().as_secs_f64()
    );
    assert_eq!(port, endpoint.port);
    assert_eq!(server.pid(), Some(pid));
    assert!(!alive(first_pid));
    assert_eq!(server.ensure(&opts).await.unwrap(), endpoint);
    let log = std::fs::read_to_string(opts.log_dir.join("llama-server.log")).unwrap();
    assert!(log.contains("killed by signal 9 (SIGKILL)"), "{log}");

    server.stop().await;
    assert!(!alive(pid));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unused_server_stops_after_its_idle_time() {
    let Some(real) = real() else { return };
    let _turn = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().unwrap();
    // The idle timeout itself is under test, so it is short and real.
    let opts = options(&real, dir.path(), Duration::from_secs(2));
    let server = LocalServer::new();
    let mut states = server.subscribe();
    let guard = server.busy();
    server.ensure(&opts).await.unwrap();
    let pid = server.pid().unwrap();
    let released = Instant::now();
    drop(guard);

    wait_state(&mut states, Duration::from_secs(60), |s| {
        *s == ServerState::Stopped
    })
    .await;
    assert!(released.elapsed() >= Duration::from_secs(2));
    assert!(!alive(pid));
    assert_eq!(server.pid(), None);
    assert_eq!(server.state(), ServerState::Stopped);

    // Used again, it starts again.
    let _guard = server.busy();
    server.ensure(&opts).await.unwrap();
    assert!(matches!(server.state(), ServerState::Ready { .. }));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_dies_with_its_owner_even_on_kill_9() {
    let Some(real) = real() else { return };
    let _turn = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let mut owner = std::process::Command::new(env!("CARGO_BIN_EXE_pocketpilot-local-server"))
        .arg("--binary")
        .arg(&real.binary)
        .arg("--model")
        .arg(&real.model)
        .arg("--template")
        .arg(&real.template)
        .args(["--context", "1024", "--threads", "2"])
        .arg("--log-dir")
        .arg(dir.path().join("logs"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = owner.stdout.take().unwrap();
    // Blocking reads off the runtime's workers.
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .unwrap();
        line
    })
    .await
    .unwrap();
    let ready: serde_json::Value = serde_json::from_str(&line).expect("the ready line");
    let server_pid = u32::try_from(ready["pid"].as_u64().unwrap()).unwrap();
    assert!(alive(server_pid));

    owner.kill().unwrap(); // SIGKILL: no chance to stop anything
    owner.wait().unwrap();
    let gone = wait_gone(server_pid, Duration::from_secs(10));
    if !gone {
        // Leave no orphan behind a failed run.
        // SAFETY: kill(2) on the pid the owner reported, still alive a moment ago.
        unsafe { libc::kill(server_pid as i32, libc::SIGKILL) };
    }
    assert!(gone, "llama-server {server_pid} outlived its owner");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_keeps_crashing_ends_crashed_with_its_log() {
    let Some(real) = real() else { return };
    let _turn = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let not_a_model = dir.path().join("not-a-model.gguf");
    std::fs::write(&not_a_model, "this is not a model\n").unwrap();
    let opts = ServerOptions {
        model_path: not_a_model,
        ..options(&real, dir.path(), Duration::from_secs(600))
    };
    let server = LocalServer::new();
    let states = server.subscribe();

    let err = server.ensure(&opts).await.unwrap_err();
    let ServerError::Crashed { reason, log_tail } = err else {
        panic!("expected a crash, got {err:?}")
    };
    assert_eq!(reason, "exited with status 1");
    assert!(!log_tail.is_empty() && log_tail.len() <= 20, "{log_tail:?}");
    assert!(
        log_tail.iter().any(|l| l.contains("failed to load model")),
        "{log_tail:?}"
    );
    let ServerState::Crashed {
        reason: state_reason,
        log_tail: state_tail,
        model,
    } = states.borrow().clone()
    else {
        panic!("not crashed: {:?}", *states.borrow())
    };
    assert_eq!(
        (state_reason, state_tail, model),
        (reason, log_tail, "smollm2".to_string())
    );
    assert_eq!(server.pid(), None);
    // One start, then three restarts, then no more.
    let log = std::fs::read_to_string(opts.log_dir.join("llama-server.log")).unwrap();
    assert_eq!(log.matches("] starting on port").count(), 1, "{log}");
    assert_eq!(log.matches("] restarting on port").count(), 3, "{log}");
    assert!(!opts.state_file.as_ref().unwrap().exists());

    // The next `ensure` tries again from the start.
    let good = options(&real, dir.path(), Duration::from_secs(600));
    server.ensure(&good).await.unwrap();
    assert!(matches!(server.state(), ServerState::Ready { .. }));
    server.stop().await;
    assert_eq!(server.state(), ServerState::Stopped);
}

/// The kernel's parent-death signal follows the thread that forked, not the process: a
/// server started from a thread that then ends must live on, and the supervisor must still
/// be able to stop it without a runtime.
#[test]
fn the_server_outlives_the_thread_that_started_it_and_stop_blocking_ends_it() {
    let Some(real) = real() else { return };
    let _turn = ONE_AT_A_TIME.blocking_lock();
    let dir = tempfile::tempdir().unwrap();
    let opts = options(&real, dir.path(), Duration::from_secs(600));
    let server = LocalServer::new();
    let (asking, asked) = (server.clone(), opts.clone());
    let endpoint = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(asking.ensure(&asked)).unwrap()
    })
    .join()
    .unwrap();
    let pid = server.pid().unwrap();

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let answer = runtime.block_on(async {
        http()
            .post(format!("{}/chat/completions", endpoint.base_url))
            .bearer_auth(&endpoint.api_key)
            .json(&chat(false, 8))
            .send()
            .await
            .unwrap()
            .status()
    });
    assert_eq!(answer, 200);
    assert!(alive(pid));
    drop(runtime);

    server.stop_blocking();
    assert!(!alive(pid));
    assert_eq!(server.pid(), None);
    assert_eq!(server.state(), ServerState::Stopped);
    assert!(!opts.state_file.as_ref().unwrap().exists());
}

#[test]
fn the_built_server_reports_its_version() {
    let Some(real) = real() else { return };
    let version = binary::version(&real.binary).unwrap();
    assert!(version.starts_with("version:"), "{version}");
}
