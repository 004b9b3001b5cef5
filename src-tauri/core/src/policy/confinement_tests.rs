use super::*;

fn sandboxed() -> SandboxStatus {
    SandboxStatus::Sandboxed {
        abi: 7,
        network_blocking: true,
        landlock_tcp: true,
        scoped: true,
        git_metadata: pocketpilot_sandbox::GitMetadata::ReadOnly,
        tree_killed: true,
    }
}

fn not_sandboxed() -> SandboxStatus {
    SandboxStatus::NotSandboxed {
        reason: "POCKETPILOT_SANDBOX=off is set".into(),
    }
}

fn rules(allow: &[&str], deny: &[&str]) -> PolicyRules {
    PolicyRules {
        allow: allow.iter().map(|s| s.to_string()).collect(),
        deny: deny.iter().map(|s| s.to_string()).collect(),
    }
}

fn sb(
    status: &SandboxStatus,
    ws: &WorkspaceSandbox,
    r: &PolicyRules,
    g: &[&str],
) -> CommandSandbox {
    let g: Vec<String> = g.iter().map(|s| s.to_string()).collect();
    command_sandbox(status, ws, r, &g, CommandSandbox::default())
}

#[test]
fn network_needs_the_grant_and_deny_beats_every_allow() {
    let ws = WorkspaceSandbox::default();
    assert!(!sb(&sandboxed(), &ws, &rules(&[], &[]), &["shell:execute"]).network);
    assert!(sb(&sandboxed(), &ws, &rules(&[], &[]), &["net:network"]).network);
    assert!(sb(&sandboxed(), &ws, &rules(&["net:network"], &[]), &[]).network);
    let on = WorkspaceSandbox {
        network: true,
        ..Default::default()
    };
    let s = sb(&sandboxed(), &on, &rules(&[], &[]), &[]);
    assert!(s.network);
    assert_eq!(s.widening, vec!["network".to_string()]);
    // Deny beats the grant and the workspace's "network on".
    assert!(!sb(&sandboxed(), &on, &rules(&[], &["net"]), &["net:network"]).network);
}

#[test]
fn the_line_says_sandboxed_or_not_and_lists_the_widenings() {
    let ws = WorkspaceSandbox::default();
    let s = sb(&sandboxed(), &ws, &rules(&[], &[]), &[]);
    assert_eq!(
        approval_line(&sandboxed(), &s),
        "sandboxed: writes in the workspace only, no network"
    );
    let wide = WorkspaceSandbox {
        extra_write: vec!["/srv/out".into()],
        env_pass: vec!["NPM_TOKEN".into()],
        ..Default::default()
    };
    let s = sb(&sandboxed(), &wide, &rules(&[], &[]), &["net:network"]);
    assert_eq!(
        approval_line(&sandboxed(), &s),
        "sandboxed: writes in the workspace only, network allowed; widened by the workspace: write /srv/out, env NPM_TOKEN"
    );
    let s = sb(&not_sandboxed(), &ws, &rules(&[], &[]), &[]);
    assert_eq!(s.mode, SandboxMode::Off);
    assert_eq!(
        approval_line(&not_sandboxed(), &s),
        "NOT sandboxed: POCKETPILOT_SANDBOX=off is set"
    );
    let off = WorkspaceSandbox {
        no_sandbox: true,
        ..Default::default()
    };
    let s = sb(&sandboxed(), &off, &rules(&[], &[]), &[]);
    assert_eq!(s.mode, SandboxMode::Off);
    assert!(approval_line(&sandboxed(), &s)
        .starts_with("NOT sandboxed: the workspace's sandbox is off"));
}

#[test]
fn unsandboxed_every_command_asks_and_no_session_grant() {
    let ctx = |status: &SandboxStatus, ws: &WorkspaceSandbox| {
        let t = std::env::temp_dir();
        ToolContext::new(t, vec![], Default::default()).with_sandbox(sb(
            status,
            ws,
            &rules(&[], &[]),
            &[],
        ))
    };
    let def = WorkspaceSandbox::default();
    let on = ctx(&sandboxed(), &def);
    assert!(session_grant_allowed(&on.sandbox));
    assert_eq!(
        gate(
            SHELL_EXECUTE,
            Decision::Allow,
            DecisionSource::SessionGrant,
            &on
        ),
        (Decision::Allow, DecisionSource::SessionGrant)
    );
    let off = ctx(&not_sandboxed(), &def);
    assert!(!session_grant_allowed(&off.sandbox));
    assert_eq!(
        gate(
            SHELL_EXECUTE,
            Decision::Allow,
            DecisionSource::SessionGrant,
            &off
        )
        .0,
        Decision::RequireApproval
    );
    // Deny stays deny; other capabilities are not the sandbox's business.
    assert_eq!(
        gate(
            SHELL_EXECUTE,
            Decision::Deny,
            DecisionSource::WorkspaceRule,
            &off
        )
        .0,
        Decision::Deny
    );
    assert_eq!(
        gate(
            "fs:write",
            Decision::Allow,
            DecisionSource::WorkspaceRule,
            &off
        )
        .0,
        Decision::Allow
    );
}

#[test]
fn a_widened_sandbox_is_the_recorded_source() {
    let wide = WorkspaceSandbox {
        extra_read: vec!["/srv/data".into()],
        ..Default::default()
    };
    let ctx = ToolContext::new(std::env::temp_dir(), vec![], Default::default()).with_sandbox(sb(
        &sandboxed(),
        &wide,
        &rules(&[], &[]),
        &[],
    ));
    assert_eq!(
        audited_source(SHELL_EXECUTE, DecisionSource::User, &ctx),
        DecisionSource::WorkspaceSandbox
    );
    assert_eq!(
        audited_source("fs:write", DecisionSource::User, &ctx),
        DecisionSource::User
    );
    let plain = ToolContext::new(std::env::temp_dir(), vec![], Default::default());
    assert_eq!(
        audited_source(SHELL_EXECUTE, DecisionSource::User, &plain),
        DecisionSource::User
    );
}

#[test]
fn pass_env_refuses_the_apps_own_variables_and_the_providers_keys() {
    for name in [
        "POCKETPILOT_API_KEY",
        "pocketpilot_base_url",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "AZURE_OPENAI_KEY",
        "",
        "A=B",
    ] {
        assert!(pass_env_refusal(name).is_some(), "{name}");
    }
    for name in ["NPM_TOKEN", "GITHUB_TOKEN", "MYSQL_PWD"] {
        assert_eq!(pass_env_refusal(name), None, "{name}");
    }
    assert!(pass_env_refusal("OPENAI_API_KEY")
        .unwrap()
        .contains("provider"));
    // A refused name stored before the check still never reaches a command.
    let ws = WorkspaceSandbox {
        env_pass: vec!["OPENAI_API_KEY".into(), "NPM_TOKEN".into()],
        ..Default::default()
    };
    let s = sb(&sandboxed(), &ws, &rules(&[], &[]), &[]);
    assert_eq!(s.env_pass, vec!["NPM_TOKEN".to_owned()]);
}
