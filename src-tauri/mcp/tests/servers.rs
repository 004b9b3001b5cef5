//! Against real MCP servers: the official reference servers from npm (installed by
//! `tests/setup-mcp.sh`) and small fake servers written here in Node (real child processes
//! that hang, crash or never start).
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod common;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::*;
use pocketpilot_mcp::{connect, ConnectOptions, McpServerConfig, McpTransport};
use pocketpilot_tools::{Effect, ToolError};
use serde_json::{json, Value};

#[tokio::test]
async fn everything_lists_tools_and_echoes() {
    let (_t, ws) = workspace();
    let session = connect(&[everything("everything")], &opts(&["everything"])).await;
    assert!(session.problems.is_empty(), "{:?}", session.problems);
    let names: Vec<&str> = session.tools.iter().map(|t| t.name()).collect();
    assert!(names.contains(&"mcp__everything__echo"), "{names:?}");
    assert!(names.contains(&"mcp__everything__trigger-long-running-operation"));
    for name in &names {
        assert!(pocketpilot_mcp::naming::is_valid_model_name(name), "{name}");
    }

    let echo = tool(&session, "mcp__everything__echo");
    assert!(echo.description().contains("mcp:everything:echo"));
    assert_eq!(echo.capability(), "mcp:everything:echo:execute");
    assert!(echo.replay_safe(), "echo is annotated readOnlyHint");
    assert_eq!(echo.parameters()["properties"]["message"]["type"], "string");
    let spec = echo.spec();
    assert_eq!(spec.name, "mcp__everything__echo");

    let args = json!({"message": "hello mcp"});
    let effect = echo.effect(&args, &ctx(&ws)).unwrap();
    match effect {
        Effect::Command { command, cwd } => {
            assert_eq!(command, r#"mcp:everything:echo {"message":"hello mcp"}"#);
            assert_eq!(PathBuf::from(cwd), std::fs::canonicalize(&ws).unwrap());
        }
        other => panic!("{other:?}"),
    }
    let out = echo.call(args, &ctx(&ws)).await.unwrap();
    assert_eq!(out.text, "Echo: hello mcp");

    let sum = tool(&session, "mcp__everything__get-sum");
    let out = sum.call(json!({"a": 2, "b": 40}), &ctx(&ws)).await.unwrap();
    assert!(out.text.contains("42"), "{}", out.text);

    let bad = echo
        .call(json!("not an object"), &ctx(&ws))
        .await
        .unwrap_err();
    assert_eq!(bad.kind().as_str(), "invalid_arguments");
    session.shutdown().await;
}

#[tokio::test]
async fn whitelist_filters_and_reports() {
    let configs = [everything("everything"), everything("unused")];
    let session = connect(
        &configs,
        &opts(&[
            "everything:echo",
            "mcp:everything:get-sum",
            "everything:nope",
            "ghost",
        ]),
    )
    .await;
    let mut names: Vec<&str> = session.tools.iter().map(|t| t.name()).collect();
    names.sort();
    assert_eq!(
        names,
        vec!["mcp__everything__echo", "mcp__everything__get-sum"]
    );
    assert_eq!(
        session.servers(),
        vec!["everything"],
        "`unused` is not started"
    );
    let kinds: Vec<(&str, &str)> = session
        .problems
        .iter()
        .map(|p| (p.server.as_str(), p.kind.as_str()))
        .collect();
    assert!(kinds.contains(&("everything", "unknown_tool")), "{kinds:?}");
    assert!(kinds.contains(&("ghost", "not_configured")), "{kinds:?}");
    session.shutdown().await;

    // Empty: nothing offered, nothing started, no waiting.
    let started = Instant::now();
    let session = connect(&configs, &ConnectOptions::default()).await;
    assert!(session.tools.is_empty() && session.problems.is_empty());
    assert!(session.servers().is_empty());
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[tokio::test]
async fn capabilities_from_config() {
    let mut config = everything("everything");
    config.allow_read_only = true;
    config.capability = Some("mcp:network".into());
    config
        .tool_capabilities
        .insert("get-env".into(), "mcp:execute".into());
    let session = connect(&[config], &opts(&["everything"])).await;
    assert!(session.problems.is_empty(), "{:?}", session.problems);
    // echo is annotated read-only → read (allowed by the default policy). Each
    // capability names its tool, so grants and rules can name one tool.
    assert_eq!(
        tool(&session, "mcp__everything__echo").capability(),
        "mcp:everything:echo:read"
    );
    assert_eq!(
        tool(&session, "mcp__everything__get-env").capability(),
        "mcp:everything:get-env:execute"
    );
    let toggle = tool(&session, "mcp__everything__toggle-simulated-logging");
    assert!(!toggle.replay_safe());
    assert_eq!(
        toggle.capability(),
        "mcp:everything:toggle-simulated-logging:network"
    );
    session.shutdown().await;
}

#[tokio::test]
async fn filesystem_reads_and_lists_inside_the_workspace() {
    let (t, ws) = workspace();
    // The server may see the whole outer dir; the guard keeps calls inside `ws`.
    let mut opts = opts(&["fs"]);
    opts.workspace = Some(ws.clone());
    let session = connect(&[filesystem("fs", t.path())], &opts).await;
    assert!(session.problems.is_empty(), "{:?}", session.problems);
    let read = tool(&session, "mcp__fs__read_text_file");
    assert!(read.replay_safe());

    // Relative to the workspace (the server alone would resolve it against outer/).
    let out = read
        .call(json!({"path": "a.txt"}), &ctx(&ws))
        .await
        .unwrap();
    assert_eq!(out.text, "hello from the workspace\n");
    let abs = ws.join("a.txt").to_string_lossy().into_owned();
    let out = read.call(json!({"path": abs}), &ctx(&ws)).await.unwrap();
    assert_eq!(out.text, "hello from the workspace\n");

    let list = tool(&session, "mcp__fs__list_directory");
    let out = list.call(json!({"path": "."}), &ctx(&ws)).await.unwrap();
    assert!(out.text.contains("[FILE] a.txt"), "{}", out.text);
    assert!(out.text.contains("[DIR] sub"), "{}", out.text);

    // A server-side error (missing file inside the workspace) is a failure, not a refusal.
    let err = read
        .call(json!({"path": "missing.txt"}), &ctx(&ws))
        .await
        .unwrap_err();
    assert_eq!(err.kind().as_str(), "failed", "{err}");
    session.shutdown().await;
}

#[tokio::test]
async fn filesystem_paths_outside_the_workspace_are_rejected_before_the_server() {
    let (t, ws) = workspace();
    std::os::unix::fs::symlink(t.path().join("secret.txt"), ws.join("link")).unwrap();
    // The server's sandbox workspace is its configured root (it may write there).
    let options = ConnectOptions {
        workspace: Some(t.path().to_path_buf()),
        ..opts(&["fs"])
    };
    let session = connect(&[filesystem("fs", t.path())], &options).await;
    assert!(session.problems.is_empty(), "{:?}", session.problems);
    let read = tool(&session, "mcp__fs__read_text_file");
    let secret = t.path().join("secret.txt").to_string_lossy().into_owned();
    for args in [
        json!({"path": secret}),
        json!({"path": "../secret.txt"}),
        json!({"path": "link"}),
        json!({"path": "~/secret.txt"}),
    ] {
        let err = read.call(args.clone(), &ctx(&ws)).await.unwrap_err();
        assert!(matches!(err, ToolError::PathRejected(_)), "{args}: {err}");
        let err = read.effect(&args, &ctx(&ws)).unwrap_err();
        assert!(matches!(err, ToolError::PathRejected(_)), "{args}: {err}");
    }
    let multi = tool(&session, "mcp__fs__read_multiple_files");
    let err = multi
        .call(json!({"paths": ["a.txt", "../secret.txt"]}), &ctx(&ws))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::PathRejected(_)), "{err}");
    let mv = tool(&session, "mcp__fs__move_file");
    let err = mv
        .call(
            json!({"source": "a.txt", "destination": t.path().join("stolen.txt")}),
            &ctx(&ws),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::PathRejected(_)), "{err}");
    assert!(ws.join("a.txt").exists() && !t.path().join("stolen.txt").exists());
    let write = tool(&session, "mcp__fs__write_file");
    let err = write
        .call(json!({"path": "../planted.txt", "content": "x"}), &ctx(&ws))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::PathRejected(_)), "{err}");
    assert!(!t.path().join("planted.txt").exists());

    // The same server does read inside the workspace, and writes new files there.
    let out = write
        .call(json!({"path": "new/../b.txt", "content": "bee"}), &ctx(&ws))
        .await;
    assert!(
        out.is_err(),
        "`..` after a missing dir is refused by the guard"
    );
    write
        .call(json!({"path": "b.txt", "content": "bee"}), &ctx(&ws))
        .await
        .unwrap();
    assert_eq!(std::fs::read_to_string(ws.join("b.txt")).unwrap(), "bee");
    session.shutdown().await;
}

#[tokio::test]
async fn a_call_that_times_out() {
    let (_t, ws) = workspace();
    let mut config = everything("everything");
    config.call_timeout_secs = 1;
    let session = connect(&[config], &opts(&["everything"])).await;
    assert!(session.problems.is_empty(), "{:?}", session.problems);
    let long = tool(&session, "mcp__everything__trigger-long-running-operation");
    let started = Instant::now();
    let err = long
        .call(json!({"duration": 30, "steps": 3}), &ctx(&ws))
        .await
        .unwrap_err();
    assert_eq!(err, ToolError::TimedOut(1));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // The server is still usable afterwards.
    let echo = tool(&session, "mcp__everything__echo");
    let out = echo
        .call(json!({"message": "still here"}), &ctx(&ws))
        .await
        .unwrap();
    assert_eq!(out.text, "Echo: still here");
    session.shutdown().await;
}

#[tokio::test]
async fn a_call_to_a_server_that_never_answers_times_out_and_cancel_stops_it() {
    let (t, ws) = workspace();
    let mut config = fake(t.path(), "hang", "normal");
    config.call_timeout_secs = 1;
    let session = connect(&[config], &opts(&["hang"])).await;
    assert!(session.problems.is_empty(), "{:?}", session.problems);
    let wait = tool(&session, "mcp__hang__wait");
    let started = Instant::now();
    let err = wait.call(json!({}), &ctx(&ws)).await.unwrap_err();
    assert_eq!(err, ToolError::TimedOut(1));
    assert!(started.elapsed() < Duration::from_secs(3));

    let ctx = ctx(&ws);
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        // sleep: cancels while the call is in flight at the hanging server, not before it is sent.
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let err = wait.call(json!({}), &ctx).await.unwrap_err();
    assert_eq!(err, ToolError::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(3));
    session.shutdown().await;
}

#[tokio::test]
async fn a_server_that_exits_mid_run_gives_a_clear_error_and_others_keep_working() {
    let (t, ws) = workspace();
    let configs = [fake(t.path(), "crashy", "normal"), everything("everything")];
    let session = connect(&configs, &opts(&["crashy", "everything"])).await;
    assert!(session.problems.is_empty(), "{:?}", session.problems);
    assert!(session.stopped_servers().is_empty());

    let die = tool(&session, "mcp__crashy__die");
    let started = Instant::now();
    let err = die.call(json!({}), &ctx(&ws)).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3));
    let message = err.to_string();
    assert_eq!(err.kind().as_str(), "failed", "{message}");
    assert!(message.contains("mcp:crashy:die"), "{message}");
    assert!(message.contains("has stopped"), "{message}");
    assert!(message.starts_with("mcp:crashy:die failed"), "{message}");
    assert!(
        message.contains("crashed on purpose"),
        "stderr tail: {message}"
    );

    // Later calls to the dead server fail at once; the other server is fine.
    let env = tool(&session, "mcp__crashy__env");
    let err = env.call(json!({}), &ctx(&ws)).await.unwrap_err();
    assert!(err.to_string().contains("has stopped"), "{err}");
    let echo = tool(&session, "mcp__everything__echo");
    let out = echo
        .call(json!({"message": "ok"}), &ctx(&ws))
        .await
        .unwrap();
    assert_eq!(out.text, "Echo: ok");

    let stopped = session.stopped_servers();
    assert_eq!(stopped.len(), 1, "{stopped:?}");
    assert_eq!(stopped[0].server, "crashy");
    session.shutdown().await;
}

#[tokio::test]
async fn servers_that_fail_to_start_are_problems_and_never_block_the_others() {
    let (t, _ws) = workspace();
    let mut silent = fake(t.path(), "silent", "silent");
    silent.startup_timeout_secs = 2;
    let configs = [
        McpServerConfig::stdio("badcmd", "/nonexistent/mcp-server", vec![]),
        McpServerConfig::stdio(
            "quitter",
            "sh",
            vec!["-c".into(), "echo 'oops: cannot start' >&2; exit 1".into()],
        ),
        fake(t.path(), "early", "exit-after-init"),
        silent,
        McpServerConfig::stdio("bad name!", "true", vec![]),
        McpServerConfig::http("nohttp", "http://127.0.0.1:9/mcp"),
        everything("everything"),
    ];
    let started = Instant::now();
    let session = connect(&configs, &opts(&["*"])).await;
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_secs(20), "{elapsed:?}");
    assert_eq!(session.servers(), vec!["everything"]);
    assert!(session
        .tools
        .iter()
        .any(|t| t.name() == "mcp__everything__echo"));
    let problem = |server: &str| {
        session
            .problems
            .iter()
            .find(|p| p.server == server)
            .unwrap_or_else(|| panic!("no problem for {server}: {:?}", session.problems))
    };
    assert_eq!(problem("badcmd").kind.as_str(), "spawn");
    assert!(problem("badcmd")
        .message
        .contains("/nonexistent/mcp-server"));
    assert_eq!(problem("quitter").kind.as_str(), "initialize");
    assert!(
        problem("quitter").message.contains("oops: cannot start"),
        "{}",
        problem("quitter").message
    );
    assert!(
        matches!(problem("early").kind.as_str(), "initialize" | "list_tools"),
        "{:?}",
        problem("early")
    );
    assert_eq!(problem("silent").kind.as_str(), "startup_timeout");
    assert_eq!(problem("bad name!").kind.as_str(), "invalid_config");
    assert_eq!(problem("nohttp").kind.as_str(), "initialize");
    session.shutdown().await;
}

#[tokio::test]
async fn results_errors_and_structured_content() {
    let (t, ws) = workspace();
    let session = connect(&[fake(t.path(), "fake", "normal")], &opts(&["fake"])).await;
    assert!(session.problems.is_empty(), "{:?}", session.problems);
    let fail = tool(&session, "mcp__fake__fail");
    let err = fail.call(json!({}), &ctx(&ws)).await.unwrap_err();
    assert_eq!(
        err,
        ToolError::Failed("mcp:fake:fail reported an error: the thing went wrong".into())
    );
    let structured = tool(&session, "mcp__fake__structured");
    let out = structured.call(json!({}), &ctx(&ws)).await.unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&out.text).unwrap(),
        json!({"answer": 42})
    );
    session.shutdown().await;
}

#[tokio::test]
async fn the_apps_secrets_are_scrubbed_from_the_server_env() {
    let (_t, ws) = workspace();
    let mut config = everything("everything");
    if let McpTransport::Stdio { env, .. } = &mut config.transport {
        env.push(("CONFIGURED_VAR".into(), "visible".into()));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let opts = ConnectOptions {
        whitelist: whitelist(&["everything:get-env"]),
        base_env: Some(vec![
            (OsString::from("PATH"), path),
            (
                OsString::from("OPENAI_API_KEY"),
                OsString::from("sk-leak-me"),
            ),
            (OsString::from("HARMLESS"), OsString::from("yes")),
        ]),
        workspace: Some(ws.clone()),
        ..ConnectOptions::default()
    };
    let session = connect(&[config], &opts).await;
    assert!(session.problems.is_empty(), "{:?}", session.problems);
    let out = tool(&session, "mcp__everything__get-env")
        .call(json!({}), &ctx(&ws))
        .await
        .unwrap();
    assert!(out.text.contains("CONFIGURED_VAR") && out.text.contains("visible"));
    assert!(out.text.contains("HARMLESS"));
    assert!(!out.text.contains("sk-leak-me"), "{}", out.text);
    session.shutdown().await;
}

/// The same server over streamable HTTP (`mcp-server-everything streamableHttp`).
#[tokio::test]
async fn streamable_http() {
    let (_t, ws) = workspace();
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mut child = tokio::process::Command::new(bin("mcp-server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "the HTTP server did not start");
        // sleep: the poll interval of the bounded wait for the HTTP server to listen (no readiness signal).
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let config = McpServerConfig::http("web", format!("http://127.0.0.1:{port}/mcp"));
    let session = connect(&[config], &opts(&["web:echo"])).await;
    assert!(session.problems.is_empty(), "{:?}", session.problems);
    assert_eq!(session.tools.len(), 1);
    let out = session.tools[0]
        .call(json!({"message": "over http"}), &ctx(&ws))
        .await
        .unwrap();
    assert_eq!(out.text, "Echo: over http");
    session.shutdown().await;
    let _ = child.kill().await;
}

/// The reference `echo` (read-only, so `mcp:everything:echo:read` when allowed) takes a `message`, not a
/// path: a path hidden in it by `..`, `//`, a newline or leading spaces is refused before
/// the server sees it (the echo would hand back whatever it got).
#[tokio::test]
async fn path_strings_under_any_key_are_checked_after_normalising() {
    let (t, ws) = workspace();
    let mut config = everything("everything");
    config.allow_read_only = true;
    let mut options = opts(&["everything"]);
    options.workspace = Some(ws.clone());
    let session = connect(&[config], &options).await;
    assert!(session.problems.is_empty(), "{:?}", session.problems);
    let echo = tool(&session, "mcp__everything__echo");
    assert_eq!(echo.capability(), "mcp:everything:echo:read");
    std::os::unix::fs::symlink(t.path().join("secret.txt"), ws.join("link")).unwrap();
    let secret = t.path().join("secret.txt").to_string_lossy().into_owned();
    for message in [
        "../secret.txt".to_string(),
        "link".to_string(),
        format!("/{secret}"),
        format!("{secret}\n"),
        format!("note\n{secret}"),
        format!("   {secret}"),
        format!("\t//{secret}"),
    ] {
        let args = json!({ "message": message });
        let err = echo.call(args.clone(), &ctx(&ws)).await.unwrap_err();
        assert!(matches!(err, ToolError::PathRejected(_)), "{args}: {err}");
        assert!(err.to_string().contains("argument `message`"), "{err}");
        let err = echo.effect(&args, &ctx(&ws)).unwrap_err();
        assert!(matches!(err, ToolError::PathRejected(_)), "{args}: {err}");
    }
    for message in ["a.txt", "sub/notes.md", "hello\nworld"] {
        let out = echo
            .call(json!({ "message": message }), &ctx(&ws))
            .await
            .unwrap();
        assert_eq!(out.text, format!("Echo: {message}"));
    }
    session.shutdown().await;
}

/// A reply over the cap fails the call at once with the reason (rmcp alone drops the line
/// and the call waits for its timeout); one under it works.
#[tokio::test]
async fn a_reply_over_the_size_cap_fails_clearly_before_the_timeout() {
    let (t, ws) = workspace();
    let mut config = fake(t.path(), "big", "normal");
    config.call_timeout_secs = 60;
    let session = connect(&[config], &opts(&["big"])).await;
    assert!(session.problems.is_empty(), "{:?}", session.problems);
    let big = tool(&session, "mcp__big__big");

    let out = big
        .call(json!({"size": 8_000_000}), &ctx(&ws))
        .await
        .unwrap();
    assert!(out.text.starts_with("xxxx"), "{}", &out.text[..100]);

    let started = Instant::now();
    let err = big
        .call(json!({"size": 20_000_000}), &ctx(&ws))
        .await
        .unwrap_err();
    let waited = started.elapsed();
    assert_eq!(err.kind().as_str(), "failed", "{err}");
    let reason = format!(
        "sent a message larger than {} MiB (the cap)",
        pocketpilot_mcp::MAX_REPLY_BYTES / (1024 * 1024)
    );
    assert!(err.to_string().contains(&reason), "{err}");
    assert!(err.to_string().contains("mcp:big:big"), "{err}");
    assert!(waited < Duration::from_secs(30), "took {waited:?}");
    // The connection is gone; the next call says why at once.
    let err = big.call(json!({"size": 1}), &ctx(&ws)).await.unwrap_err();
    assert!(err.to_string().contains(&reason), "{err}");
    session.shutdown().await;
}
