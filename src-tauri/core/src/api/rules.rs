//! The entry points for the workspace's rules: what the window and the CLI show and edit —
//! the instructions in effect, memories, skills.
use crate::api::service::{canonical_workspace, Runtime, RuntimeError};
use crate::policy::instructions::{self, Preamble, DISABLED_SKILLS_KEY};
use crate::policy::memory::{self};
use crate::store::{entries, memories, sessions, settings, StoreError};
use pocketpilot_protocol::{Memory, MemoryScope, RulesInEffect, SkillInfo};
use pocketpilot_tools::skills;
use pocketpilot_tools::WorkspaceGuard;
use std::path::Path;

type Result<T, E = RuntimeError> = std::result::Result<T, E>;

impl Runtime {
    /// What a workspace's runs are given: the instruction files (for `session`, those of
    /// the directories its agent worked in since its last reset; else the root's), the
    /// memories, and every skill found with its switch.
    pub(crate) fn rules_in_effect(
        &self,
        workspace: &str,
        session: Option<i64>,
    ) -> Result<RulesInEffect> {
        let workspace = canonical_workspace(Path::new(workspace))?;
        let guard = WorkspaceGuard::new(&workspace, &[])
            .map_err(|_| RuntimeError::Workspace(workspace.clone()))?;
        let (preamble, calls, disabled, auto) = self.store.read(|c| {
            let calls = match session {
                Some(id) => {
                    if sessions::get(c, id)?.workspace != workspace {
                        return Err(StoreError::Invalid(format!(
                            "session {id} is not in {workspace}"
                        )));
                    }
                    instructions::calls_of_entries(&entries::since_head(c, id)?)
                }
                None => Vec::new(),
            };
            Ok((
                Preamble::load(c, &workspace)?,
                calls,
                instructions::disabled_skills(c)?,
                memory::auto_accept(c)?,
            ))
        })?;
        let found = skills::discover(&guard, skills::personal_skills_dir().as_deref());
        let skills = found
            .skills
            .iter()
            .map(|s| SkillInfo {
                name: s.name.clone(),
                description: s.description.clone(),
                source: s.source,
                dir: s.key(),
                enabled: !disabled.contains(&s.key()),
            })
            .collect();
        let hooks = self.hooks_in_effect(&workspace)?;
        Ok(RulesInEffect {
            hooks,
            instructions: preamble
                .files(calls.iter())
                .into_iter()
                .map(|f| f.info)
                .collect(),
            memories: preamble.memories.clone(),
            skills,
            auto_accept_memories: auto,
            problems: found.problems,
            workspace,
        })
    }

    /// Every memory (`None`), or those a run in `workspace` is given.
    pub(crate) fn memories(&self, workspace: Option<&str>) -> Result<Vec<Memory>> {
        let workspace = workspace
            .map(|w| canonical_workspace(Path::new(w)))
            .transpose()?;
        Ok(self
            .store
            .read(|c| memories::for_workspace(c, workspace.as_deref()))?)
    }

    /// A memory the person writes: global, or for `workspace`.
    pub(crate) fn add_memory(
        &self,
        scope: MemoryScope,
        workspace: Option<&str>,
        text: &str,
    ) -> Result<Memory> {
        let workspace = match scope {
            MemoryScope::Global => None,
            MemoryScope::Workspace => Some(canonical_workspace(Path::new(
                workspace.ok_or(RuntimeError::NoWorkspace)?,
            ))?),
        };
        let text = text.to_owned();
        let m = self
            .store
            .write(move |tx| memories::add(tx, scope, workspace.as_deref(), &text, None))?;
        self.feed.announce(crate::engine::feed::Change::Refresh);
        Ok(m)
    }

    pub(crate) fn edit_memory(&self, id: i64, text: &str) -> Result<Memory> {
        let text = text.to_owned();
        let m = self.store.write(move |tx| memories::edit(tx, id, &text))?;
        self.feed.announce(crate::engine::feed::Change::Refresh);
        Ok(m)
    }

    pub(crate) fn delete_memory(&self, id: i64) -> Result<()> {
        self.store.write(move |tx| memories::delete(tx, id))?;
        self.feed.announce(crate::engine::feed::Change::Refresh);
        Ok(())
    }

    /// Switches a skill (by its folder, as listed) on or off for every run from now on.
    pub(crate) fn set_skill_enabled(&self, dir: &str, enabled: bool) -> Result<()> {
        let dir = dir.to_owned();
        self.store.write(move |tx| {
            let mut off = instructions::disabled_skills(tx)?;
            off.retain(|d| d != &dir);
            if !enabled {
                off.push(dir);
            }
            settings::set(tx, DISABLED_SKILLS_KEY, &off)
        })?;
        self.feed.announce(crate::engine::feed::Change::Refresh);
        Ok(())
    }

    /// Whether memories the agent proposes are kept without asking.
    pub(crate) fn set_memory_auto_accept(&self, on: bool) -> Result<()> {
        self.store
            .write(move |tx| settings::set(tx, memory::AUTO_ACCEPT_KEY, &on))?;
        self.feed.announce(crate::engine::feed::Change::Refresh);
        Ok(())
    }
}

crate::api::call::op! {
    /// What a workspace's runs are given: the instruction files (for `session`, those of the
    /// directories its agent worked in since its last reset; else the root's), the memories, and
    /// every skill found with its switch.
    #[derive(Debug, Clone)]
    GetRulesInEffect { workspace: String, session: Option<i64> } -> Result<RulesInEffect>
        = |rt, op| rt.rules_in_effect(&op.workspace, op.session);
    /// Every memory (`None`), or those a run in `workspace` is given.
    #[derive(Debug, Clone)]
    ListMemories { workspace: Option<String> } -> Result<Vec<Memory>>
        = |rt, op| rt.memories(op.workspace.as_deref());
    /// A memory the person writes: global, or for `workspace`.
    #[derive(Debug, Clone)]
    AddMemory { scope: MemoryScope, workspace: Option<String>, text: String } -> Result<Memory>
        = |rt, op| rt.add_memory(op.scope, op.workspace.as_deref(), &op.text);
    /// Changes a memory's text; gives the memory as stored.
    #[derive(Debug, Clone)]
    EditMemory { id: i64, text: String } -> Result<Memory>
        = |rt, op| rt.edit_memory(op.id, &op.text);
    /// Deletes a memory.
    #[derive(Debug, Clone)]
    DeleteMemory { id: i64 } -> Result<()>
        = |rt, op| rt.delete_memory(op.id);
    /// Switches a skill (by its folder, as listed) on or off for every run from now on.
    #[derive(Debug, Clone)]
    SetSkillEnabled { dir: String, enabled: bool } -> Result<()>
        = |rt, op| rt.set_skill_enabled(&op.dir, op.enabled);
    /// Whether memories the agent proposes are kept without asking.
    #[derive(Debug, Clone)]
    SetMemoryAutoAccept { on: bool } -> Result<()>
        = |rt, op| rt.set_memory_auto_accept(op.on);
}
