use super::*;
use crate::policy::cost::Price;

#[test]
fn a_first_title_is_the_first_line_cut_to_fit() {
    assert_eq!(
        from_goal("Fix the build\nand then the tests"),
        "Fix the build"
    );
    let long = "word ".repeat(20);
    let t = from_goal(&long);
    assert_eq!(t.chars().count(), 61);
    assert!(t.ends_with('…'), "{t}");
}

#[test]
fn what_a_model_writes_becomes_a_plain_title() {
    let cases = [
        ("Fixing the flaky build", Some("Fixing the flaky build")),
        ("\"Rust build fixes.\"", Some("Rust build fixes")),
        ("Title: Weekend trip plan", Some("Weekend trip plan")),
        ("**Title:** Weekend trip plan", Some("Weekend trip plan")),
        (
            "## Cargo test failures\nHere is why...",
            Some("Cargo test failures"),
        ),
        ("\n\n  Résumé des tests  \n", Some("Résumé des tests")),
        (
            "<think>the user wants a title</think>\nDisk usage report",
            Some("Disk usage report"),
        ),
        ("Why is the test slow?", Some("Why is the test slow?")),
        ("   ", None),
        ("\"...\"", None),
        ("", None),
    ];
    for (text, want) in cases {
        assert_eq!(clean(text).as_deref(), want, "{text:?}");
    }
    let babble = clean(&"many words ".repeat(30)).unwrap();
    assert_eq!(babble.chars().count(), 61, "{babble}");
}

fn settings(base_url: &str) -> ProviderSettings {
    ProviderSettings {
        base_url: Some(base_url.into()),
        model: Some("m".into()),
        ..Default::default()
    }
}

fn priced(model: &str, per_mtok: f64) -> Prices {
    Prices {
        models: vec![Price {
            model: model.into(),
            input_per_mtok: per_mtok,
            output_per_mtok: per_mtok,
            cached_input_per_mtok: None,
        }],
    }
}

#[test]
fn a_model_is_free_on_this_computer_or_at_a_zero_price() {
    let none = Prices::default();
    assert!(is_free(
        &settings("http://127.0.0.1:8080/v1"),
        &none,
        "openai:m"
    ));
    assert!(is_free(
        &settings("http://localhost:11434/v1"),
        &none,
        "openai:m"
    ));
    assert!(is_free(
        &settings("http://[::1]:11434/v1"),
        &none,
        "openai:m"
    ));
    let builtin = ProviderSettings {
        api_key_override: Some("per-start key".into()),
        ..settings("http://127.0.0.1:9/v1")
    };
    assert!(is_free(&builtin, &none, "openai:m"));
    // Anywhere else it is taken to charge, unless its price says otherwise.
    assert!(!is_free(
        &settings("https://api.openai.com/v1"),
        &none,
        "openai:m"
    ));
    assert!(!is_free(
        &settings("http://192.168.1.20:11434/v1"),
        &none,
        "openai:m"
    ));
    assert!(is_free(
        &settings("https://api.example.com/v1"),
        &priced("m", 0.0),
        "openai:m"
    ));
    // A price above zero makes even a local server paid: the person said it costs.
    assert!(!is_free(
        &settings("http://127.0.0.1:8080/v1"),
        &priced("openai:m", 0.5),
        "openai:m"
    ));
}
