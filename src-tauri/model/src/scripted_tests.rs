use super::*;

fn provider(json: &str) -> ScriptedProvider {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.json");
    std::fs::write(&path, json).unwrap();
    ScriptedProvider::from_file(&path).unwrap()
}

#[tokio::test]
async fn plays_the_turn_that_matches_the_transcript() {
    let p = provider(
        r#"[{"text":"abcdefghij","chunk_size":4,"tool_calls":[{"name":"t","arguments":{"a":1}}]},{"text":"two"}]"#,
    );
    let events: Vec<_> = p.stream(vec![Message::user("hi")], vec![]).collect().await;
    let deltas: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Ok(StreamEvent::Delta(d)) => Some(d.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, vec!["abcd", "efgh", "ij"]);
    let Some(Ok(StreamEvent::Done(done))) = events.last() else {
        panic!("no done: {events:?}")
    };
    assert_eq!(done.tool_calls[0].arguments, r#"{"a":1}"#);
    assert_eq!(done.finish_reason.as_deref(), Some("tool_calls"));

    let history = vec![Message::user("hi"), Message::assistant("x", vec![])];
    let second = p.complete(history, vec![]).await.unwrap();
    assert_eq!(second.text, "two");
}

#[tokio::test]
async fn running_past_the_script_is_an_error_unless_it_repeats() {
    let p = provider(r#"[{"text":"one"}]"#);
    let history = vec![Message::user("hi"), Message::assistant("one", vec![])];
    let err = p.complete(history.clone(), vec![]).await.unwrap_err();
    assert!(err.to_string().contains("turn 2"), "{err}");

    let p = provider(r#"{"repeat_last":true,"turns":[{"text":"again"}]}"#);
    assert_eq!(p.complete(history, vec![]).await.unwrap().text, "again");
}

#[tokio::test]
async fn scripted_errors_keep_their_kind() {
    let p = provider(r#"[{"error":{"kind":"auth","message":"nope"}}]"#);
    let first = p
        .stream(vec![Message::user("x")], vec![])
        .next()
        .await
        .unwrap();
    assert!(matches!(first, Err(ProviderError::Auth { .. })));

    let p = provider(
        r#"[{"error":{"kind":"context_overflow","message":"too long","requested":5000,"window":4096}}]"#,
    );
    let err = p
        .complete(vec![Message::user("x")], vec![])
        .await
        .unwrap_err();
    assert_eq!(
        err,
        ProviderError::ContextOverflow {
            requested: Some(5000),
            window: Some(4096),
            message: "too long".into()
        }
    );
    assert_eq!(err.kind().as_str(), "model_context_overflow");
}

#[test]
fn a_malformed_script_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.json");
    std::fs::write(&path, "{nope").unwrap();
    let err = ScriptedProvider::from_file(&path).unwrap_err();
    assert!(err.to_string().contains("not valid"));
    std::fs::write(&path, "[]").unwrap();
    assert!(matches!(
        ScriptedProvider::from_file(&path),
        Err(ScriptError::Empty(_))
    ));
}

/// After a compaction the request holds a summary and the last turn only: the next turn
/// is the one after the last call the script made, not the count of assistant messages.
#[tokio::test]
async fn a_summary_standing_for_earlier_turns_does_not_replay_them() {
    let p = provider(
        r#"[{"text":"one","tool_calls":[{"name":"t","arguments":{}}]},
            {"text":"two","tool_calls":[{"name":"t","arguments":{}}]},
            {"text":"three","tool_calls":[{"name":"t","arguments":{}}]},
            {"text":"four"}]"#,
    );
    let call = ToolCall {
        id: "call_s3_1".into(),
        name: "t".into(),
        arguments: "{}".into(),
    };
    let compacted = vec![
        Message::user("go"),
        Message::assistant("[Summary of earlier turns] one, two", vec![]),
        Message::assistant("three", vec![call.clone()]),
        Message::tool_result(call.id.clone(), "ok"),
    ];
    assert_eq!(p.complete(compacted, vec![]).await.unwrap().text, "four");
    assert_eq!(turn_of_call_id("call_s12_2"), Some(12));
    assert_eq!(turn_of_call_id("call_1"), None);
}

#[test]
fn a_script_reports_the_window_it_declares_and_no_server() {
    let declared = provider(r#"{"context_window": 2048, "turns": [{"text": "hi"}]}"#);
    assert_eq!(declared.window(), Some(2048));
    assert!(declared.server().is_none());
    assert_eq!(declared.model(), SCRIPTED_MODEL);
    let bare = provider(r#"[{"text": "hi"}]"#);
    assert_eq!(bare.window(), None);
    let full_without = provider(r#"{"turns": [{"text": "hi"}]}"#);
    assert_eq!(full_without.window(), None);
}
