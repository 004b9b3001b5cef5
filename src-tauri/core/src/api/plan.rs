//! Plan mode for the window and the CLI: start a goal in plan mode, set a session to plan
//! first, read a task's plan, and edit, approve or reject it. An approved plan is carried
//! out by a new run of the session (a follow-up of the planning task) with grants scoped
//! to what the plan lists; a rejected one runs nothing.
use std::sync::Arc;

use pocketpilot_protocol::{EntryKind, Plan, PlanContent, PlanStatus};

use crate::api::service::{NewTask, Result, Runtime, RuntimeError};
use crate::store::{entries, plans};

impl Runtime {
    /// `submit`, in plan mode: the run only reads and ends with a plan.
    pub(crate) fn submit_planning(self: &Arc<Self>, new: &NewTask) -> Result<i64> {
        let id = self.create_task(new)?;
        self.store
            .write(|tx| plans::set_task_plan_mode(tx, id, true))?;
        self.start(id);
        Ok(id)
    }

    /// Every run of the session plans first (on), or acts (off).
    pub(crate) fn set_session_plan_mode(&self, session_id: i64, on: bool) -> Result<()> {
        self.store
            .write(|tx| plans::set_session_plan_mode(tx, session_id, on))?;
        Ok(())
    }

    pub(crate) fn session_plan_mode(&self, session_id: i64) -> Result<bool> {
        Ok(self
            .store
            .read(|c| plans::session_plan_mode(c, session_id))?)
    }

    /// The plan a task made, or the approved plan it carries out.
    pub(crate) fn plan_of_task(&self, task_id: i64) -> Result<Option<Plan>> {
        self.task(task_id)?;
        Ok(self.store.read(|c| {
            Ok(match plans::for_task(c, task_id)? {
                Some(p) => Some(p),
                None => plans::carried_by(c, task_id)?,
            })
        })?)
    }

    /// The plans of a session, oldest first.
    pub(crate) fn session_plans(&self, session_id: i64) -> Result<Vec<Plan>> {
        Ok(self.store.read(|c| plans::for_session(c, session_id))?)
    }

    /// The person's changes to a task's proposed plan.
    pub(crate) fn edit_plan(&self, task_id: i64, content: &PlanContent) -> Result<Plan> {
        if let Some(problem) = content.problem() {
            return Err(RuntimeError::InvalidArguments(problem));
        }
        let plan = self.proposed_plan(task_id)?;
        self.store.write(|tx| plans::edit(tx, plan.id, content))?;
        Ok(self.store.read(|c| plans::get(c, plan.id))?)
    }

    /// Approves a task's proposed plan (as edited, when `edited`), and starts the run that
    /// carries it out: the session's next task, with the planning task's model, grants
    /// and MCP servers. Returns that task.
    pub(crate) fn approve_plan(
        self: &Arc<Self>,
        task_id: i64,
        edited: Option<&PlanContent>,
        by: pocketpilot_protocol::RunSource,
    ) -> Result<i64> {
        if let Some(content) = edited {
            self.edit_plan(task_id, content)?;
        }
        let plan = self.proposed_plan(task_id)?;
        let planner = self.task(task_id)?;
        let run = self.create_task(&NewTask {
            goal: crate::policy::plan::carry_out_goal(&plan.content),
            workspace: None,
            session_id: Some(planner.session_id),
            follow_up_of: Some(task_id),
            trigger: by,
            provider: planner.provider.clone(),
            grants: planner.grants.clone(),
            mcp: Some(planner.mcp.clone()),
        })?;
        // Linked before the run starts, so that it runs with the plan's grants.
        if let Err(e) = self
            .store
            .write(|tx| plans::decide(tx, plan.id, PlanStatus::Approved, Some(run)))
        {
            let _ = self.cancel(run);
            return Err(e.into());
        }
        self.start(run);
        Ok(run)
    }

    /// Rejects a task's proposed plan: nothing of it runs. The session's transcript says
    /// so, for the model's next turn.
    pub(crate) fn reject_plan(&self, task_id: i64, reason: Option<&str>) -> Result<Plan> {
        let plan = self.proposed_plan(task_id)?;
        let text = match reason.map(str::trim).filter(|r| !r.is_empty()) {
            Some(r) => format!("The person rejected the plan: {r}"),
            None => "The person rejected the plan.".to_owned(),
        };
        self.store.write(|tx| {
            plans::decide(tx, plan.id, PlanStatus::Rejected, None)?;
            entries::append(
                tx,
                plan.session_id,
                None,
                &EntryKind::System,
                &serde_json::json!({ "text": text }),
            )?;
            Ok(())
        })?;
        Ok(self.store.read(|c| plans::get(c, plan.id))?)
    }

    fn proposed_plan(&self, task_id: i64) -> Result<Plan> {
        let plan = self
            .store
            .read(|c| plans::for_task(c, task_id))?
            .ok_or_else(|| {
                RuntimeError::InvalidArguments(format!("task {task_id} made no plan"))
            })?;
        if plan.status != PlanStatus::Proposed {
            return Err(RuntimeError::InvalidArguments(format!(
                "the plan of task {task_id} is already {}",
                plan.status
            )));
        }
        Ok(plan)
    }
}

crate::api::call::op! {
    /// `submit`, in plan mode: the run only reads and ends with a plan.
    #[derive(Debug, Clone)]
    SubmitPlanning { new: NewTask } -> Result<i64>
        = |rt, op| rt.submit_planning(&op.new);
    /// Every run of the session plans first (on), or acts (off).
    #[derive(Debug, Clone)]
    SetSessionPlanMode { session_id: i64, on: bool } -> Result<()>
        = |rt, op| rt.set_session_plan_mode(op.session_id, op.on);
    /// Whether a session plans before it acts (plan mode).
    #[derive(Debug, Clone)]
    GetSessionPlanMode { session_id: i64 } -> Result<bool>
        = |rt, op| rt.session_plan_mode(op.session_id);
    /// The plan a task made, or the approved plan it carries out.
    #[derive(Debug, Clone)]
    PlanOfTask { task_id: i64 } -> Result<Option<Plan>>
        = |rt, op| rt.plan_of_task(op.task_id);
    /// The plans of a session, oldest first.
    #[derive(Debug, Clone)]
    SessionPlans { session_id: i64 } -> Result<Vec<Plan>>
        = |rt, op| rt.session_plans(op.session_id);
    /// The person's changes to a task's proposed plan.
    #[derive(Debug, Clone)]
    EditPlan { task_id: i64, content: PlanContent } -> Result<Plan>
        = |rt, op| rt.edit_plan(op.task_id, &op.content);
    /// Approves a task's proposed plan (as edited, when `edited`), and starts the run that carries
    /// it out: the session's next task, with the planning task's model, grants and MCP servers.
    /// Returns that task.
    #[derive(Debug, Clone)]
    ApprovePlan { task_id: i64, edited: Option<PlanContent>, by: pocketpilot_protocol::RunSource } -> Result<i64>
        = |rt, op| rt.approve_plan(op.task_id, op.edited.as_ref(), op.by);
    /// Rejects a task's proposed plan: nothing of it runs. The session's transcript says so, for
    /// the model's next turn.
    #[derive(Debug, Clone)]
    RejectPlan { task_id: i64, reason: Option<String> } -> Result<Plan>
        = |rt, op| rt.reject_plan(op.task_id, op.reason.as_deref());
}
