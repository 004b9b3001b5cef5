use super::*;

use Decision::{Allow, Deny, RequireApproval};
use DecisionSource::{Default as Dflt, SessionGrant, WorkspaceRule};

fn rules(allow: &[&str], deny: &[&str]) -> PolicyRules {
    PolicyRules {
        allow: allow.iter().map(|s| s.to_string()).collect(),
        deny: deny.iter().map(|s| s.to_string()).collect(),
    }
}

fn grants(g: &[&str]) -> Vec<String> {
    g.iter().map(|s| s.to_string()).collect()
}

#[test]
fn policy_table() {
    let none = rules(&[], &[]);
    #[allow(clippy::type_complexity)]
    let table: Vec<(
        &str,
        Option<&str>,
        PolicyRules,
        Vec<String>,
        (Decision, DecisionSource),
    )> = vec![
        (
            "read is allowed",
            Some("fs:read"),
            none.clone(),
            vec![],
            (Allow, Dflt),
        ),
        (
            "list is allowed",
            Some("fs:list"),
            none.clone(),
            vec![],
            (Allow, Dflt),
        ),
        (
            "write needs approval",
            Some("fs:write"),
            none.clone(),
            vec![],
            (RequireApproval, Dflt),
        ),
        (
            "create needs approval",
            Some("fs:create"),
            none.clone(),
            vec![],
            (RequireApproval, Dflt),
        ),
        (
            "update needs approval",
            Some("fs:update"),
            none.clone(),
            vec![],
            (RequireApproval, Dflt),
        ),
        (
            "delete needs approval",
            Some("fs:delete"),
            none.clone(),
            vec![],
            (RequireApproval, Dflt),
        ),
        (
            "execute needs approval",
            Some("shell:execute"),
            none.clone(),
            vec![],
            (RequireApproval, Dflt),
        ),
        (
            "network needs approval",
            Some("net:network"),
            none.clone(),
            vec![],
            (RequireApproval, Dflt),
        ),
        (
            "unknown verb is denied",
            Some("fs:chmod"),
            none.clone(),
            vec![],
            (Deny, Dflt),
        ),
        (
            "missing capability is denied",
            None,
            none.clone(),
            vec![],
            (Deny, Dflt),
        ),
        (
            "blank capability is denied",
            Some("  "),
            none.clone(),
            vec![],
            (Deny, Dflt),
        ),
        (
            "empty verb is denied",
            Some("fs:"),
            none.clone(),
            vec![],
            (Deny, Dflt),
        ),
        (
            "empty area is denied",
            Some(":read"),
            none.clone(),
            vec![],
            (Deny, Dflt),
        ),
        (
            "no area at all is denied",
            Some("write"),
            none.clone(),
            vec![],
            (Deny, Dflt),
        ),
        (
            "unknown verb stays denied even if allowed",
            Some("fs:chmod"),
            rules(&["*"], &[]),
            vec![],
            (Deny, Dflt),
        ),
        (
            "workspace allow",
            Some("fs:write"),
            rules(&["fs:write"], &[]),
            vec![],
            (Allow, WorkspaceRule),
        ),
        (
            "workspace deny of a read",
            Some("fs:read"),
            rules(&[], &["fs:read"]),
            vec![],
            (Deny, WorkspaceRule),
        ),
        (
            "workspace deny of a write",
            Some("fs:write"),
            rules(&[], &["fs:write"]),
            vec![],
            (Deny, WorkspaceRule),
        ),
        (
            "deny beats allow",
            Some("fs:write"),
            rules(&["fs:write"], &["fs:write"]),
            vec![],
            (Deny, WorkspaceRule),
        ),
        (
            "area deny beats exact allow",
            Some("shell:execute"),
            rules(&["shell:execute"], &["shell"]),
            vec![],
            (Deny, WorkspaceRule),
        ),
        (
            "deny beats a session grant",
            Some("fs:write"),
            rules(&[], &["fs"]),
            grants(&["fs:write"]),
            (Deny, WorkspaceRule),
        ),
        (
            "area rule `shell` matches shell:execute",
            Some("shell:execute"),
            rules(&["shell"], &[]),
            vec![],
            (Allow, WorkspaceRule),
        ),
        (
            "area rule `shell:*` matches",
            Some("shell:execute"),
            rules(&["shell:*"], &[]),
            vec![],
            (Allow, WorkspaceRule),
        ),
        (
            "area rule does not match another area",
            Some("fs:write"),
            rules(&["shell"], &[]),
            vec![],
            (RequireApproval, Dflt),
        ),
        (
            "area prefix is not a match",
            Some("shellx:execute"),
            rules(&["shell"], &[]),
            vec![],
            (RequireApproval, Dflt),
        ),
        (
            "star allows everything known",
            Some("net:network"),
            rules(&["*"], &[]),
            vec![],
            (Allow, WorkspaceRule),
        ),
        (
            "star deny",
            Some("fs:read"),
            rules(&[], &["*"]),
            vec![],
            (Deny, WorkspaceRule),
        ),
        (
            "session grant allows its capability",
            Some("fs:write"),
            none.clone(),
            grants(&["fs:write"]),
            (Allow, SessionGrant),
        ),
        (
            "session grant for one capability does not cover another",
            Some("fs:delete"),
            none.clone(),
            grants(&["fs:write"]),
            (RequireApproval, Dflt),
        ),
        (
            "session grant for shell does not cover network",
            Some("net:network"),
            none.clone(),
            grants(&["shell:execute"]),
            (RequireApproval, Dflt),
        ),
        (
            "area session grant",
            Some("fs:delete"),
            none.clone(),
            grants(&["fs"]),
            (Allow, SessionGrant),
        ),
        (
            "grant on a read changes nothing",
            Some("fs:read"),
            none.clone(),
            grants(&["fs:read"]),
            (Allow, Dflt),
        ),
        (
            "grant cannot revive an unknown verb",
            Some("fs:chmod"),
            none.clone(),
            grants(&["fs:chmod"]),
            (Deny, Dflt),
        ),
        (
            "workspace allow wins over a grant as the source",
            Some("fs:write"),
            rules(&["fs:write"], &[]),
            grants(&["fs:write"]),
            (Allow, WorkspaceRule),
        ),
        (
            "mcp style capability uses its last verb",
            Some("mcp:github:network"),
            none.clone(),
            vec![],
            (RequireApproval, Dflt),
        ),
        (
            "a grant for one MCP tool covers that tool",
            Some("mcp:fs:read_text_file:execute"),
            none.clone(),
            grants(&["mcp:fs:read_text_file:execute"]),
            (Allow, SessionGrant),
        ),
        (
            "a grant for one MCP tool covers no other tool of its server",
            Some("mcp:fs:danger:execute"),
            none.clone(),
            grants(&["mcp:fs:read_text_file:execute", "mcp:fs:read_text_file"]),
            (RequireApproval, Dflt),
        ),
        (
            "a verb grant covers no named tool",
            Some("mcp:fs:danger:execute"),
            none.clone(),
            grants(&["mcp:execute"]),
            (RequireApproval, Dflt),
        ),
        (
            "a verb allow rule covers no named tool",
            Some("mcp:fs:danger:execute"),
            rules(&["mcp:execute"], &[]),
            vec![],
            (RequireApproval, Dflt),
        ),
        (
            "a verb deny rule still denies every tool with that verb",
            Some("mcp:fs:danger:execute"),
            rules(&[], &["mcp:execute"]),
            grants(&["mcp:fs:danger"]),
            (Deny, WorkspaceRule),
        ),
        (
            "a rule naming the tool without its verb allows it",
            Some("mcp:fs:danger:execute"),
            rules(&["mcp:fs:danger"], &[]),
            vec![],
            (Allow, WorkspaceRule),
        ),
        (
            "a server-wide rule is an explicit choice",
            Some("mcp:fs:danger:execute"),
            rules(&["mcp:fs:*"], &[]),
            vec![],
            (Allow, WorkspaceRule),
        ),
        (
            "a server-wide rule covers no other server",
            Some("mcp:other:danger:execute"),
            rules(&["mcp:fs:*"], &[]),
            vec![],
            (RequireApproval, Dflt),
        ),
        (
            "the mcp area covers every MCP tool",
            Some("mcp:fs:danger:execute"),
            rules(&["mcp"], &[]),
            vec![],
            (Allow, WorkspaceRule),
        ),
        (
            "a tool named like a prefix of another is not that tool",
            Some("mcp:fs:read:execute"),
            rules(&["mcp:fs:rea"], &[]),
            vec![],
            (RequireApproval, Dflt),
        ),
        (
            "a read-only MCP tool is allowed by its verb",
            Some("mcp:fs:list_files:read"),
            none.clone(),
            vec![],
            (Allow, Dflt),
        ),
    ];
    let mut failures = Vec::new();
    for (name, cap, rules, grants, want) in &table {
        let got = decide(*cap, rules, grants);
        if got != *want {
            failures.push(format!("{name}: {cap:?} → {got:?}, want {want:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_builtin_tool_has_a_capability_the_policy_knows() {
    for tool in crate::Registry::builtin().names() {
        let tool = crate::Registry::builtin().get(tool).unwrap();
        let (decision, _) = decide(Some(tool.capability()), &PolicyRules::default(), &[]);
        let expected = if tool.replay_safe() {
            Allow
        } else {
            RequireApproval
        };
        assert_eq!(decision, expected, "{}", tool.name());
    }
}
