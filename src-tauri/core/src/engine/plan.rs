//! Plan mode in a run: the two tools the runtime itself answers (`submit_plan` while
//! planning, `plan_step_done` while carrying out an approved plan), offered through the
//! registry like any tool but carried out here, as events the recorder stores.
use async_trait::async_trait;
use pocketpilot_model::ToolCall;
use pocketpilot_protocol::{DecisionSource, PlanContent, PlanSource, ToolErrorKind};
use pocketpilot_tools::{Decision, Effect, Tool, ToolContext, ToolError, ToolOutput};
use serde_json::{json, Value};

use crate::engine::sink::{EventSink, RecordError};
use crate::event::RuntimeEvent;
pub use crate::policy::plan::PlanScope;

pub const SUBMIT_PLAN: &str = "submit_plan";
pub const PLAN_STEP_DONE: &str = "plan_step_done";
use crate::policy::plan::PLAN_CAPABILITY as CAPABILITY;

/// Ends a planning run with its plan.
pub struct SubmitPlan;
/// Ticks a step of the approved plan a run carries out.
pub struct PlanStepDone;

fn strings(what: &str) -> Value {
    json!({ "type": "array", "items": { "type": "string" }, "description": what })
}

#[async_trait]
impl Tool for SubmitPlan {
    fn name(&self) -> &'static str {
        SUBMIT_PLAN
    }
    fn description(&self) -> &'static str {
        "Submit your plan for the person to approve, edit or reject. Call it once, after \
         reading what you need; nothing is written or run before the person approves."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "steps": strings("What you will do, in order, one short sentence each."),
                "files": strings("Workspace-relative paths you will create or change."),
                "commands": strings("The exact shell commands you will run.")
            },
            "required": ["steps", "files", "commands"],
            "additionalProperties": false
        })
    }
    fn capability(&self) -> &'static str {
        CAPABILITY
    }
    fn replay_safe(&self) -> bool {
        true
    }
    fn effect(&self, _: &Value, _: &ToolContext) -> Result<Effect, ToolError> {
        Ok(Effect::None)
    }
    async fn call(&self, _: Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        Err(ToolError::Failed(
            "the runtime answers submit_plan itself".into(),
        ))
    }
}

#[async_trait]
impl Tool for PlanStepDone {
    fn name(&self) -> &'static str {
        PLAN_STEP_DONE
    }
    fn description(&self) -> &'static str {
        "Mark a step of the approved plan done, by its number (1 for the first step)."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": { "step": { "type": "integer", "minimum": 1 } },
            "required": ["step"],
            "additionalProperties": false
        })
    }
    fn capability(&self) -> &'static str {
        CAPABILITY
    }
    fn replay_safe(&self) -> bool {
        true
    }
    fn effect(&self, _: &Value, _: &ToolContext) -> Result<Effect, ToolError> {
        Ok(Effect::None)
    }
    async fn call(&self, _: Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        Err(ToolError::Failed(
            "the runtime answers plan_step_done itself".into(),
        ))
    }
}

/// Adds the plan tool the scope offers (none outside plan mode).
pub fn register(tools: &mut pocketpilot_tools::Registry, scope: &PlanScope) {
    match scope {
        PlanScope::Act => {}
        PlanScope::Planning => tools.register(std::sync::Arc::new(SubmitPlan)),
        PlanScope::Carrying(_) => tools.register(std::sync::Arc::new(PlanStepDone)),
    }
}

/// What became of a plan tool's call.
pub enum PlanCall {
    /// Not a plan tool's call: the orchestrator decides it as usual.
    NotMine,
    /// Answered: the text the model reads.
    Done(String),
    /// The plan was recorded: the planning run ends with it (its rendering).
    Submitted(String),
}

/// Carries out a call to a plan tool, if it is one: checked, then recorded as a call
/// (started, the plan event, completed) or refused with what was wrong.
pub fn carry_out(
    scope: &PlanScope,
    call: &ToolCall,
    step: u32,
    sink: &dyn EventSink,
) -> Result<PlanCall, RecordError> {
    let checked = match call.name.as_str() {
        SUBMIT_PLAN => submitted(scope, &call.arguments),
        PLAN_STEP_DONE => step_done(scope, &call.arguments),
        _ => return Ok(PlanCall::NotMine),
    };
    let (event, text) = match checked {
        Ok(found) => found,
        Err(error) => {
            sink.emit(RuntimeEvent::ToolCallFailed {
                call_id: call.id.clone(),
                name: call.name.clone(),
                error: error.clone(),
                kind: ToolErrorKind::InvalidArguments,
            })?;
            return Ok(PlanCall::Done(format!(
                "Tool {} failed: {error}",
                call.name
            )));
        }
    };
    sink.emit(RuntimeEvent::ToolCallStarted {
        step,
        call_id: call.id.clone(),
        name: call.name.clone(),
        arguments: call.arguments.clone(),
        capability: Some(CAPABILITY.into()),
        replay_safe: true,
        decision: Decision::Allow,
        decision_source: DecisionSource::Default,
    })?;
    let submitted = matches!(event, RuntimeEvent::PlanProposed { .. });
    sink.emit(event)?;
    sink.emit(RuntimeEvent::ToolCallCompleted {
        call_id: call.id.clone(),
        name: call.name.clone(),
        output: text.clone(),
        changed: Vec::new(),
    })?;
    Ok(if submitted {
        PlanCall::Submitted(text)
    } else {
        PlanCall::Done(text)
    })
}

fn submitted(scope: &PlanScope, arguments: &str) -> Result<(RuntimeEvent, String), String> {
    if *scope != PlanScope::Planning {
        return Err("there is no plan to submit: this run is not in plan mode".into());
    }
    let plan: PlanContent = serde_json::from_str(arguments)
        .map_err(|e| format!("the plan is not {{\"steps\", \"files\", \"commands\"}} ({e})"))?;
    if let Some(problem) = plan.problem() {
        return Err(problem);
    }
    let text = format!(
        "{}\nThe plan is recorded and shown to the person; nothing runs until they approve it.",
        plan.render(&[])
    );
    let event = RuntimeEvent::PlanProposed {
        plan_id: None,
        plan,
        source: PlanSource::Tool,
    };
    Ok((event, text))
}

fn step_done(scope: &PlanScope, arguments: &str) -> Result<(RuntimeEvent, String), String> {
    let PlanScope::Carrying(carried) = scope else {
        return Err("there is no approved plan in this run".into());
    };
    let step = serde_json::from_str::<Value>(arguments)
        .ok()
        .and_then(|v| v.get("step").and_then(Value::as_u64))
        .ok_or("`step` must be a step's number")?;
    if step == 0 || step as usize > carried.steps {
        return Err(format!(
            "the plan has steps 1 to {}, not {step}",
            carried.steps
        ));
    }
    let event = RuntimeEvent::PlanStepDone {
        plan_id: carried.plan_id,
        step: step as u32,
    };
    Ok((event, format!("Step {step} is marked done.")))
}

/// When a planning run answers without calling `submit_plan`: the plan its answer holds,
/// recorded as proposed. Nothing is recorded when no plan can be read from it.
pub fn from_answer(
    scope: &PlanScope,
    answer: &str,
    sink: &dyn EventSink,
) -> Result<(), RecordError> {
    if *scope != PlanScope::Planning {
        return Ok(());
    }
    match crate::policy::plan::from_answer(answer) {
        Some(plan) => sink.emit(RuntimeEvent::PlanProposed {
            plan_id: None,
            plan,
            source: PlanSource::Answer,
        }),
        None => {
            tracing::info!("a planning run answered without a plan");
            Ok(())
        }
    }
}

/// Why a call is refused in this scope, if it is: while planning, only reading tools run.
pub fn refusal(scope: &PlanScope, tool: &dyn Tool) -> Option<String> {
    scope.refuses(tool.capability()).then(|| {
        format!(
            "plan mode: `{}` ({}) does not run while planning; read what you need, then call \
             submit_plan",
            tool.name(),
            tool.capability()
        )
    })
}
