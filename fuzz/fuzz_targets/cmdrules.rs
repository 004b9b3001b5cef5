//! The command-rule matcher against arbitrary shell text.
//!
//! Properties, checked independently of the matcher's own walk:
//! - Covered only when tree-sitter-bash's tree (walked here afresh) holds none of the
//!   constructs that must ask: substitutions, expansions, brace groups, subshells,
//!   functions, assignments, heredocs, control flow, `&`, `|&`, and no
//!   redirection other than to /dev/null or onto stdout/stderr;
//! - Covered only when the text, read as the shell lexes quotes, has no `$` (but for
//!   `$'…'`), no backtick and no `<(`/`>(` outside single quotes;
//! - Covered only when real bash, run on the text with every builtin but `echo` disabled
//!   and only stub programs on PATH, runs nothing but what the allow rules name, with
//!   arguments they allow (the stubs record argv; anything else is "not found" and
//!   recorded too);
//! - never Covered when the text contains a command the deny rule names at its start;
//! - a rule that parses shows back as text that parses to the same rule;
//! - no panic escapes `check` or rule parsing, whatever the input (brush-parser's own
//!   panics are contained by the matcher, which asks: see `contain_parser_panics`);
//! - `check` answers within its read budget plus a little, whatever the input: text the
//!   parser takes longer over asks (`Why::TooSlow`), kept by `keep_slow`. libFuzzer's
//!   `-timeout` catches an answer that never comes.
#![no_main]
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use pocketpilot_cmdrules::{check, Rule, RuleError, Verdict, Why};

struct Rules {
    allow: Vec<Rule>,
    deny: Vec<Rule>,
}

fn rules() -> &'static Rules {
    static R: OnceLock<Rules> = OnceLock::new();
    R.get_or_init(|| {
        let parse = |t: &str| t.parse::<Rule>().expect("rule");
        Rules {
            // Broad allow rules, so that as much as possible reaches Covered.
            allow: [
                "cargo *",
                "echo *",
                "ls *",
                "git *",
                "tee *",
                "a *",
                "x *",
                "timeout *",
                "bash *",
            ]
            .into_iter()
            .map(parse)
            .collect(),
            deny: vec![parse("rm *")],
        }
    })
}

/// A folder with a stub per program the allow rules name (`echo` stays the builtin),
/// a startup file that disables the other builtins and records commands not found, and
/// an empty workspace to run in.
struct Bash {
    _dir: tempfile::TempDir,
    bin: PathBuf,
    env_file: PathBuf,
    log: PathBuf,
    ws: PathBuf,
}

fn bash() -> &'static Bash {
    static B: OnceLock<Bash> = OnceLock::new();
    B.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = dir.path().join("bin");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&bin).expect("bin");
        std::fs::create_dir_all(&ws).expect("ws");
        for rule in &rules().allow {
            if rule.program == "echo" {
                continue;
            }
            let stub = bin.join(&rule.program);
            std::fs::write(
                &stub,
                "#!/bin/sh\nprintf '%s\\0' \"${0##*/}\" \"$@\" >> \"$LOG\"\nprintf '\\036' >> \"$LOG\"\n",
            )
            .expect("stub");
            std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).expect("mode");
        }
        let env_file = dir.path().join("env.sh");
        std::fs::write(
            &env_file,
            "command_not_found_handle() { echo \"NOT FOUND: $1\" >> \"$LOG\"; return 127; }\n\
             for b in $(compgen -b); do case $b in echo|return|enable) ;; *) enable -n \"$b\";; esac; done\n\
             enable -n enable\n",
        )
        .expect("env file");
        let log = dir.path().join("calls.log");
        Bash { bin, env_file, log, ws, _dir: dir }
    })
}

/// Runs `text` under bash; the argv of every program it ran, or what it tried that was
/// not there.
fn bash_runs(text: &str) -> Result<Vec<Vec<String>>, String> {
    let b = bash();
    let _ = std::fs::remove_file(&b.log);
    Command::new("/bin/bash")
        .arg("-c")
        .arg(text)
        .current_dir(&b.ws)
        .env_clear()
        .env("PATH", &b.bin)
        .env("BASH_ENV", &b.env_file)
        .env("LOG", &b.log)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("bash");
    let raw = std::fs::read(&b.log).unwrap_or_default();
    let text = String::from_utf8_lossy(&raw);
    if let Some(at) = text.find("NOT FOUND: ") {
        return Err(text[at..].lines().next().unwrap_or_default().to_string());
    }
    Ok(raw
        .split(|b| *b == 0x1e)
        .filter(|call| !call.is_empty())
        .map(|call| {
            let mut argv: Vec<String> = call
                .split(|b| *b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            argv.pop(); // after printf's last NUL
            argv
        })
        .collect())
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

const MUST_ASK: &[&str] = &[
    "command_substitution",
    "process_substitution",
    "expansion",
    "simple_expansion",
    "arithmetic_expansion",
    "translated_string",
    "ansi_c_string",
    "subshell",
    "compound_statement",
    "function_definition",
    "variable_assignment",
    "variable_assignments",
    "declaration_command",
    "unset_command",
    "heredoc_redirect",
    "herestring_redirect",
    "negated_command",
    "test_command",
    "if_statement",
    "while_statement",
    "for_statement",
    "c_style_for_statement",
    "case_statement",
    "&",
    "|&",
    ";;",
];

/// The first construct in the tree that must ask, if any.
fn construct_that_asks(text: &str) -> Option<String> {
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .expect("grammar");
    let Some(tree) = parser.parse(text, None) else {
        return Some("no tree".into());
    };
    let mut cursor = tree.walk();
    loop {
        let node = cursor.node();
        // Not its parse errors: tree-sitter-bash errs on text bash runs as plain words
        // (`a ==`), and the matcher does not read its tree. What bash runs of such text
        // is checked by `bash_runs`.
        if MUST_ASK.contains(&node.kind()) {
            return Some(node.kind().to_string());
        }
        if node.kind() == "file_redirect" {
            let dest = node
                .child_by_field_name("destination")
                .and_then(|d| text.get(d.byte_range()))
                .unwrap_or("");
            // Quote removal, roughly: `/dev/nul\l` and `"/dev/null"` are /dev/null.
            let dest: String = dest.chars().filter(|c| !"\\'\"".contains(*c)).collect();
            if !["/dev/null", "1", "2"].contains(&dest.as_str()) {
                return Some(format!("redirect to {dest:?}"));
            }
        }
        if cursor.goto_first_child() || cursor.goto_next_sibling() {
            continue;
        }
        loop {
            if !cursor.goto_parent() {
                return None;
            }
            if cursor.goto_next_sibling() {
                break;
            }
        }
    }
}

/// The first `$`, backtick or process substitution outside single quotes, read with the
/// shell's quoting: backslash escapes outside single quotes, `'…'` literal outside double
/// quotes, `$'…'` a quoted string with its own escapes, `#` at a word's start a comment.
fn expansion_in_text(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let (mut i, mut in_double) = (0, false);
    // Past the end of what is scanned: unterminated quotes are parse errors, asked anyway.
    let closing = |from: usize, escapes: bool| -> Option<usize> {
        let mut j = from;
        while j < bytes.len() {
            match bytes[j] {
                b'\\' if escapes => j += 1,
                b'\'' => return Some(j),
                _ => {}
            }
            j += 1;
        }
        None
    };
    // Whether the last character bash sees (line continuations deleted, escaped
    // characters counted as word characters) ends a word.
    let mut after_boundary = true;
    while i < bytes.len() {
        let word_start = after_boundary;
        after_boundary = b" \t\n;&|()".contains(&bytes[i]);
        match bytes[i] {
            b'\\' if bytes.get(i + 1) == Some(&b'\n') => {
                after_boundary = word_start;
                i += 1;
            }
            b'\\' => i += 1,
            b'#' if !in_double && word_start => {
                // To the newline, which is read next as the boundary it is.
                i = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
                continue;
            }
            b'\'' if !in_double => i = closing(i + 1, false)?,
            b'$' if !in_double && bytes.get(i + 1) == Some(&b'\'') => i = closing(i + 2, true)?,
            b'"' => in_double = !in_double,
            b'$' | b'`' => return Some(i),
            b'<' | b'>' if !in_double && bytes.get(i + 1) == Some(&b'(') => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

/// brush-parser unwraps internally, and the matcher runs it under `catch_unwind` and
/// asks when it panics. A panic that starts in brush-parser is therefore allowed here
/// (quietly), as long as none escapes `check`; any other panic still aborts, as libFuzzer
/// expects.
fn contain_parser_panics() {
    static HOOK: OnceLock<()> = OnceLock::new();
    HOOK.get_or_init(|| {
        let abort = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let in_parser = info
                .location()
                .is_some_and(|at| at.file().contains("brush-parser"));
            if !in_parser {
                abort(info);
            }
        }));
    });
}

/// Text the matcher took longer than its budget to read asks, by design, and is not a
/// failure; it is kept in `slow/cmdrules/` (beside `artifacts/`), where a long run leaves
/// the shapes worth refusing before parsing. (Past two such reads left running, every
/// input asks as `ReaderBusy` until one ends, and the run explores little more.)
fn keep_slow(data: &[u8]) {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    data.hash(&mut hasher);
    let dir = std::path::Path::new("slow/cmdrules");
    if std::fs::create_dir_all(dir).is_ok() {
        let _ = std::fs::write(dir.join(format!("{:016x}", hasher.finish())), data);
    }
}

fuzz_target!(|data: &[u8]| {
    contain_parser_panics();
    if std::panic::catch_unwind(|| one_input(data)).is_err() {
        std::process::abort();
    }
});

fn one_input(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let rules = rules();

    if let Ok(rule) = text.parse::<Rule>() {
        let shown = rule.to_string();
        match shown.parse::<Rule>() {
            // Not read (see `keep_slow`): nothing to compare.
            Err(RuleError::TooSlow | RuleError::ReaderBusy) => {}
            again => assert_eq!(again.as_ref(), Ok(&rule), "rule {text:?} shown as {shown:?}"),
        }
    }

    let verdict = check(text, &rules.allow, &rules.deny);
    if let Verdict::Ask { reason } = &verdict {
        match reason.why {
            Why::TooSlow => return keep_slow(data),
            Why::ReaderBusy => return,
            _ => {}
        }
    }
    assert_eq!(
        verdict,
        check(text, &rules.allow, &rules.deny),
        "not deterministic"
    );
    if let Verdict::Covered { by } = &verdict {
        assert!(!by.is_empty(), "covered with no part: {text:?}");
        if let Some(what) = construct_that_asks(text) {
            panic!("{text:?} covered although it holds {what}");
        }
        if let Some(at) = expansion_in_text(text) {
            panic!("{text:?} covered although it expands at byte {at}");
        }
        match bash_runs(text) {
            Err(not_found) => panic!("{text:?} covered, but bash tried {not_found}"),
            Ok(calls) => {
                for argv in calls {
                    assert!(
                        rules.allow.iter().any(|r| allowed_by(r, &argv)),
                        "{text:?} covered, but bash ran {argv:?}"
                    );
                }
            }
        }
        for (part, _) in by {
            let first = part.split_whitespace().next().unwrap_or("");
            assert!(
                first != "rm" && !first.ends_with("/rm"),
                "{text:?} covered with {part:?}"
            );
        }
    }
}
