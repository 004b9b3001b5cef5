//! Untrusted text on the person's terminal. Memories, skill descriptions, MCP server names
//! and commands, task goals, approval arguments, tool output and log lines can all come
//! from a model, a repository or a command; a terminal acts on what it is sent (escape
//! sequences redraw the screen or write the clipboard with OSC 52, `\r` overwrites a line,
//! bidi overrides reorder what is read). Every such string goes through [`shown`] (one
//! line) or [`shown_block`] (text whose newlines are its own) before it is printed, and
//! JSON output through [`json_safe`].
use std::borrow::Cow;
use std::fmt::Write;

use pocketpilot_protocol::visible;

/// One line of untrusted text: every control character (newline and tab too, so a value
/// cannot start a line of its own that looks like the CLI's), bidi control and invisible
/// character written as a visible escape (`\x1b`, `\n`, `\u{202e}`).
pub(crate) fn shown(s: &str) -> Cow<'_, str> {
    let v = visible(s);
    if !v.contains(['\n', '\t']) {
        return v;
    }
    Cow::Owned(v.replace('\n', "\\n").replace('\t', "\\t"))
}

/// Untrusted text of several lines (tool output, a diff): like [`shown`], but newlines
/// and tabs stay.
pub(crate) fn shown_block(s: &str) -> Cow<'_, str> {
    visible(s)
}

/// JSON text with every character a terminal could act on escaped as `\uXXXX`.
/// serde_json already escapes C0 controls inside strings; DEL, the C1 controls (`\u{9b}`
/// is a one-byte CSI to some terminals), bidi controls and invisible characters it leaves
/// raw. Outside strings JSON text has only ASCII punctuation, so escaping every such
/// character wherever it is keeps the JSON valid and its meaning unchanged.
pub(crate) fn json_safe(text: String) -> String {
    if !pocketpilot_protocol::has_hidden(&text.replace(['\n', '\t'], "")) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if c == '\n' || c == '\t' || !pocketpilot_protocol::has_hidden(c.encode_utf8(&mut [0; 4])) {
            out.push(c);
            continue;
        }
        let mut units = [0u16; 2];
        for unit in c.encode_utf16(&mut units) {
            let _ = write!(out, "\\u{unit:04x}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTILE: &str = "a\x1b[2J\x1b]52;c;aGk=\x07b\rc\u{9b}31m\u{202e}d\ne\tf\u{200b}\u{7f}";

    fn no_control(s: &str) -> bool {
        !pocketpilot_protocol::has_hidden(s)
    }

    #[test]
    fn one_line_has_no_control_character_left_and_keeps_plain_text() {
        let s = shown(HOSTILE);
        assert!(no_control(&s) && !s.contains(['\n', '\t']), "{s}");
        assert_eq!(
            s,
            "a\\x1b[2J\\x1b]52;c;aGk=\\x07b\\rc\\x9b31m\\u{202e}d\\ne\\tf\\u{200b}\\x7f"
        );
        assert!(matches!(shown("plain é ✓"), Cow::Borrowed("plain é ✓")));
    }

    #[test]
    fn a_block_keeps_its_lines() {
        let s = shown_block("out\x1b[1A\nnext\tcol");
        assert_eq!(s, "out\\x1b[1A\nnext\tcol");
    }

    #[test]
    fn json_stays_valid_and_equal_with_nothing_raw() {
        let value = serde_json::json!({ "text": HOSTILE, "tag": "x\u{E0041}y" });
        let text = json_safe(serde_json::to_string_pretty(&value).unwrap());
        assert!(no_control(&text.replace(['\n', '\t'], "")), "{text}");
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, value);
        let plain = serde_json::to_string(&serde_json::json!({"a": "b"})).unwrap();
        assert_eq!(json_safe(plain.clone()), plain);
    }
}
