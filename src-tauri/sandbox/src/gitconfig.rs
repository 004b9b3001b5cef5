//! A small reader of git's config syntax (`git help config`, "CONFIGURATION FILE"), just
//! enough to tell which keys a file sets and where each one stands in the bytes.
//!
//! Why not `gix-config`: `cargo tree` shows it bringing about 60 crates (`gix-ref`,
//! `gix-object`, `gix-date` with `jiff`, `prodash`, `memmap2`, `parking_lot`, …) for what
//! is here one question: which keys does this file set? And a reader *stricter* than
//! git is what the check wants: a file this one does not understand is treated as a
//! whole (removed when the call created it), so a difference between the two can only
//! make the sandbox drop a file git would have read, never let a key through.
use std::ops::Range;

/// One `key = value` line (its continuation lines included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Lower-cased, as git compares it.
    pub section: String,
    /// Case-sensitive, as git compares it (`[a "Sub"]`); lower-cased for `[a.sub]`.
    pub subsection: Option<String>,
    /// Lower-cased.
    pub key: String,
    /// `None` for a bare `key` (boolean true).
    pub value: Option<Vec<u8>>,
    /// The entry's bytes, from the key to the end of its last line (newline included);
    /// a section header on the same line is not part of it.
    pub span: Range<usize>,
}

impl Entry {
    /// `section.key` or `section.subsection.key`, as `git config` names it.
    pub fn name(&self) -> String {
        match &self.subsection {
            Some(sub) => format!("{}.{}.{}", self.section, sub, self.key),
            None => format!("{}.{}", self.section, self.key),
        }
    }

    /// Whether git would run a program named by this key (or read another file because
    /// of it: an include can bring in any of these).
    pub fn runs_program(&self) -> bool {
        let sub = self.subsection.is_some();
        match (self.section.as_str(), self.key.as_str()) {
            ("include" | "includeif", _) => true,
            (
                "core",
                "fsmonitor"
                | "hookspath"
                | "sshcommand"
                | "pager"
                | "editor"
                | "askpass"
                | "gitproxy"
                | "alternaterefscommand",
            ) => !sub,
            ("filter", _) => true,
            ("diff", "textconv" | "command") => sub,
            ("diff", "external") => !sub,
            ("merge", "driver") | ("mergetool" | "difftool", "cmd") => sub,
            ("credential", "helper") => true,
            ("sequence", "editor") | ("gpg", "program") => true,
            ("remote", "uploadpack" | "receivepack" | "vcs") => sub,
            ("pager" | "man", _) => true,
            ("alias", _) => self.value.as_deref().is_some_and(|v| v.starts_with(b"!")),
            ("uploadpack", "packobjectshook") | ("web", "browser") => true,
            ("submodule", "update") => sub,
            _ => false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {what}")]
pub(crate) struct ParseError {
    pub line: usize,
    pub what: &'static str,
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
    line: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn err(&self, what: &'static str) -> ParseError {
        ParseError {
            line: self.line,
            what,
        }
    }

    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r')) {
            self.i += 1;
        }
    }

    fn skip_to_eol(&mut self) {
        while let Some(c) = self.peek() {
            self.i += 1;
            if c == b'\n' {
                self.line += 1;
                return;
            }
        }
    }

    /// After a header or a value: only blanks, a comment or the end of the line.
    fn end_of_line(&mut self) -> Result<(), ParseError> {
        self.skip_blanks();
        match self.peek() {
            None => Ok(()),
            Some(b'\n' | b'#' | b';') => {
                self.skip_to_eol();
                Ok(())
            }
            Some(_) => Err(self.err("unexpected text after a value")),
        }
    }
}

/// The entries of a config file, in order. Refuses what git would refuse, and a few
/// things git accepts that no tool writes (a NUL byte, an unterminated quote).
pub(crate) fn parse(bytes: &[u8]) -> Result<Vec<Entry>, ParseError> {
    let mut c = Cursor {
        b: bytes,
        i: 0,
        line: 1,
    };
    if bytes.contains(&0) {
        return Err(c.err("a NUL byte"));
    }
    // A UTF-8 byte-order mark is skipped by git.
    if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
        c.i = 3;
    }
    let mut section: Option<(String, Option<String>)> = None;
    let mut out = Vec::new();
    loop {
        c.skip_blanks();
        match c.peek() {
            None => break,
            Some(b'\n' | b'#' | b';') => c.skip_to_eol(),
            Some(b'[') => {
                c.i += 1;
                section = Some(header(&mut c)?);
                // A key may follow the header on the same line.
                c.skip_blanks();
            }
            Some(ch) if ch.is_ascii_alphabetic() => {
                let Some((name, sub)) = &section else {
                    return Err(c.err("a key before any section"));
                };
                let start = c.i;
                let key = key_name(&mut c);
                let value = value(&mut c)?;
                out.push(Entry {
                    section: name.clone(),
                    subsection: sub.clone(),
                    key,
                    value,
                    span: start..c.i,
                });
            }
            Some(_) => return Err(c.err("not a section, key or comment")),
        }
    }
    Ok(out)
}

fn header(c: &mut Cursor<'_>) -> Result<(String, Option<String>), ParseError> {
    let mut name = String::new();
    while let Some(ch) = c.peek() {
        if ch.is_ascii_alphanumeric() || ch == b'-' || ch == b'.' {
            name.push(char::from(ch.to_ascii_lowercase()));
            c.i += 1;
        } else {
            break;
        }
    }
    if name.is_empty() {
        return Err(c.err("an empty section name"));
    }
    match c.peek() {
        Some(b']') => {
            c.i += 1;
            // `[a.b]`: the old form, its subsection lower-cased.
            Ok(match name.split_once('.') {
                Some((s, sub)) => (s.to_owned(), Some(sub.to_owned())),
                None => (name, None),
            })
        }
        Some(b' ' | b'\t') => {
            if name.contains('.') {
                return Err(c.err("a dotted section name with a subsection"));
            }
            c.skip_blanks();
            if c.peek() != Some(b'"') {
                return Err(c.err("a subsection must be quoted"));
            }
            c.i += 1;
            let mut sub = Vec::new();
            loop {
                match c.peek() {
                    None | Some(b'\n') => return Err(c.err("an unterminated subsection")),
                    Some(b'"') => {
                        c.i += 1;
                        break;
                    }
                    Some(b'\\') => {
                        c.i += 1;
                        match c.peek() {
                            None | Some(b'\n') => return Err(c.err("an unterminated subsection")),
                            Some(ch) => sub.push(ch),
                        }
                        c.i += 1;
                    }
                    Some(ch) => {
                        sub.push(ch);
                        c.i += 1;
                    }
                }
            }
            if c.peek() != Some(b']') {
                return Err(c.err("a section header must end with ]"));
            }
            c.i += 1;
            Ok((name, Some(String::from_utf8_lossy(&sub).into_owned())))
        }
        _ => Err(c.err("a bad section header")),
    }
}

fn key_name(c: &mut Cursor<'_>) -> String {
    let mut key = String::new();
    while let Some(ch) = c.peek() {
        if ch.is_ascii_alphanumeric() || ch == b'-' {
            key.push(char::from(ch.to_ascii_lowercase()));
            c.i += 1;
        } else {
            break;
        }
    }
    key
}

fn value(c: &mut Cursor<'_>) -> Result<Option<Vec<u8>>, ParseError> {
    c.skip_blanks();
    match c.peek() {
        None | Some(b'\n' | b'#' | b';') => {
            c.end_of_line()?;
            return Ok(None);
        }
        Some(b'=') => c.i += 1,
        Some(_) => return Err(c.err("a key must be followed by = or the end of the line")),
    }
    c.skip_blanks();
    let mut out = Vec::new();
    // Blanks are kept only when something follows them (trailing ones are dropped).
    let mut pending_blanks = 0usize;
    let mut quoted = false;
    loop {
        let Some(ch) = c.peek() else {
            if quoted {
                return Err(c.err("an unterminated quote"));
            }
            break;
        };
        match ch {
            b'\n' if !quoted => {
                c.i += 1;
                c.line += 1;
                break;
            }
            b'\n' => return Err(c.err("an unterminated quote")),
            b'#' | b';' if !quoted => {
                c.skip_to_eol();
                break;
            }
            b' ' | b'\t' if !quoted => {
                pending_blanks += 1;
                c.i += 1;
            }
            b'"' => {
                quoted = !quoted;
                c.i += 1;
            }
            b'\\' => {
                c.i += 1;
                let escaped = match c.peek() {
                    Some(b'\n') => {
                        c.i += 1;
                        c.line += 1;
                        continue;
                    }
                    Some(b'\r') if c.b.get(c.i + 1) == Some(&b'\n') => {
                        c.i += 2;
                        c.line += 1;
                        continue;
                    }
                    Some(b'n') => b'\n',
                    Some(b't') => b'\t',
                    Some(b'b') => 8,
                    Some(b'\\') => b'\\',
                    Some(b'"') => b'"',
                    _ => return Err(c.err("a bad escape")),
                };
                c.i += 1;
                out.extend(std::iter::repeat_n(b' ', pending_blanks));
                pending_blanks = 0;
                out.push(escaped);
            }
            b'\r' if !quoted && c.b.get(c.i + 1) == Some(&b'\n') => c.i += 1,
            _ => {
                out.extend(std::iter::repeat_n(b' ', pending_blanks));
                pending_blanks = 0;
                out.push(ch);
                c.i += 1;
            }
        }
    }
    Ok(Some(out))
}

/// `bytes` without the given entries (their spans cut out; section headers stay).
pub(crate) fn without(bytes: &[u8], cut: &[&Entry]) -> Vec<u8> {
    let mut spans: Vec<Range<usize>> = cut.iter().map(|e| e.span.clone()).collect();
    spans.sort_by_key(|r| r.start);
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    for r in spans {
        if r.start >= at {
            out.extend_from_slice(&bytes[at..r.start]);
            at = r.end;
        }
    }
    out.extend_from_slice(&bytes[at.min(bytes.len())..]);
    out
}

#[cfg(test)]
#[path = "gitconfig_tests.rs"]
mod tests;
