//! Single records read by id, and the writes a replay or a repair makes: staging a run's
//! past (an eval's crash) and rewriting a task's recorded changes (an eval's tampering).
use pocketpilot_mcp::McpServerConfig;
use pocketpilot_protocol::changes::{Change, ChangeSetKind};
use pocketpilot_protocol::Plan;

use crate::api::service::{Result, Runtime};
use crate::config::ResumeOnStart;
use crate::engine::mcp::{self, StoredServer};
use crate::event::RuntimeEvent;
use crate::store::{approvals, change_sets, plans, settings, tasks};

impl Runtime {
    fn record_events(&self, task_id: i64, events: &[RuntimeEvent]) -> Result<()> {
        for e in events {
            self.recorder.record(task_id, e)?;
        }
        Ok(())
    }
}

crate::api::call::op! {
    /// The task a session is working on or has queued next, if any: the one not ended.
    #[derive(Debug, Clone)]
    OpenTaskOfSession { session_id: i64 } -> Result<Option<tasks::Task>>
        = |rt, op| Ok(rt.store.read(|c| tasks::open_for_session(c, op.session_id))?);
    /// One approval, pending or answered.
    #[derive(Debug, Clone)]
    GetApproval { id: i64 } -> Result<approvals::Approval>
        = |rt, op| Ok(rt.store.read(|c| approvals::get(c, op.id))?);
    /// One plan by its id.
    #[derive(Debug, Clone)]
    GetPlan { plan_id: i64 } -> Result<Plan>
        = |rt, op| Ok(rt.store.read(|c| plans::get(c, op.plan_id))?);
    /// What the app does at start with sessions a crash or a quit interrupted.
    #[derive(Debug, Clone)]
    GetResumeOnStart {} -> Result<ResumeOnStart>
        = |rt, op| Ok(rt
            .store
            .read(|c| settings::get(c, crate::config::RESUME_KEY))?
            .unwrap_or_default());
    /// Whether the app keeps running in the tray when its window closes.
    #[derive(Debug, Clone)]
    GetKeepInTray {} -> Result<bool>
        = |rt, op| Ok(crate::autostart::keep_in_tray(&rt.store)?);
    /// Adds (or replaces, by name and workspace) an MCP server from its full configuration,
    /// secret variables included; `workspace` is the canonical path, `None` for every one.
    #[derive(Debug, Clone)]
    AddMcpServerConfig { workspace: Option<String>, config: McpServerConfig }
        -> std::result::Result<(), crate::api::settings::SettingsError>
        = |rt, op| Ok(mcp::add(&rt.store, StoredServer { workspace: op.workspace, config: op.config })?);
    /// Records events for a task as its run would, state changes included: how a replay
    /// stages a run's past (a crash's committed intents, say).
    #[derive(Debug, Clone)]
    RecordEvents { task_id: i64, events: Vec<RuntimeEvent> } -> Result<()>
        = |rt, op| rt.record_events(op.task_id, &op.events);
    /// A task's recorded change sets of one kind, oldest first.
    #[derive(Debug, Clone)]
    TaskChangeSets { task_id: i64, kind: ChangeSetKind } -> Result<Vec<change_sets::ChangeSet>>
        = |rt, op| Ok(rt.store.read(|c| change_sets::of_task(c, op.task_id, op.kind))?);
    /// Replaces the changes recorded in one change set (a repair, or an eval's tampering).
    #[derive(Debug, Clone)]
    SetChangeSetChanges { id: i64, changes: Vec<Change> } -> Result<()>
        = |rt, op| Ok(rt.store.write(|tx| change_sets::set_changes(tx, op.id, &op.changes))?);
}
