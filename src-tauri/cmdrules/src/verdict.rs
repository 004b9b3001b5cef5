//! What [`crate::check`] answers.

use std::fmt;

use crate::rule::Rule;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every part is a plain command and each is covered by an allow rule: `by` pairs each
    /// part's text with the first allow rule that covers it, in the command's order.
    Covered { by: Vec<(String, Rule)> },
    /// A deny rule covers `part`, found anywhere in the command (inside `$(…)`, a brace
    /// group, behind `sudo` or `xargs`, in `bash -c '…'`). Deny wins over everything.
    Denied { part: String, rule: Rule },
    /// The person decides.
    Ask { reason: AskReason },
}

/// Why a command asks: the part that was not covered, and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AskReason {
    pub part: String,
    pub why: Why,
}

impl AskReason {
    pub(crate) fn new(part: impl Into<String>, why: Why) -> Self {
        AskReason {
            part: part.into(),
            why,
        }
    }
}

/// What made a part ask. Stable for the UI; its text comes from `Display`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    CommandSubstitution,
    ProcessSubstitution,
    ParameterExpansion,
    ArithmeticExpansion,
    /// `$'…'`, whose escapes the shell reads at run time.
    AnsiCString,
    /// Any redirection but `>/dev/null` (any descriptor, `>>`, `&>`) and `N>&1`/`N>&2`.
    Redirection,
    /// `<<EOF`, `<<<`.
    Heredoc,
    BraceGroup,
    Subshell,
    FunctionDefinition,
    /// `NAME=value` before a command or on its own.
    Assignment,
    /// `export`, `declare`, `local`, `readonly`, `unset`.
    Declaration,
    /// `if`, `for`, `while`, `case`.
    ControlFlow,
    /// `[ … ]`, `[[ … ]]`.
    TestExpression,
    /// `! command`.
    Negation,
    /// `command &`.
    Background,
    /// An operator other than `&&`, `||`, `;`, `|` (e.g. `|&`, `;;`).
    Operator,
    /// `eval`, `source`, `.`: their arguments are shell code.
    ShellCode,
    /// `exec`: replaces the shell that runs the rest.
    Exec,
    /// `sudo`, `env`, `xargs`, `timeout`…: runs another program, and no rule names the
    /// wrapper itself.
    Wrapper,
    /// The program name is a glob, brace or tilde expansion.
    ProgramExpands,
    /// A word a rule would name may expand to other words.
    WordExpands,
    /// No allow rule covers this plain command.
    NoRule,
    /// A word that may expand keeps this deny rule from being ruled out.
    MayBeDenied {
        rule: Rule,
    },
    ParseError,
    /// A control character or a space other than space, tab and newline, which shells and
    /// tools split words on differently.
    OddCharacter,
    /// Text between the tokens that is not a blank or a comment: the tokenizer left it out.
    Skipped,
    /// A backslash-newline right after a word character: bash joins the lines into one
    /// word, where shell readers have disagreed.
    LineContinuation,
    /// Nothing to run.
    Empty,
    /// Shell syntax outside the small set the rules cover.
    Unsupported,
    /// Reading it took longer than [`crate::READ_BUDGET`]; it was not read.
    TooSlow,
    /// Not read: earlier commands that took too long to read are still being read
    /// (see [`crate::MAX_OVERRUNNING_READS`]).
    ReaderBusy,
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Why::CommandSubstitution => f.write_str("is a command substitution"),
            Why::ProcessSubstitution => f.write_str("is a process substitution"),
            Why::ParameterExpansion => f.write_str("is a parameter expansion"),
            Why::ArithmeticExpansion => f.write_str("is an arithmetic expansion"),
            Why::AnsiCString => f.write_str("is an ANSI-C quoted string"),
            Why::Redirection => f.write_str("is a redirection other than to /dev/null"),
            Why::Heredoc => f.write_str("feeds text in (here-document or here-string)"),
            Why::BraceGroup => f.write_str("is a brace group"),
            Why::Subshell => f.write_str("is a subshell"),
            Why::FunctionDefinition => f.write_str("defines a function"),
            Why::Assignment => f.write_str("sets a variable"),
            Why::Declaration => f.write_str("declares or unsets variables"),
            Why::ControlFlow => f.write_str("is a condition or loop"),
            Why::TestExpression => f.write_str("is a test expression"),
            Why::Negation => f.write_str("is negated with `!`"),
            Why::Background => f.write_str("runs in the background"),
            Why::Operator => f.write_str("joins commands with an operator other than && || ; |"),
            Why::ShellCode => f.write_str("runs its arguments as shell code"),
            Why::Exec => f.write_str("replaces the shell"),
            Why::Wrapper => f.write_str("runs another program"),
            Why::ProgramExpands => f.write_str("has a program name that expands"),
            Why::WordExpands => f.write_str("has a word that may expand to other words"),
            Why::NoRule => f.write_str("has no rule"),
            Why::MayBeDenied { rule } => write!(f, "may match the deny rule `{rule}`"),
            Why::ParseError => f.write_str("does not parse as shell"),
            Why::OddCharacter => {
                f.write_str("is a control or space character the shell may read differently")
            }
            Why::LineContinuation => f.write_str(
                "continues a word onto the next line, which the shell may read differently",
            ),
            Why::Skipped => f.write_str("is text the parser skipped"),
            Why::Empty => f.write_str("has nothing to run"),
            Why::Unsupported => f.write_str("is shell syntax the rules do not cover"),
            Why::TooSlow => f.write_str("took too long to read, so it was not read"),
            Why::ReaderBusy => f.write_str(
                "was not read: earlier commands that took too long to read are still being read",
            ),
        }
    }
}

impl fmt::Display for AskReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.part.trim().is_empty() {
            write!(f, "the command {}", self.why)
        } else {
            write!(f, "`{}` {}", self.part, self.why)
        }
    }
}
