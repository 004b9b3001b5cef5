//! Plan mode's policy: what a run may do while it plans (read only), what an approved
//! plan lets its run do without asking (write the files it lists; run the commands it
//! lists, as exact command rules for that run only), and how a plan is read from an
//! answer that did not call `submit_plan`.
use pocketpilot_protocol::{CommandRule, CommandRuleKind, CommandRuleOrigin, Plan, PlanContent};

use crate::policy::command_rules::RuleSet;

/// What the plan tools (`submit_plan`, `plan_step_done`) are recorded under: they change
/// nothing outside the store.
pub const PLAN_CAPABILITY: &str = "plan:update";

/// The capabilities a planning run may use: reading, listing, fetching a URL (which still
/// asks, and is not offered when the policy denies the network) and submitting its plan.
const PLANNING_CAPABILITIES: [&str; 4] = ["fs:read", "fs:list", "net:network", PLAN_CAPABILITY];

/// What plan mode means for one run.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum PlanScope {
    /// Not plan mode: every tool is offered and decided as usual.
    #[default]
    Act,
    /// Planning: only reading tools, and the run ends with a plan.
    Planning,
    /// Carrying out an approved plan.
    Carrying(Carried),
}

/// An approved plan as its run uses it.
#[derive(Debug, Clone, PartialEq)]
pub struct Carried {
    pub plan_id: i64,
    pub steps: usize,
    /// Workspace-relative, normalised (`./a/b` is `a/b`).
    pub files: Vec<String>,
}

impl PlanScope {
    /// The scope of a run that carries out `plan`.
    pub fn carrying(plan: &Plan) -> Self {
        PlanScope::Carrying(Carried {
            plan_id: plan.id,
            steps: plan.content.steps.len(),
            files: plan.content.files.iter().map(|f| normalise(f)).collect(),
        })
    }

    /// Whether a tool of `capability` is refused in this scope (and so not offered).
    pub fn refuses(&self, capability: &str) -> bool {
        matches!(self, PlanScope::Planning) && !PLANNING_CAPABILITIES.contains(&capability)
    }

    /// Whether an approved plan lets this call write without asking: an `fs:write` call
    /// whose `path` is one of the plan's files.
    pub fn covers_write(
        &self,
        capability: &str,
        args: &serde_json::Value,
        workspace: &str,
    ) -> bool {
        let PlanScope::Carrying(carried) = self else {
            return false;
        };
        if capability != pocketpilot_protocol::capability::name::FS_WRITE {
            return false;
        }
        let Some(path) = args.get("path").and_then(serde_json::Value::as_str) else {
            return false;
        };
        let relative = path
            .strip_prefix(workspace)
            .filter(|rest| rest.starts_with('/'))
            .unwrap_or(path);
        carried.files.contains(&normalise(relative))
    }
}

/// A workspace-relative path as plans and calls are compared: no leading `./` or `/`
/// left over, no doubled or trailing `/`. `..` is kept (and so never matches a listed
/// file that does not spell it; the guard refuses what leaves the workspace anyway).
pub fn normalise(path: &str) -> String {
    path.trim()
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect::<Vec<_>>()
        .join("/")
}

/// The run's command rules with the approved plan's commands added as exact allow rules
/// (origin `plan`), for this run only. A listed command that is not one plain command
/// (a chain, a substitution) adds no rule: it asks, like anything beyond the plan.
pub fn with_plan_commands(mut rules: Vec<CommandRule>, plan: &Plan) -> RuleSet {
    let at = plan
        .decided_at
        .clone()
        .unwrap_or_else(|| plan.created_at.clone());
    for command in &plan.content.commands {
        let Ok(text) = crate::policy::command_rules::normalise(&exact(command)) else {
            tracing::info!(%command, "a plan's command is not one plain command: it will ask");
            continue;
        };
        rules.push(CommandRule {
            id: 0,
            workspace: String::new(),
            session_id: Some(plan.session_id),
            kind: CommandRuleKind::Allow,
            rule: text,
            origin: CommandRuleOrigin::Plan,
            created_at: at.clone(),
        });
    }
    RuleSet::from_rows(rules)
}

/// A command as an exact rule: a trailing `*` word would widen it to any arguments, so a
/// listed `cargo test *` is quoted to mean the literal word.
fn exact(command: &str) -> String {
    let trimmed = command.trim();
    match trimmed.strip_suffix(" *") {
        Some(head) => format!("{head} '*'"),
        None if trimmed == "*" => "'*'".to_owned(),
        None => trimmed.to_owned(),
    }
}

/// What a planning run is told when it starts (a system entry in its transcript).
pub const PLAN_MODE_NOTE: &str = "Plan mode: nothing is written, deleted or run until the person approves a plan. \
Use only the reading tools (read_file, list_dir, search_files, fetch_url) to learn what you need, then call \
submit_plan once with `steps` (what you will do, in order, one short sentence each), `files` (the \
workspace-relative paths you will create or change) and `commands` (the exact shell commands you will run). \
Then stop.";

/// What the run carrying out a plan is told (the person's input that starts it).
pub fn carry_out_goal(plan: &PlanContent) -> String {
    format!(
        "The person approved this plan. Carry it out. After you finish each step, call \
         plan_step_done with its number. Writing the listed files and running the listed \
         commands exactly as written will not ask; anything else asks the person.\n\n{}",
        plan.render(&[])
    )
}

/// A plan read from an answer's text, for a model that wrote its plan instead of calling
/// `submit_plan`: a JSON object with `steps` (alone or in a fenced block), else Markdown
/// sections headed "Steps"/"Plan", "Files" and "Commands" with list items under them, else
/// the numbered list of the answer as its steps. `None` when no step is found.
pub fn from_answer(text: &str) -> Option<PlanContent> {
    json_plan(text)
        .or_else(|| markdown_plan(text))
        .filter(|p| p.problem().is_none())
}

fn json_plan(text: &str) -> Option<PlanContent> {
    let candidates = std::iter::once(text.trim()).chain(fenced_blocks(text));
    for candidate in candidates {
        if let Ok(plan) = serde_json::from_str::<PlanContent>(candidate) {
            return Some(plan);
        }
    }
    None
}

/// The contents of the fenced code blocks of `text`.
fn fenced_blocks(text: &str) -> impl Iterator<Item = &str> {
    text.split("```").skip(1).step_by(2).map(|block| {
        block
            .split_once('\n')
            .map_or(block, |(_, body)| body)
            .trim()
    })
}

#[derive(Clone, Copy, PartialEq)]
enum Section {
    None,
    Steps,
    Files,
    Commands,
    Other,
}

fn markdown_plan(text: &str) -> Option<PlanContent> {
    let mut plan = PlanContent::default();
    let mut numbered = Vec::new();
    let mut section = Section::None;
    for line in text.lines() {
        if let Some(item) = list_item(line) {
            if line.trim_start().starts_with(|c: char| c.is_ascii_digit()) {
                numbered.push(item.to_owned());
            }
            match section {
                Section::Steps => plan.steps.push(item.to_owned()),
                Section::Files => plan.files.push(code_or_text(item)),
                Section::Commands => plan.commands.push(code_or_text(item)),
                Section::None | Section::Other => {}
            }
        } else if let Some(heading) = heading(line) {
            section = heading;
        }
    }
    if plan.steps.is_empty() {
        plan.steps = numbered;
    }
    (!plan.steps.is_empty()).then_some(plan)
}

/// A line that names a section: a Markdown heading, or a short line of bold text or
/// ending in `:`.
fn heading(line: &str) -> Option<Section> {
    let t = line.trim();
    let is_heading = t.starts_with('#') || t.ends_with(':') || t.starts_with("**");
    if !is_heading || t.len() > 60 {
        return None;
    }
    let words = t
        .trim_matches(|c: char| c == '#' || c == '*' || c == ':' || c.is_whitespace())
        .to_lowercase();
    Some(if words.contains("command") {
        Section::Commands
    } else if words.contains("file") {
        Section::Files
    } else if words.contains("step") || words.contains("plan") {
        Section::Steps
    } else {
        Section::Other
    })
}

/// The text of a list item (`1. x`, `2) x`, `- x`, `* x`, `- [ ] x`).
fn list_item(line: &str) -> Option<&str> {
    let t = line.trim_start();
    let rest = if let Some(rest) = t.strip_prefix(['-', '*', '+']) {
        rest
    } else {
        let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return None;
        }
        t[digits..].strip_prefix(['.', ')'])?
    };
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let rest = rest.trim();
    let rest = rest
        .strip_prefix("[ ]")
        .or_else(|| rest.strip_prefix("[x]"))
        .map_or(rest, str::trim);
    (!rest.is_empty()).then_some(rest)
}

/// The first `code span` of an item, else the item.
fn code_or_text(item: &str) -> String {
    let mut parts = item.split('`');
    match (parts.next(), parts.next()) {
        (Some(_), Some(code)) if !code.trim().is_empty() => code.trim().to_owned(),
        _ => item.trim().to_owned(),
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
