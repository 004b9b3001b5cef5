//! What the first request of a session costs a small local model (figures, not a test):
//! `cargo bench -p pocketpilot-core --bench small_models`; writes
//! bench-results/small-models.txt. Needs the real model server tier
//! (`scripts/setup-model-server.sh`); says so and writes nothing without it.
//!
//! For windows of 4,096 and 32,768 tokens, the first request of a fresh session with every
//! built-in tool on (the system text, the tools, a short goal), as the runtime builds it in
//! the lean mode (small windows) and in the full one: llama-server's own prompt count and
//! its prompt time, with its prompt cache off so each run is processed whole.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]
use std::fmt::Write as _;

use pocketpilot_core::engine::transcript::{lean_system_prompt, system_prompt};
use pocketpilot_test_support::llama::{self, LlamaServer};
use serde_json::{json, Value};

const RUNS: usize = 3;
const GOAL: &str = "List the files in this folder and tell me what the project is.";

fn request(lean: bool) -> Value {
    let mut tools = pocketpilot_tools::Registry::builtin();
    tools.set_lean(lean);
    let system = if lean {
        lean_system_prompt("/home/person/project")
    } else {
        system_prompt("/home/person/project")
    };
    let tools: Vec<Value> = tools
        .specs()
        .into_iter()
        .map(|t| {
            json!({"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.parameters}})
        })
        .collect();
    json!({
        "model": "smollm2",
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": GOAL}],
        "tools": tools,
        "max_tokens": 1,
        "temperature": 0,
        "cache_prompt": false,
    })
}

fn main() {
    if let Err(why) = llama::available() {
        println!("small_models bench skipped: {why}");
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut out = String::from(
        "small-models bench: first request of a fresh session, every built-in tool on;\n\
         llama-server (SmolLM2-135M Q4_1, 2 threads), prompt cache off; median of 3 runs\n",
    );
    let http = reqwest::Client::new();
    rt.block_on(async {
        for window in [4096u32, 32_768] {
            let server = LlamaServer::start(window).await.expect("the server starts");
            for (mode, lean) in [("lean", true), ("full", false)] {
                let body = request(lean);
                let mut times: Vec<f64> = Vec::new();
                let mut tokens = 0;
                for _ in 0..RUNS {
                    let r: Value = http
                        .post(format!("{}/chat/completions", server.base_url()))
                        .json(&body)
                        .send()
                        .await
                        .unwrap()
                        .json()
                        .await
                        .unwrap();
                    tokens = r["usage"]["prompt_tokens"].as_u64().unwrap();
                    times.push(r["timings"]["prompt_ms"].as_f64().unwrap());
                }
                times.sort_by(f64::total_cmp);
                let runtime_picks = if window <= 8192 { lean } else { !lean };
                writeln!(
                    out,
                    "window {window:>6}  {mode}: {tokens:>5} prompt tokens  {:>8.0} ms prompt time{}",
                    times[RUNS / 2],
                    if runtime_picks { "  (the default for this window)" } else { "" }
                )
                .unwrap();
            }
        }
    });
    print!("{out}");
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../bench-results/small-models.txt");
    std::fs::write(&path, &out).unwrap();
}
