//! A session started in the window is named by the model after its first answer: one
//! small request without tools, sent to a real OpenAI-compatible HTTP server on 127.0.0.1
//! (written here: it answers the run's turns as a stream and the title as one answer, and
//! keeps every request it was sent). The person's own title always wins.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pocketpilot_core::config::ProviderSettings;
use pocketpilot_core::ops;
use pocketpilot_core::{NewTask, TaskStatus};
use pocketpilot_protocol::{PriceForm, RunSource, SessionTitles};
use pocketpilot_test_support::Fixture;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

const ANSWER: &str = "The build fails because `serde` is missing from Cargo.toml.";
const GOAL: &str = "please look at why cargo build fails in this folder\nit worked yesterday";

/// The model server: the run's turns get [`ANSWER`], a title request gets `title`.
struct Server {
    base: String,
    requests: Arc<Mutex<Vec<Value>>>,
    /// While false, title requests wait (a person renames the session meanwhile).
    release: watch::Sender<bool>,
}

impl Server {
    async fn start(title: &'static str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/v1", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (release, released) = watch::channel(true);
        let kept = requests.clone();
        tokio::spawn(async move {
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    return;
                };
                let (kept, released) = (kept.clone(), released.clone());
                tokio::spawn(serve(sock, kept, released, title));
            }
        });
        Server {
            base,
            requests,
            release,
        }
    }

    fn chats(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }

    fn title_requests(&self) -> Vec<Value> {
        self.chats().into_iter().filter(is_title_request).collect()
    }
}

fn is_title_request(body: &Value) -> bool {
    body["messages"][0]["content"]
        .as_str()
        .is_some_and(|s| s.starts_with("Write a title for this conversation"))
}

async fn serve(
    sock: TcpStream,
    kept: Arc<Mutex<Vec<Value>>>,
    mut released: watch::Receiver<bool>,
    title: &'static str,
) {
    let mut reader = BufReader::new(sock);
    let mut request_line = String::new();
    reader.read_line(&mut request_line).await.unwrap();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).await.unwrap();
        if line.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap();
            }
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).await.unwrap();
    let mut sock = reader.into_inner();
    if !request_line.contains("/chat/completions") {
        let answer = "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
        let _ = sock.write_all(answer.as_bytes()).await;
        return;
    }
    let body: Value = serde_json::from_slice(&body).unwrap();
    kept.lock().unwrap().push(body.clone());
    let text = if is_title_request(&body) {
        released.wait_for(|go| *go).await.unwrap();
        title
    } else {
        ANSWER
    };
    let answer = if body["stream"] == json!(true) {
        let chunk = |delta: Value, finish: Value| {
            let c = json!({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
            format!("data: {c}\n\n")
        };
        let events = chunk(json!({"role": "assistant", "content": text}), Value::Null)
            + &chunk(json!({}), json!("stop"))
            + "data: [DONE]\n\n";
        format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{events}")
    } else {
        let whole = json!({"id": "c", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 5, "total_tokens": 45}})
        .to_string();
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{whole}",
            whole.len()
        )
    };
    let _ = sock.write_all(answer.as_bytes()).await;
}

/// A runtime whose provider is `server`, with every other setting as a new install has it.
fn fixture(server: &Server) -> Fixture {
    let f = Fixture::new();
    f.rt.call(ops::SetProviderSettings {
        settings: ProviderSettings {
            base_url: Some(server.base.clone()),
            model: Some("m".into()),
            ..Default::default()
        },
    })
    .unwrap();
    f
}

/// A goal typed in the window, for the configured model.
fn typed(f: &Fixture, goal: &str) -> NewTask {
    NewTask {
        trigger: RunSource::Chat,
        provider: None,
        ..f.task(goal, "")
    }
}

async fn finish(f: &Fixture, task: NewTask) -> i64 {
    let id = f.rt.call(ops::SubmitTask { new: task.clone() }).unwrap();
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    tokio::time::timeout(Duration::from_secs(30), f.rt.call(ops::TitlesSettled {}))
        .await
        .expect("the title request did not end in 30 s");
    f.rt.call(ops::GetTask { id }).unwrap().session_id
}

fn title(f: &Fixture, session: i64) -> String {
    f.rt.call(ops::GetSession {
        session_id: session,
    })
    .unwrap()
    .title
}

#[tokio::test]
async fn a_session_typed_in_the_window_is_named_by_the_model_after_its_first_answer() {
    let server = Server::start("\"Cargo build failure.\"").await;
    let f = fixture(&server);
    assert_eq!(
        f.rt.call(ops::GetSessionTitles {}).unwrap(),
        SessionTitles::FreeModels
    );

    let session = finish(&f, typed(&f, GOAL)).await;
    assert_eq!(title(&f, session), "Cargo build failure");

    // One small request, no tools, not streamed, after the run's own; it shows the model
    // the first message and the answer.
    let chats = server.chats();
    assert_eq!(chats.len(), 2, "{chats:#?}");
    assert!(!is_title_request(&chats[0]));
    let asked = &chats[1];
    assert!(is_title_request(asked), "{asked:#}");
    assert!(
        asked
            .get("tools")
            .is_none_or(|t| t.as_array().is_some_and(Vec::is_empty)),
        "{asked:#}"
    );
    assert_eq!(asked["max_tokens"], 24);
    assert_ne!(asked["stream"], json!(true));
    let shown = asked["messages"][1]["content"].as_str().unwrap();
    assert!(
        shown.contains("cargo build fails") && shown.contains(ANSWER),
        "{shown}"
    );

    // The next task of the session asks nothing more.
    let next = NewTask {
        session_id: Some(session),
        workspace: None,
        ..typed(&f, "and how do I add it?")
    };
    finish(&f, next).await;
    assert_eq!(server.title_requests().len(), 1);
    assert_eq!(title(&f, session), "Cargo build failure");
}

#[tokio::test]
async fn a_title_the_person_gives_while_the_model_is_asked_is_kept() {
    let server = Server::start("Cargo build failure").await;
    server.release.send_replace(false);
    let f = fixture(&server);
    let id =
        f.rt.call(ops::SubmitTask {
            new: typed(&f, GOAL).clone(),
        })
        .unwrap();
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    let session = f.rt.call(ops::GetTask { id }).unwrap().session_id;
    assert_eq!(
        title(&f, session),
        "please look at why cargo build fails in this folder"
    );

    // The title request is held at the server while the person renames the session.
    f.rt.call(ops::RenameSession {
        session_id: session,
        title: "Build broke after update".into(),
    })
    .unwrap();
    server.release.send_replace(true);
    tokio::time::timeout(Duration::from_secs(30), f.rt.call(ops::TitlesSettled {}))
        .await
        .unwrap();
    assert_eq!(server.title_requests().len(), 1);
    assert_eq!(title(&f, session), "Build broke after update");
}

#[tokio::test]
async fn nothing_is_asked_when_titles_are_off_for_a_paid_model_or_outside_the_window() {
    let server = Server::start("Cargo build failure").await;
    let f = fixture(&server);
    let first_line = "please look at why cargo build fails in this folder";

    f.rt.call(ops::SetSessionTitles {
        titles: SessionTitles::Off,
    })
    .unwrap();
    let off = finish(&f, typed(&f, GOAL)).await;
    assert_eq!(title(&f, off), first_line);

    // A price above zero makes the model paid: the default asks nothing of it, "always" does.
    f.rt.call(ops::SetSessionTitles {
        titles: SessionTitles::FreeModels,
    })
    .unwrap();
    f.rt.call(ops::SetPrice {
        form: PriceForm {
            model: "m".into(),
            input: "0.15".into(),
            output: "0.60".into(),
            cached: String::new(),
        },
    })
    .unwrap();
    let paid = finish(&f, typed(&f, GOAL)).await;
    assert_eq!(title(&f, paid), first_line);
    assert!(server.title_requests().is_empty());

    f.rt.call(ops::SetSessionTitles {
        titles: SessionTitles::Always,
    })
    .unwrap();
    let always = finish(&f, typed(&f, GOAL)).await;
    assert_eq!(title(&f, always), "Cargo build failure");

    // A CLI run is named by its goal: that process may end with the run.
    let cli = finish(
        &f,
        NewTask {
            provider: None,
            ..f.task(GOAL, "")
        },
    )
    .await;
    assert_eq!(title(&f, cli), first_line);
    assert_eq!(server.title_requests().len(), 1);
}
