//! Untrusted text never reaches the person's terminal raw: the real `pocketpilot` binary is
//! fed hostile data — escape sequences, OSC 52 (clipboard write), BEL, a bare carriage
//! return, a C1 CSI, a bidi override, a zero-width space — as a memory, a skill's
//! description, an MCP server's name and command, a task's goal, a command's output and an
//! approval's arguments, and every listing that shows them (text and `--json`) is checked
//! byte by byte on stdout and stderr.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod support;

use std::path::Path;
use std::process::Output;

use serde_json::{json, Value};
use support::{text, Harness};

/// Every trick at once; `TAG` lets a test find where it was shown.
const HOSTILE: &str =
    "TAG\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\x1b[1A\rFAKE\u{9b}31m\u{202e}txt.sh\u{200b}\u{7f}END";

/// `args` run from inside the workspace, as a person types them there.
fn output(h: &Harness, args: &[&str]) -> Output {
    h.command(args).current_dir(h.ws()).output().unwrap()
}

/// The first raw control, bidi or invisible character of `bytes`, if any (newline and the
/// listings' own tab separators aside).
fn raw_character(bytes: &[u8]) -> Option<(usize, char)> {
    let text = String::from_utf8_lossy(bytes);
    text.char_indices().find(|&(_, c)| {
        let invisible = matches!(c,
            '\u{00AD}' | '\u{061C}' | '\u{180E}' | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}' | '\u{2060}'..='\u{206F}' | '\u{FEFF}');
        (c.is_control() && c != '\n' && c != '\t') || invisible
    })
}

fn assert_clean(what: &str, out: &Output) {
    for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        if let Some((at, c)) = raw_character(bytes) {
            let text = String::from_utf8_lossy(bytes);
            let from = at.saturating_sub(40);
            panic!(
                "`{what}` wrote {c:?} raw to {stream} at byte {at}: {:?}",
                &text[from..(at + 40).min(text.len())]
            );
        }
    }
}

fn skill(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    // YAML double-quoted escapes: \e is ESC, \a BEL, \r CR, \x9b a C1 CSI.
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: evil\ndescription: \"TAG\\e]52;c;cm0gLXJmIH4=\\a\\e[2J\\rFAKE\\x9b31m\\u202Etxt.sh\\u200BEND\"\n---\nbody\n",
    )
    .unwrap();
}

#[test]
fn no_listing_writes_a_raw_control_character() {
    let h = Harness::new(&[]);
    let ws = h.wss();
    skill(&h.ws().join(".agents/skills/evil"));

    let added = output(&h, &["memory", "add", "--workspace", &ws, HOSTILE]);
    assert!(added.status.success(), "{}", text(&added.stderr));
    assert_clean("memory add", &added);
    // A hostile server name is refused, and the refusal names it escaped.
    let refused = output(
        &h,
        &[
            "mcp",
            "add",
            "evil\x1b[2Jname",
            "--workspace",
            &ws,
            "--",
            "/bin/echo",
        ],
    );
    assert!(!refused.status.success());
    assert_clean("mcp add (hostile name)", &refused);
    assert!(
        text(&refused.stderr).contains(r"evil\x1b[2Jname"),
        "{}",
        text(&refused.stderr)
    );
    let mcp_name = "evil-srv";
    let mcp = output(
        &h,
        &[
            "mcp",
            "add",
            mcp_name,
            "--workspace",
            &ws,
            "--",
            "/bin/echo",
            HOSTILE,
        ],
    );
    assert!(mcp.status.success(), "{}", text(&mcp.stderr));
    assert_clean("mcp add", &mcp);

    // A run whose goal is hostile, whose command prints every trick, and which stops at
    // an approval whose arguments are hostile (no terminal: it waits, exit 3).
    let provider = h.script(
        "run.json",
        json!([
            { "tool_calls": [{ "name": "run_command", "arguments": {
                "command": "printf 'TAG\\033]52;c;cm0gLXJmIH4=\\007\\033[2J\\rFAKE\\302\\23331m\\342\\200\\256txt.sh END\\n'" } }] },
            { "tool_calls": [{ "name": "run_command", "arguments": { "command": format!("echo '{HOSTILE}'") } }] },
            { "text": HOSTILE }
        ]),
    );
    let run = output(
        &h,
        &[
            "run",
            "--workspace",
            &ws,
            "--goal",
            HOSTILE,
            "--provider",
            &provider,
            "--allow",
            "tool:run_command",
        ],
    );
    assert_clean("run", &run);
    // The first command ran without asking only if the rule matched; either way the
    // second is a shell command waiting for approval or done.
    let provider = h.script(
        "ask.json",
        json!([
            { "tool_calls": [{ "name": "run_command", "arguments": { "command": format!("echo '{HOSTILE}'") } }] },
            { "text": "done" }
        ]),
    );
    let ask = output(
        &h,
        &[
            "run",
            "--workspace",
            &ws,
            "--goal",
            HOSTILE,
            "--provider",
            &provider,
        ],
    );
    assert_eq!(ask.status.code(), Some(3), "{}", text(&ask.stderr));
    assert_clean("run (waiting)", &ask);

    let tasks: Value = serde_json::from_slice(&output(&h, &["tasks", "--json"]).stdout).unwrap();
    let ids: Vec<String> = tasks
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_i64().unwrap().to_string())
        .collect();
    let sessions: Value =
        serde_json::from_slice(&output(&h, &["sessions", "--json"]).stdout).unwrap();
    let session = sessions[0]["id"].as_i64().unwrap().to_string();

    let mut walks: Vec<Vec<&str>> = vec![
        vec!["memory", "list"],
        vec!["memory", "list", "--json"],
        vec!["rules", "show", "--workspace", &ws],
        vec!["rules", "show", "--workspace", &ws, "--json"],
        vec!["mcp", "list"],
        vec!["mcp", "list", "--json"],
        vec!["approvals"],
        vec!["approvals", "--json"],
        vec!["tasks"],
        vec!["tasks", "--json"],
        vec!["sessions"],
        vec!["sessions", "--json"],
        vec!["logs"],
        vec!["inbox", &session],
        vec!["inbox", &session, "--json"],
        vec!["sandbox", "show", "--workspace", &ws],
        vec!["mcp", "delete", mcp_name, "--workspace", &ws],
    ];
    for id in &ids {
        walks.push(vec!["show", id]);
        walks.push(vec!["show", id, "--json"]);
        walks.push(vec!["changes", id]);
        walks.push(vec!["changes", id, "--json"]);
    }
    let mut shown = String::new();
    for args in &walks {
        let out = output(&h, args);
        assert_clean(&args.join(" "), &out);
        if args.last() == Some(&"--json") && out.status.success() && !out.stdout.is_empty() {
            // Escaped, and still the same JSON.
            let _: Value = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|err| panic!("{}: {err}\n{}", args.join(" "), text(&out.stdout)));
        }
        shown.push_str(&text(&out.stdout));
    }
    // Each hostile value was listed (escaped), so the walk saw it.
    for (what, escaped) in [
        (
            "memory, goal, output",
            r"TAG\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J",
        ),
        ("JSON", r"TAG\u001b]52;c;cm0gLXJmIH4=\u0007"),
        ("bidi", r"\u{202e}txt.sh"),
        ("bidi in JSON", r"\u202etxt.sh"),
        ("C1", r"FAKE\x9b31m"),
        ("MCP command", r"/bin/echo TAG\x1b]52;c;"),
        ("sandbox line", "sandboxed: writes in the workspace only"),
    ] {
        assert!(
            shown.contains(escaped),
            "{what}: {escaped:?} not shown in:\n{shown}"
        );
    }
    let approvals = text(&output(&h, &["approvals"]).stdout);
    assert!(
        approvals.contains("  sandboxed: writes in the workspace only"),
        "{approvals}"
    );
    let memories = text(&output(&h, &["memory", "list"]).stdout);
    assert!(memories.contains(r"\rFAKE"), "{memories}");
    let rules = text(&output(&h, &["rules", "show", "--workspace", &ws]).stdout);
    assert!(
        rules.contains(r"TAG\x1b]52;c;"),
        "skill description: {rules}"
    );
}
