//! One tool call, however it comes: **decide → (wait for approval) → guard → execute →
//! record**. A fresh call from the model, a call a person approved or rejected, and a call
//! the journal shows started but never finished (a crash) all pass through [`carry_out`].
//!
//! Invariants:
//! - the intent (`tool_call_started`, with the journal row) is durable before the tool
//!   runs; its outcome is recorded after;
//! - a call is run again after a crash only if its tool is replay-safe; any other
//!   interrupted call is reported to the model as interrupted, with what it saved;
//! - a command's process is recorded under the session's lease before it runs
//!   (`lease::watching`); a call whose lease was lost meanwhile records nothing after it;
//! - the tool guards its arguments itself every time it runs (an approved call's edited
//!   arguments too);
//! - an approved diff runs only against the file it was computed from: if the file's hash
//!   changed since, the call is asked for again with the new diff.
use pocketpilot_model::ToolCall;
use pocketpilot_tools::{
    decide, Decision, DecisionSource, PolicyRules, Registry, Tool, ToolContext,
};

use crate::engine::sink::{EventSink, RecordError};
use crate::event::RuntimeEvent;
use crate::policy::command_rules::{command_of, Judgement, RuleSet};
use crate::policy::confinement::SHELL_EXECUTE;
use crate::store::{Approval, ToolCallRecord};
use pocketpilot_protocol::{ApprovalStatus, Effect, ToolErrorKind};

/// What a call is carried out with: the run's tools, policy, grants and tool context.
pub struct CallEnv<'a> {
    pub tools: &'a Registry,
    pub rules: &'a PolicyRules,
    /// Allowed for the rest of the session from an approval dialog.
    pub session_grants: &'a [String],
    /// Allowed for this run when it was started (`--allow`).
    pub run_grants: &'a [String],
    /// Command rules (`cargo test *`): a covered command runs without asking, a denied one
    /// never runs.
    pub command_rules: &'a RuleSet,
    pub ctx: &'a ToolContext,
    /// The run's change journal (issue 16); `None` keeps nothing.
    pub changes: Option<&'a std::sync::Arc<crate::engine::changes::RunChanges>>,
    /// The run's hooks: `PreToolUse` may deny a fresh call or add to its result,
    /// `PostToolUse` may add to a finished call's result.
    pub hooks: &'a crate::engine::hooks::RunHooks,
    /// Plan mode: planning (read only) or carrying out an approved plan.
    pub plan: &'a crate::engine::plan::PlanScope,
}

/// Where a call comes from.
pub enum Origin<'a> {
    /// Just asked for by the model at `step`: decided by the policy.
    Fresh { step: u32 },
    /// Answered by a person.
    Answered(&'a Approval),
    /// Started before a crash and never finished.
    Interrupted(&'a ToolCallRecord),
}

/// What became of a call.
#[derive(Debug, PartialEq)]
pub enum Handled {
    /// It has a result; this is what the model reads.
    Done(String),
    /// It waits for a person: the run stops before it.
    NeedsApproval,
    /// A planning run submitted its plan (this is its text): the run ends with it.
    PlanSubmitted(String),
}

/// The policy's decision for a fresh call: the workspace's rules and the session's grants
/// first; a capability the person allowed for this run (`--allow`) turns an approval into
/// an allow (never a deny into one).
pub fn decide_call(
    capability: &str,
    rules: &PolicyRules,
    session_grants: &[String],
    run_grants: &[String],
) -> (Decision, DecisionSource) {
    let (decision, source) = decide(Some(capability), rules, session_grants);
    if decision == Decision::RequireApproval
        && decide(Some(capability), rules, run_grants).0 == Decision::Allow
    {
        return (Decision::Allow, DecisionSource::User);
    }
    (decision, source)
}

/// Carries out one call (see the module doc).
pub async fn carry_out(
    agent: &CallEnv<'_>,
    call: &ToolCall,
    origin: Origin<'_>,
    sink: &dyn EventSink,
) -> Result<Handled, RecordError> {
    match origin {
        Origin::Fresh { step } => fresh(agent, call, step, sink).await,
        Origin::Answered(a) if a.status == ApprovalStatus::Rejected => {
            let note = a.decision_note.clone().unwrap_or_default();
            let error = if note.is_empty() {
                "rejected by the user".to_owned()
            } else {
                format!("rejected by the user: {note}")
            };
            fail(call, ToolErrorKind::Rejected, error, sink)
        }
        Origin::Answered(a) => {
            let Some(tool) = agent.tools.get(&a.tool) else {
                let error = format!("there is no tool named `{}`", call.name);
                return fail(call, ToolErrorKind::UnknownTool, error, sink);
            };
            let args = a.edited_args.clone().unwrap_or_else(|| a.arguments.clone());
            // Deny wins over an approval too: an edited command, or a rule added since.
            if let Some(denied) = denied_command(agent, tool.capability(), &args) {
                return fail(call, ToolErrorKind::Denied, denied, sink);
            }
            if let Some(effect) = changed_since_approval(tool.as_ref(), a, &args, agent.ctx) {
                return ask_again(agent, tool.as_ref(), call, a, args, effect, sink);
            }
            // A widened sandbox is the recorded source of an approved call too.
            let source = crate::policy::confinement::audited_source(
                tool.capability(),
                DecisionSource::User,
                agent.ctx,
            );
            let how = (a.step as u32, source);
            execute(agent, tool.as_ref(), call, args, how, Vec::new(), sink).await
        }
        Origin::Interrupted(j) => interrupted(agent, call, j, sink).await,
    }
}

async fn fresh(
    agent: &CallEnv<'_>,
    call: &ToolCall,
    step: u32,
    sink: &dyn EventSink,
) -> Result<Handled, RecordError> {
    use crate::engine::plan::{self, PlanCall};
    match plan::carry_out(agent.plan, call, step, sink)? {
        PlanCall::NotMine => {}
        PlanCall::Done(text) => return Ok(Handled::Done(text)),
        PlanCall::Submitted(text) => return Ok(Handled::PlanSubmitted(text)),
    }
    let Some(tool) = agent.tools.get(&call.name) else {
        let error = format!(
            "there is no tool named `{}`; available: {}",
            call.name,
            agent.tools.names().join(", ")
        );
        return fail(call, ToolErrorKind::UnknownTool, error, sink);
    };
    if let Some(error) = plan::refusal(agent.plan, tool.as_ref()) {
        return fail(call, ToolErrorKind::Denied, error, sink);
    }
    let args = match object_arguments(&call.arguments) {
        Ok(args) => args,
        Err(error) => return fail(call, ToolErrorKind::InvalidArguments, error, sink),
    };
    let capability = tool.capability();
    let judged = judge(agent, capability, &args);
    if let Some(Judgement::Denied { .. }) = &judged {
        let error = judged.as_ref().map(Judgement::sentence).unwrap_or_default();
        return fail(call, ToolErrorKind::Denied, error, sink);
    }
    // A hook only takes away or adds: its denial is final, its "allow" asks nothing less.
    let pre = pre_tool_use(agent, call, &args, sink).await?;
    if let Some(blocked) = pre.blocked {
        return fail(call, ToolErrorKind::Denied, blocked, sink);
    }
    let (decision, mut source) = decided(agent, capability, &args, judged.as_ref());
    if decision == Decision::Allow {
        if let (DecisionSource::CommandRule, Some(Judgement::Allowed(rules))) = (source, &judged) {
            let command = command_of(&args).unwrap_or_default().to_owned();
            sink.emit(RuntimeEvent::AllowedByRule {
                call_id: call.id.clone(),
                command,
                rules: rules.clone(),
            })?;
        }
        source = crate::policy::confinement::audited_source(capability, source, agent.ctx);
    }
    match decision {
        Decision::Deny => {
            let error = format!("the policy denies `{capability}` ({source})");
            fail(call, ToolErrorKind::Denied, error, sink)
        }
        Decision::RequireApproval => {
            request_approval(agent, tool.as_ref(), call, step, args, judged, sink)
        }
        Decision::Allow => {
            let how = (step, source);
            execute(agent, tool.as_ref(), call, args, how, pre.added, sink).await
        }
    }
}

/// What the policy decides for a fresh call, and why: the grants and rules, then a command
/// rule or the approved plan lifting an approval, then the confinement gate.
fn decided(
    agent: &CallEnv<'_>,
    capability: &'static str,
    args: &serde_json::Value,
    judged: Option<&Judgement>,
) -> (Decision, DecisionSource) {
    let (decision, source) = decide_call(
        capability,
        agent.rules,
        agent.session_grants,
        agent.run_grants,
    );
    // A command every part of which a rule covers needs no approval, nor a write to a
    // file the approved plan lists; the capability's own deny stays a deny.
    let workspace = agent.ctx.workspace.to_string_lossy();
    let (decision, source) = match judged {
        Some(Judgement::Allowed(_)) if decision == Decision::RequireApproval => {
            (Decision::Allow, DecisionSource::CommandRule)
        }
        _ if decision == Decision::RequireApproval
            && agent.plan.covers_write(capability, args, &workspace) =>
        {
            (Decision::Allow, DecisionSource::Plan)
        }
        _ => (decision, source),
    };
    // Unsandboxed, each command asks (rules or not); a widened sandbox is the recorded source.
    crate::policy::confinement::gate(capability, decision, source, agent.ctx)
}

/// The call's arguments, which the model must send as one JSON object; else the error the
/// model is told.
fn object_arguments(text: &str) -> Result<serde_json::Value, String> {
    match serde_json::from_str(text) {
        Ok(v @ serde_json::Value::Object(_)) => Ok(v),
        Ok(_) => Err("arguments must be a JSON object".to_owned()),
        Err(e) => Err(format!("arguments are not valid JSON ({e})")),
    }
}

/// Records that a fresh call waits for a person, with what it would do and why it asks;
/// it runs once the approval is answered (through [`carry_out`] again).
fn request_approval(
    agent: &CallEnv<'_>,
    tool: &dyn Tool,
    call: &ToolCall,
    step: u32,
    args: serde_json::Value,
    judged: Option<Judgement>,
    sink: &dyn EventSink,
) -> Result<Handled, RecordError> {
    let capability = tool.capability();
    let command = judged.map(asked_about);
    let reason = match &command {
        Some(ask) => format!("`{capability}` needs your approval: {}", ask.reason),
        None => format!("`{capability}` needs your approval"),
    };
    let effect = match tool.effect(&args, agent.ctx) {
        Ok(e) => e,
        Err(e) => return fail(call, e.kind(), e.to_string(), sink),
    };
    sink.emit(RuntimeEvent::ApprovalRequired {
        approval_id: None,
        step,
        call_id: call.id.clone(),
        name: call.name.clone(),
        arguments: args,
        capability: Some(capability.into()),
        effect,
        reason,
        // An MCP stdio server's own confinement, else a command's.
        sandbox: tool
            .confinement_line()
            .or_else(|| crate::policy::confinement::call_line(capability, agent.ctx)),
        command,
    })?;
    Ok(Handled::NeedsApproval)
}

/// What the command rules make of a `run_command` call; `None` for any other call.
fn judge(agent: &CallEnv<'_>, capability: &str, args: &serde_json::Value) -> Option<Judgement> {
    if capability != SHELL_EXECUTE {
        return None;
    }
    command_of(args).map(|command| agent.command_rules.judge(command))
}

/// Why a command that asks asks, for the approval: the part the rules did not cover and
/// the rules to offer. Covered but unsandboxed, it asks for that reason, offering nothing.
fn asked_about(judged: Judgement) -> pocketpilot_protocol::CommandAsk {
    match judged {
        Judgement::Asked(ask) => ask,
        other => pocketpilot_protocol::CommandAsk {
            part: String::new(),
            reason: format!(
                "{}, but commands are NOT sandboxed here, so every command asks",
                other.sentence()
            ),
            suggested: Vec::new(),
        },
    }
}

/// The error for a call a deny rule refuses, if one does.
fn denied_command(
    agent: &CallEnv<'_>,
    capability: &str,
    args: &serde_json::Value,
) -> Option<String> {
    match judge(agent, capability, args)? {
        denied @ Judgement::Denied { .. } => Some(denied.sentence()),
        _ => None,
    }
}

/// The diff an approved call would apply now, when it is not the one the person approved
/// (the file changed on disk since: its hash no longer matches). Edited arguments were
/// never shown as a diff, and a plan that fails now fails again when the call runs.
fn changed_since_approval(
    tool: &dyn Tool,
    a: &Approval,
    args: &serde_json::Value,
    ctx: &ToolContext,
) -> Option<Effect> {
    if a.edited_args.is_some() || !matches!(a.effect, Effect::Diff { .. }) {
        return None;
    }
    tool.effect(args, ctx).ok().filter(|now| *now != a.effect)
}

/// Asks for the call again, showing the diff it would apply now.
fn ask_again(
    agent: &CallEnv<'_>,
    tool: &dyn Tool,
    call: &ToolCall,
    a: &Approval,
    arguments: serde_json::Value,
    effect: Effect,
    sink: &dyn EventSink,
) -> Result<Handled, RecordError> {
    tracing::info!(call_id = %call.id, approval_id = a.id, "file changed since approval: asking again");
    sink.emit(RuntimeEvent::ApprovalRequired {
        approval_id: None,
        step: a.step as u32,
        call_id: call.id.clone(),
        name: call.name.clone(),
        arguments,
        capability: Some(tool.capability().into()),
        effect,
        reason: "the file changed after you were asked: this is the diff it would apply now".into(),
        sandbox: crate::policy::confinement::call_line(tool.capability(), agent.ctx),
        command: None,
    })?;
    Ok(Handled::NeedsApproval)
}

async fn interrupted(
    agent: &CallEnv<'_>,
    call: &ToolCall,
    j: &ToolCallRecord,
    sink: &dyn EventSink,
) -> Result<Handled, RecordError> {
    // What it changed before it was cut off, against the state kept before it ran.
    crate::engine::changes::interrupted(agent.changes, &call.id).await;
    if j.replay_safe {
        if let Some(tool) = agent.tools.get(&j.name) {
            match serde_json::from_str(&j.arguments) {
                Ok(args) => {
                    let how = (j.step as u32, DecisionSource::Replay);
                    return execute(agent, tool.as_ref(), call, args, how, Vec::new(), sink).await;
                }
                // A journal row this build cannot read: told to the model, never re-run.
                Err(e) => {
                    tracing::warn!(call_id = %call.id, error = %e, "journal arguments do not parse")
                }
            }
        }
    }
    let saved = j.output.clone().unwrap_or_default();
    let mut error = format!(
        "Tool {} was interrupted and may have partially run; check before repeating it",
        call.name
    );
    if !saved.is_empty() {
        error.push_str(&format!(". Output saved before the interruption:\n{saved}"));
    }
    fail(call, ToolErrorKind::Interrupted, error, sink)
}

/// Refuses or reports a call without running it (or after it failed to run).
fn fail(
    call: &ToolCall,
    kind: ToolErrorKind,
    error: String,
    sink: &dyn EventSink,
) -> Result<Handled, RecordError> {
    let text = format!("Tool {} failed: {error}", call.name);
    sink.emit(RuntimeEvent::ToolCallFailed {
        call_id: call.id.clone(),
        name: call.name.clone(),
        error,
        kind,
    })?;
    Ok(Handled::Done(text))
}

/// The `PreToolUse` hooks of a fresh call.
async fn pre_tool_use(
    agent: &CallEnv<'_>,
    call: &ToolCall,
    args: &serde_json::Value,
    sink: &dyn EventSink,
) -> Result<crate::engine::hooks::Fired, RecordError> {
    let mut fields = serde_json::Map::new();
    fields.insert("tool_input".into(), args.clone());
    fields.insert("tool_use_id".into(), call.id.clone().into());
    agent
        .hooks
        .fire(
            pocketpilot_protocol::HookEvent::PreToolUse,
            Some((&call.name, &call.id)),
            fields,
            agent.ctx,
            sink,
        )
        .await
}

/// The `PostToolUse` hooks of a call that ran: what they add follows its output.
async fn post_tool_use(
    agent: &CallEnv<'_>,
    call: &ToolCall,
    args: serde_json::Value,
    out: &pocketpilot_tools::ToolOutput,
    sink: &dyn EventSink,
) -> Result<Vec<String>, RecordError> {
    let mut fields = serde_json::Map::new();
    fields.insert("tool_input".into(), args);
    fields.insert("tool_use_id".into(), call.id.clone().into());
    fields.insert(
        "tool_response".into(),
        serde_json::json!({ "output": out.text, "changed": out.changed }),
    );
    let fired = agent
        .hooks
        .fire(
            pocketpilot_protocol::HookEvent::PostToolUse,
            Some((&call.name, &call.id)),
            fields,
            agent.ctx,
            sink,
        )
        .await?;
    Ok(fired.added)
}

/// Runs one allowed call: intent committed, then the effect (guarded by the tool), then
/// the outcome. `added`: what `PreToolUse` hooks added, joined to the output.
async fn execute(
    agent: &CallEnv<'_>,
    tool: &dyn Tool,
    call: &ToolCall,
    args: serde_json::Value,
    (step, source): (u32, DecisionSource),
    mut added: Vec<String>,
    sink: &dyn EventSink,
) -> Result<Handled, RecordError> {
    // The prior state of what it may touch is kept and committed before the intent.
    let kept =
        match crate::engine::changes::before(agent.changes, tool.capability(), &args, &call.id)
            .await
        {
            Ok(k) => k,
            Err(crate::engine::changes::ChangeError::DiskFull(full)) => {
                return Err(RecordError::DiskFull(full));
            }
            Err(e) => {
                let error =
                    format!("the prior state could not be kept for undo, so it did not run: {e}");
                return fail(call, ToolErrorKind::Failed, error, sink);
            }
        };
    sink.emit(RuntimeEvent::ToolCallStarted {
        step,
        call_id: call.id.clone(),
        name: call.name.clone(),
        arguments: args.to_string(),
        capability: Some(tool.capability().into()),
        replay_safe: tool.replay_safe(),
        decision: Decision::Allow,
        decision_source: source,
    })?;
    let outcome = tool.call(args.clone(), agent.ctx).await;
    // A worker frozen past its lease wakes here, its process killed by the new holder:
    // neither the changes it found nor the outcome are its to record.
    crate::engine::lease::still_held()?;
    crate::engine::changes::after(agent.changes, kept).await;
    match outcome {
        Ok(mut out) => {
            added.extend(post_tool_use(agent, call, args, &out, sink).await?);
            for a in added {
                if !out.text.ends_with('\n') && !out.text.is_empty() {
                    out.text.push('\n');
                }
                out.text.push_str(&a);
            }
            sink.emit(RuntimeEvent::ToolCallCompleted {
                call_id: call.id.clone(),
                name: call.name.clone(),
                output: out.text.clone(),
                changed: out.changed,
            })?;
            Ok(Handled::Done(out.text))
        }
        Err(e) => fail(call, e.kind(), e.to_string(), sink),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_grant_turns_an_approval_into_an_allow_but_never_a_deny() {
        let rules = PolicyRules {
            allow: Vec::new(),
            deny: vec!["net".into()],
        };
        let none: Vec<String> = Vec::new();
        assert_eq!(
            decide_call("fs:write", &rules, &none, &none),
            (Decision::RequireApproval, DecisionSource::Default)
        );
        let run = vec!["fs:write".to_owned(), "net:network".to_owned()];
        assert_eq!(
            decide_call("fs:write", &rules, &none, &run),
            (Decision::Allow, DecisionSource::User)
        );
        assert_eq!(
            decide_call("net:network", &rules, &none, &run).0,
            Decision::Deny
        );
        let session = vec!["fs:write".to_owned()];
        assert_eq!(
            decide_call("fs:write", &rules, &session, &run),
            (Decision::Allow, DecisionSource::SessionGrant)
        );
        assert_eq!(
            decide_call("fs:read", &rules, &none, &none),
            (Decision::Allow, DecisionSource::Default)
        );
    }
}
