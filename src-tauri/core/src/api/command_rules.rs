//! The entry points for command rules (`cargo test *`): list, add and remove a
//! workspace's rules, the rules an approval offers, an approval answered with "Always
//! allow", and why a call was allowed, asked or refused.
use std::path::Path;
use std::sync::Arc;

use pocketpilot_protocol::{
    ApprovalStatus, CallExplanation, CommandAsk, CommandRule, CommandRuleKind, CommandRuleOrigin,
    DecisionSource, KeepRules, RuleOutcome, RuleUse, RuntimeEvent,
};

use crate::api::service::{canonical_workspace, ApprovalAnswer, Runtime, RuntimeError};
use crate::policy::command_rules::{self, command_of, Judgement, RuleSet};
use crate::policy::confinement::SHELL_EXECUTE;
use crate::store::{self, command_rules as rules_table, StoreError};

type Result<T, E = RuntimeError> = std::result::Result<T, E>;

impl Runtime {
    /// The rules of `workspace` (with its sessions'), or of every workspace.
    pub(crate) fn command_rules(&self, workspace: Option<&str>) -> Result<Vec<CommandRule>> {
        let workspace = workspace
            .map(|w| canonical_workspace(Path::new(w)))
            .transpose()?;
        Ok(self
            .store
            .read(|c| rules_table::list(c, workspace.as_deref()))?)
    }

    /// Adds a workspace rule written by the person. The text must read as one rule
    /// (`cargo test *`); it is stored as it is shown back.
    pub(crate) fn add_command_rule(
        &self,
        workspace: &str,
        kind: CommandRuleKind,
        rule: &str,
    ) -> Result<CommandRule> {
        let workspace = canonical_workspace(Path::new(workspace))?;
        let rule = normalised(rule)?;
        let added = self.store.write(|c| {
            rules_table::add(
                c,
                &rules_table::NewRule {
                    workspace: &workspace,
                    session_id: None,
                    kind,
                    rule: &rule,
                    origin: CommandRuleOrigin::Person,
                },
            )
        })?;
        tracing::info!(id = added.id, rule = %added.rule, kind = %added.kind, "command rule added");
        self.announce_rules();
        Ok(added)
    }

    pub(crate) fn remove_command_rule(&self, id: i64) -> Result<CommandRule> {
        let removed = self.store.write(|c| rules_table::remove(c, id))?;
        tracing::info!(id, rule = %removed.rule, "command rule removed");
        self.announce_rules();
        Ok(removed)
    }

    /// For a pending command approval: the part the rules in force do not cover and the
    /// rules "Always allow" would add. `None` for any other approval.
    pub(crate) fn command_offer(&self, approval_id: i64) -> Result<Option<CommandAsk>> {
        let approval = self.store.read(|c| store::approvals::get(c, approval_id))?;
        if approval.capability.as_deref() != Some(SHELL_EXECUTE) {
            return Ok(None);
        }
        let Some(command) = command_of(&approval.arguments).map(str::to_owned) else {
            return Ok(None);
        };
        let session = self.task(approval.task_id)?.session_id;
        let set = self.rules_of_session(session)?;
        Ok(match set.judge(&command) {
            Judgement::Asked(ask) => Some(ask),
            other => Some(CommandAsk {
                part: String::new(),
                reason: other.sentence(),
                suggested: Vec::new(),
            }),
        })
    }

    /// [`Runtime::resolve_approval`], keeping command rules when the call is approved:
    /// for the workspace ("Always allow `cargo test *` in this workspace") or for the rest
    /// of the session ("for this session": a command rule, not a capability grant). The
    /// rules are stored before the answer is recorded, so the run that goes on sees them.
    pub(crate) fn resolve_approval_keeping(
        self: &Arc<Self>,
        approval_id: i64,
        answer: ApprovalAnswer,
        keep: Option<KeepRules>,
    ) -> Result<i64> {
        if let Some(keep) = keep.filter(|k| answer.approve && !k.rules.is_empty()) {
            self.keep_rules(approval_id, &keep)?;
        }
        self.resolve_approval(approval_id, answer)
    }

    fn keep_rules(&self, approval_id: i64, keep: &KeepRules) -> Result<()> {
        let approval = self.store.read(|c| store::approvals::get(c, approval_id))?;
        if approval.status != ApprovalStatus::Pending {
            return Err(RuntimeError::NotPending(approval_id));
        }
        if approval.capability.as_deref() != Some(SHELL_EXECUTE) {
            return Err(RuntimeError::InvalidValue(format!(
                "approval {approval_id} is not for a command: a command rule cannot be kept from it"
            )));
        }
        let texts = keep
            .rules
            .iter()
            .map(|r| normalised(r))
            .collect::<Result<Vec<_>>>()?;
        let task = self.task(approval.task_id)?;
        let session = self
            .store
            .read(|c| store::sessions::get(c, task.session_id))?;
        let scope_session = match keep.scope {
            pocketpilot_protocol::CommandRuleScope::Workspace => None,
            pocketpilot_protocol::CommandRuleScope::Session => Some(session.id),
        };
        let origin = command_rules::origin_of(keep.scope);
        self.store.write(|c| {
            for rule in &texts {
                rules_table::add(
                    c,
                    &rules_table::NewRule {
                        workspace: &session.workspace,
                        session_id: scope_session,
                        kind: CommandRuleKind::Allow,
                        rule,
                        origin,
                    },
                )?;
            }
            Ok(())
        })?;
        tracing::info!(approval_id, rules = ?texts, scope = %keep.scope, "command rules kept from an approval");
        self.announce_rules();
        Ok(())
    }

    /// Why `call_id` of `task_id` was allowed, asked or refused, from the task's log.
    pub(crate) fn explain_call(&self, task_id: i64, call_id: &str) -> Result<CallExplanation> {
        let task = self.task(task_id)?;
        let events = self
            .store
            .read(|c| store::events::list_after(c, task_id, 0))?;
        let mut found = Explained::default();
        for stored in &events {
            found.take(&stored.event, call_id);
        }
        let Some(tool) = found.tool.clone() else {
            return Err(StoreError::NotFound {
                what: "tool call",
                id: format!("{call_id} of task {task_id}"),
            }
            .into());
        };
        let (now, now_why) = match &found.command {
            Some(command) => {
                let judged = self.rules_of_session(task.session_id)?.judge(command);
                (Some(judged.outcome()), Some(judged.sentence()))
            }
            None => (None, None),
        };
        Ok(CallExplanation {
            task_id,
            call_id: call_id.to_owned(),
            tool,
            command: found.command,
            outcome: found.outcome.unwrap_or(RuleOutcome::Allowed),
            why: found.why,
            rules: found.rules,
            now,
            now_why,
        })
    }

    fn rules_of_session(&self, session_id: i64) -> Result<RuleSet> {
        let session = self.store.read(|c| store::sessions::get(c, session_id))?;
        Ok(RuleSet::load(
            &self.store,
            &session.workspace,
            Some(session_id),
        )?)
    }

    fn announce_rules(&self) {
        self.feed.announce(crate::engine::feed::Change::Refresh);
    }
}

fn normalised(rule: &str) -> Result<String> {
    command_rules::normalise(rule)
        .map_err(|e| RuntimeError::InvalidValue(format!("`{}`: {e}", rule.trim())))
}

/// What the log says of one call, gathered event by event.
#[derive(Default)]
struct Explained {
    tool: Option<String>,
    command: Option<String>,
    outcome: Option<RuleOutcome>,
    why: Vec<String>,
    rules: Vec<RuleUse>,
}

impl Explained {
    fn take(&mut self, event: &RuntimeEvent, call_id: &str) {
        match event {
            RuntimeEvent::AllowedByRule {
                call_id: id,
                command,
                rules,
            } if id == call_id => {
                self.command = Some(command.clone());
                self.outcome = Some(RuleOutcome::Allowed);
                self.why.push(allowed_by(rules));
                self.rules = rules.clone();
            }
            RuntimeEvent::ApprovalRequired {
                call_id: id,
                name,
                arguments,
                reason,
                ..
            } if id == call_id => {
                self.tool = Some(name.clone());
                self.command = command_of(arguments).map(str::to_owned);
                self.outcome = Some(RuleOutcome::Asked);
                self.why.push(format!("asked: {reason}"));
            }
            RuntimeEvent::ApprovalResolved {
                call_id: id,
                approved,
                session_grant,
                by,
                note,
                ..
            } if id == call_id => {
                self.why
                    .push(resolution(*approved, *session_grant, by, note.as_deref()));
            }
            RuntimeEvent::ToolCallStarted {
                call_id: id,
                name,
                arguments,
                decision_source,
                ..
            } if id == call_id => self.started(name, arguments, *decision_source),
            RuntimeEvent::ToolCallFailed {
                call_id: id,
                name,
                error,
                kind,
            } if id == call_id => {
                self.tool.get_or_insert_with(|| name.clone());
                if *kind == pocketpilot_protocol::ToolErrorKind::Denied {
                    self.outcome = Some(RuleOutcome::Denied);
                    self.why.push(format!("refused: {error}"));
                }
            }
            RuntimeEvent::ModelTurnCompleted { tool_calls, .. } => {
                if let Some(c) = tool_calls.iter().find(|c| c.id == call_id) {
                    self.tool = Some(c.name.clone());
                    if let Ok(v) = serde_json::from_str::<serde_json::Value>(&c.arguments) {
                        self.command = command_of(&v).map(str::to_owned);
                    }
                }
            }
            _ => {}
        }
    }

    /// A call that started without an approval or a rule on record was allowed by the
    /// policy itself; the start says which part of it decided.
    fn started(&mut self, name: &str, arguments: &str, decision_source: DecisionSource) {
        self.tool = Some(name.to_owned());
        if self.command.is_none() {
            self.command = serde_json::from_str(arguments)
                .ok()
                .and_then(|v: serde_json::Value| command_of(&v).map(str::to_owned));
        }
        if self.outcome.is_none() {
            self.outcome = Some(RuleOutcome::Allowed);
            self.why
                .push(format!("allowed without asking ({decision_source})"));
        }
    }
}

/// Why command rules let a call run: each part with the rule that covered it.
fn allowed_by(rules: &[RuleUse]) -> String {
    let names: Vec<String> = rules
        .iter()
        .map(|u| {
            format!(
                "`{}` by rule `{}` ({}, added {})",
                u.part,
                u.rule,
                u.origin,
                command_rules::added_on(&u.created_at)
            )
        })
        .collect();
    format!("allowed without asking: {}", names.join("; "))
}

/// How a person answered the approval, as one sentence.
fn resolution(approved: bool, session_grant: bool, by: &str, note: Option<&str>) -> String {
    let verb = if approved { "approved" } else { "rejected" };
    let grant = if session_grant {
        " (and allowed every call of its capability for the session)"
    } else {
        ""
    };
    let note = note
        .filter(|n| !n.is_empty())
        .map(|n| format!(": {n}"))
        .unwrap_or_default();
    format!("{verb} by {by}{grant}{note}")
}

crate::api::call::op! {
    /// The rules of `workspace` (with its sessions'), or of every workspace.
    #[derive(Debug, Clone)]
    ListCommandRules { workspace: Option<String> } -> Result<Vec<CommandRule>>
        = |rt, op| rt.command_rules(op.workspace.as_deref());
    /// Adds a workspace rule written by the person. The text must read as one rule (`cargo test
    /// *`); it is stored as it is shown back.
    #[derive(Debug, Clone)]
    AddCommandRule { workspace: String, kind: CommandRuleKind, rule: String } -> Result<CommandRule>
        = |rt, op| rt.add_command_rule(&op.workspace, op.kind, &op.rule);
    /// Removes a command rule by its id; gives the rule removed.
    #[derive(Debug, Clone)]
    RemoveCommandRule { id: i64 } -> Result<CommandRule>
        = |rt, op| rt.remove_command_rule(op.id);
    /// For a pending command approval: the part the rules in force do not cover and the rules
    /// "Always allow" would add. `None` for any other approval.
    #[derive(Debug, Clone)]
    GetCommandOffer { approval_id: i64 } -> Result<Option<CommandAsk>>
        = |rt, op| rt.command_offer(op.approval_id);
    /// [`Runtime::resolve_approval`], keeping command rules when the call is approved: for the
    /// workspace ("Always allow `cargo test *` in this workspace") or for the rest of the session
    /// ("for this session": a command rule, not a capability grant). The rules are stored before
    /// the answer is recorded, so the run that goes on sees them.
    #[derive(Debug, Clone)]
    ResolveApprovalKeeping { approval_id: i64, answer: ApprovalAnswer, keep: Option<KeepRules> } -> Result<i64>
        = |rt, op| rt.resolve_approval_keeping(op.approval_id, op.answer, op.keep);
    /// Why `call_id` of `task_id` was allowed, asked or refused, from the task's log.
    #[derive(Debug, Clone)]
    ExplainCall { task_id: i64, call_id: String } -> Result<CallExplanation>
        = |rt, op| rt.explain_call(op.task_id, &op.call_id);
}
