//! The approval decision: a pure function of (capability, workspace rules, session grants).
//!
//! Precedence, first match wins:
//! 1. no capability, a malformed one (not `<area>:<verb>`), or a verb nobody knows → deny
//!    (default);
//! 2. a workspace rule that denies the capability → deny (workspace rule). Deny beats allow;
//! 3. a workspace rule that allows it → allow (workspace rule);
//! 4. a grant for this session or run → allow (session grant);
//! 5. read/list → allow; write/create/update/delete/execute/network → approval (default).
use serde::{Deserialize, Serialize};

pub use pocketpilot_protocol::{Decision, DecisionSource};

/// Rules a person set for a workspace. A rule is a capability (`fs:write`), an area
/// (`shell` matches `shell:*`) or `*`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyRules {
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
}

fn rule_matches(rule: &str, capability: &str) -> bool {
    rule == "*"
        || rule == capability
        || capability
            .split_once(':')
            .is_some_and(|(area, _)| area == rule || format!("{area}:*") == rule)
}

pub fn decide(
    capability: Option<&str>,
    rules: &PolicyRules,
    grants: &[String],
) -> (Decision, DecisionSource) {
    let Some(capability) = capability.filter(|c| !c.trim().is_empty()) else {
        return (Decision::Deny, DecisionSource::Default);
    };
    // `<area>:<verb>` with both parts present; anything else is malformed, hence unknown.
    let verb = match capability.rsplit_once(':') {
        Some((area, verb)) if !area.is_empty() && !verb.is_empty() => verb,
        _ => return (Decision::Deny, DecisionSource::Default),
    };
    let default = match verb {
        "read" | "list" => Decision::Allow,
        "write" | "create" | "update" | "delete" | "execute" | "network" => {
            Decision::RequireApproval
        }
        _ => return (Decision::Deny, DecisionSource::Default),
    };
    if rules.deny.iter().any(|r| rule_matches(r, capability)) {
        return (Decision::Deny, DecisionSource::WorkspaceRule);
    }
    if rules.allow.iter().any(|r| rule_matches(r, capability)) {
        return (Decision::Allow, DecisionSource::WorkspaceRule);
    }
    if default == Decision::RequireApproval && grants.iter().any(|g| rule_matches(g, capability)) {
        return (Decision::Allow, DecisionSource::SessionGrant);
    }
    (default, DecisionSource::Default)
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
