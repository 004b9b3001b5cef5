//! Context window discovery against local HTTP servers answering with the bodies of the
//! servers it must understand: llama.cpp (recorded from the real server, see
//! `fixtures/window/`), vLLM, OpenRouter, LM Studio and Ollama (their documented shapes).
#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::time::{Duration, Instant};

use pocketpilot_model::{
    discover_context_window, ContextWindow, Discovery, OpenAiConfig, WindowSource,
    ASSUMED_CONTEXT_WINDOW,
};

use crate::support::*;

const NOT_FOUND: &str =
    r#"{"error":{"message":"File Not Found","type":"not_found_error","code":404}}"#;

/// A server answering each path with a body (404 for the others).
async fn server(routes: Vec<(&'static str, String)>) -> RawServer {
    RawServer::start(move |_, request| {
        let line = request.head.lines().next().unwrap_or("").to_owned();
        let path = line.split(' ').nth(1).unwrap_or("");
        match routes.iter().find(|(p, _)| *p == path) {
            Some((_, body)) => Reply::close(json_response("200 OK", body, "")),
            None => Reply::close(json_response("404 Not Found", NOT_FOUND, "")),
        }
    })
    .await
}

fn config(base_url: String, model: &str) -> OpenAiConfig {
    OpenAiConfig {
        model: model.into(),
        ..test_config(&base_url)
    }
}

fn asked(server: &RawServer) -> Vec<String> {
    server
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.head.lines().next().unwrap_or("").to_owned())
        .collect()
}

fn fixture(name: &str) -> String {
    let path = crate_dir().join("fixtures/window").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[tokio::test]
async fn llama_cpp_props_recorded_from_the_real_server() {
    let s = server(vec![
        ("/props", fixture("llamacpp-props.json")),
        ("/v1/models", fixture("llamacpp-models.json")),
    ])
    .await;
    let window = discover_context_window(&config(s.base_url(), "smollm2")).await;
    assert_eq!(
        window,
        ContextWindow {
            tokens: 4096,
            source: WindowSource::Discovered(Discovery::Props)
        }
    );
    // The first question was enough, and it went to the root, not under /v1.
    assert_eq!(asked(&s), vec!["GET /props HTTP/1.1"]);
    // The key goes along (a server behind a gateway may want it).
    let head = s.requests.lock().unwrap()[0].head.to_ascii_lowercase();
    assert!(
        head.contains("authorization: bearer sk-test-secret"),
        "{head}"
    );
}

#[tokio::test]
async fn vllm_max_model_len_from_the_model_list() {
    let s = server(vec![(
        "/v1/models",
        r#"{"object":"list","data":[{"id":"Qwen/Qwen2.5-7B-Instruct","object":"model","created":1,"owned_by":"vllm","root":"Qwen/Qwen2.5-7B-Instruct","parent":null,"max_model_len":32768,"permission":[]}]}"#.into(),
    )])
    .await;
    let window = discover_context_window(&config(s.base_url(), "Qwen/Qwen2.5-7B-Instruct")).await;
    assert_eq!(window.tokens, 32768);
    assert_eq!(window.source, WindowSource::Discovered(Discovery::Models));
    assert_eq!(
        asked(&s),
        vec!["GET /props HTTP/1.1", "GET /v1/models HTTP/1.1"]
    );
}

#[tokio::test]
async fn openrouter_context_length_under_its_api_prefix() {
    let s = server(vec![(
        "/api/v1/models",
        r#"{"data":[{"id":"openai/gpt-4o-mini","name":"OpenAI: GPT-4o-mini","context_length":128000,"top_provider":{"context_length":128000,"max_completion_tokens":16384,"is_moderated":true}},{"id":"meta-llama/llama-3.1-8b-instruct","context_length":131072,"top_provider":{"context_length":16384}}]}"#.into(),
    )])
    .await;
    let base = format!("http://{}/api/v1", s.addr);
    let window = discover_context_window(&config(base, "meta-llama/llama-3.1-8b-instruct")).await;
    assert_eq!(window.tokens, 131072);
    assert_eq!(window.source, WindowSource::Discovered(Discovery::Models));
    assert_eq!(
        asked(&s)[..2],
        ["GET /api/props HTTP/1.1", "GET /api/v1/models HTTP/1.1"]
    );
}

#[tokio::test]
async fn lm_studio_loaded_context_length() {
    let s = server(vec![(
        "/v1/models",
        r#"{"object":"list","data":[{"id":"qwen2.5-7b-instruct","object":"model","type":"llm","max_context_length":32768,"loaded_context_length":8192},{"id":"text-embedding-nomic","object":"model","type":"embeddings"}]}"#.into(),
    )])
    .await;
    let window = discover_context_window(&config(s.base_url(), "qwen2.5-7b-instruct")).await;
    assert_eq!(window.tokens, 8192);
}

#[tokio::test]
async fn ollama_show_after_the_openai_list_says_nothing() {
    let s = server(vec![
        (
            "/v1/models",
            r#"{"object":"list","data":[{"id":"llama3.2:3b","object":"model","created":1,"owned_by":"library"},{"id":"qwen2.5:7b","object":"model","created":1,"owned_by":"library"}]}"#.into(),
        ),
        (
            "/api/show",
            r#"{"license":"…","modelfile":"FROM llama3.2","parameters":"stop \"<|eot_id|>\"","template":"…","details":{"family":"llama","parameter_size":"3.2B"},"model_info":{"general.architecture":"llama","general.parameter_count":3212749888,"llama.context_length":131072,"llama.embedding_length":3072}}"#.into(),
        ),
    ])
    .await;
    let window = discover_context_window(&config(s.base_url(), "llama3.2:3b")).await;
    assert_eq!(window.tokens, 131072);
    assert_eq!(window.source, WindowSource::Discovered(Discovery::Ollama));
    let requests = s.requests.lock().unwrap().clone();
    let show = requests.last().unwrap();
    assert!(show.head.starts_with("POST /api/show "), "{}", show.head);
    let body: serde_json::Value = serde_json::from_slice(&show.body).unwrap();
    assert_eq!(body["model"], "llama3.2:3b");
}

#[tokio::test]
async fn the_setting_then_the_assumption_when_the_server_says_nothing() {
    // OpenAI: a model list without lengths, no /props, no /api/show.
    let s = server(vec![(
        "/v1/models",
        r#"{"object":"list","data":[{"id":"gpt-4o-mini","object":"model","owned_by":"system"},{"id":"gpt-4o","object":"model"}]}"#.into(),
    )])
    .await;
    let mut c = config(s.base_url(), "gpt-4o-mini");
    assert_eq!(
        discover_context_window(&c).await,
        ContextWindow {
            tokens: ASSUMED_CONTEXT_WINDOW,
            source: WindowSource::Assumed
        }
    );
    c.context_window = Some(128_000);
    assert_eq!(
        discover_context_window(&c).await,
        ContextWindow {
            tokens: 128_000,
            source: WindowSource::Setting
        }
    );
}

#[tokio::test]
async fn bodies_that_are_not_json_or_not_sensible_are_ignored() {
    let s = server(vec![
        ("/props", "<html>hello</html>".into()),
        (
            "/v1/models",
            r#"{"data":[{"id":"m","max_model_len":0}]}"#.into(),
        ),
        (
            "/api/show",
            r#"{"model_info":{"llama.context_length":"lots"}}"#.into(),
        ),
    ])
    .await;
    let window = discover_context_window(&config(s.base_url(), "m")).await;
    assert_eq!(window.source, WindowSource::Assumed);
}

#[tokio::test]
async fn a_server_that_is_not_there_costs_little() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let started = Instant::now();
    let window = discover_context_window(&config(format!("http://127.0.0.1:{port}/v1"), "m")).await;
    assert_eq!(window.source, WindowSource::Assumed);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_server_that_never_answers_is_given_up_on() {
    // Accepts, reads, and holds the connection without a word.
    let s = RawServer::start(|_, _| Reply {
        bytes: Vec::new(),
        split_at: None,
        after: After::Hold,
    })
    .await;
    let started = Instant::now();
    let window = bounded(
        Duration::from_secs(30),
        discover_context_window(&config(s.base_url(), "m")),
    )
    .await;
    assert_eq!(window.source, WindowSource::Assumed);
    // Three probes, each bounded by the endpoint's idle timeout (2 s here).
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

/// A count the server does not answer in time is no count *now*; a server without the
/// count endpoints never counts. The runtime keeps asking the first and stops asking the
/// second, so the two must not look alike.
#[tokio::test]
async fn a_count_with_no_answer_is_told_apart_from_a_server_that_does_not_count() {
    use pocketpilot_model::openai::{count_prompt, Uncounted};
    let held = RawServer::start(|_, _| Reply {
        bytes: Vec::new(),
        split_at: None,
        after: After::Hold,
    })
    .await;
    let counted = bounded(
        Duration::from_secs(30),
        count_prompt(&config(held.base_url(), "m"), &user("hi"), &[]),
    )
    .await;
    assert_eq!(counted, Err(Uncounted::NoAnswer));

    let without = server(Vec::new()).await;
    let counted = bounded(
        Duration::from_secs(30),
        count_prompt(&config(without.base_url(), "m"), &user("hi"), &[]),
    )
    .await;
    assert_eq!(counted, Err(Uncounted::NotCounted));

    let counting = server(vec![
        (
            "/apply-template",
            r#"{"prompt":"<|im_start|>user\nhi"}"#.to_owned(),
        ),
        ("/tokenize", r#"{"tokens":[1,2,3,4,5]}"#.to_owned()),
    ])
    .await;
    let counted = bounded(
        Duration::from_secs(30),
        count_prompt(&config(counting.base_url(), "m"), &user("hi"), &[]),
    )
    .await;
    assert_eq!(counted, Ok(5));
}
