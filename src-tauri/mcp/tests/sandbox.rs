//! Stdio servers run inside the OS sandbox: the reference filesystem server, started with
//! `/` as its root, still cannot read a canary in a (fake) home outside the workspace.
//! The path guard is stepped around on purpose — the tool context names the home as its
//! workspace — so only the sandbox stands between the server and the file.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod common;

use common::*;
use pocketpilot_mcp::{connect, ConnectOptions, McpSandbox};
use serde_json::json;

const CANARY: &str = "home canary 5b1e";

struct Setup {
    _t: tempfile::TempDir,
    ws: std::path::PathBuf,
    home: std::path::PathBuf,
    canary: String,
}

fn setup() -> Setup {
    let t = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(t.path()).unwrap();
    let ws = root.join("ws");
    let home = root.join("home");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(ws.join("a.txt"), "inside\n").unwrap();
    let canary = home.join("canary.txt");
    std::fs::write(&canary, CANARY).unwrap();
    Setup {
        _t: t,
        ws,
        home,
        canary: canary.to_string_lossy().into_owned(),
    }
}

async fn read_canary(s: &Setup, sandbox: McpSandbox) -> Result<String, String> {
    let mut config = filesystem("fs", std::path::Path::new("/"));
    config.sandbox = sandbox;
    let options = ConnectOptions {
        workspace: Some(s.ws.clone()),
        forbidden: vec![s.home.join(".local/share/pocketpilot")],
        ..opts(&["fs"])
    };
    let session = connect(&[config], &options).await;
    assert!(session.problems.is_empty(), "{:?}", session.problems);
    let read = tool(&session, "mcp__fs__read_text_file");
    // Inside the workspace the server works as before.
    let inside = read
        .call(
            json!({"path": s.ws.join("a.txt").to_string_lossy()}),
            &ctx(&s.ws),
        )
        .await
        .map_err(|e| e.to_string())?;
    assert!(inside.text.contains("inside"), "{}", inside.text);
    let out = read
        .call(json!({"path": s.canary}), &ctx(&s.home))
        .await
        .map(|o| o.text)
        .map_err(|e| e.to_string());
    session.shutdown().await;
    out
}

#[tokio::test]
async fn filesystem_server_rooted_at_slash_cannot_read_home() {
    assert!(pocketpilot_sandbox::probe().is_sandboxed());
    let s = setup();
    let confined = read_canary(&s, McpSandbox::default()).await;
    let err = confined.expect_err("the sandboxed server read the canary");
    assert!(!err.contains(CANARY), "{err}");
    assert!(err.contains("EACCES") || err.contains("denied"), "{err}");

    // The control: the same server without the sandbox reads it.
    let unconfined = read_canary(
        &s,
        McpSandbox {
            off: true,
            ..McpSandbox::default()
        },
    )
    .await
    .unwrap();
    assert!(unconfined.contains(CANARY), "{unconfined}");
}

#[tokio::test]
async fn a_deny_path_inside_the_server_workspace_stops_the_server() {
    let s = setup();
    let data = s.ws.join("appdata");
    std::fs::create_dir(&data).unwrap();
    let options = ConnectOptions {
        workspace: Some(s.ws.clone()),
        forbidden: vec![data],
        ..opts(&["fs"])
    };
    let session = connect(&[filesystem("fs", &s.ws)], &options).await;
    assert!(session.tools.is_empty());
    let problem = format!("{:?}", session.problems);
    assert!(problem.contains("cannot sandbox"), "{problem}");
}
