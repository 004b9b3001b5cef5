//! Model-controlled text made visible before a person reads it (issue 15). A terminal acts
//! on control characters (ANSI escapes can redraw the screen, `\r` overwrites a line, OSC 52
//! writes the clipboard), and bidi overrides and zero-width characters make text read
//! differently from what runs. [`visible`] writes each of them as an escape a person can
//! read: C0, DEL and C1 controls as `\x1b`, `\r`, `\0`…, bidi controls and invisible
//! format characters as `\u{202e}`. Newlines and tabs stay as they are. The window applies
//! the same rules (`ui/src/features/approvals/hidden.ts`).
use std::borrow::Cow;
use std::fmt::Write;

/// Bidi controls, zero-width and other invisible format characters.
fn invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FEFF}' | '\u{FFA0}' | '\u{FFF9}'..='\u{FFFB}'
        | '\u{E0000}'..='\u{E007F}')
}

fn hidden(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || invisible(c)
}

/// Whether `s` has a character [`visible`] rewrites: what the approval flags as "contains
/// hidden characters".
pub fn has_hidden(s: &str) -> bool {
    s.chars().any(hidden)
}

/// `s` with every control, bidi and invisible character written as a visible escape.
pub fn visible(s: &str) -> Cow<'_, str> {
    if !has_hidden(s) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if !hidden(c) {
            out.push(c);
            continue;
        }
        let _ = match c {
            '\r' => out.write_str("\\r"),
            '\0' => out.write_str("\\0"),
            c if (c as u32) < 0x100 => write!(out, "\\x{:02x}", c as u32),
            c => write!(out, "\\u{{{:04x}}}", c as u32),
        };
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_bidi_and_zero_width_become_visible_and_text_stays() {
        assert_eq!(visible("ls -la\nmake\tall"), "ls -la\nmake\tall");
        assert!(matches!(visible("plain"), Cow::Borrowed(_)));
        assert_eq!(
            visible("cp secret /tmp\r\x1b[2K$ ls -la"),
            "cp secret /tmp\\r\\x1b[2K$ ls -la"
        );
        assert_eq!(visible("\x1b]52;c;aGk=\x07"), "\\x1b]52;c;aGk=\\x07");
        assert_eq!(visible("a\u{9b}b\u{7f}\0"), "a\\x9bb\\x7f\\0");
        assert_eq!(visible("rm \u{202e}txt.exe"), "rm \\u{202e}txt.exe");
        assert_eq!(visible("a\u{200b}b\u{feff}"), "a\\u{200b}b\\u{feff}");
        assert_eq!(visible("é ✓ 日本"), "é ✓ 日本");
        assert!(has_hidden("x\u{2066}y") && !has_hidden("x\ny\tz"));
    }
}
