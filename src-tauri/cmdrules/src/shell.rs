//! The shell side: parsing with tree-sitter-bash and reading a word's value the way bash
//! would after quote removal, or saying why it cannot be read.
//!
//! Node kinds are tree-sitter-bash's names; they are named once here so the rest of the
//! crate never spells one.

use std::cell::RefCell;

use tree_sitter::{Node, Parser, Tree};

use crate::verdict::Why;

pub(crate) mod kind {
    pub const PROGRAM: &str = "program";
    pub const COMMAND: &str = "command";
    pub const LIST: &str = "list";
    pub const PIPELINE: &str = "pipeline";
    pub const REDIRECTED_STATEMENT: &str = "redirected_statement";
    pub const COMMENT: &str = "comment";
    pub const WORD: &str = "word";
    pub const NUMBER: &str = "number";
    pub const STRING: &str = "string";
    pub const STRING_CONTENT: &str = "string_content";
    pub const RAW_STRING: &str = "raw_string";
    pub const ANSI_C_STRING: &str = "ansi_c_string";
    pub const CONCATENATION: &str = "concatenation";
    pub const BRACE_EXPRESSION: &str = "brace_expression";
    pub const COMMAND_SUBSTITUTION: &str = "command_substitution";
    pub const PROCESS_SUBSTITUTION: &str = "process_substitution";
    pub const SIMPLE_EXPANSION: &str = "simple_expansion";
    pub const EXPANSION: &str = "expansion";
    pub const ARITHMETIC_EXPANSION: &str = "arithmetic_expansion";
    pub const FILE_REDIRECT: &str = "file_redirect";
    pub const HEREDOC_REDIRECT: &str = "heredoc_redirect";
    pub const HERESTRING_REDIRECT: &str = "herestring_redirect";
    pub const VARIABLE_ASSIGNMENT: &str = "variable_assignment";
    pub const VARIABLE_ASSIGNMENTS: &str = "variable_assignments";
    pub const COMPOUND_STATEMENT: &str = "compound_statement";
    pub const SUBSHELL: &str = "subshell";
    pub const FUNCTION_DEFINITION: &str = "function_definition";
    pub const DECLARATION_COMMAND: &str = "declaration_command";
    pub const UNSET_COMMAND: &str = "unset_command";
    pub const NEGATED_COMMAND: &str = "negated_command";
    pub const TEST_COMMAND: &str = "test_command";
    pub const CONTROL_FLOW: [&str; 6] = [
        "if_statement",
        "while_statement",
        "for_statement",
        "c_style_for_statement",
        "case_statement",
        "do_group",
    ];
    pub const ERROR: &str = "ERROR";

    // Separators and operators (anonymous tokens).
    pub const SEMI: &str = ";";
    pub const NEWLINE: &str = "\n";
    pub const AND: &str = "&&";
    pub const OR: &str = "||";
    pub const PIPE: &str = "|";
    pub const BACKGROUND: &str = "&";

    // Field names.
    pub const FIELD_NAME: &str = "name";
    pub const FIELD_ARGUMENT: &str = "argument";
    pub const FIELD_REDIRECT: &str = "redirect";
    pub const FIELD_BODY: &str = "body";
    pub const FIELD_DESCRIPTOR: &str = "descriptor";
    pub const FIELD_DESTINATION: &str = "destination";
}

thread_local! {
    // Building a parser and loading the grammar costs more than parsing a short command,
    // so each thread keeps one.
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

/// Parses `text` as bash; `None` when the grammar cannot be loaded, parsing gives up, or
/// the text would trip the grammar's scanner.
pub(crate) fn parse(text: &str) -> Option<Tree> {
    if trips_scanner(text) {
        return None;
    }
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut parser = Parser::new();
            parser
                .set_language(&tree_sitter_bash::LANGUAGE.into())
                .ok()?;
            *slot = Some(parser);
        }
        slot.as_mut()?.parse(text, None)
    })
}

/// tree-sitter-bash's scanner hands the characters after `{` (and after `{1..`) to C's
/// `isdigit`, which reads outside its table for characters past U+00FF: the process can
/// crash. Text with such a character after `{` and a run of digits and dots is not parsed.
fn trips_scanner(text: &str) -> bool {
    let mut after_brace = false;
    for c in text.chars() {
        if after_brace && u32::from(c) > 0xFF {
            return true;
        }
        after_brace = c == '{' || (after_brace && (c.is_ascii_digit() || c == '.'));
    }
    false
}

pub(crate) fn text<'a>(node: Node<'_>, src: &'a str) -> &'a str {
    src.get(node.byte_range()).unwrap_or("")
}

/// A node's children with their field names. `Node::field_name_for_child` walks the
/// children up to its index each call, which makes a loop over a long command quadratic;
/// a cursor reads each field in passing.
pub(crate) fn fields<'t>(node: Node<'t>) -> Vec<(Option<&'t str>, Node<'t>)> {
    let mut cursor = node.walk();
    let mut out = Vec::with_capacity(node.child_count() as usize);
    if cursor.goto_first_child() {
        loop {
            out.push((cursor.field_name(), cursor.node()));
            if !cursor.goto_next_sibling() {
                break;
            }
        }
    }
    out
}

/// The program and arguments of any command node, however they are written.
pub(crate) fn command_words(node: Node<'_>, src: &str) -> Vec<Value> {
    let mut argv = Vec::new();
    for (field, child) in fields(node) {
        match field {
            Some(kind::FIELD_NAME) => argv.push(value(child.named_child(0).unwrap_or(child), src)),
            Some(kind::FIELD_ARGUMENT) => argv.push(value(child, src)),
            _ => {}
        }
    }
    argv
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
/// should never appear bare in a word tree-sitter accepted; either way, not a known value.
const EXPANDING: &[char] = &[
    '*', '?', '[', ']', '{', '}', '~', '(', ')', '!', '<', '>', '|', '&', ';',
];

/// Nesting of words inside words (a concatenation holding strings) is shallow in any real
/// command; past this the reader stops and asks.
const MAX_WORD_DEPTH: usize = 8;

pub(crate) fn value(node: Node<'_>, src: &str) -> Value {
    value_at(node, src, 0)
}

fn dynamic(node: Node<'_>, src: &str, why: Why) -> Value {
    Value::Dynamic {
        part: text(node, src).to_string(),
        why,
    }
}

fn value_at(node: Node<'_>, src: &str, depth: usize) -> Value {
    if depth > MAX_WORD_DEPTH {
        return dynamic(node, src, Why::Unsupported);
    }
    match node.kind() {
        kind::WORD => unquoted(node, src),
        kind::NUMBER if node.named_child_count() == 0 => unquoted(node, src),
        kind::RAW_STRING => {
            let t = text(node, src);
            match t.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')) {
                Some(inner) => Value::Known(inner.to_string()),
                None => dynamic(node, src, Why::Unsupported),
            }
        }
        kind::STRING => double_quoted(node, src),
        kind::CONCATENATION => {
            let mut out = String::new();
            let mut expands = false;
            let mut cursor = node.walk();
            for child in node.children(&mut cursor) {
                match value_at(child, src, depth + 1) {
                    Value::Known(s) => out.push_str(&s),
                    Value::Expands => expands = true,
                    dynamic @ Value::Dynamic { .. } => return dynamic,
                }
            }
            if expands {
                Value::Expands
            } else {
                Value::Known(out)
            }
        }
        kind::BRACE_EXPRESSION => Value::Expands,
        // tree-sitter-bash ends `$'…'` at the first quote not after a backslash, even an
        // escaped backslash: `$'a\\'$(rm x) #'` is one string to it and a command
        // substitution to bash. Its extent cannot be trusted, so it asks.
        kind::ANSI_C_STRING => dynamic(node, src, Why::AnsiCString),
        kind::COMMAND_SUBSTITUTION => dynamic(node, src, Why::CommandSubstitution),
        kind::PROCESS_SUBSTITUTION => dynamic(node, src, Why::ProcessSubstitution),
        kind::SIMPLE_EXPANSION | kind::EXPANSION => dynamic(node, src, Why::ParameterExpansion),
        kind::ARITHMETIC_EXPANSION => dynamic(node, src, Why::ArithmeticExpansion),
        // A bare `$` (as in `$"…"` or `a$`) or any kind this reader does not know.
        _ if text(node, src).contains('$') => dynamic(node, src, Why::ParameterExpansion),
        _ => dynamic(node, src, Why::Unsupported),
    }
}

/// An unquoted word: backslash escapes are removed, `\`-newline joins lines. A `$` or
/// backtick anywhere (even escaped) asks: tree-sitter and bash would have to agree on
/// every escape for it to be safe, and such words are rare in commands worth a rule.
fn unquoted(node: Node<'_>, src: &str) -> Value {
    let raw = text(node, src);
    if raw.contains(['$', '`']) {
        return dynamic(node, src, Why::ParameterExpansion);
    }
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    let mut expands = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(escaped) => out.push(escaped),
                // A trailing backslash: what bash does with it depends on what follows
                // the word, so it is not a known value.
                None => expands = true,
            },
            // Bash ends a word at an unescaped blank; the parser has been seen to start one
            // with a newline (after `\\\ #`), so such a word is not what bash reads.
            ' ' | '\t' | '\n' => return dynamic(node, src, Why::Unsupported),
            c if EXPANDING.contains(&c) => {
                expands = true;
                out.push(c);
            }
            c => out.push(c),
        }
    }
    if expands {
        Value::Expands
    } else {
        Value::Known(out)
    }
}

/// A double-quoted string without expansions, read from its own text between the
/// quotes (the parser's content nodes can leave characters out, a leading newline for
/// one). Inside double quotes a backslash only escapes `\`, `"`, `$`, backtick and
/// newline; the last three never reach here.
fn double_quoted(node: Node<'_>, src: &str) -> Value {
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        let quote = !child.is_named() && text(child, src) == "\"";
        if !quote && child.kind() != kind::STRING_CONTENT {
            return match value_at(child, src, MAX_WORD_DEPTH) {
                dynamic @ Value::Dynamic { .. } => dynamic,
                _ => dynamic(child, src, Why::Unsupported),
            };
        }
    }
    let Some(inner) = text(node, src)
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
    else {
        return dynamic(node, src, Why::Unsupported);
    };
    if inner.contains(['$', '`']) {
        return dynamic(node, src, Why::ParameterExpansion);
    }
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('\n') => {
                    chars.next();
                    continue;
                }
                Some('\\') | Some('"') => {
                    if let Some(escaped) = chars.next() {
                        out.push(escaped);
                    }
                    continue;
                }
                _ => {}
            }
        }
        out.push(c);
    }
    Value::Known(out)
}
