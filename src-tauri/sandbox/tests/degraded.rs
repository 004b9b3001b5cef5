//! `POCKETPILOT_SANDBOX=off`: the degraded path is reported and never taken silently.
//! (Its own test binary: the switch is process-wide.)
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod common;

use common::{sh, World, CANARY};
use pocketpilot_sandbox::{confine, probe, Mode, SandboxError, SandboxStatus};

#[tokio::test]
async fn the_switch_reports_not_sandboxed_and_enforce_refuses_to_spawn() {
    std::env::set_var("POCKETPILOT_SANDBOX", "off");
    let status = probe();
    let SandboxStatus::NotSandboxed { reason } = &status else {
        panic!("{status:?}");
    };
    assert!(reason.contains("POCKETPILOT_SANDBOX=off"), "{reason}");
    assert!(
        status.line(false).starts_with("NOT sandboxed: "),
        "{}",
        status.line(false)
    );

    let w = World::new();
    let mut cmd = tokio::process::Command::new("/bin/true");
    match confine(&mut cmd, &w.policy()) {
        Err(SandboxError::Unavailable { reason }) => assert!(reason.contains("=off")),
        other => panic!("Enforce must refuse: {other:?}"),
    }
    // Only the explicit "no sandbox" choice runs, and it is really unconfined.
    let ran = sh(&w.policy().mode(Mode::Off), "cat \"$HOME/canary.txt\"").await;
    assert!(ran.out.contains(CANARY), "{}", ran.out);
}
