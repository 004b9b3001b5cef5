use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;
use crate::builtin::test_support::Fixture;

/// A one-route HTTP/1.1 server on 127.0.0.1 answering every request with `body`
/// (or stalling when `stall`). Returns the base URL.
async fn serve(body: Vec<u8>, content_type: &'static str, stall: bool) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let body = body.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let _ = socket.read(&mut buf).await;
                if stall {
                    // sleep: the stalling server: it holds the connection open without answering.
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    return;
                }
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(&body).await;
            });
        }
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn fetches_text() {
    let f = Fixture::new();
    let url = serve(b"hello from the server".to_vec(), "text/plain", false).await;
    let out = f
        .call(&FetchUrl, json!({"url": format!("{url}/page")}))
        .await
        .unwrap();
    assert!(out.text.starts_with("HTTP 200 OK\n"), "{}", out.text);
    assert!(out.text.contains("content-type: text/plain"));
    assert!(out.text.ends_with("hello from the server"), "{}", out.text);
    assert!(out.changed.is_empty());
}

#[tokio::test]
async fn body_is_capped_with_a_note() {
    let f = Fixture::new();
    let url = serve(vec![b'a'; 100_000], "text/plain", false).await;
    let out = f
        .call(&FetchUrl, json!({"url": url, "max_bytes": 1000}))
        .await
        .unwrap();
    let (_, body) = out.text.split_once("\n\n").unwrap();
    assert_eq!(body.chars().take_while(|&c| c == 'a').count(), 1000);
    assert!(out
        .text
        .contains("[truncated: the body is larger than 1000 bytes]"));
}

#[tokio::test]
async fn binary_body_is_not_dumped() {
    let f = Fixture::new();
    let url = serve(b"\x89PNG\0\0\0".to_vec(), "image/png", false).await;
    let out = f.call(&FetchUrl, json!({"url": url})).await.unwrap();
    assert!(
        out.text.contains("[binary content, 7 bytes, not shown]"),
        "{}",
        out.text
    );
}

#[tokio::test]
async fn time_cap_applies() {
    let f = Fixture::new();
    let url = serve(Vec::new(), "text/plain", true).await;
    let err = f
        .call(&FetchUrl, json!({"url": url, "timeout_secs": 1}))
        .await
        .unwrap_err();
    assert_eq!(err, ToolError::TimedOut(1));
}

#[tokio::test]
async fn cancel_stops_a_fetch() {
    let f = Fixture::new();
    let url = serve(Vec::new(), "text/plain", true).await;
    let cancel = f.ctx.cancel.clone();
    tokio::spawn(async move {
        // sleep: cancels while the fetch is in flight at the stalling server, not before it is sent.
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let err = f.call(&FetchUrl, json!({"url": url})).await.unwrap_err();
    assert_eq!(err, ToolError::Cancelled);
}

#[tokio::test]
async fn non_http_schemes_and_bad_arguments_are_rejected() {
    let f = Fixture::new();
    for url in [
        "file:///etc/passwd",
        "ftp://example.com/x",
        "javascript:alert(1)",
        "not a url",
        "",
    ] {
        let err = f.call(&FetchUrl, json!({"url": url})).await.unwrap_err();
        assert_eq!(err.kind().as_str(), "invalid_arguments", "{url}: {err}");
        assert!(f.effect(&FetchUrl, json!({"url": url})).is_err());
    }
    for args in [
        json!({"url": "http://127.0.0.1/", "max_bytes": 0}),
        json!({"url": "http://127.0.0.1/", "max_bytes": MAX_BYTES + 1}),
        json!({"url": "http://127.0.0.1/", "timeout_secs": 0}),
        json!({"url": "http://127.0.0.1/", "method": "POST"}),
    ] {
        let err = f.call(&FetchUrl, args.clone()).await.unwrap_err();
        assert_eq!(err.kind().as_str(), "invalid_arguments", "{args}: {err}");
    }
}

#[tokio::test]
async fn effect_is_the_normalised_url() {
    let f = Fixture::new();
    assert_eq!(
        f.effect(&FetchUrl, json!({"url": "HTTPS://Example.COM"}))
            .unwrap(),
        Effect::Fetch {
            url: "https://example.com/".into()
        }
    );
}

#[tokio::test]
async fn connection_refused_is_a_clear_failure() {
    let f = Fixture::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let err = f
        .call(&FetchUrl, json!({"url": format!("http://{addr}/")}))
        .await
        .unwrap_err();
    assert_eq!(err.kind().as_str(), "failed");
    assert!(err.to_string().contains("fetch failed"), "{err}");
}

/// A server on `ip` that answers `/go` with a 302 to `location` (when given) and anything
/// else with `body`; it counts the requests it got.
async fn serve_redirecting(
    ip: &str,
    location: Option<String>,
    body: &'static str,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = TcpListener::bind((ip, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hits = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            counter.fetch_add(1, Ordering::SeqCst);
            let location = location.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let n = socket.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).to_string();
                let reply = match location {
                    Some(to) if head.starts_with("GET /go ") => format!(
                        "HTTP/1.1 302 Found\r\nlocation: {to}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    ),
                    _ => format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    ),
                };
                let _ = socket.write_all(reply.as_bytes()).await;
            });
        }
    });
    (format!("http://{addr}"), hits)
}

#[tokio::test]
async fn a_redirect_to_another_host_is_reported_not_followed() {
    use std::sync::atomic::Ordering;
    let f = Fixture::new();
    let (other, other_hits) = serve_redirecting("127.0.0.2", None, "BODY-OF-THE-OTHER-HOST").await;
    let target = format!("{other}/secret");
    let (first, _) = serve_redirecting("127.0.0.1", Some(target.clone()), "first").await;
    let out = f
        .call(&FetchUrl, json!({"url": format!("{first}/go")}))
        .await
        .unwrap();
    assert!(!out.text.contains("BODY-OF-THE-OTHER-HOST"), "{}", out.text);
    assert!(out.text.starts_with("HTTP 302 Found\n"), "{}", out.text);
    assert!(out.text.contains(&target), "{}", out.text);
    assert!(
        out.text.contains("call fetch_url with that URL"),
        "{}",
        out.text
    );
    assert_eq!(
        other_hits.load(Ordering::SeqCst),
        0,
        "the other host was contacted"
    );
    // The model's explicit fetch of the new URL is a new call with its own effect.
    assert_eq!(
        f.effect(&FetchUrl, json!({"url": target.clone()})).unwrap(),
        Effect::Fetch { url: target }
    );
}

#[tokio::test]
async fn a_redirect_to_another_port_or_scheme_is_not_followed() {
    let f = Fixture::new();
    let (other, _) = serve_redirecting("127.0.0.1", None, "BODY-ON-ANOTHER-PORT").await;
    let (first, _) = serve_redirecting("127.0.0.1", Some(format!("{other}/x")), "first").await;
    let out = f
        .call(&FetchUrl, json!({"url": format!("{first}/go")}))
        .await
        .unwrap();
    assert!(!out.text.contains("BODY-ON-ANOTHER-PORT"), "{}", out.text);
    assert!(out.text.contains(&format!("{other}/x")), "{}", out.text);
    let https = first.replacen("http://", "https://", 1);
    let (plain, _) = serve_redirecting("127.0.0.1", Some(format!("{https}/y")), "plain").await;
    let out = f
        .call(&FetchUrl, json!({"url": format!("{plain}/go")}))
        .await
        .unwrap();
    assert!(out.text.contains(&format!("{https}/y")), "{}", out.text);
}

#[tokio::test]
async fn a_redirect_within_the_origin_is_followed() {
    let f = Fixture::new();
    let (base, hits) = serve_redirecting("127.0.0.1", Some("/final".into()), "FINAL-BODY").await;
    let out = f
        .call(&FetchUrl, json!({"url": format!("{base}/go")}))
        .await
        .unwrap();
    assert!(out.text.starts_with("HTTP 200 OK\n"), "{}", out.text);
    assert!(
        out.text.contains(&format!("url: {base}/final")),
        "{}",
        out.text
    );
    assert!(out.text.ends_with("FINAL-BODY"), "{}", out.text);
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 2);
}
