//! Without user namespaces (Ubuntu 24.04; simulated with `POCKETPILOT_SANDBOX=no-userns`)
//! git metadata is writable during the call and put back after it. Own test binary: the
//! switch is process-wide.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod common;

use common::git::{defused, everyday_git_works, Route};
use common::World;
use pocketpilot_sandbox::{
    probe, GitMetadata, RestoreAction, RestoreReason, Restored, SandboxStatus,
};

fn no_userns() {
    std::env::set_var("POCKETPILOT_SANDBOX", "no-userns");
    let SandboxStatus::Sandboxed {
        git_metadata: GitMetadata::RestoredAfterCall,
        ..
    } = probe()
    else {
        panic!("{}", probe().details());
    };
}

fn has(restored: &[Restored], tail: &str, action: RestoreAction, reason: &RestoreReason) -> bool {
    restored
        .iter()
        .any(|r| r.path.ends_with(tail) && r.action == action && r.reason == *reason)
}

fn fsmonitor() -> RestoreReason {
    RestoreReason::RunsProgram {
        keys: vec!["core.fsmonitor".into()],
    }
}

#[tokio::test]
async fn a_commondir_the_command_adds_is_removed() {
    no_userns();
    let restored = defused(Route::CommonDir).await;
    let ok = has(
        &restored,
        ".git/commondir",
        RestoreAction::Removed,
        &RestoreReason::ReadOnly,
    );
    assert!(ok, "{restored:#?}");
}

#[tokio::test]
async fn a_nested_repository_config_is_put_back() {
    no_userns();
    let restored = defused(Route::NestedConfig).await;
    let ok = has(
        &restored,
        "vendor/lib/.git/config",
        RestoreAction::PutBack,
        &fsmonitor(),
    );
    assert!(ok, "{restored:#?}");
}

#[tokio::test]
async fn a_replaced_worktree_git_file_is_put_back() {
    no_userns();
    let restored = defused(Route::WorktreeGitFile).await;
    let ok = has(
        &restored,
        "wt/.git",
        RestoreAction::PutBack,
        &RestoreReason::ReadOnly,
    );
    assert!(ok, "{restored:#?}");
}

#[tokio::test]
async fn a_submodule_config_is_put_back() {
    no_userns();
    let restored = defused(Route::Submodule).await;
    let ok = has(
        &restored,
        ".git/modules/sub/config",
        RestoreAction::PutBack,
        &fsmonitor(),
    );
    assert!(ok, "{restored:#?}");
}

#[tokio::test]
async fn info_attributes_are_removed() {
    no_userns();
    let restored = defused(Route::InfoAttributes).await;
    let ok = has(
        &restored,
        ".git/info/attributes",
        RestoreAction::Removed,
        &RestoreReason::Attributes,
    );
    assert!(ok, "{restored:#?}");
}

#[tokio::test]
async fn a_new_repository_keeps_working_without_programs() {
    no_userns();
    let restored = defused(Route::NewRepo).await;
    let ok = has(
        &restored,
        "fresh/.git/config",
        RestoreAction::KeysStripped,
        &fsmonitor(),
    );
    assert!(ok, "{restored:#?}");
}

#[tokio::test]
async fn commit_checkout_and_stash_work_at_the_root_and_nested() {
    no_userns();
    everyday_git_works(&World::new()).await;
}

#[tokio::test]
async fn a_file_the_config_includes_is_put_back() {
    no_userns();
    let restored = defused(Route::Included).await;
    let ok = has(
        &restored,
        "ws/shared.inc",
        RestoreAction::PutBack,
        &fsmonitor(),
    );
    assert!(ok, "{restored:#?}");
}
