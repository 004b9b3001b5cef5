//! A real tool call from the real model server: llama.cpp's `llama-server` with SmolLM2
//! parses the call itself (`--jinja`) and streams `tool_calls` deltas; the runtime
//! assembles it, asks the person, runs it, and the model answers after its result.
//! Skips loudly when the server is not built, fails when POCKETPILOT_REQUIRE_MODEL_SERVER
//! is set.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]
use pocketpilot_core::ops;
use pocketpilot_test_support as support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pocketpilot_core::config::ProviderSettings;
use pocketpilot_core::{ApprovalAnswer, NewTask, TaskStatus};
use pocketpilot_model::openai::{discover_server_model, TOOL_CHOICE_VAR};
use pocketpilot_model::{OpenAiConfig, TemplateFamily};
use pocketpilot_protocol::EventKind;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use pocketpilot_test_support::llama::LlamaServer;

/// A TCP relay in front of the server that keeps what each connection sent, so the test
/// can read the request bodies the runtime put on the wire.
struct Relay {
    port: u16,
    sent: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl Relay {
    async fn start(upstream: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let sent: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
        let log = sent.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)).await else {
                    continue;
                };
                let slot = {
                    let mut all = log.lock().unwrap();
                    all.push(Vec::new());
                    all.len() - 1
                };
                let log = log.clone();
                tokio::spawn(async move {
                    let (mut client_r, mut client_w) = client.into_split();
                    let (mut server_r, mut server_w) = server.into_split();
                    let up = async {
                        let mut buf = vec![0u8; 64 * 1024];
                        loop {
                            let n = match client_r.read(&mut buf).await {
                                Ok(0) | Err(_) => break,
                                Ok(n) => n,
                            };
                            log.lock().unwrap()[slot].extend_from_slice(&buf[..n]);
                            if server_w.write_all(&buf[..n]).await.is_err() {
                                break;
                            }
                        }
                        let _ = server_w.shutdown().await;
                    };
                    let down = async {
                        let _ = tokio::io::copy(&mut server_r, &mut client_w).await;
                        let _ = client_w.shutdown().await;
                    };
                    tokio::join!(up, down);
                });
            }
        });
        Self { port, sent }
    }

    fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The JSON bodies of the chat-completions requests sent so far, in order.
    fn chat_requests(&self) -> Vec<serde_json::Value> {
        let mut out = Vec::new();
        for bytes in self.sent.lock().unwrap().iter() {
            let mut rest: &[u8] = bytes;
            while let Some(end) = find(rest, b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&rest[..end]).to_ascii_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map_or(0, |v| v.trim().parse().unwrap());
                let body = &rest[end + 4..(end + 4 + length).min(rest.len())];
                if head.starts_with("post ") && head.contains("/chat/completions") {
                    out.push(serde_json::from_slice(body).unwrap());
                }
                rest = &rest[(end + 4 + length).min(rest.len())..];
            }
        }
        out
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The person's earlier turns in the session: each a file written with the person's leave
/// (the few-shot history the 135M model needs before it writes a call of its own). Three
/// are not enough once each call is followed by its result: the model then writes a
/// `<tool_response>` of its own instead of a call, and five leave it at the margin (a few
/// words more in the system text tipped it to prose).
const EARLIER: [(&str, &str); 7] = [
    ("a.txt", "apple"),
    ("b.txt", "banana"),
    ("c.txt", "cherry"),
    ("d.txt", "date"),
    ("e.txt", "elder"),
    ("f.txt", "fig"),
    ("g.txt", "grape"),
];

fn kinds_of(f: &Fixture, id: i64) -> Vec<EventKind> {
    f.rt.call(ops::TaskEvents { task_id: id })
        .unwrap()
        .iter()
        .map(|e| e.kind())
        .collect()
}

async fn settled(f: &Fixture, id: i64) -> TaskStatus {
    // A turn of the real model on two busy cores takes seconds to a minute; the bound only
    // keeps a hung server from hanging the suite.
    tokio::time::timeout(
        Duration::from_secs(600),
        f.rt.call(ops::WaitSettled { task_id: id }),
    )
    .await
    .expect("the task settles")
    .unwrap()
}

/// The server's own tool-call path, end to end: with `tool_choice: "required"` and a
/// session whose earlier turns called a tool, llama-server parses SmolLM2's call and
/// streams it as `tool_calls` deltas; the runtime assembles it, waits for the person's
/// approval, writes the file, and the model answers after the result.
#[tokio::test]
async fn the_servers_own_tool_call_is_approved_run_and_answered() {
    let Some(server) = LlamaServer::start(4096).await else {
        return;
    };
    // The server names its chat template, and the runtime reads its family from it.
    let named = discover_server_model(&OpenAiConfig {
        base_url: server.base_url(),
        model: "smollm2".into(),
        ..OpenAiConfig::default()
    })
    .await;
    let template = named
        .chat_template
        .expect("llama-server names its template");
    assert_eq!(
        TemplateFamily::from_chat_template(&template),
        TemplateFamily::Hermes
    );

    let relay = Relay::start(server.port).await;
    std::env::set_var("POCKETPILOT_API_KEY", "none");
    std::env::set_var(TOOL_CHOICE_VAR, "required");
    let f = Fixture::new();
    f.rt.call(ops::SetProviderSettings {
        settings: ProviderSettings {
            base_url: Some(relay.base_url()),
            model: Some("smollm2".into()),
            // Greedy decoding: the same prompt gets the same answer.
            temperature: Some(0.0),
            ..ProviderSettings::default()
        },
    })
    .unwrap();

    // One script for the whole session: it plays the turn the transcript has reached.
    let turns: Vec<serde_json::Value> = EARLIER
        .iter()
        .flat_map(|(file, word)| {
            [
                serde_json::json!({ "tool_calls": [{ "name": "write_file", "arguments": { "path": file, "content": word } }] }),
                serde_json::json!({ "text": "Done." }),
            ]
        })
        .collect();
    let script = f.script("earlier.json", serde_json::Value::Array(turns));
    let mut session = None;
    for (file, word) in EARLIER {
        let task = NewTask {
            session_id: session,
            grants: vec![pocketpilot_protocol::Capability::FS_WRITE],
            ..f.task(&format!("Write {word} to {file}."), &script)
        };
        let id = f.rt.call(ops::SubmitTask { new: task.clone() }).unwrap();
        let status = settled(&f, id).await;
        let t = f.rt.call(ops::GetTask { id }).unwrap();
        assert_eq!(status, TaskStatus::Completed, "{:?}", t.error);
        assert_eq!(read(&f.ws(file)), word);
        session = Some(f.rt.call(ops::GetTask { id }).unwrap().session_id);
    }

    let task = NewTask {
        session_id: session,
        // The configured model from here on, the session's scripted turns behind it.
        ..f.task("Write blue to colour.txt.", "settings")
    };
    let id = f.rt.call(ops::SubmitTask { new: task.clone() }).unwrap();
    let status = settled(&f, id).await;
    assert_eq!(
        status,
        TaskStatus::WaitingApproval,
        "{:?} {:?}",
        f.rt.call(ops::GetTask { id }).unwrap().error,
        kinds_of(&f, id)
    );
    let pending = f.rt.call(ops::PendingApprovals {}).unwrap();
    assert_eq!(pending.len(), 1, "{pending:?}");
    let approval = &pending[0];
    assert_eq!(approval.task_id, id);
    assert_eq!(approval.tool, "write_file", "{approval:?}");
    let path = approval.arguments["path"]
        .as_str()
        .expect("a path")
        .to_owned();
    let content = approval.arguments["content"]
        .as_str()
        .expect("a content")
        .to_owned();
    assert!(!f.ws(&path).exists(), "nothing is written before approval");
    // The server's own call: not one read back from the answer's text.
    assert!(!kinds_of(&f, id).contains(&EventKind::ToolCallRepaired));

    f.answer(
        approval.id,
        ApprovalAnswer {
            approve: true,
            by: "test".into(),
            ..Default::default()
        },
    );
    let status = settled(&f, id).await;
    let requests = relay.chat_requests();
    let t = f.rt.call(ops::GetTask { id }).unwrap();
    assert_eq!(
        status,
        TaskStatus::Completed,
        "{:?} {:?}",
        t.error,
        kinds_of(&f, id)
    );
    assert!(t.final_answer.is_some());

    let kinds = kinds_of(&f, id);
    let at = |k: EventKind| {
        kinds
            .iter()
            .position(|x| *x == k)
            .unwrap_or_else(|| panic!("{k:?} in {kinds:?}"))
    };
    assert!(at(EventKind::ApprovalResolved) < at(EventKind::ToolCallStarted));
    assert!(at(EventKind::ToolCallStarted) < at(EventKind::ToolCallCompleted));
    assert!(at(EventKind::ToolCallCompleted) < at(EventKind::AgentCompleted));
    let started = f.event(id, "tool_call_started").payload();
    assert_eq!(started["call_id"], approval.call_id.as_str());
    assert_eq!(started["decision_source"], "user");
    assert_eq!(
        read(&f.ws(&path)),
        content,
        "the approved write took effect"
    );

    // On the wire: every request streamed (the call came as `tool_calls` deltas, not
    // from a whole-answer fallback); the one that got the call forced it and ended with
    // the person's message; the one after the result forced nothing and carried the
    // call and its result back.
    assert!(requests.len() >= 2, "{requests:?}");
    assert!(requests.iter().all(|r| r["stream"] == true));
    let (asked, answered) = (&requests[0], &requests[1]);
    assert_eq!(asked["tool_choice"], "required");
    assert_eq!(
        asked["messages"].as_array().unwrap().last().unwrap()["role"],
        "user"
    );
    assert!(answered.get("tool_choice").is_none(), "{answered}");
    let messages = answered["messages"].as_array().unwrap();
    let call = messages
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
        .find(|c| c["id"] == approval.call_id.as_str())
        .expect("the call is sent back");
    assert_eq!(call["function"]["name"], "write_file");
    assert_eq!(messages.last().unwrap()["role"], "tool");
    assert_eq!(
        messages.last().unwrap()["tool_call_id"],
        approval.call_id.as_str()
    );
}
