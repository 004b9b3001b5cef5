#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::path::PathBuf;

use super::*;
use pocketpilot_protocol::RuntimeEvent;
use pocketpilot_store::events::StoredEvent;

/// One line of `exec --json` (and `run --json`): a persisted or live event of a task.
/// The same shape as the store's `StoredEvent`, which is what is printed; the test below
/// keeps the two equal.
#[derive(serde::Serialize, schemars::JsonSchema)]
#[schemars(
    title = "pocketpilot exec --json line",
    description = "One event of a run per line. `sequence` is 0 for live-only events (assistant_delta, stream_reset), else the task's gapless event number. A retry asked because the answer did not match --output-schema is a new task of the same session (task_created with follow_up_of)."
)]
struct ExecLine {
    task_id: i64,
    sequence: i64,
    #[serde(flatten)]
    event: RuntimeEvent,
    /// UTC stamp.
    at: String,
}

fn generated() -> String {
    let schema = schemars::schema_for!(ExecLine);
    serde_json::to_string_pretty(&schema).unwrap() + "\n"
}

#[test]
fn the_published_line_schema_is_generated_from_the_protocol_types() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/exec-schema.json");
    let expected = generated();
    if std::env::var_os("POCKETPILOT_UPDATE_BINDINGS").is_some() {
        std::fs::write(&path, &expected).unwrap();
    }
    let actual = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        actual == expected,
        "{} is stale: run POCKETPILOT_UPDATE_BINDINGS=1 cargo test -p pocketpilot-cli exec",
        path.display()
    );
}

#[test]
fn the_schema_line_is_the_printed_line() {
    let event = RuntimeEvent::TaskCompleted {
        final_answer: "done".into(),
    };
    let stored = StoredEvent {
        task_id: 3,
        sequence: 7,
        event: event.clone(),
        at: "2026-01-01T00:00:00Z".into(),
    };
    let line = ExecLine {
        task_id: 3,
        sequence: 7,
        event,
        at: "2026-01-01T00:00:00Z".into(),
    };
    assert_eq!(
        serde_json::to_value(&stored).unwrap(),
        serde_json::to_value(&line).unwrap()
    );
}

fn schema(v: serde_json::Value) -> OutputSchema {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.json");
    std::fs::write(&p, v.to_string()).unwrap();
    OutputSchema::load(&p).unwrap()
}

#[test]
fn an_answer_is_checked_against_the_schema() {
    let s = schema(serde_json::json!({
        "type": "object",
        "required": ["count"],
        "properties": { "count": { "type": "integer" } }
    }));
    assert_eq!(
        s.check(r#"{"count": 3}"#).unwrap(),
        serde_json::json!({"count": 3})
    );
    assert_eq!(s.check("```json\n{\"count\": 3}\n```").unwrap()["count"], 3);
    let wrong = s.check(r#"{"count": "three"}"#).unwrap_err();
    assert_eq!(wrong.len(), 1);
    assert!(wrong[0].starts_with("at /count:"), "{wrong:?}");
    let missing = s.check("{}").unwrap_err();
    assert!(missing[0].contains("count"), "{missing:?}");
    let prose = s.check("There are three.").unwrap_err();
    assert!(prose[0].starts_with("the answer is not JSON"), "{prose:?}");
}

#[test]
fn a_schema_that_is_not_one_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.json");
    std::fs::write(&p, r#"{"type": "no-such-type"}"#).unwrap();
    assert!(matches!(OutputSchema::load(&p), Err(CliError::Usage(_))));
    std::fs::write(&p, "not json").unwrap();
    assert!(matches!(OutputSchema::load(&p), Err(CliError::Usage(_))));
    assert!(matches!(
        OutputSchema::load(&dir.path().join("absent.json")),
        Err(CliError::Usage(_))
    ));
}

#[test]
fn only_a_whole_fence_is_taken_off() {
    assert_eq!(unfenced("```\n[1]\n```"), "[1]");
    assert_eq!(unfenced("```json\n{\"a\":1}\n```"), "{\"a\":1}");
    assert_eq!(unfenced("{\"a\":1}"), "{\"a\":1}");
    assert_eq!(unfenced("```json\n{\"a\":1}"), "```json\n{\"a\":1}");
}
