//! What a run is given of the workspace's rules: where skills are found, the `remember`
//! tool, and the preamble its requests carry.
use std::sync::Arc;

use pocketpilot_tools::{Registry, ToolContext};

use crate::policy::instructions::{self, Preamble};
use crate::policy::memory::{self, Remember};
use crate::store::{Store, StoreError};

/// Sets a run up for issue 18: where `load_skill` looks and what is off, the `remember`
/// tool, `memory:write` granted when the person chose to keep proposals without asking,
/// and the preamble the requests carry.
pub fn prepare_run(
    store: &Arc<Store>,
    task_id: i64,
    workspace: &str,
    ctx: &mut ToolContext,
    tools: &mut Registry,
    run_grants: &mut Vec<String>,
) -> Result<Arc<Preamble>, StoreError> {
    let (sources, auto, preamble) = store.read(|c| {
        Ok((
            instructions::skill_sources(c)?,
            memory::auto_accept(c)?,
            Preamble::load(c, workspace)?,
        ))
    })?;
    ctx.skills = sources;
    // Offered only where there is a skill to load: a tool costs context in every request.
    if !preamble.skills.is_empty() {
        tools.register(Arc::new(pocketpilot_tools::builtin::LoadSkill));
    }
    tools.register(Arc::new(Remember {
        store: store.clone(),
        task_id,
    }));
    if auto && !run_grants.iter().any(|g| g == memory::CAPABILITY) {
        run_grants.push(memory::CAPABILITY.to_owned());
    }
    Ok(Arc::new(preamble))
}
