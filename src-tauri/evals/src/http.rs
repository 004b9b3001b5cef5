//! `setup.http_servers`: small real HTTP/1.1 servers on loopback for a case (a redirect
//! between two hosts, say). Server `i` is `{http<i>}` in the case's strings; each route
//! answers a fixed status, `Location` and body; other paths get 404.
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinHandle;

use super::case::expand_str;
use super::runner::CaseError;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpServer {
    /// A loopback address to listen on (`127.0.0.2` is another host); any free port.
    #[serde(default = "default_host")]
    pub host: String,
    /// Path → answer.
    pub routes: BTreeMap<String, Route>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    #[serde(default = "default_status")]
    pub status: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    #[serde(default)]
    pub body: String,
    #[serde(default = "default_content_type")]
    pub content_type: String,
}

fn default_content_type() -> String {
    "text/plain".into()
}

fn default_host() -> String {
    "127.0.0.1".into()
}

fn default_status() -> u16 {
    200
}

/// The running servers; dropping them stops them.
pub(super) struct Servers(Vec<JoinHandle<()>>);

impl Drop for Servers {
    fn drop(&mut self) {
        for h in &self.0 {
            h.abort();
        }
    }
}

/// Binds every server (so each URL is known), adds `{http<i>}` to `vars`, then serves the
/// routes with the placeholders expanded.
pub(super) fn start(
    specs: &[HttpServer],
    vars: &mut Vec<(&'static str, String)>,
) -> Result<Servers, CaseError> {
    const NAMES: [&str; 4] = ["http0", "http1", "http2", "http3"];
    if specs.len() > NAMES.len() {
        return Err(CaseError::Case(format!(
            "at most {} http_servers",
            NAMES.len()
        )));
    }
    let mut listeners = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let listener = std::net::TcpListener::bind((spec.host.as_str(), 0))
            .map_err(|e| CaseError::context(format!("http_servers[{i}]: {}", spec.host), e))?;
        listener.set_nonblocking(true)?;
        vars.push((NAMES[i], format!("http://{}", listener.local_addr()?)));
        listeners.push(listener);
    }
    let mut handles = Vec::new();
    for (spec, listener) in specs.iter().zip(listeners) {
        let mut routes = spec.routes.clone();
        for route in routes.values_mut() {
            route.body = expand_str(&route.body, vars);
            route.location = route.location.as_deref().map(|l| expand_str(l, vars));
        }
        let listener = tokio::net::TcpListener::from_std(listener)?;
        handles.push(tokio::spawn(serve(listener, routes)));
    }
    Ok(Servers(handles))
}

async fn serve(listener: tokio::net::TcpListener, routes: BTreeMap<String, Route>) {
    while let Ok((mut socket, _)) = listener.accept().await {
        let request = read_request(&mut socket).await;
        let path = request.split_whitespace().nth(1).unwrap_or("/");
        let path = path.split('?').next().unwrap_or(path);
        let reply = match routes.get(path) {
            Some(r) => {
                let location = r
                    .location
                    .as_deref()
                    .map(|l| format!("location: {l}\r\n"))
                    .unwrap_or_default();
                format!(
                    "HTTP/1.1 {} X\r\ncontent-type: {}\r\n{location}content-length: {}\r\nconnection: close\r\n\r\n{}",
                    r.status,
                    r.content_type,
                    r.body.len(),
                    r.body
                )
            }
            None => "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                .to_string(),
        };
        let _ = socket.write_all(reply.as_bytes()).await;
    }
}

/// The request head (the body is read and dropped: closing on unread bytes would reset the
/// connection under the client).
async fn read_request(socket: &mut tokio::net::TcpStream) -> String {
    let mut data = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = socket.read(&mut buf).await.unwrap_or(0);
        if n == 0 {
            break;
        }
        data.extend_from_slice(&buf[..n]);
        let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&data[..end]).to_ascii_lowercase();
        let length = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(0);
        if data.len() >= end + 4 + length || data.len() > 64 * 1024 * 1024 {
            break;
        }
    }
    String::from_utf8_lossy(&data).into_owned()
}
