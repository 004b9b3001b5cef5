//! The context entry points: compactions, resets, the meter and a manual compaction.
use crate::api::service::Runtime;
use crate::config::ProviderSettings;
use crate::engine::context::{
    build_view, calibration_key, ids_of, is_lean, model_facts, offered_specs, replaces_of, text_of,
    ContextFailure, SessionContext,
};
use crate::engine::provider;
use crate::store::compactions::{self, ContextTurn};
use crate::store::{settings, tasks, StoreError};
use pocketpilot_context::{Budget, Calibration, Estimator};
use pocketpilot_protocol::CompactionCause;
use std::sync::Arc;

pub use pocketpilot_protocol::{
    CompactReport, CompactionInfo, ContextMarks, ContextReset, ContextUse,
};

impl Runtime {
    /// A session's compactions, oldest first: the dividers of its transcript.
    pub(crate) fn compactions(&self, session_id: i64) -> Result<Vec<CompactionInfo>, StoreError> {
        let list = self.store.read(|c| compactions::list(c, session_id))?;
        Ok(list
            .iter()
            .map(|e| CompactionInfo {
                entry_id: e.id,
                task_id: e.task_id,
                summary: text_of(e).to_owned(),
                fallback: e
                    .content
                    .get("fallback")
                    .and_then(|v| v.as_bool())
                    .unwrap_or(false),
                cause: e
                    .content
                    .get("cause")
                    .and_then(|v| v.as_str())
                    .and_then(|c| c.parse().ok()),
                replaces: replaces_of(e),
                elided: ids_of(e, "elided"),
                instructions_elided: ids_of(e, "instructions_elided"),
                tokens_before: e.content.get("tokens_before").and_then(|v| v.as_u64()),
                tokens_after: e.content.get("tokens_after").and_then(|v| v.as_u64()),
                created_at: e.created_at.clone(),
            })
            .collect())
    }

    /// Per-request token figures of a session (estimate and the server's count).
    pub(crate) fn context_turns(&self, session_id: i64) -> Result<Vec<ContextTurn>, StoreError> {
        self.store
            .read(|c| compactions::turns_of_session(c, session_id))
    }

    /// The context meter: the next request's estimate against the window of the
    /// session's provider (discovered, set or assumed).
    pub(crate) async fn context_use(&self, session_id: i64) -> Result<ContextUse, StoreError> {
        let session = self
            .store
            .read(|c| crate::store::sessions::get(c, session_id))?;
        let last_task = self
            .store
            .read(|c| tasks::last_for_session(c, session_id, 1))?
            .into_iter()
            .next();
        let settings = ProviderSettings::load(&self.store)?;
        let spec = last_task.as_ref().and_then(|t| t.provider.clone());
        let facts = model_facts(spec.as_deref(), &settings).await;
        let stored: Option<Calibration> = self
            .store
            .read(|c| settings::get(c, &calibration_key(&facts.model)))?;
        let mut est = Estimator::for_model(&facts.model);
        if let Some(c) = stored {
            est = est.with_calibration(c);
        }
        let view = self.store.read(|c| {
            build_view(
                c,
                session_id,
                last_task.as_ref().map(|t| t.id),
                &session.workspace,
                facts.window.tokens,
                &est,
            )
        })?;
        let lean = self.store.read(|c| is_lean(c, facts.window.tokens))?;
        let tools = offered_specs(lean);
        let used = est.request(&view.messages(), &tools, None).tokens;
        let budget = Budget::new(facts.window.tokens, facts.output_reserve, &est);
        let last_request = self.store.read(|c| compactions::last_turn(c, session_id))?;
        let compactions = self.store.read(|c| compactions::list(c, session_id))?.len() as u32;
        Ok(ContextUse {
            session_id,
            used,
            window: facts.window.tokens,
            window_source: facts.window.source,
            limit: budget.limit(),
            last_request,
            compactions,
        })
    }

    /// "Fresh context": a new head for the session's model view, submitted as a `reset`
    /// (placed at once when the session is idle; while it is busy, at the run's next
    /// boundary, where it ends that run). The transcript keeps everything before it.
    pub(crate) fn fresh_context(
        self: &Arc<Self>,
        session_id: i64,
    ) -> crate::api::service::Result<crate::engine::inbox::Admitted> {
        self.say(&crate::engine::inbox::Submit {
            session_id,
            say: crate::engine::inbox::Say::Reset { text: None },
            request_id: None,
            provider: None,
            trigger: None,
            grants: Vec::new(),
            mcp: None,
        })
    }

    /// A session's compactions and fresh contexts, oldest first: its transcript's dividers.
    pub(crate) fn context_marks(
        &self,
        session_id: i64,
    ) -> crate::api::service::Result<ContextMarks> {
        let resets = self.store.read(|c| {
            crate::store::sessions::get(c, session_id)?;
            compactions::resets(c, session_id)
        })?;
        Ok(ContextMarks {
            compactions: self.compactions(session_id)?,
            resets,
        })
    }

    /// "Compact now": summarises the session's older turns with its provider, to half of
    /// what the view takes, and records it under the session's newest task. Refused
    /// while the session has a run in progress.
    pub(crate) async fn compact_now(
        &self,
        session_id: i64,
    ) -> Result<CompactReport, ContextFailure> {
        // A paused run asks nothing until it is continued, and it rebuilds its view from
        // the store at every request: compacting while it waits is safe, and often what
        // lets it go on. A running (or approving) one would race the compaction.
        let open = self
            .store
            .read(|c| crate::engine::inbox::current_task(c, session_id))?;
        if open.is_some_and(|t| t.status != crate::task::TaskStatus::Paused) {
            return Err(ContextFailure::Busy(session_id));
        }
        let session = self
            .store
            .read(|c| crate::store::sessions::get(c, session_id))?;
        let task = self
            .store
            .read(|c| tasks::last_for_session(c, session_id, 1))?
            .into_iter()
            .next()
            .ok_or(ContextFailure::NoTask)?;
        let settings = ProviderSettings::load(&self.store)?;
        let provider = provider::build(task.provider.as_deref(), &settings)
            .map_err(|e| ContextFailure::Provider(e.to_string()))?;
        let ctx = SessionContext::open(
            self.store.clone(),
            session_id,
            task.id,
            &session.workspace,
            task.provider.as_deref(),
            &settings,
        )
        .await?;
        let (est, lean) = ctx.estimator_and_lean();
        let tools = offered_specs(lean);
        let view = self.store.read(|c| {
            build_view(
                c,
                session_id,
                Some(task.id),
                &session.workspace,
                ctx.window().tokens,
                &est,
            )
        })?;
        let before = est.request(&view.messages(), &tools, None).tokens;
        let sink = self.recorder.task_sink(task.id);
        // The person's compaction is announced to the hooks as such (`trigger: manual`).
        crate::engine::hooks::pre_compact_manual(
            &self.store,
            self.data_dir(),
            self.person_hooks_file(),
            session_id,
            &session.workspace,
            &sink,
        )
        .await?;
        compact_below(&ctx, provider.as_ref(), &tools, before, task.id, &sink).await
    }
}

/// Compacts the view to half of `before` tokens, stepping up when what must stay
/// verbatim needs more.
async fn compact_below(
    ctx: &SessionContext,
    provider: &dyn pocketpilot_model::Provider,
    tools: &[pocketpilot_model::ToolSpec],
    before: u32,
    task_id: i64,
    sink: &dyn crate::engine::sink::EventSink,
) -> Result<CompactReport, ContextFailure> {
    for share in [0.5, 0.7, 0.9] {
        let below = (f64::from(before) * share) as u32;
        match ctx
            .prepare(
                provider,
                tools,
                0,
                Some(below),
                CompactionCause::Manual,
                sink,
            )
            .await
        {
            Ok(prepared) => {
                return Ok(CompactReport {
                    task_id,
                    tokens_before: before,
                    tokens_after: prepared.estimate,
                    compacted: prepared.compacted,
                })
            }
            Err(ContextFailure::NothingFits(_)) => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(CompactReport {
        task_id,
        tokens_before: before,
        tokens_after: before,
        compacted: false,
    })
}

crate::api::call::op! {
    /// A session's compactions, oldest first: the dividers of its transcript.
    #[derive(Debug, Clone)]
    ListCompactions { session_id: i64 } -> Result<Vec<CompactionInfo>, StoreError>
        = |rt, op| rt.compactions(op.session_id);
    /// Per-request token figures of a session (estimate and the server's count).
    #[derive(Debug, Clone)]
    ContextTurns { session_id: i64 } -> Result<Vec<ContextTurn>, StoreError>
        = |rt, op| rt.context_turns(op.session_id);
    /// The context meter: the next request's estimate against the window of the session's provider
    /// (discovered, set or assumed).
    #[derive(Debug, Clone)]
    GetContextUse { session_id: i64 } -> crate::api::call::Pending<Result<ContextUse, StoreError>>
        = |rt, op| {
        let rt = std::sync::Arc::clone(rt);
        Box::pin(async move { rt.context_use(op.session_id).await })
    };
    /// "Fresh context": a new head for the session's model view, submitted as a `reset` (placed at
    /// once when the session is idle; while it is busy, at the run's next boundary, where it ends
    /// that run). The transcript keeps everything before it.
    #[derive(Debug, Clone)]
    FreshContext { session_id: i64 } -> crate::api::service::Result<crate::engine::inbox::Admitted>
        = |rt, op| rt.fresh_context(op.session_id);
    /// A session's compactions and fresh contexts, oldest first: its transcript's dividers.
    #[derive(Debug, Clone)]
    GetContextMarks { session_id: i64 } -> crate::api::service::Result<ContextMarks>
        = |rt, op| rt.context_marks(op.session_id);
    /// "Compact now": summarises the session's older turns with its provider, to half of what the
    /// view takes, and records it under the session's newest task. Refused while the session has a
    /// run in progress.
    #[derive(Debug, Clone)]
    CompactNow { session_id: i64 } -> crate::api::call::Pending<Result<CompactReport, ContextFailure>>
        = |rt, op| {
        let rt = std::sync::Arc::clone(rt);
        Box::pin(async move { rt.compact_now(op.session_id).await })
    };
}
