//! A server's stderr goes to the `tracing` log with its name, secret values masked. In its
//! own test binary: a thread-scoped subscriber races with other tests' callsite caching.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use common::*;
use pocketpilot_mcp::{connect, ConnectOptions, SecretEnv};
use serde_json::json;

/// A writer for the tracing subscriber that keeps everything.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn secrets_reach_the_server_env_only_and_stderr_goes_to_the_log_masked() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_max_level(tracing::Level::DEBUG)
        .with_writer(move || writer.clone())
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);

    let (t, ws) = workspace();
    let mut config = fake(t.path(), "secretive", "normal");
    config.secret_env = vec!["MY_TOKEN".into()];
    let mut secrets = SecretEnv::new();
    secrets.insert("MY_TOKEN", "tok-3f9a1c77e2");
    assert!(!format!("{secrets:?}").contains("tok-3f9a1c77e2"));
    let opts = ConnectOptions {
        whitelist: whitelist(&["secretive"]),
        secrets,
        ..ConnectOptions::default()
    };
    let session = connect(&[config.clone()], &opts).await;
    assert!(session.problems.is_empty(), "{:?}", session.problems);
    let out = tool(&session, "mcp__secretive__env")
        .call(json!({}), &ctx(&ws))
        .await
        .unwrap();
    assert_eq!(out.text, "token=tok-3f9a1c77e2");
    session.shutdown().await;

    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        log.contains("server=secretive")
            && log.contains("fake server (normal) starting, token is ***"),
        "{log}"
    );
    assert!(!log.contains("tok-3f9a1c77e2"), "{log}");

    // Without the secret the server is not started.
    let session = connect(
        &[config],
        &ConnectOptions {
            whitelist: whitelist(&["secretive"]),
            ..ConnectOptions::default()
        },
    )
    .await;
    assert_eq!(session.problems.len(), 1);
    assert!(session.problems[0].message.contains("MY_TOKEN"));
}
