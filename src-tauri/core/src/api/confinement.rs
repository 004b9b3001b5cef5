//! The sandbox entry points: a workspace's sandbox settings, a session grant vetted.
use crate::api::service::{ApprovalAnswer, Result, Runtime};
use crate::policy::confinement::{
    load_command_sandbox, pass_env_refusal, session_grant_allowed, workspace_sandbox_key,
    WorkspaceSandbox, SESSION_GRANT_REFUSED, SHELL_EXECUTE,
};
use crate::store;
use pocketpilot_tools::CommandSandbox;

impl Runtime {
    pub(crate) fn workspace_sandbox(&self, workspace: &str) -> Result<WorkspaceSandbox> {
        Ok(self
            .store
            .read(|c| store::settings::get(c, &workspace_sandbox_key(workspace)))?
            .unwrap_or_default())
    }

    /// Stores the workspace's sandbox settings; refuses a pass-through of PocketPilot's
    /// own variables or of the provider's keys ([`pass_env_refusal`]).
    pub(crate) fn set_workspace_sandbox(
        &self,
        workspace: &str,
        value: &WorkspaceSandbox,
    ) -> Result<()> {
        if let Some(why) = value.env_pass.iter().find_map(|n| pass_env_refusal(n)) {
            return Err(crate::api::service::RuntimeError::InvalidValue(why));
        }
        Ok(self
            .store
            .write(|c| store::settings::set(c, &workspace_sandbox_key(workspace), value))?)
    }

    /// The sandbox of `workspace`'s commands for a run with `grants`.
    pub(crate) fn command_sandbox(
        &self,
        workspace: &str,
        grants: &[String],
    ) -> Result<CommandSandbox> {
        Ok(load_command_sandbox(&self.store, workspace, grants)?)
    }

    /// Unsandboxed, a session grant for `shell:execute` is refused: the answer becomes a
    /// one-off approval and its note says why.
    pub(crate) fn vet_session_grant(
        &self,
        approval: &store::approvals::Approval,
        mut answer: ApprovalAnswer,
    ) -> Result<ApprovalAnswer> {
        if !(answer.approve && answer.session_grant)
            || approval.capability.as_deref() != Some(SHELL_EXECUTE)
        {
            return Ok(answer);
        }
        let task = self.task(approval.task_id)?;
        let session = self
            .store
            .read(|c| store::sessions::get(c, task.session_id))?;
        let sandbox = self.command_sandbox(&session.workspace, &[])?;
        if session_grant_allowed(&sandbox) {
            return Ok(answer);
        }
        tracing::warn!(
            task_id = approval.task_id,
            session_id = task.session_id,
            "session grant for shell:execute refused: not sandboxed"
        );
        answer.session_grant = false;
        answer.note = Some(match answer.note.take().filter(|n| !n.is_empty()) {
            Some(n) => format!("{n} ({SESSION_GRANT_REFUSED})"),
            None => SESSION_GRANT_REFUSED.to_owned(),
        });
        Ok(answer)
    }
}

crate::api::call::op! {
    /// A workspace's sandbox settings as stored (extra paths, network, passed variables).
    #[derive(Debug, Clone)]
    GetWorkspaceSandbox { workspace: String } -> Result<WorkspaceSandbox>
        = |rt, op| rt.workspace_sandbox(&op.workspace);
    /// Stores the workspace's sandbox settings; refuses a pass-through of PocketPilot's own
    /// variables or of the provider's keys ([`pass_env_refusal`]).
    #[derive(Debug, Clone)]
    SetWorkspaceSandbox { workspace: String, value: WorkspaceSandbox } -> Result<()>
        = |rt, op| rt.set_workspace_sandbox(&op.workspace, &op.value);
    /// The sandbox of `workspace`'s commands for a run with `grants`.
    #[derive(Debug, Clone)]
    GetCommandSandbox { workspace: String, grants: Vec<String> } -> Result<CommandSandbox>
        = |rt, op| rt.command_sandbox(&op.workspace, &op.grants);
    /// Unsandboxed, a session grant for `shell:execute` is refused: the answer becomes a one-off
    /// approval and its note says why.
    #[derive(Debug, Clone)]
    VetSessionGrant { approval: store::approvals::Approval, answer: ApprovalAnswer } -> Result<ApprovalAnswer>
        = |rt, op| rt.vet_session_grant(&op.approval, op.answer);
}
