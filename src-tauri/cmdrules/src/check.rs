//! The matcher: deny anywhere first, then the plain-command grammar, then allow rules.

use brush_parser::ast::{self, SourceLocation};
use brush_parser::{SourceSpan, Token};

use crate::bounded::{self, Unread};
use crate::rule::{Certainty, Pattern, Rule};
use crate::shell::{self, Script, Value};
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
/// covered and what asks. A command that takes longer than [`crate::READ_BUDGET`] to
/// read asks ([`Why::TooSlow`]).
pub fn check(command: &str, allow: &[Rule], deny: &[Rule]) -> Verdict {
    read_with_rules(command, allow, deny, verdict)
        .unwrap_or_else(|unread| ask(command.trim(), unread_why(unread)))
}

/// [`check`], and when it asks, what [`suggest`] offers for it, from one read within one
/// budget: a command that took too long to read is not read a second time for
/// suggestions (it would wait out the budget again and leave a second read running).
pub fn check_and_suggest(command: &str, allow: &[Rule], deny: &[Rule]) -> (Verdict, Vec<Rule>) {
    read_with_rules(command, allow, deny, verdict_and_suggestions)
        .unwrap_or_else(|unread| (ask(command.trim(), unread_why(unread)), Vec::new()))
}

fn verdict_and_suggestions(command: &str, allow: &[Rule], deny: &[Rule]) -> (Verdict, Vec<Rule>) {
    let verdict = verdict(command, allow, deny);
    let offered = match &verdict {
        Verdict::Ask { .. } => suggestions(command, allow, deny),
        _ => Vec::new(),
    };
    (verdict, offered)
}

/// Runs `read` on `command` within the read budget: in place for plain words (without
/// copying the rules), else on a reader thread, with copies of the rules.
fn read_with_rules<T: Send + 'static>(
    command: &str,
    allow: &[Rule],
    deny: &[Rule],
    read: fn(&str, &[Rule], &[Rule]) -> T,
) -> Result<T, Unread> {
    if bounded::reads_plainly(command) {
        return Ok(read(command, allow, deny));
    }
    let (allow, deny) = (allow.to_vec(), deny.to_vec());
    bounded::on_reader(command, move |text| read(text, &allow, &deny))
}

fn unread_why(unread: Unread) -> Why {
    match unread {
        Unread::TooSlow => Why::TooSlow,
        Unread::Busy => Why::ReaderBusy,
    }
}

fn verdict(command: &str, allow: &[Rule], deny: &[Rule]) -> Verdict {
    // Passed as an argument, a command ends at its first NUL; what follows is not what
    // was checked.
    if command.contains('\0') {
        return ask(command, Why::ParseError);
    }
    // A here-document is not parsed (see `shell::heredoc`), so a deny rule inside one is
    // not looked for: the command asks, and the person sees it whole.
    let script = match shell::parse(command) {
        Ok(script) => script,
        Err(reason) => return Verdict::Ask { reason },
    };
    // When no command anywhere may be denied, the parts need no second look.
    let parts_deny: &[Rule] = match deny_scan(&script, deny, 0) {
        Deny::Yes { part, rule } => return Verdict::Denied { part, rule },
        Deny::Maybe(_) => deny,
        Deny::No => &[],
    };
    let parts = match plain(&script) {
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
/// accepted operators and bash reads it as the parser did; else why not.
fn plain(script: &Script<'_>) -> Result<Vec<Part>, AskReason> {
    let command = script.src;
    if let Some(at) = joining_continuation(command) {
        return Err(AskReason::new(at, Why::LineContinuation));
    }
    // `a |& b` is `a 2>&1 | b` to the parser; it is still an operator the rules do not
    // name.
    if let Some(token) = script
        .tokens
        .iter()
        .find(|t| matches!(t, Token::Operator(op, _) if op == "|&"))
    {
        return Err(AskReason::new(token.to_str(), Why::Operator));
    }
    let parts = plain_parts(script)?;
    if let Some(skipped) = skipped(script) {
        return Err(AskReason::new(skipped, Why::Skipped));
    }
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
/// Nothing, either, when reading the command overran [`crate::READ_BUDGET`].
pub fn suggest(command: &str, allow: &[Rule], deny: &[Rule]) -> Vec<Rule> {
    read_with_rules(command, allow, deny, suggestions).unwrap_or_default()
}

fn suggestions(command: &str, allow: &[Rule], deny: &[Rule]) -> Vec<Rule> {
    if command.contains('\0') {
        return Vec::new();
    }
    let Ok(script) = shell::parse(command) else {
        return Vec::new();
    };
    let Ok(parts) = plain(&script) else {
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
    match verdict(command, &with, deny) {
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
        // The scan over the whole script returns a sure deny before parts are looked at.
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

/// Walks the accepted grammar — statements separated by `;` or newlines, `&&`/`||`
/// lists, `|` pipelines, simple commands, redirections to /dev/null — and returns its
/// simple commands in order, or the first thing outside it.
fn plain_parts(script: &Script<'_>) -> Result<Vec<Part>, AskReason> {
    let mut parts = Vec::new();
    for list in &script.program.complete_commands {
        for ast::CompoundListItem(and_or, separator) in &list.0 {
            if matches!(separator, ast::SeparatorOperator::Async) {
                let text = located(script, and_or.location());
                return Err(AskReason::new(format!("{text} &"), Why::Background));
            }
            for (_, pipeline) in and_or {
                plain_pipeline(script, pipeline, &mut parts)?;
            }
        }
    }
    Ok(parts)
}

fn plain_pipeline(
    script: &Script<'_>,
    pipeline: &ast::Pipeline,
    parts: &mut Vec<Part>,
) -> Result<(), AskReason> {
    if pipeline.bang {
        // The pipeline's span starts at its first command; the `!` is the token before.
        let text = pipeline.location().map_or_else(
            || script.src.trim().to_string(),
            |span| {
                let (start, end) = script.range(&span);
                let bang = script.src[..start].rfind('!').unwrap_or(start);
                script.src.get(bang..end).unwrap_or("").to_string()
            },
        );
        return Err(AskReason::new(text, Why::Negation));
    }
    if pipeline.timed.is_some() {
        let text = located(script, pipeline.location());
        return Err(AskReason::new(text, Why::Wrapper));
    }
    for command in &pipeline.seq {
        let reason = |why| AskReason::new(compound_text(script, command), why);
        match command {
            ast::Command::Simple(simple) => parts.push(plain_command(script, simple)?),
            ast::Command::Compound(compound, _) => {
                return Err(reason(match compound {
                    ast::CompoundCommand::BraceGroup(_) => Why::BraceGroup,
                    ast::CompoundCommand::Subshell(_) => Why::Subshell,
                    ast::CompoundCommand::Arithmetic(_) => Why::ArithmeticExpansion,
                    _ => Why::ControlFlow,
                }))
            }
            ast::Command::Function(_) => return Err(reason(Why::FunctionDefinition)),
            ast::Command::ExtendedTest(..) => return Err(reason(Why::TestExpression)),
        }
    }
    Ok(())
}

/// Builtins that set, export or unset variables: what runs after them may differ.
const DECLARATIONS: &[&str] = &[
    "export", "declare", "typeset", "local", "readonly", "unset", "alias", "unalias",
];

fn plain_command(script: &Script<'_>, simple: &ast::SimpleCommand) -> Result<Part, AskReason> {
    let text = command_text(script, simple);
    for item in simple.prefix.iter().flat_map(|p| &p.0) {
        match item {
            ast::CommandPrefixOrSuffixItem::IoRedirect(redirect) => {
                plain_redirect(script, redirect)?
            }
            ast::CommandPrefixOrSuffixItem::AssignmentWord(_, word) => {
                return Err(AskReason::new(word_text(script, word), Why::Assignment))
            }
            other => return Err(item_reason(script, other)),
        }
    }
    let mut argv = Vec::new();
    if let Some(name) = &simple.word_or_name {
        // `[` is the test builtin, not a glob.
        if name.value == "[" {
            return Err(AskReason::new(text, Why::TestExpression));
        }
        argv.push(known_or_dynamic(name)?);
    }
    for item in simple.suffix.iter().flat_map(|s| &s.0) {
        match item {
            ast::CommandPrefixOrSuffixItem::IoRedirect(redirect) => {
                plain_redirect(script, redirect)?
            }
            // An argument that looks like an assignment is a plain word to a program.
            ast::CommandPrefixOrSuffixItem::Word(word)
            | ast::CommandPrefixOrSuffixItem::AssignmentWord(_, word) => {
                argv.push(known_or_dynamic(word)?)
            }
            other => return Err(item_reason(script, other)),
        }
    }
    match argv.first() {
        None => Err(AskReason::new(text, Why::Unsupported)),
        Some(Value::Known(program)) if DECLARATIONS.contains(&program.as_str()) => {
            Err(AskReason::new(text, Why::Declaration))
        }
        Some(_) => Ok(Part { text, argv }),
    }
}

fn known_or_dynamic(word: &ast::Word) -> Result<Value, AskReason> {
    match shell::value(&word.value) {
        Value::Dynamic { part, why } => Err(AskReason::new(part, why)),
        value => Ok(value),
    }
}

/// Why an item the plain grammar has no place for asks.
fn item_reason(script: &Script<'_>, item: &ast::CommandPrefixOrSuffixItem) -> AskReason {
    match item {
        ast::CommandPrefixOrSuffixItem::ProcessSubstitution(kind, sub) => {
            AskReason::new(process_text(script, kind, sub), Why::ProcessSubstitution)
        }
        other => AskReason::new(located(script, other.location()), Why::Unsupported),
    }
}

/// Accepts only redirections that write nothing anywhere: output to /dev/null (any
/// descriptor, `>`, `>>`, `&>`, `&>>`, `>&`), input from /dev/null, and a descriptor
/// duplicated onto stdout or stderr (`2>&1`, `>&2`). Anything else may write a file the
/// rule never named.
fn plain_redirect(script: &Script<'_>, redirect: &ast::IoRedirect) -> Result<(), AskReason> {
    use ast::{IoFileRedirectKind as K, IoFileRedirectTarget as T};
    let reason = |why| AskReason::new(redirect_text(script, redirect), why);
    let to = |word: &ast::Word, allowed: &[&str]| match shell::value(&word.value) {
        Value::Dynamic { part, why } => Err(AskReason::new(part, why)),
        Value::Known(to) if allowed.contains(&to.as_str()) => Ok(()),
        _ => Err(reason(Why::Redirection)),
    };
    match redirect {
        ast::IoRedirect::File(_, K::Write | K::Append | K::Read, T::Filename(word))
        | ast::IoRedirect::OutputAndError(word, _) => to(word, &["/dev/null"]),
        ast::IoRedirect::File(_, K::DuplicateOutput, T::Fd(1 | 2)) => Ok(()),
        ast::IoRedirect::File(_, K::DuplicateOutput, T::Duplicate(word) | T::Filename(word)) => {
            to(word, &["/dev/null", "1", "2"])
        }
        ast::IoRedirect::File(_, _, T::ProcessSubstitution(kind, sub)) => Err(AskReason::new(
            process_text(script, kind, sub),
            Why::ProcessSubstitution,
        )),
        ast::IoRedirect::HereDocument(..) | ast::IoRedirect::HereString(..) => {
            Err(reason(Why::Heredoc))
        }
        ast::IoRedirect::File(..) => Err(reason(Why::Redirection)),
    }
}

/// A compound command as written, from its first token to the one that closes it: the
/// parser's span for `if`, `while` and `case` covers only the keyword.
fn compound_text(script: &Script<'_>, command: &ast::Command) -> String {
    const OPENS: &[&str] = &[
        "if", "case", "for", "while", "until", "select", "{", "(", "[[",
    ];
    const CLOSES: &[&str] = &["fi", "esac", "done", "}", ")", "]]"];
    let Some(span) = command.location() else {
        return script.src.trim().to_string();
    };
    let start = span.start.index;
    let mut depth = 0usize;
    let mut end = span.end.index;
    for token in script
        .tokens
        .iter()
        .skip_while(|t| t.location().start.index < start)
    {
        let text = token.to_str();
        if OPENS.contains(&text) {
            depth += 1;
        } else if CLOSES.contains(&text) {
            depth = depth.saturating_sub(1);
        }
        end = end.max(token.location().end.index);
        if depth == 0 {
            break;
        }
    }
    let (from, to) = (script.byte(start), script.byte(end));
    script.src.get(from..to).unwrap_or("").to_string()
}

/// The text of a located node, or the whole command when the parser kept no location.
fn located(script: &Script<'_>, span: Option<SourceSpan>) -> String {
    span.map_or_else(
        || script.src.trim().to_string(),
        |span| script.text(&span).to_string(),
    )
}

fn word_text(script: &Script<'_>, word: &ast::Word) -> String {
    word.loc
        .as_ref()
        .map_or_else(|| word.value.clone(), |span| script.text(span).to_string())
}

/// A simple command's words as written, from its first word or assignment to its last
/// argument (redirections at either end left out, as the parts a person reads).
fn command_text(script: &Script<'_>, simple: &ast::SimpleCommand) -> String {
    let items =
        (simple.prefix.iter().flat_map(|x| &x.0)).chain(simple.suffix.iter().flat_map(|x| &x.0));
    let mut spans: Vec<(usize, usize)> = items
        .filter_map(|item| match item {
            ast::CommandPrefixOrSuffixItem::Word(w)
            | ast::CommandPrefixOrSuffixItem::AssignmentWord(_, w) => w.loc.as_ref(),
            ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => Some(&sub.loc),
            ast::CommandPrefixOrSuffixItem::IoRedirect(_) => None,
        })
        .chain(simple.word_or_name.iter().filter_map(|w| w.loc.as_ref()))
        .map(|span| script.range(span))
        .collect();
    spans.sort_unstable();
    match (spans.first(), spans.iter().map(|s| s.1).max()) {
        (Some((start, _)), Some(end)) => script.src.get(*start..end).unwrap_or("").to_string(),
        _ => script.src.trim().to_string(),
    }
}

/// `<(…)` or `>(…)` as written.
fn process_text(
    script: &Script<'_>,
    kind: &ast::ProcessSubstitutionKind,
    sub: &ast::SubshellCommand,
) -> String {
    let (start, end) = script.range(&sub.loc);
    let text = script.src.get(start..end).unwrap_or("");
    if script.src[..start].ends_with(['<', '>']) {
        script.src.get(start - 1..end).unwrap_or(text).to_string()
    } else {
        format!("{kind}{text}")
    }
}

/// A redirection as written: from its descriptor number and operator to the end of its
/// target; as the parser shows it when the target has no location (`2>&1`).
fn redirect_text(script: &Script<'_>, redirect: &ast::IoRedirect) -> String {
    use ast::IoFileRedirectTarget as T;
    let target = match redirect {
        ast::IoRedirect::File(_, _, T::Filename(w) | T::Duplicate(w))
        | ast::IoRedirect::HereString(_, w)
        | ast::IoRedirect::OutputAndError(w, _) => w.loc.as_ref().map(|s| script.range(s)),
        // Fd targets keep no location; here-documents are refused before parsing.
        ast::IoRedirect::File(..) | ast::IoRedirect::HereDocument(..) => None,
    };
    let Some((start, end)) = target else {
        return redirect.to_string();
    };
    let before = script.src.get(..start).unwrap_or("");
    let op = before.trim_end_matches([' ', '\t']);
    let op = op.trim_end_matches(['<', '>', '&', '|', '-']);
    let op = op.trim_end_matches(|c: char| c.is_ascii_digit());
    script.src.get(op.len()..end).unwrap_or("").to_string()
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

/// Every command anywhere in the script — inside substitutions, brace groups, subshells,
/// function bodies, conditions, loops — checked against the deny rules. A sure
/// match returns at once; a possible one is kept, as is text that could not be read,
/// where a denied command could hide.
fn deny_scan(script: &Script<'_>, deny: &[Rule], depth: usize) -> Deny {
    let Some(first) = deny.first() else {
        return Deny::No;
    };
    let mut scan = DenyScan {
        script,
        deny,
        first,
        depth,
        nesting: 0,
        found: Deny::No,
    };
    for list in &script.program.complete_commands {
        scan.list(list);
    }
    scan.found
}

/// The walk of [`deny_scan`]: every node that holds commands or words.
struct DenyScan<'s, 'a> {
    script: &'s Script<'a>,
    deny: &'s [Rule],
    first: &'s Rule,
    depth: usize,
    /// How many substitutions deep the walk is.
    nesting: usize,
    found: Deny,
}

impl DenyScan<'_, '_> {
    fn done(&self) -> bool {
        matches!(self.found, Deny::Yes { .. })
    }

    fn maybe(&mut self) {
        let found = std::mem::replace(&mut self.found, Deny::No);
        self.found = found.or(|| Deny::Maybe(self.first.clone()));
    }

    fn list(&mut self, list: &ast::CompoundList) {
        for ast::CompoundListItem(and_or, _) in &list.0 {
            for (_, pipeline) in and_or {
                for command in &pipeline.seq {
                    if self.done() {
                        return;
                    }
                    self.command(command);
                }
            }
        }
    }

    fn command(&mut self, command: &ast::Command) {
        let redirects = match command {
            ast::Command::Simple(simple) => {
                self.simple(simple);
                None
            }
            ast::Command::Compound(compound, redirects) => {
                self.compound(compound);
                redirects.as_ref()
            }
            ast::Command::Function(function) => {
                self.compound(&function.body.0);
                function.body.1.as_ref()
            }
            ast::Command::ExtendedTest(test, redirects) => {
                self.raw(self.script.text(&test.loc));
                redirects.as_ref()
            }
        };
        for redirect in redirects.iter().flat_map(|r| &r.0) {
            self.redirect(redirect);
        }
    }

    fn compound(&mut self, compound: &ast::CompoundCommand) {
        use ast::CompoundCommand as C;
        match compound {
            C::BraceGroup(group) => self.list(&group.list),
            C::Subshell(sub) => self.list(&sub.list),
            C::ForClause(each) => {
                for word in each.values.iter().flatten() {
                    self.raw(&word.value);
                }
                self.list(&each.body.list);
            }
            C::CaseClause(case) => {
                self.raw(&case.value.value);
                for item in &case.cases {
                    for pattern in &item.patterns {
                        self.raw(&pattern.value);
                    }
                    if let Some(list) = &item.cmd {
                        self.list(list);
                    }
                }
            }
            C::IfClause(branch) => {
                self.list(&branch.condition);
                self.list(&branch.then);
                for other in branch.elses.iter().flatten() {
                    if let Some(condition) = &other.condition {
                        self.list(condition);
                    }
                    self.list(&other.body);
                }
            }
            C::WhileClause(looped) | C::UntilClause(looped) => {
                self.list(&looped.0);
                self.list(&looped.1.list);
            }
            C::Arithmetic(arithmetic) => self.raw(&arithmetic.expr.value),
            C::ArithmeticForClause(each) => {
                for expr in [&each.initializer, &each.condition, &each.updater]
                    .into_iter()
                    .flatten()
                {
                    self.raw(&expr.value);
                }
                self.list(&each.body.list);
            }
            C::Coprocess(coprocess) => self.command(&coprocess.body),
        }
    }

    fn simple(&mut self, simple: &ast::SimpleCommand) {
        let items = (simple.prefix.iter().flat_map(|x| &x.0))
            .chain(simple.suffix.iter().flat_map(|x| &x.0));
        for item in items {
            match item {
                ast::CommandPrefixOrSuffixItem::IoRedirect(redirect) => self.redirect(redirect),
                ast::CommandPrefixOrSuffixItem::Word(word)
                | ast::CommandPrefixOrSuffixItem::AssignmentWord(_, word) => self.raw(&word.value),
                ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => self.list(&sub.list),
            }
        }
        if let Some(name) = &simple.word_or_name {
            self.raw(&name.value);
        }
        if self.done() || !may_be_denied(simple, self.deny) {
            return;
        }
        let argv = shell_words(simple);
        let part = command_text(self.script, simple);
        let found = std::mem::replace(&mut self.found, Deny::No);
        self.found = found.or(|| deny_for(&argv, &part, self.deny, self.depth));
    }

    fn redirect(&mut self, redirect: &ast::IoRedirect) {
        use ast::IoFileRedirectTarget as T;
        match redirect {
            ast::IoRedirect::File(_, _, T::Filename(word) | T::Duplicate(word))
            | ast::IoRedirect::HereString(_, word)
            | ast::IoRedirect::OutputAndError(word, _) => self.raw(&word.value),
            ast::IoRedirect::File(_, _, T::ProcessSubstitution(_, sub)) => self.list(&sub.list),
            // Here-documents are refused before parsing (`shell::heredoc`).
            ast::IoRedirect::File(_, _, T::Fd(_)) | ast::IoRedirect::HereDocument(..) => {}
        }
    }

    /// Text that may hold command substitutions: each one's script is scanned too.
    fn raw(&mut self, text: &str) {
        if self.done() || !text.contains(['$', '`']) {
            return;
        }
        let Some(scripts) = shell::substitutions(text) else {
            return self.maybe();
        };
        if !scripts.is_empty() && self.nesting >= shell::MAX_NESTING {
            return self.maybe();
        }
        for text in scripts {
            let Ok(inner) = shell::parse(&text) else {
                self.maybe();
                continue;
            };
            let mut scan = DenyScan {
                script: &inner,
                deny: self.deny,
                first: self.first,
                depth: self.depth,
                nesting: self.nesting + 1,
                found: std::mem::replace(&mut self.found, Deny::No),
            };
            for list in &inner.program.complete_commands {
                scan.list(list);
            }
            self.found = scan.found;
            if self.done() {
                return;
            }
        }
    }
}

/// The program and arguments of a simple command, however they are written.
fn shell_words(simple: &ast::SimpleCommand) -> Vec<Value> {
    let arguments = simple.suffix.iter().flat_map(|s| &s.0);
    simple
        .word_or_name
        .iter()
        .map(|w| shell::value(&w.value))
        .chain(arguments.filter_map(|item| match item {
            ast::CommandPrefixOrSuffixItem::Word(w)
            | ast::CommandPrefixOrSuffixItem::AssignmentWord(_, w) => Some(shell::value(&w.value)),
            ast::CommandPrefixOrSuffixItem::ProcessSubstitution(..) => Some(Value::Expands),
            ast::CommandPrefixOrSuffixItem::IoRedirect(_) => None,
        }))
        .collect()
}

/// Whether [`deny_for`] could find anything in this command, judged by its program alone:
/// a program no deny rule names, that runs nothing from its arguments, is never denied,
/// and its other words (a long command has hundreds) need not be read.
fn may_be_denied(simple: &ast::SimpleCommand, deny: &[Rule]) -> bool {
    if deny.is_empty() {
        return false;
    }
    let Some(name) = &simple.word_or_name else {
        return true;
    };
    match shell::value(&name.value) {
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
            Ok(inner) => found.or(|| deny_scan(&inner, deny, depth + 1)),
            Err(_) => found.or(|| Deny::Maybe(first.clone())),
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

/// A backslash-newline that joins two words. Bash deletes it before splitting words, so
/// after an unescaped blank it is only a blank (`cargo test \⏎ -p core`); after anything
/// else it joins what is written as two lines into one word
/// (`cargo test\⏎#$(curl x)` runs `curl x`). That join is where shell readers have
/// disagreed, and a command worth a rule does not need it: it asks.
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

/// Text between the tokens that is not a blank, a line continuation or a comment: the
/// tokenizer dropped it where bash would not. The parser is written to read as bash
/// does; this is the check that it did not leave anything out.
fn skipped(script: &Script<'_>) -> Option<String> {
    let src = script.src;
    let mut covered_to = 0;
    let ends = script
        .tokens
        .iter()
        .map(|t| script.range(t.location()))
        .chain(std::iter::once((src.len(), src.len())));
    for (start, end) in ends {
        if start >= covered_to {
            let gap = src.get(covered_to..start).unwrap_or("");
            if let Some(left) = unread(gap, covered_to, src) {
                return Some(left);
            }
        }
        covered_to = covered_to.max(end);
    }
    None
}

/// What in `gap` (at byte `at` of `src`) is neither blank, a line continuation, nor a
/// comment that starts a word.
fn unread(gap: &str, at: usize, src: &str) -> Option<String> {
    let mut i = 0;
    let bytes = gap.as_bytes();
    while i < bytes.len() {
        match bytes[i] {
            b' ' | b'\t' | b'\n' => i += 1,
            b'\\' if bytes.get(i + 1) == Some(&b'\n') => i += 2,
            b'#' if starts_a_word(at + i, src) => {
                i = gap[i..].find('\n').map_or(bytes.len(), |n| i + n);
            }
            _ => return Some(gap[i..].trim().to_string()),
        }
    }
    None
}

/// Whether bash starts a word at byte `at`, so a `#` there begins a comment: at the
/// start, or after a newline or operator character, or after a space or tab that no
/// backslash escapes.
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
