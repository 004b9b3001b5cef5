use super::*;

#[test]
fn the_key_never_shows_in_debug_and_is_not_serialized() {
    let config = OpenAiConfig {
        api_key: Some("sk-secret-123".into()),
        extra_headers: vec![("x-api-key".into(), "hdr-secret".into())],
        ..OpenAiConfig::default()
    };
    let provider = OpenAiProvider::new(config.clone()).unwrap();
    for text in [format!("{config:?}"), format!("{provider:?}")] {
        assert!(!text.contains("sk-secret-123"), "{text}");
        assert!(!text.contains("hdr-secret"), "{text}");
    }
    let stored = serde_json::to_string(&config).unwrap();
    assert!(!stored.contains("sk-secret-123"), "{stored}");
    assert!(format!("{config:?}").contains("x-api-key"));
}

#[test]
fn settings_round_trip_with_defaults_for_what_is_missing() {
    let config: OpenAiConfig = serde_json::from_str(
        r#"{"base_url":"http://127.0.0.1:1/v1","model":"m","idle_timeout":1500}"#,
    )
    .unwrap();
    assert_eq!(config.idle_timeout, std::time::Duration::from_millis(1500));
    assert_eq!(config.max_retries, OpenAiConfig::default().max_retries);
    assert!(config.stream);
    assert_eq!(config.chat_url(), "http://127.0.0.1:1/v1/chat/completions");
    let back: OpenAiConfig =
        serde_json::from_str(&serde_json::to_string(&config).unwrap()).unwrap();
    assert_eq!(back.idle_timeout, config.idle_timeout);
    assert_eq!(parse_switch(" False "), Some(false));
    assert_eq!(parse_switch("on"), Some(true));
    assert_eq!(parse_switch("maybe"), None);
}

#[test]
fn bad_settings_are_config_errors() {
    for config in [
        OpenAiConfig {
            base_url: "not a url".into(),
            ..OpenAiConfig::default()
        },
        OpenAiConfig {
            base_url: "ftp://x/v1".into(),
            ..OpenAiConfig::default()
        },
        OpenAiConfig {
            extra_headers: vec![("bad header".into(), "v".into())],
            ..OpenAiConfig::default()
        },
        OpenAiConfig {
            api_key: Some("line\nbreak".into()),
            ..OpenAiConfig::default()
        },
    ] {
        let err = OpenAiProvider::new(config).unwrap_err();
        assert_eq!(
            err.kind(),
            pocketpilot_protocol::ErrorKind::ModelConfig,
            "{err}"
        );
        assert!(!err.to_string().contains("line\nbreak"));
    }
}

#[test]
fn the_request_body_speaks_openai() {
    use crate::chat::ToolCall;
    let config = OpenAiConfig {
        model: "m".into(),
        temperature: Some(0.5),
        max_tokens: Some(10),
        ..OpenAiConfig::default()
    };
    let messages = vec![
        Message::system("s"),
        Message::user("u"),
        Message::assistant(
            "",
            vec![ToolCall {
                id: "c1".into(),
                name: "read".into(),
                arguments: "{\"p\":1}".into(),
            }],
        ),
        Message::tool_result("c1", "ok"),
    ];
    let tools = vec![ToolSpec {
        name: "read".into(),
        description: "reads".into(),
        parameters: serde_json::json!({"type":"object"}),
    }];
    let body = wire::request_body(&config, &messages, &tools, true).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["stream"], true);
    assert_eq!(v["stream_options"]["include_usage"], true);
    assert_eq!(v["max_tokens"], 10);
    assert_eq!(v["tools"][0]["type"], "function");
    assert_eq!(v["tools"][0]["function"]["name"], "read");
    assert_eq!(v["messages"][2]["content"], serde_json::Value::Null);
    assert_eq!(
        v["messages"][2]["tool_calls"][0]["function"]["arguments"],
        "{\"p\":1}"
    );
    assert_eq!(v["messages"][3]["tool_call_id"], "c1");
    let body = wire::request_body(&config, &messages[..2], &[], false).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert!(v.get("stream_options").is_none() && v.get("tools").is_none());
}

/// A call the model broke stays in the history, but as `{}`: llama.cpp renders history
/// through its chat template and fails every later request (HTTP 500) on arguments that
/// are not a JSON object.
#[test]
fn a_broken_calls_arguments_go_back_as_an_empty_object() {
    use crate::chat::ToolCall;
    let config = OpenAiConfig::default();
    let call = |id: &str, arguments: &str| ToolCall {
        id: id.into(),
        name: "write_file".into(),
        arguments: arguments.into(),
    };
    let messages = vec![
        Message::user("u"),
        Message::assistant(
            "",
            vec![
                call("a", ""),
                call("b", "{\"path\": "),
                call("c", "[1, 2]"),
                call("d", "{\"path\":\"x\"}"),
            ],
        ),
    ];
    let body = wire::request_body(&config, &messages, &[], false).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let sent: Vec<&str> = v["messages"][1]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["function"]["arguments"].as_str().unwrap())
        .collect();
    assert_eq!(sent, ["{}", "{}", "{}", "{\"path\":\"x\"}"]);
}

#[test]
fn tool_choice_is_sent_when_set_and_a_forced_call_only_to_answer_the_person() {
    use crate::chat::ToolCall;
    let tools = vec![ToolSpec {
        name: "read".into(),
        description: "reads".into(),
        parameters: serde_json::json!({"type":"object"}),
    }];
    let asked = vec![Message::system("s"), Message::user("u")];
    let mut after_tools = asked.clone();
    after_tools.push(Message::assistant(
        "",
        vec![ToolCall {
            id: "c1".into(),
            name: "read".into(),
            arguments: "{}".into(),
        }],
    ));
    after_tools.push(Message::tool_result("c1", "ok"));
    let sent = |choice: Option<ToolChoice>, messages: &[Message], tools: &[ToolSpec]| {
        let config = OpenAiConfig {
            tool_choice: choice,
            ..OpenAiConfig::default()
        };
        let body = wire::request_body(&config, messages, tools, true).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        v.get("tool_choice").cloned()
    };
    assert_eq!(sent(None, &asked, &tools), None);
    assert_eq!(
        sent(Some(ToolChoice::Required), &asked, &tools),
        Some(serde_json::json!("required"))
    );
    assert_eq!(
        sent(Some(ToolChoice::Function("read".into())), &asked, &tools),
        Some(serde_json::json!({"type":"function","function":{"name":"read"}}))
    );
    // After tool results a forced call would leave the model no way to answer.
    assert_eq!(sent(Some(ToolChoice::Required), &after_tools, &tools), None);
    assert_eq!(
        sent(Some(ToolChoice::None), &after_tools, &tools),
        Some(serde_json::json!("none"))
    );
    // Without tools there is nothing to choose (servers refuse the field then).
    assert_eq!(sent(Some(ToolChoice::Auto), &asked, &[]), None);
    assert_eq!(ToolChoice::parse(" required "), Some(ToolChoice::Required));
    assert_eq!(
        ToolChoice::parse("write_file"),
        Some(ToolChoice::Function("write_file".into()))
    );
    assert_eq!(ToolChoice::parse(""), None);
}

#[test]
fn whole_answers_and_error_bodies_are_read_leniently() {
    let r = parse_completion(
        br#"{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"x","type":"function","function":{"name":"f","arguments":{"a":1}}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":2,"completion_tokens":3}}"#,
    )
    .unwrap();
    assert_eq!(r.text, "");
    assert_eq!(r.tool_calls[0].arguments, r#"{"a":1}"#);
    assert_eq!(r.usage.unwrap().total_tokens, 5);
    assert!(matches!(
        parse_completion(b"<html>oops</html>"),
        Err(ProviderError::InvalidResponse(_))
    ));
    assert!(matches!(
        parse_completion(br#"{"choices":[]}"#),
        Err(ProviderError::InvalidResponse(_))
    ));
    assert_eq!(
        wire::error_message(
            r#"{"error":{"code":400,"message":"'messages' is required","type":"invalid_request_error"}}"#
        ),
        "'messages' is required (400)"
    );
    assert_eq!(
        wire::error_message(r#"{"error":{"message":"Unauthorized.","code":"invalid_api_key"}}"#),
        "Unauthorized. (invalid_api_key)"
    );
    assert_eq!(
        wire::error_message(r#"{"error":"model 'x' not found"}"#),
        "model 'x' not found"
    );
    assert_eq!(wire::error_message("Bad Gateway\n"), "Bad Gateway");
    assert_eq!(wire::error_message(r#"{"detail":"nope"}"#), "nope");
}

#[test]
fn whole_answers_carry_cached_prompt_tokens_and_overflows_in_200_bodies() {
    let r = parse_completion(
        br#"{"choices":[{"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,"prompt_tokens_details":{"cached_tokens":1920}}}"#,
    )
    .unwrap();
    assert_eq!(r.usage.unwrap().prompt_tokens, 2006);
    assert_eq!(r.cached_prompt_tokens, Some(1920));
    // Some gateways answer 200 with an error body.
    let err = parse_completion(
        br#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9001 tokens.","code":"context_length_exceeded"}}"#,
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            ProviderError::ContextOverflow {
                requested: Some(9001),
                window: Some(8192),
                ..
            }
        ),
        "{err:?}"
    );
}

/// A server's model declares no window of its own: the runtime asks the server, whose
/// settings the provider hands over.
#[test]
fn the_provider_points_at_its_server_for_the_window() {
    let config = OpenAiConfig {
        base_url: "http://127.0.0.1:9/v1".into(),
        model: "qwen".into(),
        context_window: Some(4096),
        ..OpenAiConfig::default()
    };
    let provider = OpenAiProvider::new(config).unwrap();
    assert_eq!(provider.window(), None);
    assert_eq!(provider.model(), "qwen");
    let server = provider.server().unwrap();
    assert_eq!(
        (server.base_url.as_str(), server.context_window),
        ("http://127.0.0.1:9/v1", Some(4096))
    );
}
