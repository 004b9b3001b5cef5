//! Command rules in the window: the Settings list, the approval card's "Always allow"
//! offer, and an approval answered keeping rules. Each: one call into core, its error
//! mapped.
use pocketpilot_core::ops;
use pocketpilot_protocol::{CommandAsk, CommandRule, CommandRuleKind, KeepRules};
use tauri::State;

use super::wire::{ApprovalAnswer, CommandError};
use super::{call, AppState};

type Result<T> = std::result::Result<T, CommandError>;

/// A workspace's rules (with its sessions'), or every workspace's.
#[tauri::command]
#[specta::specta]
pub async fn command_rules(
    state: State<'_, AppState>,
    workspace: Option<String>,
) -> Result<Vec<CommandRule>> {
    call(&state, move |rt| {
        rt.call(ops::ListCommandRules {
            workspace: workspace.as_deref().map(|s| s.to_string()),
        })
    })
    .await
}

#[tauri::command]
#[specta::specta]
pub async fn add_command_rule(
    state: State<'_, AppState>,
    workspace: String,
    kind: CommandRuleKind,
    rule: String,
) -> Result<CommandRule> {
    call(&state, move |rt| {
        rt.call(ops::AddCommandRule {
            workspace: workspace.to_string(),
            kind,
            rule: rule.to_string(),
        })
    })
    .await
}

#[tauri::command]
#[specta::specta]
pub async fn remove_command_rule(state: State<'_, AppState>, id: i64) -> Result<CommandRule> {
    call(&state, move |rt| rt.call(ops::RemoveCommandRule { id })).await
}

/// For a pending command approval: the part not covered and the rules to offer.
#[tauri::command]
#[specta::specta]
pub async fn command_offer(
    state: State<'_, AppState>,
    approval_id: i64,
) -> Result<Option<CommandAsk>> {
    call(&state, move |rt| {
        rt.call(ops::GetCommandOffer { approval_id })
    })
    .await
}

/// Approves (or rejects) keeping command rules for the workspace or the session.
#[tauri::command]
#[specta::specta]
pub async fn resolve_approval_keeping(
    state: State<'_, AppState>,
    approval_id: i64,
    answer: ApprovalAnswer,
    keep: Option<KeepRules>,
) -> Result<i64> {
    call(&state, move |rt| {
        rt.call(ops::ResolveApprovalKeeping {
            approval_id,
            answer: answer.into(),
            keep,
        })
    })
    .await
}
