//! The approval decision: a pure function of (capability, workspace rules, session grants).
//!
//! Precedence, first match wins:
//! 1. no capability, a malformed one (not `<area>:<verb>`), or a verb nobody knows → deny
//!    (default);
//! 2. a workspace rule that denies the capability → deny (workspace rule). Deny beats allow;
//! 3. a workspace rule that allows it → allow (workspace rule);
//! 4. a grant for this session or run → allow (session grant);
//! 5. read/list → allow; write/create/update/delete/execute/network → approval (default).
//!
//! An MCP tool's capability names the tool: `mcp:<server>:<tool>:<verb>`. An allow rule or
//! a grant covers it only when it names that tool (`mcp:<server>:<tool>`), its server as an
//! explicit choice (`mcp:<server>:*`), all MCP tools (`mcp`, `mcp:*`) or everything (`*`):
//! a grant given for one tool never covers another. A verb rule (`mcp:execute`) still
//! denies every MCP tool with that verb, so a deny written before tools were named keeps
//! its reach; it allows none.
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

/// What a rule is matched for: a deny reaches further than an allow (see the module doc).
#[derive(Clone, Copy, PartialEq)]
enum Reach {
    Deny,
    Allow,
}

fn rule_matches(rule: &str, capability: &str, reach: Reach) -> bool {
    if rule == "*" || rule == capability {
        return true;
    }
    let Some((area, rest)) = capability.split_once(':') else {
        return false;
    };
    if area == rule || format!("{area}:*") == rule {
        return true;
    }
    // A tool's capability: `<area>:<server>:<tool>:<verb>` (the server has no `:`).
    let Some((tool, verb)) = capability.rsplit_once(':') else {
        return false;
    };
    let Some((server, _)) = rest.split_once(':').filter(|(_, t)| t.contains(':')) else {
        return false;
    };
    rule == tool
        || rule == format!("{area}:{server}:*")
        || rule == format!("{area}:{server}")
        || (reach == Reach::Deny && rule == format!("{area}:{verb}"))
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
    if rules
        .deny
        .iter()
        .any(|r| rule_matches(r, capability, Reach::Deny))
    {
        return (Decision::Deny, DecisionSource::WorkspaceRule);
    }
    if rules
        .allow
        .iter()
        .any(|r| rule_matches(r, capability, Reach::Allow))
    {
        return (Decision::Allow, DecisionSource::WorkspaceRule);
    }
    if default == Decision::RequireApproval
        && grants
            .iter()
            .any(|g| rule_matches(g, capability, Reach::Allow))
    {
        return (Decision::Allow, DecisionSource::SessionGrant);
    }
    (default, DecisionSource::Default)
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
