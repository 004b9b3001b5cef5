//! A small JSON server on 127.0.0.1 for tests that need a server to say something exact
//! (a llama.cpp-like server's counts and refusals): one request per connection, its path
//! and JSON body handed to the test's handler.
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// What the server does with a request.
pub enum Reply {
    /// This status and JSON body.
    Json(u16, Value),
    /// Nothing: the connection is held until the client gives up, as a busy server does.
    Hold,
}

/// Starts the server; its root, `http://127.0.0.1:PORT`. It runs until the test's runtime
/// ends.
pub async fn serve(handler: impl Fn(&str, &Value) -> Reply + Send + Sync + 'static) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let root = format!("http://{}", listener.local_addr().unwrap());
    let handler = std::sync::Arc::new(handler);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let handler = handler.clone();
            tokio::spawn(async move {
                let Some((path, body)) = read_request(&mut socket).await else {
                    return;
                };
                match handler(&path, &body) {
                    Reply::Json(status, body) => {
                        let body = body.to_string();
                        let reply = format!(
                            "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                            reason(status),
                            body.len()
                        );
                        let _ = socket.write_all(reply.as_bytes()).await;
                        let _ = socket.shutdown().await;
                    }
                    Reply::Hold => {
                        let mut buf = [0u8; 1024];
                        while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
                    }
                }
            });
        }
    });
    root
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        _ => "Status",
    }
}

/// One request read whole (its head, then Content-Length bytes of body): its path and
/// its body as JSON (`Null` when it has none).
async fn read_request(socket: &mut TcpStream) -> Option<(String, Value)> {
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = socket.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&data);
        let Some(end) = text.find("\r\n\r\n") else {
            continue;
        };
        let length = text[..end]
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse::<usize>().ok())?
            })
            .unwrap_or(0);
        if data.len() >= end + 4 + length {
            let path = text.split(' ').nth(1)?.to_owned();
            let body = serde_json::from_slice(&data[end + 4..]).unwrap_or(Value::Null);
            return Some((path, body));
        }
    }
}
