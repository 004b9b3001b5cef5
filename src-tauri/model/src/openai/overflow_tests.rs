use super::*;
use crate::openai::wire::error_message;

/// The error for a body, the way `http` builds it (message first, then classification).
fn classify(body: &str) -> Option<ProviderError> {
    context_overflow(body, &error_message(body))
}

fn sizes(e: Option<ProviderError>) -> (Option<u32>, Option<u32>) {
    match e {
        Some(ProviderError::ContextOverflow {
            requested, window, ..
        }) => (requested, window),
        other => panic!("expected ContextOverflow, got {other:?}"),
    }
}

#[test]
fn llama_cpp_exceed_context_size_error_with_its_numbers() {
    // Recorded from llama-server (shared fixtures, llamacpp-smollm2-hermes-errors.txt).
    let body = r#"{"error":{"code":400,"message":"request (3033 tokens) exceeds the available context size (2048 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":3033,"n_ctx":2048}}"#;
    assert_eq!(sizes(classify(body)), (Some(3033), Some(2048)));
    // Without the numeric fields, the message alone gives them.
    let body = r#"{"error":{"code":400,"message":"request (4355 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error"}}"#;
    assert_eq!(sizes(classify(body)), (Some(4355), Some(4096)));
    // Older llama.cpp answered 500 with a bare sentence.
    let body = r#"{"error":{"code":500,"message":"the request exceeds the available context size, try increasing the context size or enable context shift","type":"server_error"}}"#;
    assert_eq!(sizes(classify(body)), (None, None));
}

#[test]
fn openai_context_length_exceeded() {
    let body = r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130415 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
    let e = classify(body);
    assert!(e
        .as_ref()
        .is_some_and(|e| e.kind().as_str() == "model_context_overflow" && !e.is_retryable()));
    assert_eq!(sizes(e), (Some(130415), Some(128000)));
    // The code alone is enough (some gateways reword the message).
    let body = r#"{"error":{"message":"Input too long.","code":"context_length_exceeded"}}"#;
    assert_eq!(sizes(classify(body)), (None, None));
}

#[test]
fn vllm_maximum_context_length() {
    let body = r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#;
    assert_eq!(sizes(classify(body)), (Some(5000), Some(4096)));
    let body = r#"{"object":"error","message":"This model's maximum context length is 2048 tokens. However, your request has 3001 input tokens. Please reduce the length of the input messages.","type":"BadRequestError","param":null,"code":400}"#;
    assert_eq!(sizes(classify(body)), (Some(3001), Some(2048)));
}

#[test]
fn other_phrasings() {
    let body = r#"{"object":"error","message":"Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length","type":"invalid_request_error","code":"3051"}"#;
    assert_eq!(sizes(classify(body)), (Some(40000), Some(32768)));
    let body = r#"{"error":{"message":"prompt is too long: 210,000 tokens > 200,000 maximum","type":"invalid_request_error"}}"#;
    assert_eq!(sizes(classify(body)), (Some(210000), Some(200000)));
}

#[test]
fn other_bad_requests_are_not_overflows() {
    for body in [
        // Recorded from llama-server: malformed JSON, missing messages, bad tool_choice.
        r#"{"error":{"code":400,"message":"[json.exception.parse_error.101] parse error","type":"invalid_request_error"}}"#,
        r#"{"error":{"code":400,"message":"'messages' is required","type":"invalid_request_error"}}"#,
        r#"{"error":{"code":400,"message":"Invalid tool_choice: bogus","type":"invalid_request_error"}}"#,
        r#"{"error":{"message":"Invalid 'messages[5].content': string too long.","code":"string_above_max_length"}}"#,
        "plain text complaint",
        "",
    ] {
        assert_eq!(classify(body), None, "{body}");
    }
}
