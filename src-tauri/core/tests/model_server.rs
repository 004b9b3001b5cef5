//! The settings screen's model server calls against real local servers (issue 20): the
//! model picker lists `GET /v1/models`, and a server that cannot be reached reads as a
//! plain sentence with the detail apart, never as "invalid arguments".
#![allow(clippy::unwrap_used, clippy::expect_used)]
use pocketpilot_core::config::ProviderSettings;
use pocketpilot_core::ops;
use pocketpilot_protocol::ErrorKind;
use pocketpilot_test_support::Fixture;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Serves one request with `body` and hands back the request head it read.
async fn one_shot(body: &'static str) -> (String, tokio::task::JoinHandle<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let served = tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut head = Vec::new();
        let mut buf = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = sock.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
        }
        let answer = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        sock.write_all(answer.as_bytes()).await.unwrap();
        String::from_utf8_lossy(&head).into_owned()
    });
    (base, served)
}

/// A port nothing listens on: bound, then released.
async fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    l.local_addr().unwrap().port()
}

#[tokio::test]
async fn the_model_picker_lists_what_the_server_offers() {
    std::env::remove_var("POCKETPILOT_BASE_URL");
    let f = Fixture::new();
    let (base, served) =
        one_shot(r#"{"object":"list","data":[{"id":"qwen2.5-7b"},{"id":"llama-3.1-8b"}]}"#).await;
    // Nothing saved yet: the form's URL is what is asked.
    let models =
        f.rt.call(ops::ListModels {
            base_url: base.to_string(),
        })
        .await
        .unwrap();
    assert_eq!(models, vec!["llama-3.1-8b", "qwen2.5-7b"]);
    let head = served.await.unwrap();
    assert!(head.starts_with("GET /v1/models "), "{head}");

    let bad =
        f.rt.call(ops::ListModels {
            base_url: "ftp://nowhere".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(bad.kind(), ErrorKind::InvalidArguments);
}

#[tokio::test]
async fn an_unreachable_server_reads_as_a_plain_sentence() {
    let f = Fixture::new();
    let port = closed_port().await;
    let base = format!("http://127.0.0.1:{port}/v1");
    f.rt.call(ops::SetProviderSettings {
        settings: ProviderSettings {
            base_url: Some(base.clone()),
            model: Some("m".into()),
            ..ProviderSettings::default()
        },
    })
    .unwrap();

    let e = f.rt.call(ops::TestConnection {}).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ModelConnect);
    assert_eq!(
        e.to_string(),
        format!("Can't reach the model server at 127.0.0.1:{port}.")
    );
    assert!(!e.to_string().contains("invalid arguments"));
    assert!(e.detail().unwrap().contains(&format!("127.0.0.1:{port}")));

    let listed =
        f.rt.call(ops::ListModels {
            base_url: base.to_string(),
        })
        .await
        .unwrap_err();
    assert_eq!(listed.kind(), ErrorKind::ModelConnect);
    assert_eq!(listed.to_string(), e.to_string());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_that_cannot_reach_its_server_ends_with_that_sentence() {
    std::env::remove_var("POCKETPILOT_PROVIDER");
    let f = Fixture::new();
    let port = closed_port().await;
    f.rt.call(ops::SetProviderSettings {
        settings: ProviderSettings {
            base_url: Some(format!("http://127.0.0.1:{port}/v1")),
            model: Some("m".into()),
            ..ProviderSettings::default()
        },
    })
    .unwrap();
    let mut new = f.task("Say hello", "settings");
    new.provider = None;
    let id = f.rt.call(ops::CreateTask { new: new.clone() }).unwrap();
    f.rt.call(ops::StartTask { task_id: id });
    f.settle(id).await;
    let failed = f.event(id, "task_failed");
    match failed.event {
        pocketpilot_protocol::RuntimeEvent::TaskFailed {
            kind,
            summary,
            error,
        } => {
            assert_eq!(kind, ErrorKind::ModelConnect);
            assert_eq!(
                summary.as_deref(),
                Some(format!("Can't reach the model server at 127.0.0.1:{port}.").as_str())
            );
            assert!(error.contains(&format!("127.0.0.1:{port}")), "{error}");
        }
        other => panic!("not a failure: {other:?}"),
    }
}
