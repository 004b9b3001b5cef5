//! Text the parser takes longer than its budget over asks instead of hanging the caller.
//! A binary of its own: the reads it leaves running count against this process's
//! readers, and would make other tests' commands ask.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use pocketpilot_cmdrules::{check, check_and_suggest, suggest, Rule, Verdict, Why};

fn rules(texts: &[&str]) -> Vec<Rule> {
    texts.iter().map(|t| t.parse().unwrap()).collect()
}

/// Found by fuzzing (CI's five-second run): brush-parser backtracks through the `$[` and
/// `$((` in its first word. Unbounded, an unoptimised build (the tests') took 3.3 s to
/// read it, an optimised one 0.5 s; longer variants take minutes.
const SLOW: &str = include_str!("slow/brackets.sh");

#[test]
fn a_command_that_takes_too_long_to_read_asks_and_the_caller_is_not_held() {
    let (allow, deny) = (rules(&["cargo test *", "tee *"]), rules(&["rm *"]));
    // What the runtime calls: the verdict and, on asking, suggestions, from one read.
    let (verdict, suggested) = check_and_suggest(SLOW, &allow, &deny);
    assert!(suggested.is_empty());
    let Verdict::Ask { reason } = &verdict else {
        panic!("{verdict:?}");
    };
    if !cfg!(debug_assertions) {
        // Optimised, it is read within the budget: a parse error.
        return;
    }
    assert_eq!(reason.why, Why::TooSlow, "{reason}");
    assert_eq!(reason.part, SLOW.trim());
    assert!(
        reason
            .to_string()
            .ends_with("took too long to read, so it was not read"),
        "{reason}"
    );

    // One read was left running, not two (suggestions did not read it again): a second
    // slow command is still read, and overruns too. Two reads left running, and nothing
    // new is handed to a reader until one ends:
    // a command with a quote asks, and says why, and nothing is suggested for it. Plain
    // words are still read, in place (nothing in them can overrun).
    let second = check(SLOW, &allow, &deny);
    let quoted = check("cargo test 'core'", &allow, &deny);
    match (&second, &quoted) {
        (Verdict::Ask { reason: slow }, Verdict::Ask { reason: busy })
            if slow.why == Why::TooSlow && busy.why == Why::ReaderBusy =>
        {
            assert!(busy.to_string().contains("still being read"), "{busy}");
            assert!(suggest("cargo build 'x'", &allow, &deny).is_empty());
        }
        // The first read (about 3 s, of which the budget waited 1) ended while the second
        // was read, and the quoted command was read. Not seen so far.
        (_, Verdict::Covered { .. }) => {}
        other => panic!("{other:?}"),
    }
    assert!(
        matches!(
            check("cargo test -p core", &allow, &deny),
            Verdict::Covered { .. }
        ),
        "plain words are read in place"
    );
    assert_eq!(
        suggest("cargo build --release", &allow, &deny)
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        ["cargo build *"]
    );
}
