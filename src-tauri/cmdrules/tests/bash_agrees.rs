//! Covered commands run under real bash, with every program on PATH a stub that records
//! its argv: whatever bash actually ran must be what the covering rules allow. This is
//! what ties the matcher's reading of quotes, escapes and separators to bash's.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use pocketpilot_cmdrules::{check, suggest, Rule, Verdict};

const PROGRAMS: &[&str] = &[
    "cargo", "git", "tee", "timeout", "curl", "rm", "sh", "env", "python3",
];

/// A stub per program: appends its name and arguments, NUL-separated, then a record
/// separator, to a file of its own pid in the folder $LOG; exits 0 so `&&` chains run on.
/// One file per process, because the stubs of a pipeline run at once and their writes
/// to a shared file would interleave.
fn stubs(dir: &Path) {
    for name in PROGRAMS {
        let path = dir.join(name);
        std::fs::write(
            &path,
            "#!/bin/sh\nprintf '%s\\0' \"${0##*/}\" \"$@\" >> \"$LOG/$$\"\nprintf '\\036' >> \"$LOG/$$\"\n",
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// Runs `command` under bash in `dir` with only the stubs on PATH; returns each call's argv.
fn run(dir: &Path, command: &str) -> Vec<Vec<String>> {
    let log = dir.join("calls");
    let _ = std::fs::remove_dir_all(&log);
    std::fs::create_dir(&log).unwrap();
    let status = Command::new("/bin/bash")
        .arg("-c")
        .arg(command)
        .current_dir(dir.join("ws"))
        .env_clear()
        .env("PATH", dir.join("bin"))
        .env("LOG", &log)
        .status()
        .unwrap();
    assert!(status.success(), "{command:?} exited with {status}");
    let mut raw = Vec::new();
    for entry in std::fs::read_dir(&log).unwrap() {
        raw.extend(std::fs::read(entry.unwrap().path()).unwrap());
    }
    raw.split(|b| *b == 0x1e)
        .filter(|call| !call.is_empty())
        .map(|call| {
            call.split(|b| *b == 0)
                .map(|a| String::from_utf8(a.to_vec()).unwrap())
                .collect::<Vec<_>>()
        })
        .map(|mut argv| {
            // printf's trailing NUL leaves one empty field at the end.
            argv.pop();
            argv
        })
        .collect()
}

fn allowed_by(rule: &Rule, argv: &[String]) -> bool {
    let Some((program, args)) = argv.split_first() else {
        return false;
    };
    let words = &rule.args.words;
    *program == rule.program
        && args.len() >= words.len()
        && (rule.args.rest || args.len() == words.len())
        && words.iter().zip(args).all(|(w, a)| w == a)
}

#[test]
fn what_bash_runs_for_a_covered_command_is_what_its_rules_allow() {
    let world = world();
    let dir = world.path();
    for f in ["a.rs", "b.rs"] {
        std::fs::write(dir.join("ws").join(f), "").unwrap();
    }

    let allow: Vec<Rule> = [
        "cargo test *",
        "cargo clippy *",
        "git status",
        "tee log",
        "timeout 60 cargo test *",
    ]
    .iter()
    .map(|t| t.parse().unwrap())
    .collect();
    let deny: Vec<Rule> = vec!["rm *".parse().unwrap()];
    let commands = [
        "cargo test",
        "cargo test -p core -- --nocapture",
        "cargo test && cargo clippy --all-targets",
        "cargo test; cargo clippy",
        "cargo test\ncargo clippy\n",
        "cargo test | tee log",
        "cargo test 'my test' \"other one\"",
        "'cargo' test",
        "c\"arg\"o te\\st",
        "cargo test '$HOME' \"a\\\\b\" \"q\\\"\"",
        "cargo test \\\n  -p core # note",
        "cargo test >/dev/null 2>&1",
        "cargo test 2>&1 | tee log",
        "cargo test *.rs",
        "cargo test {a,b}x",
        "cargo test ~",
        "git status",
        "timeout 60 cargo test -q",
        "cargo test a\\ b c\\'d \"e'f\" 'g\"h'",
        "cargo test \\\\ # a note",
        "cargo test a\\$b \"c\\$d\"",
        "cargo test {x x} {1..2\u{d858b}",
        "cargo test 'a'\"b\"c\\ d",
    ];
    for command in commands {
        let Verdict::Covered { by } = check(command, &allow, &deny) else {
            panic!(
                "{command:?} is not covered: {:?}",
                check(command, &allow, &deny)
            );
        };
        let calls = run(dir, command);
        assert!(!calls.is_empty(), "{command:?} ran nothing");
        assert!(
            calls.len() <= by.len(),
            "{command:?} ran {calls:?}, more than its parts {by:?}"
        );
        for argv in &calls {
            assert!(
                by.iter().any(|(_, rule)| allowed_by(rule, argv)),
                "{command:?} ran {argv:?}, which none of {by:?} allows"
            );
        }
    }
}

/// The words the matcher reads are the words bash passes: for an interpreter the rule
/// offered is the whole command, word for word, and must be exactly the argv bash ran.
#[test]
fn the_words_read_are_the_words_bash_passes() {
    let world = world();
    let dir = world.path();
    let commands = [
        "python3 a.py 'two words' three\\ four",
        "python3 \"a\\\"b\" 'c\\d' e\\\\f",
        "python3 'it'\\''s' \"\\$x\" a\\$b",
        "p'y't\"hon\"3 x \\\n  y # note",
        "python3 '' \"\" x",
        "python3 a=b --c=\"d e\" -- '*' \\*",
        "python3 \"a\\nb\" 'a\\nb' \"\\`\" \"#x\" x#y",
        "python3 \"a  b\"\tc\t\td",
    ];
    for command in commands {
        let offered = suggest(command, &[], &[]);
        let [rule] = offered.as_slice() else {
            panic!("{command:?} offered {offered:?}");
        };
        let calls = run(dir, command);
        let mut want = vec![rule.program.clone()];
        want.extend(rule.args.words.iter().cloned());
        assert_eq!(calls, vec![want], "{command:?}");
    }
}

#[test]
fn commands_that_ask_would_have_run_something_no_rule_names() {
    // The other direction, for the classes prefix rules let through: under bash each
    // runs a program outside `cargo test *`, and the matcher does not call it covered.
    // (Process substitution is left to the corpus: bash does not wait for it.)
    let world = world();
    let dir = world.path();
    let allow: Vec<Rule> = vec!["cargo test *".parse().unwrap()];
    let commands = [
        "cargo test; curl x",
        "cargo test && curl x",
        "{ cargo test; curl x; }",
        "cargo test $(curl x)",
        "cargo test `curl x`",
        "cargo test $'a\\\\'$(curl x) #'",
        "env cargo test",
        "timeout 5 cargo test",
        "sh -c 'curl x'",
        "cargo test \u{c}#$(curl x)",
        "cargo test \r#$(curl x)",
        "cargo test\\\n#$(curl x)",
        "cargo test a\\ \\\n#$(curl x)",
        "cargo test \\ #`curl x`",
    ];
    for command in commands {
        let calls = run(dir, command);
        let outside = calls.iter().any(|argv| !allowed_by(&allow[0], argv));
        assert!(outside, "{command:?} ran only {calls:?}");
        assert!(
            !matches!(check(command, &allow, &[]), Verdict::Covered { .. }),
            "{command:?} is covered"
        );
    }
}

/// A temporary folder with the stubs in `bin/` and an empty workspace `ws/`.
fn world() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("bin")).unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    stubs(&dir.path().join("bin"));
    dir
}
