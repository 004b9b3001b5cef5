//! The approval prompt on a real terminal (issue 15): the real `pocketpilot` binary runs
//! under a pseudo-terminal, a scripted model asks for a command full of terminal escapes
//! (a line overwrite, a screen redraw, OSC 52 clipboard write, a bidi override), and what
//! reaches the terminal shows each of them as visible text: no raw escape byte at all.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod support;
use std::io::Write;
use std::process::{Command, Stdio};

use support::pty::{follow, openpty, wait_for};

use serde_json::json;

#[test]
fn an_approval_prompt_shows_escape_sequences_visibly_and_sends_none_raw() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    // What the model wants the person to believe: `$ ls -la`, drawn over the real command.
    let command = "cp ../outside/secret.txt /tmp/x\r\x1b[2K\x1b[1A\x1b[2J$ ls -la \
                   \x1b]52;c;cm0gLXJmIH4=\x07 \u{202e}txt.sh\u{200b}";
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        json!([
            { "tool_calls": [{ "name": "run_command", "arguments": { "command": command } }] },
            { "text": "Not run." }
        ])
        .to_string(),
    )
    .unwrap();
    let (mut controller, terminal) = openpty();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pocketpilot"))
        .args(["run", "--workspace"])
        .arg(&ws)
        .args(["--goal", "list the files", "--provider"])
        .arg(format!("scripted:{}", script.display()))
        .env("POCKETPILOT_DATA_DIR", dir.path().join("data"))
        .env("HOME", dir.path())
        .env("TERM", "xterm")
        .stdin(Stdio::from(terminal.try_clone().unwrap()))
        .stdout(Stdio::from(terminal.try_clone().unwrap()))
        .stderr(Stdio::from(terminal))
        .spawn()
        .unwrap();
    let seen = follow(&controller);
    wait_for(&seen, "Approve?");
    controller.write_all(b"n\n").unwrap();
    wait_for(&seen, "Reason:");
    controller.write_all(b"looks wrong\n").unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    wait_for(&seen, "Not run.");
    let bytes = seen.lock().unwrap().clone();
    let shown = String::from_utf8_lossy(&bytes);

    // Every trick is on the screen as text.
    for visible in [
        r"/tmp/x\r\x1b[2K\x1b[1A\x1b[2J$ ls -la",
        r"\x1b]52;c;cm0gLXJmIH4=\x07",
        r"\u{202e}txt.sh\u{200b}",
        "hidden characters",
    ] {
        assert!(
            shown.contains(visible),
            "{visible:?} not shown in:\n{shown}"
        );
    }
    // None of them reached the terminal raw. (The terminal turns each "\n" into "\r\n",
    // so a carriage return is fine only right before a newline.)
    assert!(
        !bytes.contains(&0x1b),
        "a raw ESC reached the terminal:\n{shown:?}"
    );
    assert!(
        !bytes.contains(&0x07),
        "a raw BEL reached the terminal:\n{shown:?}"
    );
    let lone_cr = bytes.windows(2).any(|w| w[0] == b'\r' && w[1] != b'\n');
    assert!(
        !lone_cr,
        "a raw carriage return reached the terminal:\n{shown:?}"
    );
    for raw in ['\u{202e}', '\u{200b}'] {
        assert!(!shown.contains(raw), "{raw:?} reached the terminal raw");
    }
    assert!(!dir.path().join("x").exists());
}
