use super::*;

fn feed_all(chunks: &[&str]) -> (Assembler, String) {
    let mut asm = Assembler::default();
    let mut shown = String::new();
    for c in chunks {
        if let Some(t) = asm.feed(c).unwrap() {
            shown.push_str(&t);
        }
    }
    (asm, shown)
}

#[test]
fn text_with_null_content_role_chunk_and_separate_finish() {
    let (asm, shown) = feed_all(&[
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"Hé"},"logprobs":null,"finish_reason":null}],"usage":null}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"llo \"q\""}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5},"timings":{"x":1}}"#,
    ]);
    assert!(asm.has_finish_reason());
    let r = asm.finish();
    assert_eq!(shown, "Héllo \"q\"");
    assert_eq!(r.text, shown);
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    assert_eq!(
        r.usage,
        Some(Usage {
            prompt_tokens: 3,
            completion_tokens: 2,
            total_tokens: 5
        })
    );
    assert!(r.tool_calls.is_empty());
}

#[test]
fn parallel_tool_calls_are_assembled_by_index() {
    let (asm, shown) = feed_all(&[
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"get","arguments":"{"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"put","arguments":""}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"x\":1}"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]}}]}"#,
        r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
    ]);
    assert_eq!(shown, "");
    let r = asm.finish();
    assert_eq!(r.tool_calls.len(), 2);
    assert_eq!(
        (r.tool_calls[0].id.as_str(), r.tool_calls[0].name.as_str()),
        ("a", "get")
    );
    assert_eq!(r.tool_calls[0].arguments, r#"{"x":1}"#);
    assert_eq!(
        (r.tool_calls[1].id.as_str(), r.tool_calls[1].name.as_str()),
        ("b", "put")
    );
    assert_eq!(r.tool_calls[1].arguments, "{}");
}

#[test]
fn calls_all_numbered_zero_are_split_by_id_and_missing_ids_are_made_up() {
    let (asm, _) = feed_all(&[
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"one","arguments":"{}"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"two","arguments":"{}"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"three","arguments":"x"}}]}}]}"#,
    ]);
    let r = asm.finish();
    let names: Vec<_> = r.tool_calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["one", "two"]);
    // A fragment without an id continues the latest call at its index.
    assert_eq!(r.tool_calls[1].arguments, "{}x");
    let (asm, _) = feed_all(&[
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"not json"}}]}}]}"#,
    ]);
    let r = asm.finish();
    assert_eq!(r.tool_calls[0].id, "call_0");
    assert_eq!(
        r.tool_calls[0].arguments, "not json",
        "raw text is passed on"
    );
}

#[test]
fn malformed_chunks_and_error_chunks_are_stream_errors() {
    let mut asm = Assembler::default();
    let err = asm
        .feed(r#"{"id":"x","choices":[{"delta":{"con"#)
        .unwrap_err();
    assert!(matches!(err, ProviderError::Stream(_)), "{err}");
    let err = asm
        .feed(r#"{"error":{"message":"upstream died","code":502}}"#)
        .unwrap_err();
    assert!(err.to_string().contains("upstream died"), "{err}");
}

#[test]
fn usage_with_cached_prompt_tokens_from_the_usage_chunk() {
    // OpenAI's shape with include_usage: the last chunk has no choices, and the details
    // say how much of the prompt came from the cache.
    let (asm, _) = feed_all(&[
        r#"{"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}],"usage":null}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":1200,"completion_tokens":1,"total_tokens":1201,"prompt_tokens_details":{"cached_tokens":1024,"audio_tokens":0}}}"#,
    ]);
    let r = asm.finish();
    assert_eq!(r.usage.map(|u| u.prompt_tokens), Some(1200));
    assert_eq!(r.cached_prompt_tokens, Some(1024));
    // Without details there is no figure (not a zero: the server did not say).
    let (asm, _) = feed_all(&[
        r#"{"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":1,"total_tokens":8}}"#,
    ]);
    let r = asm.finish();
    assert_eq!(r.usage.map(|u| u.prompt_tokens), Some(7));
    assert_eq!(r.cached_prompt_tokens, None);
}

#[test]
fn an_overflow_reported_inside_the_stream_is_an_overflow() {
    let mut asm = Assembler::default();
    let err = asm
        .feed(r#"{"error":{"message":"This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens.","code":400}}"#)
        .unwrap_err();
    assert_eq!(
        err,
        ProviderError::ContextOverflow {
            requested: Some(5000),
            window: Some(4096),
            message: "This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens. (400)".into(),
        }
    );
    // Any other error in the stream stays a stream error (it may be retried).
    let err = Assembler::default()
        .feed(r#"{"error":{"message":"upstream went away"}}"#)
        .unwrap_err();
    assert_eq!(err.kind().as_str(), "model_stream");
}

#[test]
fn each_cap_ends_the_answer_with_its_reason() {
    let caps = StreamCaps {
        max_text_bytes: 10,
        max_tool_argument_bytes: 8,
        max_tool_calls: 2,
        ..StreamCaps::default()
    };
    let text = r#"{"choices":[{"index":0,"delta":{"content":"abcdef"}}]}"#;
    let mut asm = Assembler::new(caps);
    asm.feed(text).unwrap();
    let err = asm.feed(text).unwrap_err();
    assert_eq!(
        err,
        ProviderError::StreamLimit {
            limit: StreamLimit::TextBytes,
            cap: 10
        }
    );
    assert!(err.to_string().contains("text bytes per turn"), "{err}");

    let call = |i: usize, args: &str| {
        format!(
            r#"{{"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":{i},"id":"c{i}","function":{{"name":"f","arguments":"{args}"}}}}]}}}}]}}"#
        )
    };
    let mut asm = Assembler::new(caps);
    asm.feed(&call(0, "1234")).unwrap();
    let err = asm.feed(&call(1, "56789")).unwrap_err();
    assert_eq!(
        err,
        ProviderError::StreamLimit {
            limit: StreamLimit::ToolArgumentBytes,
            cap: 8
        }
    );
    let mut asm = Assembler::new(caps);
    asm.feed(&call(0, "")).unwrap();
    asm.feed(&call(1, "")).unwrap();
    let err = asm.feed(&call(2, "")).unwrap_err();
    assert_eq!(
        err,
        ProviderError::StreamLimit {
            limit: StreamLimit::ToolCalls,
            cap: 2
        }
    );
    assert_eq!(err.kind().as_str(), "model_stream_limit");
    // A whole answer is held to the same caps.
    let whole = ModelResponse {
        text: "x".repeat(11),
        ..ModelResponse::default()
    };
    assert!(caps.check(&whole).is_err());
}
