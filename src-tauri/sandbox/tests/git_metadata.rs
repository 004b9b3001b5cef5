//! All git metadata of a workspace stays the person's: with user namespaces it is
//! read-only during the call, and what could still be added (a `commondir`, a new
//! repository) is checked after it. Each route ends with the person's own, unconfined git
//! command, which must not run the command's program.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod common;

use common::git::{defused, everyday_git_works, Route};
use common::World;
use pocketpilot_sandbox::{probe, GitMetadata, RestoreAction, RestoreReason, SandboxStatus};

fn require_namespaces() {
    let SandboxStatus::Sandboxed {
        git_metadata: GitMetadata::ReadOnly,
        ..
    } = probe()
    else {
        panic!("user namespaces are needed here: {}", probe().details());
    };
}

fn ends(r: &pocketpilot_sandbox::Restored, tail: &str) -> bool {
    r.path.ends_with(tail)
}

#[tokio::test]
async fn a_commondir_the_command_adds_is_removed() {
    require_namespaces();
    let restored = defused(Route::CommonDir).await;
    assert!(
        restored
            .iter()
            .any(|r| ends(r, ".git/commondir") && r.action == RestoreAction::Removed),
        "{restored:#?}"
    );
}

#[tokio::test]
async fn a_nested_repository_config_is_read_only() {
    require_namespaces();
    let restored = defused(Route::NestedConfig).await;
    assert!(restored.is_empty(), "{restored:#?}");
}

#[tokio::test]
async fn a_worktree_git_file_cannot_be_replaced() {
    require_namespaces();
    let restored = defused(Route::WorktreeGitFile).await;
    assert!(restored.is_empty(), "{restored:#?}");
}

#[tokio::test]
async fn a_submodule_config_is_read_only() {
    require_namespaces();
    let restored = defused(Route::Submodule).await;
    assert!(restored.is_empty(), "{restored:#?}");
}

#[tokio::test]
async fn info_attributes_are_read_only() {
    require_namespaces();
    let restored = defused(Route::InfoAttributes).await;
    assert!(restored.is_empty(), "{restored:#?}");
}

#[tokio::test]
async fn a_new_repository_keeps_working_without_programs() {
    require_namespaces();
    let restored = defused(Route::NewRepo).await;
    assert!(
        restored.iter().any(|r| ends(r, "fresh/.git/config")
            && r.action == RestoreAction::KeysStripped
            && r.reason
                == RestoreReason::RunsProgram {
                    keys: vec!["core.fsmonitor".into()]
                }),
        "{restored:#?}"
    );
    assert!(
        restored
            .iter()
            .any(|r| ends(r, "fresh/.git/hooks/post-checkout") && r.reason == RestoreReason::Hook),
        "{restored:#?}"
    );
    let text = restored
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(text.contains("core.fsmonitor"), "{text}");
}

#[tokio::test]
async fn commit_checkout_and_stash_work_at_the_root_and_nested() {
    require_namespaces();
    everyday_git_works(&World::new()).await;
}

#[tokio::test]
async fn a_file_the_config_includes_is_read_only() {
    require_namespaces();
    let restored = defused(Route::Included).await;
    assert!(restored.is_empty(), "{restored:#?}");
}
