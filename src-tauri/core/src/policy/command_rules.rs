//! Command rules in a run: the workspace's and the session's rules (`cargo test *`, allow
//! or deny) read from the store, and what they make of one `run_command` call. The
//! matching is `pocketpilot-cmdrules` (brush-parser): a command runs without asking
//! only when every part of it is a plain command covered by an allow rule; a deny rule
//! found anywhere in it refuses it, whatever else allows it.
use pocketpilot_cmdrules::{Rule, Verdict};
use pocketpilot_protocol::{
    CommandAsk, CommandRule, CommandRuleKind, CommandRuleOrigin, RuleOutcome, RuleUse,
};

use crate::store::{self, Store, StoreError};

/// The rules of one run, each read back into a matcher rule beside its stored row.
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    allow: Vec<(Rule, CommandRule)>,
    deny: Vec<(Rule, CommandRule)>,
}

/// What the rules make of one command.
#[derive(Debug, Clone, PartialEq)]
pub enum Judgement {
    /// Every part covered: each part with the rule that covers it.
    Allowed(Vec<RuleUse>),
    /// A deny rule matched `part`.
    Denied { part: String, rule: CommandRule },
    /// The person decides: the part not covered, and the rules approving it may keep.
    Asked(CommandAsk),
}

impl Judgement {
    pub fn outcome(&self) -> RuleOutcome {
        match self {
            Judgement::Allowed(_) => RuleOutcome::Allowed,
            Judgement::Denied { .. } => RuleOutcome::Denied,
            Judgement::Asked(_) => RuleOutcome::Asked,
        }
    }

    /// One sentence for the model, the log and `policy explain`.
    pub fn sentence(&self) -> String {
        match self {
            Judgement::Allowed(uses) => {
                let rules: Vec<String> = uses.iter().map(used).collect();
                format!("allowed by {}", rules.join(", "))
            }
            Judgement::Denied { part, rule } => format!(
                "the deny rule `{}` (added {}) refuses `{part}`",
                rule.rule,
                added_on(&rule.created_at)
            ),
            Judgement::Asked(ask) => ask.reason.clone(),
        }
    }
}

fn used(u: &RuleUse) -> String {
    format!("rule `{}`, added {}", u.rule, added_on(&u.created_at))
}

/// "2 Dec 2025" from a stored UTC stamp; the stamp itself when it does not parse.
pub fn added_on(stamp: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(stamp)
        .map(|t| t.format("%-d %b %Y").to_string())
        .unwrap_or_else(|_| stamp.to_owned())
}

impl RuleSet {
    /// The rules of `workspace`, with `session`'s own when given. A stored rule that no
    /// longer reads as one is left out, loudly: an allow rule left out asks more, and a
    /// deny rule left out is logged as an error (rules are checked when added, so this
    /// only happens to a database edited by hand).
    pub fn load(store: &Store, workspace: &str, session: Option<i64>) -> Result<Self, StoreError> {
        let rows = store.read(|c| store::command_rules::in_force(c, workspace, session))?;
        Ok(Self::from_rows(rows))
    }

    pub fn from_rows(rows: Vec<CommandRule>) -> Self {
        let mut set = RuleSet::default();
        for row in rows {
            match row.rule.parse::<Rule>() {
                Ok(rule) => match row.kind {
                    CommandRuleKind::Allow => set.allow.push((rule, row)),
                    CommandRuleKind::Deny => set.deny.push((rule, row)),
                },
                Err(e) => {
                    tracing::error!(id = row.id, rule = %row.rule, error = %e, "a stored command rule does not read as one: ignored")
                }
            }
        }
        set
    }

    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty()
    }

    /// What the rules make of `command`.
    pub fn judge(&self, command: &str) -> Judgement {
        let allow: Vec<Rule> = self.allow.iter().map(|(r, _)| r.clone()).collect();
        let deny: Vec<Rule> = self.deny.iter().map(|(r, _)| r.clone()).collect();
        // One read for the verdict and the suggestions: a command too slow to read is
        // not read twice.
        let (verdict, suggested) = pocketpilot_cmdrules::check_and_suggest(command, &allow, &deny);
        match verdict {
            Verdict::Covered { by } => Judgement::Allowed(
                by.into_iter()
                    .filter_map(|(part, rule)| {
                        let (_, row) = self.allow.iter().find(|(r, _)| *r == rule)?;
                        Some(RuleUse {
                            part,
                            rule_id: row.id,
                            rule: row.rule.clone(),
                            origin: row.origin,
                            created_at: row.created_at.clone(),
                        })
                    })
                    .collect(),
            ),
            Verdict::Denied { part, rule } => {
                match self.deny.iter().find(|(r, _)| *r == rule) {
                    Some((_, row)) => Judgement::Denied {
                        part,
                        rule: row.clone(),
                    },
                    // Cannot happen: the rule came from this list. Asking is the safe side.
                    None => Judgement::Asked(CommandAsk {
                        reason: format!("`{part}` may match the deny rule `{rule}`"),
                        part,
                        suggested: Vec::new(),
                    }),
                }
            }
            Verdict::Ask { reason } => Judgement::Asked(CommandAsk {
                part: reason.part.clone(),
                reason: reason.to_string(),
                suggested: suggested.iter().map(ToString::to_string).collect(),
            }),
        }
    }
}

/// The command of a `run_command` call's arguments.
pub fn command_of(args: &serde_json::Value) -> Option<&str> {
    args.get("command").and_then(serde_json::Value::as_str)
}

/// Reads a rule as the person typed it and returns it as it will be stored and shown
/// (`cargo  test  *` is `cargo test *`), or why it is not a rule.
pub fn normalise(text: &str) -> Result<String, pocketpilot_cmdrules::RuleError> {
    text.parse::<Rule>().map(|r| r.to_string())
}

/// The origin a rule made from an approval gets for its scope.
pub fn origin_of(scope: pocketpilot_protocol::CommandRuleScope) -> CommandRuleOrigin {
    match scope {
        pocketpilot_protocol::CommandRuleScope::Workspace => CommandRuleOrigin::Person,
        pocketpilot_protocol::CommandRuleScope::Session => CommandRuleOrigin::Session,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: i64, kind: CommandRuleKind, rule: &str) -> CommandRule {
        CommandRule {
            id,
            workspace: "/w".into(),
            session_id: None,
            kind,
            rule: rule.into(),
            origin: CommandRuleOrigin::Person,
            created_at: "2025-12-02T10:00:00.000Z".into(),
        }
    }

    #[test]
    fn each_part_names_its_rule_deny_names_the_rule_and_asking_offers_rules() {
        let set = RuleSet::from_rows(vec![
            row(1, CommandRuleKind::Allow, "cargo test *"),
            row(2, CommandRuleKind::Allow, "cargo clippy *"),
            row(3, CommandRuleKind::Deny, "rm *"),
            row(4, CommandRuleKind::Allow, "not ( a rule"),
        ]);
        let Judgement::Allowed(uses) = set.judge("cargo test -p x && cargo clippy") else {
            panic!("not allowed");
        };
        assert_eq!(uses.iter().map(|u| u.rule_id).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(
            set.judge("cargo test").sentence(),
            "allowed by rule `cargo test *`, added 2 Dec 2025"
        );
        let denied = set.judge("cargo test; rm -rf y");
        assert_eq!(
            denied.sentence(),
            "the deny rule `rm *` (added 2 Dec 2025) refuses `rm -rf y`"
        );
        let Judgement::Asked(ask) = set.judge("cargo test; cargo build --release") else {
            panic!("not asked");
        };
        assert_eq!(ask.part, "cargo build --release");
        assert_eq!(ask.reason, "`cargo build --release` has no rule");
        assert_eq!(ask.suggested, ["cargo build *"]);
    }
}
