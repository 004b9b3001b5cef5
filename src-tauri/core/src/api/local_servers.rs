//! Model servers already running on this computer, for the first-run welcome: Ollama, LM
//! Studio, llama.cpp's server and vLLM on their default ports, plus any base URL listed in
//! `POCKETPILOT_LOCAL_SERVERS` (comma-separated; a server on a port of the person's own).
//! Each is asked for its models (`GET /v1/models`) at once, with a short bound: a port
//! that accepts and never answers costs the welcome at most that long.
use std::time::Duration;

use pocketpilot_model::openai::{list_models, OpenAiConfig};
use serde::Serialize;

/// The servers people run locally, on the ports they listen on unless told otherwise.
const KNOWN: &[(&str, u16)] = &[
    ("Ollama", 11434),
    ("LM Studio", 1234),
    ("llama.cpp server", 8080),
    ("vLLM", 8000),
];

/// Extra base URLs to look at (`http://127.0.0.1:9000/v1,…`).
pub const EXTRA_VAR: &str = "POCKETPILOT_LOCAL_SERVERS";

/// How long one server may take to list its models.
const PROBE_TIMEOUT: Duration = Duration::from_millis(1500);

/// A server that answered with at least one model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct FoundServer {
    /// "Ollama", or "Server" for one from the extra list.
    pub name: String,
    pub base_url: String,
    /// Sorted, as the server lists them.
    pub models: Vec<String>,
}

fn candidates() -> Vec<(String, String)> {
    let mut all: Vec<(String, String)> = KNOWN
        .iter()
        .map(|(name, port)| ((*name).to_owned(), format!("http://127.0.0.1:{port}/v1")))
        .collect();
    if let Ok(extra) = std::env::var(EXTRA_VAR) {
        all.extend(extra_candidates(&extra));
    }
    all
}

/// The base URLs of `EXTRA_VAR`'s value; what is not an http(s) URL is left out.
fn extra_candidates(value: &str) -> Vec<(String, String)> {
    value
        .split(',')
        .map(str::trim)
        .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
        .map(|u| ("Server".to_owned(), u.trim_end_matches('/').to_owned()))
        .collect()
}

/// The servers that answered, in the order above. Nothing found is an empty list, never
/// an error: the welcome then offers the other choices.
pub async fn find_local_servers() -> Vec<FoundServer> {
    probe(candidates()).await
}

async fn probe(candidates: Vec<(String, String)>) -> Vec<FoundServer> {
    let probes = candidates.into_iter().map(|(name, base_url)| async move {
        let config = OpenAiConfig {
            base_url: base_url.clone(),
            connect_timeout: PROBE_TIMEOUT,
            ..OpenAiConfig::default()
        };
        match tokio::time::timeout(PROBE_TIMEOUT, list_models(&config)).await {
            Ok(Ok(models)) if !models.is_empty() => Some(FoundServer {
                name,
                base_url,
                models,
            }),
            _ => None,
        }
    });
    futures::future::join_all(probes)
        .await
        .into_iter()
        .flatten()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A real HTTP server on 127.0.0.1 that lists two models.
    async fn lister() -> String {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let mut buf = vec![0u8; 4096];
                let _ = sock.read(&mut buf).await;
                let body = r#"{"data":[{"id":"qwen2.5-7b"},{"id":"llama-3.1-8b"}]}"#;
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(reply.as_bytes()).await;
            }
        });
        format!("http://127.0.0.1:{port}/v1")
    }

    #[tokio::test]
    async fn a_server_on_a_listed_port_is_found_with_its_models_and_a_closed_one_is_not() {
        let live = lister().await;
        // A port nothing listens on (bound, then let go).
        let closed = {
            let l = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
            format!("http://127.0.0.1:{}/v1", l.local_addr().unwrap().port())
        };
        let list = extra_candidates(&format!("{live}/, {closed}, not-a-url"));
        assert_eq!(list.len(), 2, "{list:?}");
        let found = probe(list).await;
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].name, "Server");
        assert_eq!(found[0].base_url, live);
        assert_eq!(found[0].models, ["llama-3.1-8b", "qwen2.5-7b"]);
    }
}
