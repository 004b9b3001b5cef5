//! A rule as the person writes it (`cargo test *`): a program, literal words, and an
//! optional `*` at the end standing for any remaining arguments.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use brush_parser::ast::{self, SourceLocation};
use brush_parser::SourceSpan;

use crate::bounded::{self, Unread};
use crate::shell::{self, Value};

/// The words after the program. `cargo test *` is `words: ["test"], rest: true`: it
/// covers `cargo test` and `cargo test -p core`, not `cargo build`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Pattern {
    /// Arguments that must be present, in order, exactly.
    pub words: Vec<String>,
    /// Whether any further arguments (none included) are accepted after them.
    pub rest: bool,
}

/// One allow or deny rule. Stored as its text (`"cargo test *"`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Rule {
    /// Matched exactly against the command's first word: `/usr/bin/cargo` and `./cargo`
    /// are other programs than `cargo` for an allow rule.
    pub program: String,
    pub args: Pattern,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("a rule names a program, then its arguments")]
    Empty,
    #[error("a rule is one plain command: `{0}` is not")]
    NotPlain(String),
    #[error("`*` stands only at the end of a rule, for any remaining arguments")]
    StarNotLast,
    #[error("the rule took too long to read")]
    TooSlow,
    #[error(
        "the rule was not read: earlier commands that took too long to read are still being read"
    )]
    ReaderBusy,
}

impl Rule {
    /// Whether this rule covers a command whose words are `argv` (program first), as an
    /// allow rule: every word it names must be known and equal; words the `*` takes may
    /// expand (a glob among `cargo test`'s arguments stays `cargo test`'s argument).
    pub(crate) fn allows(&self, argv: &[Value]) -> bool {
        self.allows_with(
            argv,
            |got, want| matches!(got, Value::Known(g) if g == want),
        )
    }

    /// Like [`Rule::allows`] but letting a word that expands stand for a named word: tells
    /// "no rule" apart from "a rule, if not for that glob".
    pub(crate) fn allows_loosely(&self, argv: &[Value]) -> bool {
        self.allows_with(argv, |got, want| match got {
            Value::Known(g) => g == want,
            Value::Expands => true,
            Value::Dynamic { .. } => false,
        })
    }

    fn allows_with(&self, argv: &[Value], fits: impl Fn(&Value, &str) -> bool) -> bool {
        let Some((program, args)) = argv.split_first() else {
            return false;
        };
        let named = self.args.words.len();
        matches!(program, Value::Known(p) if *p == self.program)
            && args.len() >= named
            && (self.args.rest || args.len() == named)
            && self
                .args
                .words
                .iter()
                .zip(args)
                .all(|(want, got)| fits(got, want))
            && args[named..]
                .iter()
                .all(|v| !matches!(v, Value::Dynamic { .. }))
    }

    /// As a deny rule: sure, possible or no. Deny names a program by its last path
    /// component too (`/bin/rm` is `rm`), and a word that may expand may be anything,
    /// including several words, so past the first such word a match stays possible.
    pub(crate) fn denies(&self, argv: &[Value]) -> Certainty {
        let Some((program, args)) = argv.split_first() else {
            return Certainty::No;
        };
        match program {
            Value::Known(p) if self.names_program(p) => {}
            Value::Known(_) => return Certainty::No,
            _ => return Certainty::Maybe,
        }
        for (i, want) in self.args.words.iter().enumerate() {
            match args.get(i) {
                Some(Value::Known(got)) if got == want => {}
                Some(Value::Known(_)) | None => return self.denied_words_later(args),
                Some(_) => return Certainty::Maybe,
            }
        }
        let rest = &args[self.args.words.len()..];
        if self.args.rest || rest.is_empty() {
            Certainty::Yes
        } else if rest.iter().all(|v| matches!(v, Value::Known(_))) {
            Certainty::No
        } else {
            // An expanding word might expand to nothing.
            Certainty::Maybe
        }
    }

    /// The denied words further on, in order, with other words before or between them:
    /// `git -C . push` or `git --no-pager push` against `git push *`. Options before a
    /// subcommand are common and their arity is the program's business, so the rule
    /// cannot tell `git -C . push` (a push) from `git log --grep push` (not one): such a
    /// command asks, naming the deny rule, rather than run or be refused.
    fn denied_words_later(&self, args: &[Value]) -> Certainty {
        let mut wanted = self.args.words.iter().peekable();
        for arg in args {
            let Some(want) = wanted.peek() else { break };
            let fits = match arg {
                Value::Known(got) => got == *want,
                Value::Expands | Value::Dynamic { .. } => true,
            };
            if fits {
                wanted.next();
            }
        }
        if wanted.peek().is_none() {
            Certainty::Maybe
        } else {
            Certainty::No
        }
    }

    pub(crate) fn names_program(&self, program: &str) -> bool {
        program == self.program
            || (!self.program.contains('/')
                && program.rsplit('/').next() == Some(self.program.as_str()))
    }
}

/// How sure a deny rule's match is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Certainty {
    No,
    Maybe,
    Yes,
}

impl FromStr for Rule {
    type Err = RuleError;

    /// Reads the rule the way the shell reads a command, so quoting means the same in
    /// both: `git commit -m 'wip' *`. A bare `*` at the end is "any remaining
    /// arguments"; a quoted `'*'` is the literal word.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        bounded::read_within_budget(s, Rule::read).unwrap_or_else(|unread| {
            Err(match unread {
                Unread::TooSlow => RuleError::TooSlow,
                Unread::Busy => RuleError::ReaderBusy,
            })
        })
    }
}

impl Rule {
    fn read(s: &str) -> Result<Self, RuleError> {
        let script = shell::parse(s).map_err(|reason| RuleError::NotPlain(reason.part))?;
        let not_plain = |span: Option<SourceSpan>| {
            RuleError::NotPlain(span.map_or_else(
                || s.trim().to_string(),
                |span| script.text(&span).to_string(),
            ))
        };
        let mut items = script.program.complete_commands.iter().flat_map(|l| &l.0);
        let ast::CompoundListItem(and_or, separator) = match (items.next(), items.next()) {
            (None, _) => return Err(RuleError::Empty),
            (Some(item), None) => item,
            (Some(item), Some(_)) => return Err(not_plain(item.location())),
        };
        let simple = match (&and_or.first.seq[..], &and_or.first) {
            ([ast::Command::Simple(simple)], pipeline)
                if and_or.additional.is_empty()
                    && !pipeline.bang
                    && pipeline.timed.is_none()
                    && matches!(separator, ast::SeparatorOperator::Sequence) =>
            {
                simple
            }
            _ => return Err(not_plain(and_or.location())),
        };
        if let Some(prefix) = &simple.prefix {
            return Err(not_plain(prefix.location()));
        }
        let arguments = simple.suffix.iter().flat_map(|x| &x.0);
        let mut words = Vec::new();
        let mut rest = false;
        for item in simple
            .word_or_name
            .iter()
            .map(Ok)
            .chain(arguments.map(|item| match item {
                ast::CommandPrefixOrSuffixItem::Word(word) => Ok(word),
                other => Err(other),
            }))
        {
            let word = item.map_err(|other| not_plain(other.location()))?;
            if rest {
                return Err(RuleError::StarNotLast);
            }
            if word.value == "*" && !words.is_empty() {
                rest = true;
                continue;
            }
            match shell::value(&word.value) {
                // Control characters cannot be shown back as readable text.
                Value::Known(w) if w.contains(char::is_control) => {
                    return Err(not_plain(word.location()))
                }
                Value::Known(w) => words.push(w),
                _ if !words.is_empty() && word.value.contains('*') => {
                    return Err(RuleError::StarNotLast)
                }
                _ => return Err(not_plain(word.location())),
            }
        }
        let mut words = words.into_iter();
        let program = words.next().ok_or(RuleError::Empty)?;
        if program.is_empty() {
            return Err(RuleError::Empty);
        }
        Ok(Rule {
            program,
            args: Pattern {
                words: words.collect(),
                rest,
            },
        })
    }
}

impl TryFrom<String> for Rule {
    type Error = RuleError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        value.parse()
    }
}

impl From<Rule> for String {
    fn from(rule: Rule) -> Self {
        rule.to_string()
    }
}

/// Shell-quotes a word unless it is made only of characters no shell treats specially.
fn quoted(word: &str, always: bool) -> String {
    let plain = !always
        && !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_alphanumeric() || "_-./:=@%+,^".contains(c));
    if plain {
        word.to_string()
    } else {
        // `{''` keeps a `{` from standing right before a wide character, which the parser
        // refuses to read (see `shell::parse`).
        format!("'{}'", word.replace('\'', r"'\''").replace('{', "{''"))
    }
}

impl Rule {
    fn render(&self, always_quote: bool) -> String {
        let mut out = quoted(&self.program, always_quote);
        for word in &self.args.words {
            out.push(' ');
            out.push_str(&quoted(word, always_quote));
        }
        if self.args.rest {
            out.push_str(" *");
        }
        out
    }
}

impl fmt::Display for Rule {
    /// Bare words where they read back as themselves (`cargo test *`), quoted otherwise:
    /// a bare `a=b` first is an assignment, `if` a keyword, and the parser has quirks of
    /// its own, so the bare form is kept only when it parses back to this rule.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bare = self.render(false);
        if bare.parse::<Rule>().as_ref() == Ok(self) {
            f.write_str(&bare)
        } else {
            f.write_str(&self.render(true))
        }
    }
}
