use super::*;

fn rule(text: &str) -> Rule {
    text.parse().unwrap()
}

#[test]
fn star_at_the_end_takes_any_remaining_arguments() {
    let r = rule("cargo test *");
    assert_eq!(r.program, "cargo");
    assert_eq!(r.args.words, vec!["test".to_string()]);
    assert!(r.args.rest);
    assert_eq!(r.to_string(), "cargo test *");
}

#[test]
fn without_a_star_the_words_are_the_whole_command() {
    let r = rule("git status");
    assert!(!r.args.rest);
    assert!(matches!(
        check("git status", std::slice::from_ref(&r), &[]),
        Verdict::Covered { .. }
    ));
    assert!(matches!(
        check("git status -s", &[r], &[]),
        Verdict::Ask { .. }
    ));
}

#[test]
fn quoting_means_what_it_means_in_the_shell() {
    let r = rule(r#"git commit -m "wip it's" '*'"#);
    assert_eq!(r.args.words, vec!["commit", "-m", "wip it's", "*"]);
    assert!(!r.args.rest);
    let shown = r.to_string();
    assert_eq!(shown, r"git commit -m 'wip it'\''s' '*'");
    assert_eq!(rule(&shown), r);
}

#[test]
fn odd_words_survive_display_and_parse() {
    let words = [
        "",
        "a b",
        "$HOME",
        "`x`",
        "~",
        "#c",
        "-x=1",
        "{a,b}",
        "é",
        "\\",
        "'",
        "{\u{d858a}",
        "{1..\u{d858a}",
    ];
    for w in words {
        let r = Rule {
            program: "prog".into(),
            args: Pattern {
                words: vec![w.to_string()],
                rest: true,
            },
        };
        assert_eq!(rule(&r.to_string()), r, "word {w:?} shown as {r}");
    }
    for (program, words) in [("a=b", vec![]), ("-", vec!["uu%"]), ("if", vec!["x"])] {
        let odd = Rule {
            program: program.into(),
            args: Pattern {
                words: words.into_iter().map(String::from).collect(),
                rest: false,
            },
        };
        assert_eq!(rule(&odd.to_string()), odd, "shown as {odd}");
    }
}

#[test]
fn rules_that_are_not_one_plain_command_are_refused() {
    assert_eq!("".parse::<Rule>(), Err(RuleError::Empty));
    assert_eq!("  # just a note".parse::<Rule>(), Err(RuleError::Empty));
    assert_eq!("cargo * test".parse::<Rule>(), Err(RuleError::StarNotLast));
    assert_eq!("cargo te* x".parse::<Rule>(), Err(RuleError::StarNotLast));
    assert!(matches!(
        "cargo 'a\tb' *".parse::<Rule>(),
        Err(RuleError::NotPlain(_))
    ));
    for text in [
        "cargo test && rm x",
        "cargo $X",
        "X=1 cargo",
        "{ cargo; }",
        "cargo >x",
        "cargo test \"unterminated",
    ] {
        assert!(
            matches!(text.parse::<Rule>(), Err(RuleError::NotPlain(_))),
            "{text} parsed as {:?}",
            text.parse::<Rule>()
        );
    }
}

#[test]
fn rules_are_stored_as_their_text() {
    let rules = vec![rule("cargo test *"), rule("rm *"), rule("git status")];
    let json = serde_json::to_string(&rules).unwrap();
    assert_eq!(json, r#"["cargo test *","rm *","git status"]"#);
    let back: Vec<Rule> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, rules);
    assert!(serde_json::from_str::<Rule>(r#""cargo * x""#).is_err());
}

#[test]
fn reasons_read_as_sentences() {
    let allow = [rule("cargo test *")];
    let Verdict::Ask { reason } = check("cargo test $(curl x)", &allow, &[]) else {
        panic!("expected ask");
    };
    assert_eq!(reason.to_string(), "`$(curl x)` is a command substitution");
    let Verdict::Ask { reason } = check("rm -rf /", &allow, &[]) else {
        panic!("expected ask");
    };
    assert_eq!(reason.to_string(), "`rm -rf /` has no rule");
    assert_eq!(reason.why, Why::NoRule);
}
