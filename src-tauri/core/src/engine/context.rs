//! A session never outgrows its model (issue 13): before each model request the run
//! builds the model's view from the stored entries, counts it against the model's
//! window, and compacts it when it would not fit — old tool results elided first, then
//! older turns summarised by the model, with a deterministic marker when the summary
//! fails. A request known to exceed the window is never sent; a refusal for length is
//! answered by compacting harder, at most twice.
//!
//! The view is made from what the store committed (not from the agent's in-memory
//! messages) so a fresh run, a resumed one and one after a crash see the same thing, and
//! a compaction committed before a kill -9 is what the next run starts from. A run reads
//! the session once, when it starts, and keeps it as its [`Conversation`], extended with
//! each commit: a request costs what its view holds, not the session's length. What it
//! sends is byte for byte what a fresh read of the store ([`build_view`]) would give.
//!
//! A compaction with a summary is one entry (`compaction`) written with its
//! `context_compacted` event in one transaction (the recorder calls [`apply_compacted`]).
//! It names the entries it stands for; the view leaves those out and shows the summary
//! where the first of them was. The originals stay in the store and in the history.
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use pocketpilot_context::{
    cap_tool_output_tokens, known_window, plan_compaction, plan_compaction_after, Action, Anchor,
    Budget, Calibration, ContextError, Estimator, Item, NewSummary, Plan, PlanOptions,
};
use pocketpilot_model::openai::{discover_server_model, Uncounted};
use pocketpilot_model::{
    ContextWindow, Message, ModelResponse, OpenAiConfig, Provider, ProviderSpec, Role,
    TemplateFamily, ToolCall, ToolKind, ToolSpec, WindowSource, ASSUMED_CONTEXT_WINDOW,
};
use pocketpilot_protocol::{CompactionCause, EntryKind, WindowOrigin};
use rusqlite::Connection;
use serde::Serialize;

use crate::config::ProviderSettings;
pub use crate::engine::conversation::Conversation;
pub(crate) use crate::engine::conversation::{ids_of, replaces_of};
use crate::engine::provider;
use crate::engine::sink::EventSink;
use crate::engine::transcript::{lean_system_prompt, system_prompt, wrap_untrusted};
use crate::event::RuntimeEvent;
use crate::store::compactions::{self, NewContextTurn};
use crate::store::{entries, settings, Entry, Store, StoreError};

/// Retries after a refusal for length, each compacting harder.
pub(crate) const MAX_OVERFLOW_RETRIES: u32 = 2;
/// How often a summary request the server counted over its window is fitted again
/// before the fixed marker stands in.
const MAX_SUMMARY_REFITS: u32 = 2;
/// Synthetic items (answers to calls that never ran) get ids above this, never stored.
const SYNTHETIC: u64 = 1 << 62;

/// A model's window, and where the figure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Window {
    pub tokens: u32,
    pub source: WindowOrigin,
}

#[derive(Debug, thiserror::Error)]
pub enum ContextFailure {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Record(#[from] crate::engine::sink::RecordError),
    #[error(transparent)]
    NothingFits(#[from] ContextError),
    #[error("the session has no task to compact under")]
    NoTask,
    #[error("{0}")]
    Provider(String),
    #[error("session {0} has a run in progress: compact it when it is idle")]
    Busy(i64),
    /// See [`VERIFY_ENV`].
    #[error("{0}")]
    Differs(String),
}

impl ContextFailure {
    pub fn kind(&self) -> pocketpilot_protocol::ErrorKind {
        use pocketpilot_protocol::ErrorKind;
        match self {
            ContextFailure::Store(e) => crate::error_kind::store_kind(e),
            ContextFailure::Record(_) => ErrorKind::Record,
            ContextFailure::NothingFits(_) => ErrorKind::ModelContextOverflow,
            ContextFailure::NoTask => ErrorKind::NotFound,
            ContextFailure::Provider(_) => ErrorKind::ModelConfig,
            ContextFailure::Busy(_) => ErrorKind::ConversationBusy,
            ContextFailure::Differs(_) => ErrorKind::Record,
        }
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Windows found per provider (base URL and model), so discovery runs once per process
/// and a smaller window learnt from a refusal is kept.
fn windows() -> &'static Mutex<HashMap<String, Window>> {
    static W: OnceLock<Mutex<HashMap<String, Window>>> = OnceLock::new();
    W.get_or_init(Default::default)
}

/// What each provider's server said of itself with its window: the family of the chat
/// template it named (llama.cpp `/props`; `None` when it did not say), and whether it
/// counts a request's prompt before it is sent (llama.cpp).
#[derive(Debug, Clone, Copy, Default)]
struct ServerTraits {
    family: Option<TemplateFamily>,
    counts_prompts: bool,
}

fn families() -> &'static Mutex<HashMap<String, ServerTraits>> {
    static F: OnceLock<Mutex<HashMap<String, ServerTraits>>> = OnceLock::new();
    F.get_or_init(Default::default)
}

pub(crate) fn calibration_key(model: &str) -> String {
    format!("context.calibration.{model}")
}

/// What the window and the estimator are for one provider spec.
pub struct ModelFacts {
    pub window: Window,
    pub model: String,
    pub output_reserve: u32,
    /// The family of the chat template the server named; `None` when it did not say.
    pub template: Option<TemplateFamily>,
    cache_key: String,
    /// Whether the usage the provider reports is a server's count of the prompt, to
    /// calibrate the estimator on.
    counted: bool,
    /// Whether the server counts a request's prompt exactly before it is sent.
    counts_prompts: bool,
}

/// What each of a run's tools declares it does, by the name the model calls it.
#[derive(Debug, Clone, Default)]
struct ToolKinds(HashMap<String, ToolKind>);

impl ToolKinds {
    fn of(tools: &pocketpilot_tools::Registry) -> Self {
        Self(
            tools
                .names()
                .into_iter()
                .filter_map(|name| tools.get(name).map(|t| (name.to_owned(), t.kind())))
                .collect(),
        )
    }

    /// A tool the run no longer has (its MCP server was removed) is named in the hint.
    fn get(&self, name: &str) -> ToolKind {
        self.0.get(name).copied().unwrap_or_default()
    }
}

/// The settings key of the largest window that gets the lean first prompt (a number of
/// tokens; [`LEAN_UP_TO`] when unset).
pub const LEAN_SETTING: &str = "context.lean_up_to";
/// Windows up to this many tokens get the lean first prompt by default: compact tool
/// specs and the short system text.
pub const LEAN_UP_TO: u32 = 8192;

/// The answer's room when the person set none: [`Budget::default_reserve`]. The provider
/// settings' `max_tokens` is the reserve when set (the request's `max_tokens` either way).
pub fn default_reserve(window: u32) -> u32 {
    Budget::default_reserve(window)
}

/// Whether a window gets the lean first prompt: up to the person's setting, or
/// [`LEAN_UP_TO`].
pub fn is_lean(c: &Connection, window: u32) -> Result<bool, StoreError> {
    let up_to: Option<u32> = settings::get(c, LEAN_SETTING)?;
    Ok(window <= up_to.unwrap_or(LEAN_UP_TO))
}

/// Decides which tools a run offers and how: the lean specs in a small window, and none
/// that the workspace's policy denies (offering one costs room in every request for a
/// call that can only be refused; a call made anyway is still refused as before). The
/// run calls this once its tools are all registered and its context is known.
pub fn offer_tools(
    tools: &mut pocketpilot_tools::Registry,
    context: Option<&SessionContext>,
    rules: &pocketpilot_tools::PolicyRules,
) {
    if let Some(ctx) = context {
        let mut s = lock(&ctx.state);
        tools.set_lean(s.lean);
        s.tool_kinds = ToolKinds::of(tools);
    }
    tools.withhold(|t| {
        pocketpilot_tools::decide(Some(t.capability()), rules, &[]).0
            == pocketpilot_protocol::Decision::Deny
    });
}

/// The built-in tools' specs as a run in `window` offers them, for the meter and for a
/// compaction asked for outside a run.
pub(crate) fn offered_specs(lean: bool) -> Vec<ToolSpec> {
    let mut tools = pocketpilot_tools::Registry::builtin();
    tools.set_lean(lean);
    tools.specs()
}

/// The facts of the model a task's stored provider spec names, for the meter and a
/// compaction asked for outside a run: see [`facts_of`]. The configured model's are asked
/// of its server without building a client.
pub async fn model_facts(spec: Option<&str>, settings: &ProviderSettings) -> ModelFacts {
    // An unknown spec fails the run when it starts; until then the configured server's
    // figures stand in, as they always have.
    let spec = ProviderSpec::from_stored(spec).unwrap_or_default();
    if spec.is_configured() {
        return server_facts(settings).await;
    }
    match provider::build_spec(&spec, settings) {
        Ok(p) => facts_of(p.as_ref()).await,
        Err(e) => {
            tracing::debug!(error = %e, "the provider cannot be built: the window is assumed");
            assumed_facts(String::new())
        }
    }
}

/// The window and estimator of a run's provider: the window it declares, else what its
/// server says (see [`server_facts`]), else the assumed default.
pub async fn facts_of(provider: &dyn Provider) -> ModelFacts {
    let declared = provider.window();
    if let (None, Some(config)) = (declared, provider.server()) {
        return facts_of_server(config).await;
    }
    let window = match declared {
        Some(tokens) => Window {
            tokens,
            source: WindowOrigin::Setting,
        },
        None => Window {
            tokens: ASSUMED_CONTEXT_WINDOW,
            source: WindowOrigin::Assumed,
        },
    };
    let key = provider.label();
    let window = *lock(windows()).entry(key.clone()).or_insert(window);
    ModelFacts {
        window,
        model: provider.model(),
        output_reserve: default_reserve(window.tokens),
        template: None,
        cache_key: key,
        counted: provider.server().is_some(),
        counts_prompts: false,
    }
}

/// The configured model's facts: what its server says, the setting, a known hosted
/// model's window, or the assumed default. The server's chat template (its family) comes
/// with the window, when it names one.
pub async fn server_facts(settings: &ProviderSettings) -> ModelFacts {
    match provider::openai_config(settings) {
        Ok(config) => facts_of_server(&config).await,
        Err(e) => {
            tracing::debug!(error = %e, "no provider config: the window is assumed");
            assumed_facts(settings.model.clone().unwrap_or_default())
        }
    }
}

fn assumed_facts(model: String) -> ModelFacts {
    ModelFacts {
        window: Window {
            tokens: ASSUMED_CONTEXT_WINDOW,
            source: WindowOrigin::Assumed,
        },
        model,
        output_reserve: default_reserve(ASSUMED_CONTEXT_WINDOW),
        template: None,
        cache_key: String::new(),
        counted: true,
        counts_prompts: false,
    }
}

async fn facts_of_server(config: &OpenAiConfig) -> ModelFacts {
    let key = format!("{}|{}", config.base_url, config.model);
    let cached = lock(windows()).get(&key).copied();
    let window = match cached {
        Some(w) => w,
        None => {
            let server = discover_server_model(config).await;
            lock(families()).insert(
                key.clone(),
                ServerTraits {
                    family: server
                        .chat_template
                        .as_deref()
                        .map(TemplateFamily::from_chat_template),
                    counts_prompts: server.counts_prompts,
                },
            );
            let w = window_of(server.window, &config.model);
            lock(windows()).insert(key.clone(), w);
            w
        }
    };
    let traits = lock(families()).get(&key).copied().unwrap_or_default();
    ModelFacts {
        output_reserve: config
            .max_tokens
            .unwrap_or_else(|| default_reserve(window.tokens)),
        template: traits.family,
        window,
        model: config.model.clone(),
        cache_key: key,
        counted: true,
        counts_prompts: traits.counts_prompts,
    }
}

/// The window a server's answer gives, a known hosted model's when it says nothing.
fn window_of(found: ContextWindow, model: &str) -> Window {
    match found.source {
        WindowSource::Discovered(_) => Window {
            tokens: found.tokens,
            source: WindowOrigin::Discovered,
        },
        WindowSource::Setting => Window {
            tokens: found.tokens,
            source: WindowOrigin::Setting,
        },
        WindowSource::Assumed => match known_window(model) {
            Some(tokens) => Window {
                tokens,
                source: WindowOrigin::Known,
            },
            None => Window {
                tokens: found.tokens,
                source: WindowOrigin::Assumed,
            },
        },
    }
}

/// The model's view of a session, item by item (ids are entry ids), with each entry's
/// place (a summary sits where the first entry it replaces was).
#[derive(Debug, PartialEq)]
pub struct View {
    pub items: Vec<Item>,
    places: HashMap<u64, i64>,
}

impl View {
    pub fn messages(&self) -> Vec<Message> {
        self.items.iter().map(|i| i.message.clone()).collect()
    }
}

pub(crate) fn text_of(e: &Entry) -> &str {
    e.content.get("text").and_then(|t| t.as_str()).unwrap_or("")
}

/// Builds the view from the entries since the session's last reset. `task_id`'s first
/// person message is the goal; tool results are capped to a quarter of the window (the
/// full output stays in the event log and the entry).
pub fn build_view(
    c: &Connection,
    session_id: i64,
    task_id: Option<i64>,
    workspace: &str,
    window: u32,
    est: &Estimator,
) -> Result<View, StoreError> {
    let kinds = ToolKinds::of(&pocketpilot_tools::Registry::builtin());
    let conversation = Conversation::open(c, session_id)?;
    kept_view(c, &conversation, task_id, workspace, window, est, &kinds)
}

/// The view of a run's kept conversation (see [`Conversation`]).
fn kept_view(
    c: &Connection,
    conversation: &Conversation,
    task_id: Option<i64>,
    workspace: &str,
    window: u32,
    est: &Estimator,
    kinds: &ToolKinds,
) -> Result<View, StoreError> {
    // Issue 18: the workspace's instructions, memories and skills, re-read every request
    // and kept verbatim by the planner (a compaction never summarises them).
    let preamble =
        crate::policy::instructions::Preamble::load(c, workspace)?.text_of(conversation.worked());
    let rules = if is_lean(c, window)? {
        lean_system_prompt(workspace)
    } else {
        system_prompt(workspace)
    };
    let all = conversation.entries();
    Ok(view_of(all, task_id, window, est, rules, preamble, kinds))
}

/// The view a fresh read of the store gives, the way the view was made before a run kept
/// its conversation: every entry since the last reset, the replaced ones filtered here.
/// What the kept view is checked against.
pub fn rebuilt_view(
    c: &Connection,
    session_id: i64,
    task_id: Option<i64>,
    workspace: &str,
    window: u32,
    est: &Estimator,
) -> Result<View, StoreError> {
    let kinds = ToolKinds::of(&pocketpilot_tools::Registry::builtin());
    rebuilt_with_kinds(c, session_id, task_id, workspace, window, est, &kinds)
}

fn rebuilt_with_kinds(
    c: &Connection,
    session_id: i64,
    task_id: Option<i64>,
    workspace: &str,
    window: u32,
    est: &Estimator,
    kinds: &ToolKinds,
) -> Result<View, StoreError> {
    let all = entries::since_head(c, session_id)?;
    let preamble = crate::policy::instructions::Preamble::load(c, workspace)?
        .text(crate::policy::instructions::calls_of_entries(&all).iter());
    let rules = if is_lean(c, window)? {
        lean_system_prompt(workspace)
    } else {
        system_prompt(workspace)
    };
    Ok(view_of(&all, task_id, window, est, rules, preamble, kinds))
}

/// The preamble's item id: above every entry id and synthetic answer.
const PREAMBLE_ID: u64 = u64::MAX;

fn view_of(
    all: &[Entry],
    task_id: Option<i64>,
    window: u32,
    est: &Estimator,
    rules: String,
    preamble: Option<String>,
    kinds: &ToolKinds,
) -> View {
    let replaced = replaced_by_compactions(all);
    let mut placed: Vec<(i64, Item)> = vec![(i64::MIN, Item::system_rules(0, rules))];
    if let Some(text) = preamble {
        placed.push((
            i64::MIN + 1,
            Item::workspace_instructions(PREAMBLE_ID, text),
        ));
    }
    let mut items = EntryItems {
        task_id,
        goal_seen: false,
        calls: HashMap::new(),
        cap: (window / 4).max(64),
        est,
        kinds,
    };
    placed.extend(
        all.iter()
            .filter(|e| !replaced.contains(&e.id))
            .filter_map(|e| items.placed(e)),
    );
    // Stable: a summary placed at an entry's position comes before that entry.
    placed.sort_by_key(|(at, _)| *at);
    let places: HashMap<u64, i64> = placed.iter().map(|(at, i)| (i.id, *at)).collect();
    View {
        items: close_unanswered(placed.into_iter().map(|(_, i)| i).collect()),
        places,
    }
}

/// The entries that a compaction in `all` stands for.
fn replaced_by_compactions(all: &[Entry]) -> HashSet<i64> {
    all.iter()
        .filter(|e| e.kind == EntryKind::Compaction)
        .flat_map(|e| replaces_of(e).into_iter())
        .collect()
}

/// Turns a session's entries, read in order, into the view's items: the task's first
/// person message is its goal, and a tool result is paired with the call made before it.
struct EntryItems<'a> {
    task_id: Option<i64>,
    goal_seen: bool,
    calls: HashMap<String, ToolCall>,
    /// Most tokens one tool result keeps.
    cap: u32,
    est: &'a Estimator,
    kinds: &'a ToolKinds,
}

impl EntryItems<'_> {
    /// The item that `e` shows as, and the entry id it is placed at; `None` for an entry
    /// the model does not see.
    fn placed(&mut self, e: &Entry) -> Option<(i64, Item)> {
        let id = e.id as u64;
        let text = text_of(e);
        let item = match &e.kind {
            EntryKind::User => self.person(e, text),
            EntryKind::System => Item::workspace_instructions(id, text),
            EntryKind::Assistant => self.assistant(e, text),
            EntryKind::ToolResult => self.tool_result(e, text),
            EntryKind::Reset if !text.is_empty() => Item::person(id, text),
            EntryKind::Compaction => {
                let at = e
                    .content
                    .get("placed_at")
                    .and_then(|v| v.as_i64())
                    .unwrap_or(e.id);
                return Some((at, Item::summary(id, text)));
            }
            EntryKind::Reset | EntryKind::Written(_) => return None,
        };
        Some((e.id, item))
    }

    fn person(&mut self, e: &Entry, text: &str) -> Item {
        let id = e.id as u64;
        if !self.goal_seen && self.task_id.is_some() && e.task_id == self.task_id {
            self.goal_seen = true;
            Item::goal(id, text)
        } else {
            Item::person(id, text)
        }
    }

    fn assistant(&mut self, e: &Entry, text: &str) -> Item {
        let tc: Vec<ToolCall> = e
            .content
            .get("tool_calls")
            .cloned()
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default();
        for call in &tc {
            self.calls.insert(call.id.clone(), call.clone());
        }
        Item::assistant(e.id as u64, text, tc)
    }

    fn tool_result(&self, e: &Entry, text: &str) -> Item {
        let call_id = e
            .content
            .get("call_id")
            .and_then(|t| t.as_str())
            .unwrap_or("");
        let call = self
            .calls
            .get(call_id)
            .cloned()
            .unwrap_or_else(|| ToolCall {
                id: call_id.to_owned(),
                name: "tool".into(),
                arguments: "{}".into(),
            });
        let capped = cap_tool_output_tokens(text, self.cap, self.est).text;
        Item::tool_result(
            e.id as u64,
            &call,
            self.kinds.get(&call.name),
            wrap_untrusted("tool result", &capped),
        )
    }
}

/// Person instructions kept verbatim beside the rest when old ones are merged.
const KEEP_INSTRUCTIONS_APART: usize = 4;

/// Merges the person's older messages (all but the last few; never the goal) into one
/// item at the place of the first, so that eliding them leaves one marker. Whether there
/// was anything to merge.
/// Planner items with ids below `SYNTHETIC` stand for store entries.
fn is_entry(id: &u64) -> bool {
    *id < SYNTHETIC && *id > 0
}

/// The store entries of `plan` whose action matches.
fn entries_where(plan: &Plan, f: impl Fn(&Action) -> bool) -> Vec<i64> {
    plan.items
        .iter()
        .filter(|i| f(&i.action))
        .map(|i| i.id)
        .filter(is_entry)
        .map(|id| id as i64)
        .collect()
}

/// The budget of one request: a retry after a refusal widens the margin; `force_below`
/// (compact now) makes the limit at most that.
fn budget_for(
    window: u32,
    reserve: u32,
    est: &Estimator,
    extra_margin: u32,
    force_below: Option<u32>,
) -> Budget {
    let mut budget = Budget::new(window, reserve, est);
    budget.margin = budget.margin.saturating_add(extra_margin);
    if let Some(below) = force_below {
        let limit = budget.limit();
        if below < limit {
            budget.margin = budget.margin.saturating_add(limit - below);
        }
    }
    budget
}

fn plan_view(
    view: &mut View,
    tools: &[ToolSpec],
    budget: &Budget,
    est: &Estimator,
    anchor: Option<&Anchor>,
    elided_before: &[u64],
    options: &PlanOptions,
) -> Result<Plan, ContextFailure> {
    match plan_compaction_after(
        &view.items,
        tools,
        budget,
        est,
        options,
        anchor,
        elided_before,
    ) {
        Ok(p) => Ok(p),
        Err(ContextError::NothingFits { .. }) if merge_old_instructions(&mut view.items) => {
            // Many short messages from the person: each elided one would leave its own
            // marker, nearly as long. As one text, the oldest are elided as one.
            Ok(plan_compaction(
                &view.items,
                tools,
                budget,
                est,
                options,
                None,
            )?)
        }
        Err(e) => Err(e.into()),
    }
}

/// The model's summary of the turns the plan replaces; `None` when there is nothing to
/// summarise or the call failed (the fallback marker then stands in).
async fn summarise(provider: &dyn Provider, plan: &Plan) -> Option<String> {
    let r = plan.summary_request()?;
    match provider.complete(r.messages.clone(), Vec::new()).await {
        Ok(answer) => Some(answer.text),
        Err(e) => {
            tracing::warn!(error = %e, "the summary call failed; eliding instead");
            None
        }
    }
}

fn merge_old_instructions(items: &mut Vec<Item>) -> bool {
    let person: Vec<usize> = items
        .iter()
        .enumerate()
        .filter(|(_, i)| i.kind == pocketpilot_context::ItemKind::PersonInstruction)
        .map(|(n, _)| n)
        .collect();
    if person.len() <= KEEP_INSTRUCTIONS_APART + 1 {
        return false;
    }
    let old = &person[..person.len() - KEEP_INSTRUCTIONS_APART];
    let text = old
        .iter()
        .map(|n| items[*n].text().to_owned())
        .collect::<Vec<_>>()
        .join("\n\n");
    let first = items[old[0]].id;
    let merged = Item::person(first, text);
    let drop: HashSet<usize> = old[1..].iter().copied().collect();
    items[old[0]] = merged;
    let mut n = 0;
    items.retain(|_| {
        let keep = !drop.contains(&n);
        n += 1;
        keep
    });
    true
}

/// As the transcript does: a call with no result is answered with an error when the
/// conversation went on after it (models refuse a call left open).
fn close_unanswered(items: Vec<Item>) -> Vec<Item> {
    let mut out: Vec<Item> = Vec::with_capacity(items.len());
    let mut open: Vec<ToolCall> = Vec::new();
    let mut synthetic = SYNTHETIC;
    for item in items {
        if item.message.role == Role::Tool {
            if let Some(id) = &item.message.tool_call_id {
                open.retain(|o| &o.id != id);
            }
        } else {
            for call in open.drain(..) {
                synthetic += 1;
                // A call that never ran is one to make again, whatever the tool does.
                out.push(Item::tool_result(
                    synthetic,
                    &call,
                    ToolKind::Other,
                    wrap_untrusted(
                        "tool result",
                        "This call never ran: its run ended before it was answered.",
                    ),
                ));
            }
            if item.message.role == Role::Assistant {
                open = item.message.tool_calls.clone();
            }
        }
        out.push(item);
    }
    out
}

/// What the recorder writes for a `context_compacted` event, in the event's transaction:
/// the compaction entry, when the event carries a summary.
pub fn apply_compacted(
    tx: &rusqlite::Transaction<'_>,
    session_id: i64,
    task_id: i64,
    event: &RuntimeEvent,
) -> Result<(), StoreError> {
    if let RuntimeEvent::ContextCompacted {
        cause,
        summary: Some(text),
        summarised,
        elided,
        instructions_elided,
        fallback,
        placed_at,
        tokens_before,
        tokens_after,
        ..
    } = event
    {
        if summarised.is_empty() {
            return Ok(());
        }
        let content = serde_json::json!({
            "text": text,
            "cause": cause,
            "replaces": summarised,
            "elided": elided,
            "instructions_elided": instructions_elided,
            "fallback": fallback,
            "placed_at": placed_at,
            "tokens_before": tokens_before,
            "tokens_after": tokens_after,
        });
        compactions::append(tx, session_id, Some(task_id), &content)?;
    }
    Ok(())
}

/// A request ready to send, and what it was planned against.
pub struct Prepared {
    pub messages: Vec<Message>,
    pub estimate: u32,
    pub budget: Budget,
    pub window: Window,
    /// Whether the view was changed for it.
    pub compacted: bool,
}

#[derive(Clone)]
struct State {
    window: Window,
    /// The window gets the lean first prompt (see [`is_lean`]).
    lean: bool,
    output_reserve: u32,
    estimator: Estimator,
    anchor: Option<Anchor>,
    /// Tool results elided in the last request, so an unchanged elision is not reported
    /// again each turn.
    last_elided: Vec<i64>,
    /// The person's messages the last request elided: they stay elided while the rest
    /// fits (see `plan_compaction_after`).
    instructions_elided: Vec<i64>,
    /// What the run's tools declare they do, for the hints in elided outputs.
    tool_kinds: ToolKinds,
}

/// What a compaction did to the view, as its event tells it.
struct Compaction {
    /// Tool results elided or capped.
    elided: Vec<i64>,
    instructions_elided: Vec<i64>,
    summary: Option<String>,
    fallback: bool,
    /// The entries the summary stands for.
    summarised: Vec<i64>,
    /// Where the summary stands: where the first entry it replaces stood.
    placed_at: i64,
}

impl Compaction {
    fn of(plan: &Plan, summary: Option<&NewSummary>, places: &HashMap<u64, i64>) -> Self {
        let elided = entries_where(plan, |a| {
            matches!(a, Action::Elided { .. } | Action::Capped { .. })
        });
        let instructions_elided =
            entries_where(plan, |a| matches!(a, Action::InstructionElided { .. }));
        let Some(s) = summary else {
            return Compaction {
                elided,
                instructions_elided,
                summary: None,
                fallback: false,
                summarised: Vec::new(),
                placed_at: 0,
            };
        };
        let summarised: Vec<i64> = s
            .replaces
            .iter()
            .filter(|id| is_entry(id))
            .map(|id| *id as i64)
            .collect();
        let placed_at = s
            .replaces
            .iter()
            .filter_map(|id| places.get(id))
            .min()
            .copied()
            .unwrap_or(0);
        Compaction {
            elided,
            instructions_elided,
            summary: Some(s.text.clone()),
            fallback: s.fallback,
            summarised,
            placed_at,
        }
    }

    /// A summary, a compaction asked for, or elisions other than the last request's are
    /// reported; the same elision again each turn is not.
    fn worth_reporting(&self, last: &State, cause: CompactionCause) -> bool {
        self.summary.is_some()
            || self.instructions_elided != last.instructions_elided
            || self.elided != last.last_elided
            || cause != CompactionCause::BeforeRequest
    }

    fn event(
        &self,
        cause: CompactionCause,
        tokens_before: u32,
        tokens_after: u32,
        window: Window,
    ) -> RuntimeEvent {
        RuntimeEvent::ContextCompacted {
            cause,
            tokens_before,
            tokens_after,
            window: window.tokens,
            window_source: window.source,
            elided: self.elided.clone(),
            summarised: self.summarised.clone(),
            instructions_elided: self.instructions_elided.clone(),
            summary: self.summary.clone(),
            fallback: self.fallback,
            placed_at: self.placed_at,
        }
    }
}

/// A run's context accounting: the window, the calibrated estimator, the server's count
/// of the last request.
pub struct SessionContext {
    store: Arc<Store>,
    session_id: i64,
    task_id: i64,
    workspace: String,
    model: String,
    /// See [`ModelFacts::counted`].
    counted: bool,
    /// Whether to ask the server for its count of each request (see [`Self::count`]);
    /// cleared when a count fails, so a server that stops answering is asked once.
    counts_prompts: AtomicBool,
    cache_key: String,
    template: Option<TemplateFamily>,
    state: Mutex<State>,
    /// The run's conversation, kept as entries are committed (see [`Conversation`]).
    conversation: Mutex<Conversation>,
}

impl SessionContext {
    /// The token estimator this session calibrated, and whether its prompt is the lean one.
    pub fn estimator_and_lean(&self) -> (Estimator, bool) {
        let s = lock(&self.state);
        (s.estimator.clone(), s.lean)
    }

    /// The context of a run with `provider`, keeping `conversation` (the session as the
    /// run found it) from now on; `None` for a provider that neither declares a window nor
    /// has a server to ask for one (a script written before budgets): its requests are
    /// sent as they are.
    pub async fn for_run(
        store: Arc<Store>,
        conversation: Conversation,
        task_id: i64,
        workspace: &str,
        provider: &dyn Provider,
    ) -> Result<Option<Arc<Self>>, StoreError> {
        if provider.window().is_none() && provider.server().is_none() {
            return Ok(None);
        }
        let facts = facts_of(provider).await;
        let ctx = Self::with_facts(store, conversation, task_id, workspace, facts)?;
        Ok(Some(Arc::new(ctx)))
    }

    /// The context of a session's task whose stored provider spec is `spec`, outside a run.
    pub async fn open(
        store: Arc<Store>,
        session_id: i64,
        task_id: i64,
        workspace: &str,
        spec: Option<&str>,
        settings: &ProviderSettings,
    ) -> Result<Self, StoreError> {
        let facts = model_facts(spec, settings).await;
        let conversation = store.read(|c| Conversation::open(c, session_id))?;
        Self::with_facts(store, conversation, task_id, workspace, facts)
    }

    fn with_facts(
        store: Arc<Store>,
        conversation: Conversation,
        task_id: i64,
        workspace: &str,
        facts: ModelFacts,
    ) -> Result<Self, StoreError> {
        let session_id = conversation.session_id();
        let (stored, lean): (Option<Calibration>, bool) = store.read(|c| {
            Ok((
                settings::get(c, &calibration_key(&facts.model))?,
                is_lean(c, facts.window.tokens)?,
            ))
        })?;
        let mut estimator = Estimator::for_model(&facts.model);
        if let Some(c) = stored {
            estimator = estimator.with_calibration(c);
        }
        // The person's messages the session's last compaction elided stay elided in this
        // task's first request too: a new task must not restore them only to compact again.
        let last = store.read(|c| {
            crate::store::events::last_in_session(
                c,
                session_id,
                pocketpilot_protocol::EventKind::ContextCompacted,
            )
        })?;
        let instructions_elided = match last.map(|e| e.event) {
            Some(RuntimeEvent::ContextCompacted {
                instructions_elided,
                ..
            }) => instructions_elided,
            _ => Vec::new(),
        };
        Ok(Self {
            store,
            session_id,
            task_id,
            workspace: workspace.to_owned(),
            model: facts.model,
            counted: facts.counted,
            counts_prompts: AtomicBool::new(facts.counts_prompts),
            cache_key: facts.cache_key,
            template: facts.template,
            state: Mutex::new(State {
                window: facts.window,
                lean,
                output_reserve: facts.output_reserve,
                estimator,
                anchor: None,
                last_elided: Vec::new(),
                instructions_elided,
                tool_kinds: ToolKinds::of(&pocketpilot_tools::Registry::builtin()),
            }),
            conversation: Mutex::new(conversation),
        })
    }

    pub fn window(&self) -> Window {
        lock(&self.state).window
    }

    /// The view of the next request: the kept conversation, caught up with what was
    /// committed since the last request (only that is read).
    fn view(
        &self,
        window: u32,
        est: &Estimator,
        kinds: &ToolKinds,
    ) -> Result<View, ContextFailure> {
        let task = Some(self.task_id);
        let (view, differs) = self.store.read(|c| {
            let mut conversation = lock(&self.conversation);
            conversation.catch_up(c)?;
            let view = kept_view(c, &conversation, task, &self.workspace, window, est, kinds)?;
            drop(conversation);
            let differs = match checks::on() {
                true => checks::compare(c, self, (window, est, kinds), &view)?,
                false => None,
            };
            Ok((view, differs))
        })?;
        match differs {
            Some(said) => Err(ContextFailure::Differs(said)),
            None => Ok(view),
        }
    }

    /// The family of the chat template the model server named, when it named one.
    pub fn template_family(&self) -> Option<TemplateFamily> {
        self.template
    }

    /// The request for the next model turn: the view, compacted when it would not fit.
    /// `extra_margin` tightens the budget after a refusal; `force_below`, when given,
    /// makes the limit at most that many tokens (a compaction the person asked for).
    pub async fn prepare(
        &self,
        provider: &dyn Provider,
        tools: &[ToolSpec],
        extra_margin: u32,
        force_below: Option<u32>,
        cause: CompactionCause,
        sink: &dyn EventSink,
    ) -> Result<Prepared, ContextFailure> {
        let last = lock(&self.state).clone();
        let (window, est) = (last.window, &last.estimator);
        let mut view = self.view(window.tokens, est, &last.tool_kinds)?;
        let budget = budget_for(
            window.tokens,
            last.output_reserve,
            est,
            extra_margin,
            force_below,
        );
        let anchor = last
            .anchor
            .filter(|_| extra_margin == 0 && force_below.is_none());
        let before: Vec<u64> = last
            .instructions_elided
            .iter()
            .map(|id| *id as u64)
            .collect();
        // A compaction aimed below a target (the person's "Compact now") wants a summary.
        let mut options = PlanOptions {
            summary_required: force_below.is_some(),
            ..PlanOptions::default()
        };
        let mut replan = |cut: u32| {
            options.summary_room_cut = cut;
            plan_view(
                &mut view,
                tools,
                &budget,
                est,
                anchor.as_ref(),
                &before,
                &options,
            )
        };
        let plan = replan(0)?;
        if plan.is_noop() {
            let done = plan.finish(None, est);
            self.remember_elided(Vec::new(), Vec::new());
            return Ok(Prepared {
                messages: done.messages,
                estimate: plan.estimate,
                budget,
                window,
                compacted: false,
            });
        }
        let (plan, summary) = self.summary_that_fits(provider, est, plan, replan).await?;
        let tokens_before = est.request(&view.messages(), tools, None).tokens;
        let done = plan.finish(summary.as_deref(), est);
        let compaction = Compaction::of(&plan, done.summary.as_ref(), &view.places);
        if compaction.worth_reporting(&last, cause) {
            let event = compaction.event(cause, tokens_before, done.estimate, window);
            sink.emit(event).map_err(ContextFailure::Record)?;
        }
        self.remember_elided(compaction.elided, compaction.instructions_elided);
        Ok(Prepared {
            messages: done.messages,
            estimate: done.estimate,
            budget,
            window,
            compacted: true,
        })
    }

    /// What the last request elided, for the next to compare with.
    fn remember_elided(&self, elided: Vec<i64>, instructions_elided: Vec<i64>) {
        let mut s = lock(&self.state);
        s.last_elided = elided;
        s.instructions_elided = instructions_elided;
    }

    /// After an answer: the server's count calibrates the estimator and anchors the next
    /// estimate; the figures are kept per request.
    pub(crate) fn observe(
        &self,
        p: &Prepared,
        tools: &[ToolSpec],
        response: Option<&ModelResponse>,
    ) {
        let prompt_tokens = response.and_then(|r| r.usage).map(|u| u.prompt_tokens);
        let calibration = {
            let mut s = lock(&self.state);
            // A provider with no server makes its usage up (the scripted one: a rough
            // four characters a token, tools left out): not a count to calibrate or anchor on.
            let counted = prompt_tokens.filter(|n| *n > 0 && self.counted);
            match counted {
                Some(n) => {
                    let e = s.estimator.request(&p.messages, tools, s.anchor.as_ref());
                    s.estimator.calibrate(n, &e);
                    s.anchor = Some(Anchor::new(&p.messages, tools, n));
                    Some(s.estimator.calibration())
                }
                None => {
                    s.anchor = None;
                    None
                }
            }
        };
        let row = NewContextTurn {
            session_id: self.session_id,
            task_id: self.task_id,
            window: p.window.tokens,
            window_source: p.window.source,
            budget: p.budget.limit(),
            estimate: p.estimate,
            prompt_tokens: prompt_tokens.map(|n| n.min(u64::from(u32::MAX)) as u32),
            messages: p.messages.len() as u32,
        };
        let key = calibration_key(&self.model);
        let written = self.store.write(|tx| {
            compactions::record_turn(tx, &row)?;
            if let Some(c) = &calibration {
                settings::set(tx, &key, c)?;
            }
            Ok(())
        });
        if let Err(e) = written {
            // The figures are for the meter and the benchmarks; the run goes on.
            tracing::warn!(error = %e, "the request's token figures could not be kept");
        }
    }

    /// The server's own count of a prepared request, where it counts (llama.cpp), before
    /// it is sent. Like an answer's usage, the count calibrates the estimator and anchors
    /// the next plan: a request found too large is planned again from the exact figure.
    /// A server that does not count is not asked again (the estimate stands); one that did
    /// not answer in time (busy) is asked again for the next request.
    pub(crate) async fn count(
        &self,
        provider: &dyn Provider,
        p: &Prepared,
        tools: &[ToolSpec],
    ) -> Result<u32, Uncounted> {
        let n = self.count_messages(provider, &p.messages, tools).await?;
        let mut s = lock(&self.state);
        let e = s.estimator.request(&p.messages, tools, s.anchor.as_ref());
        s.estimator.calibrate(u64::from(n), &e);
        s.anchor = Some(Anchor::new(&p.messages, tools, u64::from(n)));
        Ok(n)
    }

    /// The server's count of any request's prompt (see [`Self::count`]), without learning
    /// from it.
    async fn count_messages(
        &self,
        provider: &dyn Provider,
        messages: &[Message],
        tools: &[ToolSpec],
    ) -> Result<u32, Uncounted> {
        if !self.counts_prompts.load(Ordering::Relaxed) {
            return Err(Uncounted::NotCounted);
        }
        let config = provider.server().ok_or(Uncounted::NotCounted)?;
        match pocketpilot_model::openai::count_prompt(config, messages, tools).await {
            Ok(n) => Ok(n),
            Err(Uncounted::NotCounted) => {
                self.counts_prompts.store(false, Ordering::Relaxed);
                tracing::debug!("the server did not count the request: estimates stand");
                Err(Uncounted::NotCounted)
            }
            Err(Uncounted::NoAnswer) => {
                tracing::info!("the server did not count the request in time");
                Err(Uncounted::NoAnswer)
            }
        }
    }

    /// The plan whose summary request the server takes, and the summary. The summary
    /// request is estimated whole, with no earlier count to anchor it, so where the
    /// server counts it is counted before it is sent. One over the window is fitted
    /// again to the room scaled by how far the estimate was off; one that still does not
    /// fit, or that the server did not count in time twice, gives way to the fixed marker
    /// rather than be refused.
    async fn summary_that_fits(
        &self,
        provider: &dyn Provider,
        est: &Estimator,
        mut plan: Plan,
        mut replan: impl FnMut(u32) -> Result<Plan, ContextFailure>,
    ) -> Result<(Plan, Option<String>), ContextFailure> {
        let mut cut = 0u32;
        for _ in 0..=MAX_SUMMARY_REFITS {
            let Some(r) = plan.summary_request() else {
                return Ok((plan, None));
            };
            let room = plan.budget.window.saturating_sub(r.max_tokens);
            let estimate = est.fixed() + r.messages.iter().map(|m| est.message(m)).sum::<u32>();
            // What the request should be estimated at to fit, when it does not.
            let fit_to = match self.count_messages(provider, &r.messages, &[]).await {
                Err(Uncounted::NotCounted) => None,
                Ok(n) if n <= room => None,
                Ok(n) => {
                    tracing::info!(
                        counted = n,
                        room,
                        estimate,
                        "the summary request is over the window: fitting it again"
                    );
                    let scaled = f64::from(room - room / 20) * f64::from(estimate) / f64::from(n);
                    Some(scaled as u32)
                }
                // Busy: a tenth of the room spare, as the request itself gets.
                Err(Uncounted::NoAnswer) => Some(estimate.saturating_sub(room / 10)),
            };
            let Some(fit_to) = fit_to else {
                let summary = summarise(provider, &plan).await;
                return Ok((plan, summary));
            };
            let fitted_to = room.saturating_sub(plan.budget.margin);
            cut = fitted_to.saturating_sub(fit_to).max(cut.saturating_add(1));
            plan = replan(cut)?;
        }
        tracing::info!("the summary request does not fit the window: the marker instead");
        Ok((plan, None))
    }

    /// A refusal for length: adopt the server's window when smaller, forget the anchor,
    /// and say how much more margin the next plan needs.
    pub(crate) fn refused(
        &self,
        requested: Option<u32>,
        server_window: Option<u32>,
        budget: &Budget,
    ) -> u32 {
        let mut s = lock(&self.state);
        s.anchor = None;
        if let Some(w) = server_window.filter(|w| *w > 0 && *w < s.window.tokens) {
            s.window = Window {
                tokens: w,
                source: WindowOrigin::Discovered,
            };
            s.output_reserve = s.output_reserve.min(default_reserve(w).max(1));
            if !self.cache_key.is_empty() {
                lock(windows()).insert(self.cache_key.clone(), s.window);
            }
        }
        let limit = budget.limit();
        match requested {
            Some(r) => r.saturating_sub(limit) + limit / 10,
            None => s.window.tokens / 4,
        }
    }
}

#[cfg(test)]
#[path = "context_tests.rs"]
mod tests;

/// The kept view checked against a fresh read of the store ([`rebuilt_view`]) at every
/// request: off unless the environment sets [`VERIFY_ENV`] (the end-to-end tests of a
/// crashed and resumed binary) or a test turns it on ([`checks::compare_every_request`]).
/// A difference fails the request, so no test passes over one.
pub const VERIFY_ENV: &str = "POCKETPILOT_VERIFY_VIEW";

pub mod checks {
    use super::*;

    /// What the comparisons found in one session.
    #[derive(Debug, Default, Clone)]
    pub struct Found {
        pub compared: u64,
        pub differing: Vec<String>,
    }

    fn switch() -> &'static AtomicBool {
        static ON: OnceLock<AtomicBool> = OnceLock::new();
        ON.get_or_init(|| AtomicBool::new(std::env::var_os(VERIFY_ENV).is_some()))
    }

    /// From now on, in this process, every request's view is compared (see [`VERIFY_ENV`]).
    pub fn compare_every_request() {
        switch().store(true, Ordering::SeqCst);
    }

    pub(super) fn on() -> bool {
        switch().load(Ordering::Relaxed)
    }

    /// By store file and session.
    type Sessions = HashMap<(std::path::PathBuf, i64), Found>;

    fn all() -> &'static Mutex<Sessions> {
        static F: OnceLock<Mutex<Sessions>> = OnceLock::new();
        F.get_or_init(Default::default)
    }

    /// What was compared in the requests of `session_id` of the store at `store` so far.
    pub fn found(store: &std::path::Path, session_id: i64) -> Found {
        let key = (store.to_owned(), session_id);
        lock(all()).get(&key).cloned().unwrap_or_default()
    }

    /// Compares `kept` with a fresh read; the difference, if any, as a sentence.
    pub(super) fn compare(
        c: &Connection,
        ctx: &SessionContext,
        (window, est, kinds): (u32, &Estimator, &ToolKinds),
        kept: &View,
    ) -> Result<Option<String>, StoreError> {
        let (session, task) = (ctx.session_id, Some(ctx.task_id));
        let fresh = rebuilt_with_kinds(c, session, task, &ctx.workspace, window, est, kinds)?;
        let mut all = lock(all());
        let f = all
            .entry((ctx.store.path().to_owned(), session))
            .or_default();
        f.compared += 1;
        if &fresh == kept {
            return Ok(None);
        }
        let said = format!(
            "request {} of session {session}: the kept view differs from the store's\nkept  {:?}\nfresh {:?}",
            f.compared, kept.items, fresh.items
        );
        tracing::error!("{said}");
        f.differing.push(said.clone());
        Ok(Some(said))
    }
}
