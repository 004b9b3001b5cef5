//! Command rules: whether a shell command an agent wants to run is covered by the
//! person's "always allow" rules (`cargo test *`), refused by a deny rule, or must be
//! asked about.
//!
//! The command is parsed with brush-parser, not split on spaces or matched by prefix:
//! `cargo test; rm -rf x`, `cargo test $(curl …)` or `{ cargo test; rm x; }` start with
//! `cargo test` and are not covered by it. A command is covered only when every part is
//! a simple command of plain words joined by `&&`, `||`, `;`, `|` (redirections to
//! /dev/null and `2>&1` allowed) and each part is covered by an allow rule; anything
//! else asks. Deny rules are looked for everywhere, and win.
//!
//! Every read runs on a thread of its own within [`READ_BUDGET`]: text the parser takes
//! longer over asks, and never hangs the caller (see `bounded`).
//!
//! Layout: `rule` (the rule and its text form), `shell` (parsing and reading words),
//! `check` (the matcher), `verdict` (its answer), `bounded` (the time limit). README.md lists what asks and why.

mod bounded;
mod check;
mod rule;
mod shell;
mod verdict;

pub use bounded::{BUDGET as READ_BUDGET, MAX_OVERRUNNING as MAX_OVERRUNNING_READS};
pub use check::{check, check_and_suggest, suggest};
pub use rule::{Pattern, Rule, RuleError};
pub use verdict::{AskReason, Verdict, Why};

#[cfg(test)]
#[path = "rule_tests.rs"]
mod rule_tests;
