//! What the agent starts gets the environment the person launched PocketPilot with: the
//! variables the app sets for its own window (WebKit and GTK settings) stay out.
//! Its own test binary: it changes this process's environment.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use pocketpilot_core::ops;
use pocketpilot_test_support as support;

use pocketpilot_core::{engine::agent_env, ApprovalAnswer, TaskStatus};
use serde_json::json;
use support::*;

#[tokio::test]
async fn commands_the_agent_runs_do_not_inherit_the_windows_own_settings() {
    // Before anything else runs in this process (one test, one thread so far).
    std::env::set_var("PP_WINDOW_ONLY_SETTING", "window");
    std::env::set_var("PP_PERSON_SETTING", "person");
    agent_env::keep_from_agents(vec!["PP_WINDOW_ONLY_SETTING".into()]);

    let f = Fixture::new();
    let p = f.script(
        "env.json",
        json!([
            { "tool_calls": [{ "name": "run_command", "arguments": {
                "command": "echo \"${PP_WINDOW_ONLY_SETTING:-unset} ${PP_PERSON_SETTING:-unset}\" > env.txt"
            } }] },
            { "text": "ok" }
        ]),
    );
    let id = f.submit("print the environment", &p);
    assert_eq!(f.settle(id).await, TaskStatus::WaitingApproval);
    let approval = f.rt.call(ops::PendingApprovals {}).unwrap().remove(0);
    f.answer(
        approval.id,
        ApprovalAnswer {
            approve: true,
            by: "test".into(),
            ..Default::default()
        },
    );
    assert_eq!(f.settle(id).await, TaskStatus::Completed);
    assert_eq!(read(&f.ws("env.txt")), "unset person\n");
}
