//! The matcher: deny anywhere first, then the plain-command grammar, then allow rules.

use tree_sitter::Node;

use crate::rule::{Certainty, Pattern, Rule};
use crate::shell::{self, kind, Value};
use crate::verdict::{AskReason, Verdict, Why};

/// Programs that run another program from their arguments. They ask unless a rule names
/// the wrapper itself, and deny rules are looked for among their arguments.
const WRAPPERS: &[&str] = &[
    "env",
    "sudo",
    "doas",
    "su",
    "runuser",
    "command",
    "builtin",
    "xargs",
    "nohup",
    "timeout",
    "nice",
    "ionice",
    "stdbuf",
    "setsid",
    "chroot",
    "unshare",
    "nsenter",
    "time",
    "strace",
    "ltrace",
    "watch",
    "flock",
    "taskset",
    "chrt",
    "fakeroot",
    "firejail",
    "unbuffer",
    "systemd-run",
    "parallel",
    "script",
    "busybox",
    "exec",
    "bash",
    "sh",
    "zsh",
    "dash",
    "ksh",
    "mksh",
    "fish",
    "rbash",
];

/// Not a wrapper by name (`find . -name x` runs nothing), but `-exec` runs its
/// arguments: deny rules are looked for there too.
const RUNS_ARGUMENTS: &[&str] = &["find"];

/// Shells whose `-c` argument is a script: deny rules are looked for inside it.
const SHELLS: &[&str] = &["bash", "sh", "zsh", "dash", "ksh", "mksh", "fish", "rbash"];

/// Always ask, whatever the rules say: their arguments are shell code or a file of it, or
/// they replace the shell.
const SHELL_CODE: &[&str] = &["eval", "source", "."];
const EXEC: &str = "exec";

/// How deep deny rules are looked for through wrappers and `bash -c` scripts; past it a
/// deny rule may be hiding, so a part that is otherwise covered asks.
const MAX_DENY_DEPTH: usize = 4;

/// Whether `command` may run without asking. See the crate documentation for what is
/// covered and what asks.
pub fn check(command: &str, allow: &[Rule], deny: &[Rule]) -> Verdict {
    // Passed as an argument, a command ends at its first NUL; what follows is not what
    // was checked.
    if command.contains('\0') {
        return ask(command, Why::ParseError);
    }
    let Some(tree) = shell::parse(command) else {
        return ask(command, Why::ParseError);
    };
    let root = tree.root_node();
    // One walk over every node for both the deny rules and text the parser skipped.
    let mut denied = DenyScan::new(root, command, deny, 0);
    let mut gaps = Gaps::new(command);
    walk(root, |node| {
        gaps.visit(node);
        denied.visit(node)
    });
    // When no command anywhere may be denied, the parts need no second look.
    let parts_deny: &[Rule] = match denied.found {
        Deny::Yes { part, rule } => return Verdict::Denied { part, rule },
        Deny::Maybe(_) => deny,
        Deny::No => &[],
    };
    let parts = match plain(root, command, gaps.skipped()) {
        Ok(parts) => parts,
        Err(reason) => return Verdict::Ask { reason },
    };
    let mut by = Vec::with_capacity(parts.len());
    for part in parts {
        match covering_rule(&part, allow, parts_deny) {
            Ok(rule) => by.push((part.text, rule.clone())),
            Err(why) => return ask(part.text, why),
        }
    }
    Verdict::Covered { by }
}

/// The command's simple commands, when it is nothing but plain commands joined by the
/// accepted operators and the parser and bash read it alike; else why not.
/// `skipped`: text the parser dropped ([`Gaps`]), found by the caller's walk.
fn plain(root: Node<'_>, command: &str, skipped: Option<String>) -> Result<Vec<Part>, AskReason> {
    if root.has_error() {
        return Err(AskReason::new(first_error(root, command), Why::ParseError));
    }
    // tree-sitter-bash splits words on any whitespace; bash only on space, tab and
    // newline. A form feed before `#$(…)` is a comment to one and a command
    // substitution to the other.
    if let Some(odd) = command
        .chars()
        .find(|c| (c.is_whitespace() || c.is_control()) && !matches!(c, ' ' | '\t' | '\n'))
    {
        return Err(AskReason::new(format!("{odd:?}"), Why::OddCharacter));
    }
    if let Some(at) = joining_continuation(command) {
        return Err(AskReason::new(at, Why::LineContinuation));
    }
    if let Some(skipped) = skipped {
        return Err(AskReason::new(skipped, Why::Skipped));
    }
    let parts = plain_parts(root, command)?;
    if parts.is_empty() {
        return Err(AskReason::new("", Why::Empty));
    }
    Ok(parts)
}

/// Programs whose arguments are code or a script to run: a rule for them names the whole
/// command, never `python *`.
const INTERPRETERS: &[&str] = &[
    "python", "python2", "python3", "node", "nodejs", "deno", "bun", "perl", "ruby", "php", "lua",
    "Rscript", "awk", "gawk", "sed", "make",
];

/// How many words after the program a suggested rule keeps (`npm run build *`).
const MAX_SUGGESTED_WORDS: usize = 2;

/// The rules to offer a person who approves `command` ("Always allow `cargo test *`"): one
/// per part no allow rule covers yet — the program, its leading subcommand-like words, and
/// `*` (`cargo test -p core` gives `cargo test *`); the whole command, without `*`, for an
/// interpreter (`python3 x.py`). Nothing when a part is not a plain command, runs another
/// program or shell code, or when the rules offered would still not cover the command
/// with `allow` and `deny`: what is offered is exactly what makes it run without asking.
pub fn suggest(command: &str, allow: &[Rule], deny: &[Rule]) -> Vec<Rule> {
    if command.contains('\0') {
        return Vec::new();
    }
    let Some(tree) = shell::parse(command) else {
        return Vec::new();
    };
    let root = tree.root_node();
    let mut gaps = Gaps::new(command);
    walk(root, |node| {
        gaps.visit(node);
        false
    });
    let Ok(parts) = plain(root, command, gaps.skipped()) else {
        return Vec::new();
    };
    let mut offered: Vec<Rule> = Vec::new();
    for part in &parts {
        if allow.iter().chain(&offered).any(|r| r.allows(&part.argv)) {
            continue;
        }
        match suggested_rule(&part.argv) {
            Some(rule) => offered.push(rule),
            None => return Vec::new(),
        }
    }
    let with: Vec<Rule> = allow.iter().chain(&offered).cloned().collect();
    match check(command, &with, deny) {
        Verdict::Covered { .. } => offered,
        _ => Vec::new(),
    }
}

fn suggested_rule(argv: &[Value]) -> Option<Rule> {
    let mut words = Vec::with_capacity(argv.len());
    for v in argv {
        match v {
            Value::Known(w) => words.push(w.clone()),
            _ => return None,
        }
    }
    let (program, args) = words.split_first()?;
    let name = basename(program);
    if SHELL_CODE.contains(&name) || name == EXEC || WRAPPERS.contains(&name) {
        return None;
    }
    let (words, rest) = if INTERPRETERS.contains(&name) {
        (args.to_vec(), false)
    } else {
        let subcommand = |w: &&String| {
            w.starts_with(|c: char| c.is_ascii_lowercase())
                && w.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_:".contains(c))
        };
        let fixed = args
            .iter()
            .take_while(subcommand)
            .take(MAX_SUGGESTED_WORDS)
            .cloned()
            .collect();
        (fixed, true)
    };
    let rule = Rule {
        program: program.clone(),
        args: Pattern { words, rest },
    };
    // Shown and stored as text: only a rule that reads back as itself is offered.
    (rule.to_string().parse::<Rule>().ok()? == rule).then_some(rule)
}

fn ask(part: impl Into<String>, why: Why) -> Verdict {
    Verdict::Ask {
        reason: AskReason::new(part, why),
    }
}

/// A simple command in the accepted grammar, with its words read.
struct Part {
    text: String,
    argv: Vec<Value>,
}

fn basename(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

fn covering_rule<'r>(part: &Part, allow: &'r [Rule], deny: &[Rule]) -> Result<&'r Rule, Why> {
    let program = match part.argv.first() {
        Some(Value::Known(p)) => p.as_str(),
        Some(Value::Expands) => return Err(Why::ProgramExpands),
        Some(Value::Dynamic { why, .. }) => return Err(why.clone()),
        None => return Err(Why::Empty),
    };
    match deny_for(&part.argv, &part.text, deny, 0) {
        // The scan over the whole tree returns a sure deny before parts are looked at.
        Deny::Yes { rule, .. } | Deny::Maybe(rule) => return Err(Why::MayBeDenied { rule }),
        Deny::No => {}
    }
    if SHELL_CODE.contains(&program) {
        return Err(Why::ShellCode);
    }
    if program == EXEC {
        return Err(Why::Exec);
    }
    if WRAPPERS.contains(&basename(program)) && !allow.iter().any(|r| r.program == program) {
        return Err(Why::Wrapper);
    }
    if let Some(rule) = allow.iter().find(|r| r.allows(&part.argv)) {
        return Ok(rule);
    }
    if allow.iter().any(|r| r.allows_loosely(&part.argv)) {
        Err(Why::WordExpands)
    } else {
        Err(Why::NoRule)
    }
}

/// Walks the accepted grammar — a program of statements separated by `;` or newlines,
/// `&&`/`||` lists, `|` pipelines, simple commands, redirections to /dev/null — and
/// returns its simple commands in order, or the first thing outside it.
///
/// Iterative: `a && b && …` nests one level per operator and commands can be long.
fn plain_parts(root: Node<'_>, src: &str) -> Result<Vec<Part>, AskReason> {
    let mut parts = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        let reason = |why| AskReason::new(shell::text(node, src), why);
        match node.kind() {
            kind::PROGRAM | kind::LIST | kind::PIPELINE => {
                let joiners: &[&str] = match node.kind() {
                    kind::PROGRAM => &[kind::SEMI, kind::NEWLINE],
                    kind::LIST => &[kind::AND, kind::OR],
                    _ => &[kind::PIPE],
                };
                let mut children = Vec::new();
                let mut cursor = node.walk();
                for child in node.children(&mut cursor) {
                    if child.is_named() {
                        if child.kind() != kind::COMMENT {
                            children.push(child);
                        } else if !starts_a_word(child.start_byte(), src) {
                            let line = shell::text(child, src);
                            return Err(AskReason::new(line, Why::HiddenWord));
                        }
                        continue;
                    }
                    let op = shell::text(child, src);
                    if joiners.contains(&op) {
                        continue;
                    }
                    let before = child.prev_named_sibling().unwrap_or(node);
                    let part = shell::text(before, src);
                    return Err(if op == kind::BACKGROUND {
                        AskReason::new(format!("{part} &"), Why::Background)
                    } else {
                        AskReason::new(op, Why::Operator)
                    });
                }
                stack.extend(children.into_iter().rev());
            }
            kind::REDIRECTED_STATEMENT => {
                for (field, child) in shell::fields(node) {
                    match field {
                        Some(kind::FIELD_BODY) => stack.push(child),
                        _ => plain_redirect(child, src)?,
                    }
                }
            }
            kind::COMMAND => parts.push(plain_command(node, src)?),
            kind::COMPOUND_STATEMENT => return Err(reason(Why::BraceGroup)),
            kind::SUBSHELL => return Err(reason(Why::Subshell)),
            kind::FUNCTION_DEFINITION => return Err(reason(Why::FunctionDefinition)),
            kind::VARIABLE_ASSIGNMENT | kind::VARIABLE_ASSIGNMENTS => {
                return Err(reason(Why::Assignment))
            }
            kind::DECLARATION_COMMAND | kind::UNSET_COMMAND => {
                return Err(reason(Why::Declaration))
            }
            kind::NEGATED_COMMAND => return Err(reason(Why::Negation)),
            kind::TEST_COMMAND => return Err(reason(Why::TestExpression)),
            k if kind::CONTROL_FLOW.contains(&k) => return Err(reason(Why::ControlFlow)),
            kind::ERROR => return Err(reason(Why::ParseError)),
            _ => return Err(reason(Why::Unsupported)),
        }
    }
    Ok(parts)
}

fn plain_command(node: Node<'_>, src: &str) -> Result<Part, AskReason> {
    let mut argv = Vec::new();
    let mut last_word_end = None;
    for (field, child) in shell::fields(node) {
        let word = match field {
            Some(kind::FIELD_NAME) => child.named_child(0).unwrap_or(child),
            Some(kind::FIELD_ARGUMENT) => child,
            Some(kind::FIELD_REDIRECT) => {
                plain_redirect(child, src)?;
                continue;
            }
            _ => {
                let why = match child.kind() {
                    kind::VARIABLE_ASSIGNMENT | kind::VARIABLE_ASSIGNMENTS => Why::Assignment,
                    _ => Why::Unsupported,
                };
                return Err(AskReason::new(shell::text(child, src), why));
            }
        };
        // Two words with nothing between them are one word to bash: the parser has been
        // seen to split `cargo""\\c` into `cargo""` and `\\c`.
        if last_word_end == Some(child.start_byte()) {
            let joined = src.get(node.start_byte()..child.end_byte()).unwrap_or("");
            return Err(AskReason::new(joined, Why::JoinedWords));
        }
        last_word_end = Some(child.end_byte());
        match shell::value(word, src) {
            Value::Dynamic { part, why } => return Err(AskReason::new(part, why)),
            value => argv.push(value),
        }
    }
    if argv.is_empty() {
        return Err(AskReason::new(shell::text(node, src), Why::Unsupported));
    }
    Ok(Part {
        text: shell::text(node, src).to_string(),
        argv,
    })
}

/// Accepts only redirections that write nothing anywhere: output to /dev/null (any
/// descriptor, `>`, `>>`, `&>`, `&>>`, `>&`), input from /dev/null, and a descriptor
/// duplicated onto stdout or stderr (`2>&1`, `>&2`). Anything else may write a file the
/// rule never named.
fn plain_redirect(node: Node<'_>, src: &str) -> Result<(), AskReason> {
    let reason = |why| AskReason::new(shell::text(node, src), why);
    match node.kind() {
        kind::FILE_REDIRECT => {}
        kind::HEREDOC_REDIRECT | kind::HERESTRING_REDIRECT => return Err(reason(Why::Heredoc)),
        _ => return Err(reason(Why::Redirection)),
    }
    let mut op = None;
    let mut destinations = Vec::new();
    for (field, child) in shell::fields(node) {
        match field {
            Some(kind::FIELD_DESCRIPTOR) => {}
            Some(kind::FIELD_DESTINATION) => destinations.push(child),
            _ if !child.is_named() && op.is_none() => op = Some(shell::text(child, src)),
            _ => return Err(reason(Why::Redirection)),
        }
    }
    let destination = match destinations.as_slice() {
        [one] => shell::value(*one, src),
        _ => return Err(reason(Why::Redirection)),
    };
    if let Value::Dynamic { part, why } = destination {
        return Err(AskReason::new(part, why));
    }
    let to =
        |allowed: &[&str]| matches!(&destination, Value::Known(d) if allowed.contains(&d.as_str()));
    let fine = match op {
        Some(">" | ">>" | "&>" | "&>>" | "<") => to(&["/dev/null"]),
        Some(">&") => to(&["/dev/null", "1", "2"]),
        _ => false,
    };
    if fine {
        Ok(())
    } else {
        Err(reason(Why::Redirection))
    }
}

/// A deny rule's match on one command or a whole script.
enum Deny {
    No,
    Maybe(Rule),
    Yes { part: String, rule: Rule },
}

impl Deny {
    /// Keeps the strongest: a sure match, else the first possible one.
    fn or(self, other: impl FnOnce() -> Deny) -> Deny {
        match self {
            Deny::Yes { .. } => self,
            Deny::Maybe(rule) => match other() {
                yes @ Deny::Yes { .. } => yes,
                _ => Deny::Maybe(rule),
            },
            Deny::No => other(),
        }
    }
}

/// Every command anywhere in the tree — inside substitutions, brace groups, subshells,
/// function bodies, conditions, here-documents — checked against the deny rules. A sure
/// match returns at once; a possible one is kept, as is a parse error, where a denied
/// command could hide.
fn deny_scan(root: Node<'_>, src: &str, deny: &[Rule], depth: usize) -> Deny {
    if deny.is_empty() {
        return Deny::No;
    }
    let mut scan = DenyScan::new(root, src, deny, depth);
    walk(root, |node| scan.visit(node));
    scan.found
}

/// [`deny_scan`] one node at a time, so a walk can do other work alongside.
struct DenyScan<'a> {
    src: &'a str,
    deny: &'a [Rule],
    depth: usize,
    found: Deny,
}

impl<'a> DenyScan<'a> {
    fn new(root: Node<'_>, src: &'a str, deny: &'a [Rule], depth: usize) -> Self {
        let found = match deny.first() {
            Some(first) if root.has_error() => Deny::Maybe(first.clone()),
            _ => Deny::No,
        };
        Self {
            src,
            deny,
            depth,
            found,
        }
    }

    /// Looks at one node; true once a sure match is found (the walk may stop).
    fn visit(&mut self, node: Node<'_>) -> bool {
        if node.kind() == kind::COMMAND && may_be_denied(node, self.src, self.deny) {
            let argv = shell::command_words(node, self.src);
            let found = std::mem::replace(&mut self.found, Deny::No);
            self.found =
                found.or(|| deny_for(&argv, shell::text(node, self.src), self.deny, self.depth));
        }
        matches!(self.found, Deny::Yes { .. })
    }
}

/// Visits every node in document order until `visit` returns true.
fn walk(root: Node<'_>, mut visit: impl FnMut(Node<'_>) -> bool) {
    let mut cursor = root.walk();
    loop {
        if visit(cursor.node()) {
            return;
        }
        if cursor.goto_first_child() || cursor.goto_next_sibling() {
            continue;
        }
        loop {
            if !cursor.goto_parent() {
                return;
            }
            if cursor.goto_next_sibling() {
                break;
            }
        }
    }
}

/// Whether [`deny_for`] could find anything in this command, judged by its program alone:
/// a program no deny rule names, that runs nothing from its arguments, is never denied,
/// and its other words (a long command has hundreds) need not be read.
fn may_be_denied(node: Node<'_>, src: &str, deny: &[Rule]) -> bool {
    if deny.is_empty() {
        return false;
    }
    let Some(name) = node.child_by_field_name(kind::FIELD_NAME) else {
        return true;
    };
    match shell::value(name.named_child(0).unwrap_or(name), src) {
        Value::Known(program) => {
            let base = basename(&program);
            base == "eval"
                || WRAPPERS.contains(&base)
                || RUNS_ARGUMENTS.contains(&base)
                || deny.iter().any(|r| r.names_program(&program))
        }
        Value::Expands | Value::Dynamic { .. } => true,
    }
}

/// Deny rules against one command's words, then against what it runs: the arguments of a
/// wrapper (`sudo rm …`, `xargs rm`, `find … -exec rm {} ;`), the script of `bash -c`
/// and `eval`.
fn deny_for(argv: &[Value], part: &str, deny: &[Rule], depth: usize) -> Deny {
    let mut found = Deny::No;
    for rule in deny {
        match rule.denies(argv) {
            Certainty::Yes => {
                return Deny::Yes {
                    part: part.to_string(),
                    rule: rule.clone(),
                }
            }
            Certainty::Maybe => found = found.or(|| Deny::Maybe(rule.clone())),
            Certainty::No => {}
        }
    }
    let Some(Value::Known(program)) = argv.first() else {
        return found;
    };
    let name = basename(program);
    let runs_arguments = WRAPPERS.contains(&name) || RUNS_ARGUMENTS.contains(&name);
    if !runs_arguments && name != "eval" {
        return found;
    }
    let Some(first) = deny.first() else {
        return found;
    };
    if depth >= MAX_DENY_DEPTH {
        return found.or(|| Deny::Maybe(first.clone()));
    }
    if runs_arguments {
        // Rules against every tail of the arguments; deeper wrappers and shells only at
        // the first tail that is one, which keeps `sudo sudo sudo …` linear.
        let mut descended = false;
        for start in 1..argv.len() {
            let tail = &argv[start..];
            for rule in deny {
                match rule.denies(tail) {
                    Certainty::Yes => {
                        return Deny::Yes {
                            part: part.to_string(),
                            rule: rule.clone(),
                        }
                    }
                    Certainty::Maybe => found = found.or(|| Deny::Maybe(rule.clone())),
                    Certainty::No => {}
                }
            }
            let nested = matches!(&tail[0], Value::Known(p)
                if WRAPPERS.contains(&basename(p)) || RUNS_ARGUMENTS.contains(&basename(p)) || p == "eval");
            if nested && !descended {
                descended = true;
                found = found.or(|| deny_for(tail, part, deny, depth + 1));
                if matches!(found, Deny::Yes { .. }) {
                    return found;
                }
            }
        }
    }
    let script = if SHELLS.contains(&name) {
        shell_script(argv)
    } else if name == "eval" {
        eval_script(argv)
    } else {
        return found;
    };
    match script {
        Some(Some(script)) => match shell::parse(&script) {
            Some(tree) => found.or(|| deny_scan(tree.root_node(), &script, deny, depth + 1)),
            None => found.or(|| Deny::Maybe(first.clone())),
        },
        // A script that is computed at run time may hold anything.
        Some(None) => found.or(|| Deny::Maybe(first.clone())),
        None => found,
    }
}

/// The `-c` script of a shell: `Some(Some(text))`, `Some(None)` when the script is not a
/// known word, `None` when the shell runs a file or reads stdin.
fn shell_script(argv: &[Value]) -> Option<Option<String>> {
    let flag = argv.iter().skip(1).position(|v| {
        matches!(v, Value::Known(a) if a.starts_with('-') && !a.starts_with("--") && a.contains('c'))
    })?;
    match argv.get(flag + 2) {
        Some(Value::Known(script)) => Some(Some(script.clone())),
        Some(_) => Some(None),
        None => None,
    }
}

/// `eval`'s arguments joined with spaces, as bash does.
fn eval_script(argv: &[Value]) -> Option<Option<String>> {
    let mut words = Vec::new();
    for v in argv.iter().skip(1) {
        match v {
            Value::Known(w) => words.push(w.as_str()),
            _ => return Some(None),
        }
    }
    Some(Some(words.join(" ")))
}

/// A backslash-newline that joins two words. Bash deletes it before splitting words;
/// tree-sitter-bash reads it as a blank. After an unescaped blank both agree
/// (`cargo test \⏎ -p core`); after anything else bash joins what tree-sitter splits:
/// `cargo test\⏎#$(curl x)` is a comment to one and a command substitution to the other.
/// Returns the line up to the continuation.
fn joining_continuation(command: &str) -> Option<String> {
    let bytes = command.as_bytes();
    let mut from = 0;
    while let Some(found) = command[from..].find("\\\n") {
        let at = from + found;
        let blank_before = match at.checked_sub(1).map(|i| bytes[i]) {
            None => true,
            Some(b' ' | b'\t') => at < 2 || bytes[at - 2] != b'\\',
            Some(_) => false,
        };
        if !blank_before {
            let line_start = command[..at].rfind('\n').map_or(0, |n| n + 1);
            return Some(command[line_start..at + 2].to_string());
        }
        from = at + 2;
    }
    None
}

/// Text between the parser's tokens that is not a blank, a newline or a line
/// continuation: the parser dropped it (it drops a backslash before a tab, for one),
/// bash does not. Fed every node in document order by a walk.
struct Gaps<'a> {
    src: &'a str,
    covered_to: usize,
    found: Option<String>,
}

impl<'a> Gaps<'a> {
    fn new(src: &'a str) -> Self {
        Self {
            src,
            covered_to: 0,
            found: None,
        }
    }

    fn blank(gap: &str) -> bool {
        gap.replace("\\\n", "")
            .chars()
            .all(|c| matches!(c, ' ' | '\t' | '\n'))
    }

    fn visit(&mut self, node: Node<'_>) {
        if self.found.is_some() || node.child_count() != 0 {
            return;
        }
        let gap = self
            .src
            .get(self.covered_to..node.start_byte())
            .unwrap_or("");
        if !Self::blank(gap) {
            self.found = Some(gap.trim().to_string());
        }
        self.covered_to = self.covered_to.max(node.end_byte());
    }

    /// What was skipped, after the walk: the first gap, or the text after the last token.
    fn skipped(self) -> Option<String> {
        if self.found.is_some() {
            return self.found;
        }
        let tail = self.src.get(self.covered_to..).unwrap_or("");
        (!Self::blank(tail)).then(|| tail.trim().to_string())
    }
}

/// Whether bash starts a word at byte `at`, so a `#` there begins a comment: at the
/// start, or after a newline or operator character, or after a space or tab that no
/// backslash escapes. tree-sitter-bash also starts a comment after an escaped blank
/// (`a\ #$(cmd)`), where bash reads one word and runs `cmd`.
fn starts_a_word(at: usize, src: &str) -> bool {
    let before = &src.as_bytes()[..at];
    match before.last() {
        None => true,
        Some(b'\n' | b';' | b'&' | b'|' | b'(' | b')') => true,
        Some(b' ' | b'\t') => {
            let backslashes = before[..before.len() - 1]
                .iter()
                .rev()
                .take_while(|b| **b == b'\\')
                .count();
            backslashes % 2 == 0
        }
        Some(_) => false,
    }
}

fn first_error(root: Node<'_>, src: &str) -> String {
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        if node.is_error() || node.is_missing() {
            let shown = if node.is_missing() {
                node.parent().unwrap_or(node)
            } else {
                node
            };
            return shell::text(shown, src).to_string();
        }
        let descend = node.has_error() && cursor.goto_first_child();
        if !descend && !cursor.goto_next_sibling() {
            // Only reached when has_error() led nowhere: show the whole command.
            return src.to_string();
        }
    }
}
