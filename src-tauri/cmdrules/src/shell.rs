//! The shell side: parsing with brush-parser (the parser of the brush shell, written to
//! read scripts as bash does) and reading a word's value the way bash would after quote
//! removal, or saying why it cannot be read.
//!
//! brush-parser counts positions in characters; this module turns them into byte
//! offsets, so the rest of the crate slices the command's text directly.

use brush_parser::ast;
use brush_parser::word::{self, WordPiece, WordPieceWithSource};
use brush_parser::{ParseError, ParserOptions, SourcePosition, SourceSpan, Token, TokenizerError};

use crate::verdict::{AskReason, Why};

/// How deep substitutions inside substitutions are followed (`$(a $(b $(c)))`): past it
/// the reader stops and asks, and a deny rule may be hiding.
pub(crate) const MAX_NESTING: usize = 16;

/// A parsed command and the tokens it was parsed from.
pub(crate) struct Script<'a> {
    pub(crate) src: &'a str,
    pub(crate) program: ast::Program,
    pub(crate) tokens: Vec<Token>,
    /// The byte offset of each character, when the text is not all ASCII.
    bytes: Option<Vec<usize>>,
}

/// Bash as `bash -c` runs a command: extended globs are off, so `!(x)` is not a pattern.
fn options() -> ParserOptions {
    ParserOptions {
        enable_extended_globbing: false,
        ..ParserOptions::default()
    }
}

/// How many `[` a word with quotes, escapes or expansions may hold and still be read
/// (see [`bracket_heavy`]).
const MAX_BRACKETS: usize = 8;

/// Whether some blank-separated stretch of `text` holds more than [`MAX_BRACKETS`] `[`
/// beside a quote, an escape or an expansion. The parser backtracks through each `[`
/// that may open a bracket pattern there: twenty take about a second, each one more
/// doubles it (found by fuzzing). Such text is not parsed.
fn bracket_heavy(text: &str) -> bool {
    let (mut brackets, mut beside) = (0, false);
    for b in text.bytes().chain(std::iter::once(b' ')) {
        match b {
            b' ' | b'\t' | b'\n' => {
                if brackets > MAX_BRACKETS && beside {
                    return true;
                }
                (brackets, beside) = (0, false);
            }
            b'[' => brackets += 1,
            b'$' | b'`' | b'\\' | b'\'' | b'"' => beside = true,
            _ => {}
        }
    }
    false
}

/// How deep groups, substitutions and compound commands may nest in a command. The
/// parser descends one call per level and would run out of stack long before a script
/// a person writes needs this many.
const MAX_DEPTH: usize = 32;

/// Parses `src` as bash; on failure, the text where it stopped and why: a character
/// bash may read differently, a here-document (neither is parsed), or a parse error.
pub(crate) fn parse(src: &str) -> Result<Script<'_>, AskReason> {
    if let Some(odd) = odd_character(src) {
        return Err(AskReason::new(format!("{odd:?}"), Why::OddCharacter));
    }
    if let Some(at) = heredoc(src) {
        return Err(AskReason::new(src[at..].trim_end(), Why::Heredoc));
    }
    let unparsed = |part: String| AskReason::new(part, Why::ParseError);
    if nests_deeper(src, MAX_DEPTH) || bracket_heavy(src) {
        return Err(unparsed(src.trim().to_string()));
    }
    let bytes = (!src.is_ascii()).then(|| {
        src.char_indices()
            .map(|(i, _)| i)
            .chain(std::iter::once(src.len()))
            .collect()
    });
    let opts = options();
    // The parser unwraps where it does not expect to fail (a descriptor number too large
    // for an `i32` in `99999999999>x`, found by fuzzing); a command an agent sent must
    // not take the process down with it. A panic asks, as a parse error.
    let parsed = std::panic::catch_unwind(|| {
        let tokens = brush_parser::uncached_tokenize_str(src, &opts.tokenizer_options())
            .map_err(Failure::Tokens)?;
        if let Some(open) = unclosed_paren(&tokens) {
            return Err(Failure::Unclosed(open));
        }
        let program = brush_parser::parse_tokens(&tokens, &opts).map_err(Failure::Parse)?;
        Ok::<_, Failure>((tokens, program))
    });
    let mut script = Script {
        src,
        program: ast::Program {
            complete_commands: Vec::new(),
        },
        tokens: Vec::new(),
        bytes,
    };
    match parsed {
        Ok(Ok((tokens, program))) => {
            script.tokens = tokens;
            script.program = program;
            Ok(script)
        }
        Ok(Err(Failure::Tokens(e))) => Err(unparsed(script.tokenizer_error(&e))),
        Ok(Err(Failure::Parse(e))) => Err(unparsed(script.parse_error(&e))),
        Ok(Err(Failure::Unclosed(at))) => Err(unparsed(script.rest(&at))),
        Err(_) => Err(unparsed(src.to_string())),
    }
}

/// Where a here-document operator (`<<`, `<<-`; not the here-string `<<<`) starts, if
/// anywhere, quoted or not. Here-documents always ask, and the parser's tokenizer loops
/// and allocates without end on some of them (`"$(<<⇥)"`, found by fuzzing): text that
/// holds one is not parsed.
fn heredoc(src: &str) -> Option<usize> {
    // A run of `<` other than one (a redirection) or three (a here-string) holds a `<<`
    // (`<<<<<` is `<<<` and `<<`).
    let bytes = src.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let run = bytes[i..].iter().take_while(|b| **b == b'<').count();
        if run == 2 || run >= 4 {
            return Some(i);
        }
        i += run.max(1);
    }
    None
}

/// Whether `src` may nest deeper than `limit`, counted without parsing and erring on
/// the side of "deeper": every `(` and `{` opens a level (quoted or not), as does a
/// compound-command keyword where a command starts.
fn nests_deeper(src: &str, limit: usize) -> bool {
    const OPENS: &[&str] = &["if", "while", "until", "for", "case", "select"];
    const CLOSES: &[&str] = &["fi", "done", "esac"];
    const LEAD: &[&str] = &[
        "then", "do", "else", "elif", "if", "while", "until", "!", "time",
    ];
    let mut depth = 0usize;
    // Where the word being read started (its characters are all ASCII).
    let mut word_start = None;
    // Whether the next word stands where a command starts.
    let mut command_start = true;
    for (i, c) in src.char_indices().chain(std::iter::once((src.len(), '\n'))) {
        if c.is_ascii_alphanumeric() || c == '_' || c == '!' {
            word_start.get_or_insert(i);
            continue;
        }
        if let Some(start) = word_start.take() {
            let word = &src[start..i];
            if command_start && OPENS.contains(&word) {
                depth += 1;
            } else if command_start && CLOSES.contains(&word) {
                depth = depth.saturating_sub(1);
            }
            command_start = LEAD.contains(&word);
        }
        match c {
            '(' | '{' => {
                depth += 1;
                command_start = true;
            }
            ')' | '}' => {
                depth = depth.saturating_sub(1);
                command_start = true;
            }
            ';' | '&' | '|' | '\n' | '`' => command_start = true,
            ' ' | '\t' => {}
            _ => command_start = false,
        }
        if depth > limit {
            return true;
        }
    }
    false
}

/// The first control character or space other than space, tab and newline. Bash splits
/// words on those three only; other shells and tools split on more (a form feed before
/// `#$(…)` has hidden a command substitution from a checker), and the parser's tokenizer
/// loops without end on a here-document operator followed by a form feed or carriage
/// return. Such text is not parsed.
fn odd_character(src: &str) -> Option<char> {
    src.chars()
        .find(|c| (c.is_whitespace() || c.is_control()) && !matches!(c, ' ' | '\t' | '\n'))
}

enum Failure {
    Tokens(TokenizerError),
    Parse(ParseError),
    Unclosed(SourcePosition),
}

/// The first `(` operator no `)` closes, if any: a syntax error to bash, and the parser
/// backtracks through every way of reading each unclosed one (twice the time per
/// parenthesis: twenty take a second), so it is not handed such tokens.
fn unclosed_paren(tokens: &[Token]) -> Option<SourcePosition> {
    let mut open = Vec::new();
    for token in tokens {
        let Token::Operator(op, span) = token else {
            continue;
        };
        for c in op.chars() {
            match c {
                '(' => open.push(span),
                ')' => {
                    open.pop();
                }
                _ => {}
            }
        }
    }
    open.first().map(|span| (*span.start).clone())
}

impl<'a> Script<'a> {
    /// The byte offset of a character index (clamped to the text).
    pub(crate) fn byte(&self, index: usize) -> usize {
        match &self.bytes {
            Some(bytes) => bytes.get(index).copied().unwrap_or(self.src.len()),
            None => index.min(self.src.len()),
        }
    }

    pub(crate) fn range(&self, span: &SourceSpan) -> (usize, usize) {
        (self.byte(span.start.index), self.byte(span.end.index))
    }

    pub(crate) fn text(&self, span: &SourceSpan) -> &'a str {
        let (start, end) = self.range(span);
        self.src.get(start..end).unwrap_or("")
    }

    /// The text from `position` to the end.
    fn rest(&self, position: &SourcePosition) -> String {
        let start = self.byte(position.index);
        self.src.get(start..).unwrap_or("").trim().to_string()
    }

    fn tokenizer_error(&self, e: &TokenizerError) -> String {
        match e {
            TokenizerError::UnterminatedSingleQuote(at)
            | TokenizerError::UnterminatedAnsiCQuote(at)
            | TokenizerError::UnterminatedDoubleQuote(at)
            | TokenizerError::UnterminatedBackquote(at)
            | TokenizerError::UnterminatedExtendedGlob(at) => self.rest(at),
            _ => self.src.trim().to_string(),
        }
    }

    /// The token the parser stopped at, or the last one when it ran out of input.
    fn parse_error(&self, e: &ParseError) -> String {
        match e {
            ParseError::ParsingNear(at) => self
                .tokens
                .iter()
                .find(|t| t.location().start.index == at.index)
                .map_or_else(|| self.rest(at), |t| self.text(t.location()).to_string()),
            ParseError::Tokenizing {
                position: Some(at), ..
            } => self.rest(at),
            _ => self
                .tokens
                .last()
                .map_or_else(|| self.src.trim().to_string(), |t| t.to_str().to_string()),
        }
    }
}

/// A word's value after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    /// Exactly this one argument.
    Known(String),
    /// Globs, brace expansion, tilde: runs nothing, but may become other words
    /// (or several, or none), so it cannot stand where a rule names a word.
    Expands,
    /// An expansion or substitution: the shell computes it at run time. Always asks.
    Dynamic { part: String, why: Why },
}

/// Characters that make an unquoted, unescaped word expand (glob, brace, tilde) or that
/// should never appear bare in a word the parser accepted; either way, not a known value.
const EXPANDING: &[char] = &[
    '*', '?', '[', ']', '{', '}', '~', '(', ')', '!', '<', '>', '|', '&', ';',
];

/// Bytes a word may be made of and be its own value: no quote, escape, expansion, glob
/// or anything else the shell gives a meaning. Most words are; they skip the word parser.
fn literal(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-_./:,=+%@^#".contains(&b)
}

/// The value of a word as written (`raw` keeps its quotes and escapes).
pub(crate) fn value(raw: &str) -> Value {
    if !raw.is_empty() && raw.bytes().all(literal) {
        return Value::Known(raw.to_string());
    }
    let unsupported = || Value::Dynamic {
        part: raw.to_string(),
        why: Why::Unsupported,
    };
    let Some(pieces) = word_pieces(raw) else {
        return unsupported();
    };
    let mut out = String::with_capacity(raw.len());
    let mut expands = false;
    for piece in &pieces {
        match read_piece(piece, raw, false, &mut out) {
            Ok(true) => expands = true,
            Ok(false) => {}
            Err(dynamic) => return dynamic,
        }
    }
    // Pieces must account for the whole word, or something was left unread.
    let covered: usize = pieces.iter().map(|p| p.end_index - p.start_index).sum();
    if covered != raw.len() {
        return unsupported();
    }
    if expands {
        Value::Expands
    } else {
        Value::Known(out)
    }
}

/// A word's pieces, `None` when the word parser cannot read it (or gives up on it: a
/// panic in it is contained here, as in [`parse`]).
fn word_pieces(raw: &str) -> Option<Vec<WordPieceWithSource>> {
    if bracket_heavy(raw) {
        return None;
    }
    std::panic::catch_unwind(|| word::parse(raw, &options()).ok()).ok()?
}

/// Appends one piece's value to `out`; `Ok(true)` when it may expand, `Err` when the
/// shell computes it.
fn read_piece(
    piece: &WordPieceWithSource,
    raw: &str,
    quoted: bool,
    out: &mut String,
) -> Result<bool, Value> {
    let dynamic = |why| Value::Dynamic {
        part: raw
            .get(piece.start_index..piece.end_index)
            .unwrap_or(raw)
            .to_string(),
        why,
    };
    match &piece.piece {
        // A `$` the word parser leaves as text (`$` alone, `m$`) is literal to bash too,
        // but it is one character away from an expansion: it asks.
        WordPiece::Text(text) if text.contains(['$', '`']) => Err(dynamic(Why::ParameterExpansion)),
        WordPiece::Text(text) => {
            out.push_str(text);
            Ok(!quoted && text.contains(EXPANDING))
        }
        WordPiece::SingleQuotedText(text) => {
            out.push_str(text);
            Ok(false)
        }
        WordPiece::EscapeSequence(seq) => {
            let mut chars = seq.chars();
            match (chars.next(), chars.next(), chars.next()) {
                (Some('\\'), Some('\n'), None) => {}
                (Some('\\'), Some(c), None) if !quoted || "\\\"$`".contains(c) => out.push(c),
                // Inside double quotes other escapes keep their backslash.
                (Some('\\'), Some(_), None) => out.push_str(seq),
                _ => return Err(dynamic(Why::Unsupported)),
            }
            Ok(false)
        }
        WordPiece::DoubleQuotedSequence(inner) => {
            let mut expands = false;
            for piece in inner {
                expands |= read_piece(piece, raw, true, out)?;
            }
            Ok(expands)
        }
        WordPiece::TildeExpansion(_) => Ok(true),
        WordPiece::AnsiCQuotedText(_) => Err(dynamic(Why::AnsiCString)),
        WordPiece::GettextDoubleQuotedSequence(_) | WordPiece::ParameterExpansion(_) => {
            Err(dynamic(Why::ParameterExpansion))
        }
        WordPiece::CommandSubstitution(_) | WordPiece::BackquotedCommandSubstitution(_) => {
            Err(dynamic(Why::CommandSubstitution))
        }
        WordPiece::ArithmeticExpression(_) => Err(dynamic(Why::ArithmeticExpansion)),
    }
}

/// The scripts of the command substitutions in a word (`a$(b)"$(c)"` gives `b` and `c`),
/// for deny rules to be looked for in. `None` when the word cannot be read, or holds an
/// expansion that may run something the reader does not follow (`${x:-$(y)}`).
pub(crate) fn substitutions(raw: &str) -> Option<Vec<String>> {
    if !raw.contains(['$', '`']) {
        return Some(Vec::new());
    }
    let pieces = word_pieces(raw)?;
    let mut scripts = Vec::new();
    collect_substitutions(&pieces, raw, &mut scripts)?;
    Some(scripts)
}

fn collect_substitutions(
    pieces: &[WordPieceWithSource],
    raw: &str,
    scripts: &mut Vec<String>,
) -> Option<()> {
    for piece in pieces {
        match &piece.piece {
            WordPiece::CommandSubstitution(script) => scripts.push(script.clone()),
            // Inside backquotes a backslash escapes `$`, backquote and backslash.
            WordPiece::BackquotedCommandSubstitution(script) => scripts.push(
                script
                    .replace("\\\\", "\u{0}")
                    .replace("\\$", "$")
                    .replace("\\`", "`")
                    .replace('\u{0}', "\\"),
            ),
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => {
                collect_substitutions(inner, raw, scripts)?
            }
            WordPiece::ParameterExpansion(_) | WordPiece::ArithmeticExpression(_) => {
                let text = raw.get(piece.start_index..piece.end_index)?;
                // `$x`, `${x}` and `$((1+2))` run nothing; `${x:-$(y)}` and `$(($(y)))`
                // run what is inside, read here as a word of its own.
                let inner = text
                    .strip_prefix("$((")
                    .and_then(|t| t.strip_suffix("))"))
                    .or_else(|| text.strip_prefix("${").and_then(|t| t.strip_suffix('}')));
                match inner {
                    Some(inner) => scripts.extend(substitutions(inner)?),
                    None if text.get(1..).is_some_and(|t| !t.contains(['$', '`'])) => {}
                    None => return None,
                }
            }
            _ => {}
        }
    }
    Some(())
}
