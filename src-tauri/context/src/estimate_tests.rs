use super::*;
use pocketpilot_model::ToolCall;

fn tool() -> ToolSpec {
    ToolSpec {
        name: "read_file".into(),
        description: "Reads a file of the workspace".into(),
        parameters: serde_json::json!({"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}),
    }
}

#[test]
fn openai_models_get_the_real_tokenizer_offline() {
    for model in [
        "gpt-4o-mini",
        "gpt-4.1",
        "openai/gpt-4o",
        "gpt-3.5-turbo",
        "o3-mini",
    ] {
        let e = Estimator::for_model(model);
        assert!(e.has_tokenizer(), "{model}");
    }
    // cl100k and o200k both make these two tokens.
    assert_eq!(Estimator::for_model("gpt-4o-mini").text("hello world"), 2);
    assert_eq!(Estimator::for_model("gpt-4").text("hello world"), 2);
    // Any other model: cl100k stands in (calibrated later), it is not called exact.
    for model in [
        "smollm2",
        "llama3.2:3b",
        "Qwen/Qwen2.5-7B-Instruct",
        "mistral-small",
    ] {
        let e = Estimator::for_model(model);
        assert!(!e.has_tokenizer(), "{model}");
        // cl100k's 2, times the prior ratio for unknown tokenizers (1.15), rounded up.
        assert_eq!(e.text("hello world"), 3, "{model}");
        // Digits are one token each in most open tokenizers; cl100k groups three.
        assert!(e.text("20261201 31415926") >= 17, "{model}");
        assert!(e.margin_fraction() > Estimator::for_model("gpt-4o").margin_fraction());
    }
}

#[test]
fn the_shape_fallback_stays_within_a_factor_of_two_of_a_tokenizer() {
    // Against cl100k, on varied text: the fallback (used only should no encoding load)
    // is rough, but calibration and the margin can absorb its error.
    let bpe = Estimator::for_model("gpt-4");
    let shape = Estimator::shape_based("gpt-4");
    let samples = [
        "The quick brown fox jumps over the lazy dog. It was not amused, and said so at length.",
        "fn main() {\n    let xs: Vec<u32> = (0..10).map(|x| x * 2).collect();\n    println!(\"{xs:?}\");\n}\n",
        r#"{"name":"read_file","arguments":{"path":"src/lib.rs","limit":200},"ok":true,"size":12345}"#,
        "2026-12-01T12:00:00Z INFO worker=3 task=8f2c1d started; 17 files, 4.2 MB\n2026-12-01T12:00:01Z WARN retrying in 500ms\n",
        "Größenänderung der Fenster ist fehlgeschlagen, weil die Einstellungen ungültig sind.",
        "日本語のテキストも数えられます。",
    ];
    for s in samples {
        let (b, e) = (f64::from(bpe.text(s)), f64::from(shape.text(s)));
        let r = e / b;
        assert!((0.5..=2.0).contains(&r), "{s:?}: shape {e} vs bpe {b}");
    }
}

#[test]
fn an_anchor_counts_its_prefix_exactly_and_only_while_unchanged() {
    let e = Estimator::shape_based("m");
    let tools = vec![tool()];
    let mut messages = vec![Message::system("rules"), Message::user("read a.txt")];
    let anchor = Anchor::new(&messages, &tools, 1000);
    messages.push(Message::assistant(
        "",
        vec![ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a.txt"}"#.into(),
        }],
    ));
    messages.push(Message::tool_result("c1", "hello"));
    let est = e.request(&messages, &tools, Some(&anchor));
    assert_eq!(est.anchored, Some(1000));
    let delta = e.message(&messages[2]) + e.message(&messages[3]);
    assert!(
        est.tokens >= 1000 + delta - 2 && est.tokens <= 1000 + delta + 2,
        "{est:?} delta {delta}"
    );
    // Another prefix, other tools, or fewer messages: the anchor does not apply.
    let mut changed = messages.clone();
    changed[1] = Message::user("read b.txt");
    assert_eq!(e.request(&changed, &tools, Some(&anchor)).anchored, None);
    assert_eq!(e.request(&messages, &[], Some(&anchor)).anchored, None);
    assert_eq!(
        e.request(&messages[..1], &tools, Some(&anchor)).anchored,
        None
    );
    // The fingerprint is stable across processes (a fixed function of the bytes).
    assert_eq!(
        fingerprint(&[Message::user("a")], &[]),
        fingerprint(&[Message::user("a")], &[])
    );
    assert_ne!(
        fingerprint(&[Message::user("ab")], &[]),
        fingerprint(&[Message::user("a"), Message::user("b")], &[])
    );
}

/// A stand-in server whose tokenizer costs 1.3 of the shape estimate per content token,
/// 4 per message and a hidden 25-token preamble: calibration must find its way there.
fn server_count(messages: &[Message]) -> u64 {
    let content: f64 = messages
        .iter()
        .map(|m| shape_count(m.content.as_deref().unwrap_or("")) + shape_count(role_name(m.role)))
        .sum();
    (content * 1.3 + 4.0 * messages.len() as f64 + 25.0).round() as u64
}

#[test]
fn calibration_learns_the_ratio_from_what_each_turn_added() {
    let mut e = Estimator::shape_based("m");
    let uncalibrated_margin = e.margin_fraction();
    let mut messages = vec![
        Message::system("You are a careful agent."),
        Message::user("Summarise the files of this project, one line each."),
    ];
    let mut anchor: Option<Anchor> = None;
    let mut errors = Vec::new();
    for turn in 0..12 {
        let est = e.request(&messages, &[], anchor.as_ref());
        let observed = server_count(&messages);
        if turn > 0 {
            errors.push((f64::from(est.tokens) - observed as f64).abs() / observed as f64);
        }
        e.calibrate(observed, &est);
        anchor = Some(Anchor::new(&messages, &[], observed));
        messages.push(Message::assistant(format!("Turn {turn}: the file src/part{turn}.rs defines {} functions and a struct named Part{turn}.", turn * 3), vec![]));
        messages.push(Message::user(format!("Good. Now look at tests/part{turn}.rs and tell me whether it covers the error paths, especially the ones about {}.", "parsing ".repeat(turn + 1))));
    }
    assert!(e.margin_fraction() < uncalibrated_margin);
    let c = e.calibration();
    assert!((c.ratio - 1.3).abs() < 0.15, "{c:?}");
    // Each turn here adds much of the request, so the first deltas show the ratio's
    // error; a few turns in, the evidence has found the server's ratio.
    assert!(errors[0] < 0.2, "{errors:?}");
    assert!(errors[3..].iter().all(|e| *e < 0.03), "{errors:?}");
    // Without the anchor (after a compaction changed the prefix), the learnt ratio and
    // fixed part still bring the whole-request estimate close.
    let cold = e.request(&messages, &[], None);
    let observed = server_count(&messages) as f64;
    assert!(
        (f64::from(cold.tokens) - observed).abs() / observed < 0.08,
        "cold {} vs {observed}: {c:?}",
        cold.tokens
    );
}

#[test]
fn calibration_ignores_nonsense() {
    let mut e = Estimator::shape_based("m");
    let before = e.calibration();
    e.calibrate(0, &e.request(&[Message::user("hi")], &[], None));
    e.calibrate(100, &Estimate::default());
    assert_eq!(e.calibration(), before);
    // A stored calibration that is not finite is refused.
    let bad = Calibration {
        ratio: f64::NAN,
        ..Calibration::default()
    };
    assert_eq!(
        Estimator::shape_based("m")
            .with_calibration(bad)
            .calibration(),
        before
    );
}
