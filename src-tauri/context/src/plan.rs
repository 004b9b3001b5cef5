//! The compaction planner: a pure function from the model's view, the budget and the
//! estimator to a plan that fits.
//!
//! Order of compaction, cheapest and least lossy first:
//! 1. **Old tool results** (not in the last turns), oldest first, cut to their head and
//!    tail around a marker that says how much was cut and how to see it again; in tiers
//!    (512 tokens kept, then 128, then the marker alone) until the view fits.
//! 2. **Older turns summarised**: a prefix of the turns before the last ones is replaced
//!    by a summary the model writes (the plan carries that request); earlier summaries
//!    are folded into the new one.
//! 3. **Deterministic fallback** when the summary fails or its request would itself not
//!    fit: those turns become one fixed marker listing what was dropped.
//! 4. **When what is always kept does not fit** (system rules, workspace instructions,
//!    the person's messages, the goal, the last turns): tool results of the last turns
//!    are capped to half the budget each, then the oldest person instructions (never the
//!    goal) are replaced by a visible marker, oldest first, then the last turns' tool
//!    results are capped further. The plan lists every such step.
//!
//! Once compaction is needed, it aims below a target under the limit (70% by default) so
//! the next turns do not compact again at once (each compaction changes the prefix and
//! costs the server its prompt cache).
//!
//! A plan whose estimate exceeds the budget is never returned: [`ContextError`] says
//! what did not fit.
use pocketpilot_model::{Message, ToolSpec};
use serde::{Deserialize, Serialize};

use crate::cap::{cap_counted, cap_with};
use crate::estimate::{Anchor, Estimator};
use crate::view::{
    how_to_get_back, shorten, summarize_args, summary_text, thousands, Item, ItemId, ItemKind,
};

/// The room a request has: the window, less the answer's room and the estimate's
/// safety margin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    pub window: u32,
    /// Tokens kept for the answer: the request's `max_tokens`.
    pub output_reserve: u32,
    /// Tokens kept for the estimate's error.
    pub margin: u32,
}

/// The least an answer is given room for by default: a short answer, or one tool call
/// with short arguments.
pub const MIN_RESERVE: u32 = 256;

impl Budget {
    /// The answer's room (the request's `max_tokens`) when the person set none: an eighth
    /// of a large window (at most 4,096) and less in a small one, where every token kept
    /// for the answer is one the person's words cannot use: `window² / 131,072`, so 256
    /// at 4k ([`MIN_RESERVE`], the floor), 512 at 8k, 2,048 at 16k, 4,096 from 32k. Never
    /// more than half the window.
    pub fn default_reserve(window: u32) -> u32 {
        let scaled = (u64::from(window) * u64::from(window) / (8 * 16_384)) as u32;
        let wanted = scaled.min(window / 8).min(4096);
        wanted.max(MIN_RESERVE.min(window / 2))
    }

    /// The margin is the estimator's [`Estimator::margin_fraction`] of what is left
    /// after the answer's room, and at least 16 tokens.
    pub fn new(window: u32, output_reserve: u32, estimator: &Estimator) -> Self {
        let room = window.saturating_sub(output_reserve);
        let margin = ((f64::from(room) * estimator.margin_fraction()).ceil() as u32).max(16);
        Self {
            window,
            output_reserve,
            margin,
        }
    }

    /// The most prompt tokens a request may be estimated at.
    pub fn limit(&self) -> u32 {
        self.window
            .saturating_sub(self.output_reserve)
            .saturating_sub(self.margin)
    }
}

/// Knobs of the planner; the defaults suit windows from 2k to 1M tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PlanOptions {
    /// How many of the last turns (an assistant message with the results of its tool
    /// calls) are kept verbatim.
    pub keep_last_turns: usize,
    /// Once compacting, the share of the limit to aim for.
    pub target_fraction: f64,
    /// The longest summary asked for (the summary request's `max_tokens`); `None`: an
    /// eighth of the limit, at most 2,048.
    pub summary_max_tokens: Option<u32>,
    /// A compaction the person asked for wants a summary: when only the fixed marker
    /// would bring the view under the limit, the plan is refused instead, so that the
    /// caller can aim at a higher target.
    pub summary_required: bool,
}

impl Default for PlanOptions {
    fn default() -> Self {
        Self {
            keep_last_turns: 2,
            target_fraction: 0.7,
            summary_max_tokens: None,
            summary_required: false,
        }
    }
}

/// Tokens kept of an old tool result, tier by tier.
const ELIDE_TIERS: [u32; 3] = [512, 128, 0];
/// An old person instruction elided keeps this many characters of its start.
const INSTRUCTION_EXCERPT: usize = 160;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum ContextError {
    /// Even with everything cut that may be cut, the request would not fit.
    #[error("the request cannot fit the model's context window: at least {needed} prompt tokens are needed and {limit} are available (window {window}, {reserve} kept for the answer){}", what.as_deref().map(|w| format!("; {w}")).unwrap_or_default())]
    NothingFits {
        needed: u32,
        limit: u32,
        window: u32,
        reserve: u32,
        /// What alone is too large, when one thing is (the goal, the rules).
        what: Option<String>,
    },
    /// The person's current message, beside what every request carries (the system text,
    /// the workspace's instructions, the tools), does not fit however much else is cut.
    /// Said in the person's terms: how much to cut, in tokens and about as many words.
    #[error("Your message is about {tokens} tokens; this model's window leaves room for {room}. Shorten it by about {cut} tokens (~{words} words).")]
    GoalTooLong {
        tokens: u32,
        room: u32,
        cut: u32,
        words: u32,
    },
}

/// What happened to one item of the view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "action")]
pub enum Action {
    Keep,
    /// An old tool result cut to head and tail (or to the marker alone).
    Elided {
        cut_bytes: usize,
    },
    /// A tool result of the last turns capped because the kept items did not fit.
    Capped {
        cut_bytes: usize,
    },
    /// A person instruction replaced by a marker: the last resort.
    InstructionElided {
        bytes: usize,
    },
    /// Part of the turns the summary (or its fallback marker) replaces.
    Summarized,
}

/// One step the planner took, for the run's events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "step")]
pub enum Step {
    ToolResultsElided {
        count: usize,
        bytes: usize,
    },
    TurnsToSummarize {
        items: usize,
    },
    /// The summary request would not fit the window: the fallback marker is used.
    SummaryWouldOverflow,
    RecentToolResultsCapped {
        count: usize,
        bytes: usize,
    },
    InstructionsElided {
        ids: Vec<ItemId>,
    },
}

/// The request the runtime sends to have older turns summarised: no tools, `max_tokens`
/// as given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryRequest {
    pub messages: Vec<Message>,
    pub max_tokens: u32,
    /// The items the summary replaces, in order.
    pub covers: Vec<ItemId>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedItem {
    pub id: ItemId,
    pub kind: ItemKind,
    pub action: Action,
    /// The message as it will be sent (the original, or its elided form).
    pub message: Message,
    tokens: u32,
    /// The count of the original text (capping starts from it, tier after tier).
    original: u32,
    /// Elided into the marker of an earlier item: not sent.
    #[serde(default)]
    merged: bool,
}

/// What the planner decided. Without a summary to make, [`Plan::finish`] with `None`
/// gives the request; with one, the runtime sends [`Plan::summary_request`] and passes
/// the answer's text (or `None` when it failed) to [`Plan::finish`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub budget: Budget,
    /// The estimate of the planned request (with the summary at its longest).
    pub estimate: u32,
    pub items: Vec<PlannedItem>,
    pub steps: Vec<Step>,
    summary: Option<SummaryRequest>,
    /// Where the summary goes: before the item at this position in `items`.
    summary_at: usize,
    /// The marker replacing the summarised turns when there is no summary.
    fallback: Option<String>,
    summary_max_tokens: u32,
    fixed_tokens: u32,
}

/// The request to send, and what the runtime should keep of the compaction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Compacted {
    pub messages: Vec<Message>,
    pub estimate: u32,
    /// The summary (or fallback marker) that now stands for `replaces`: the runtime
    /// stores it as a `Summary` item so the next view carries it instead of the turns.
    pub summary: Option<NewSummary>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewSummary {
    pub text: String,
    pub replaces: Vec<ItemId>,
    /// The deterministic marker, not a model-written summary.
    pub fallback: bool,
}

impl Plan {
    /// Whether the plan changes the view at all.
    pub fn is_noop(&self) -> bool {
        self.steps.is_empty()
    }

    /// The summary to ask the model for, when the plan needs one.
    pub fn summary_request(&self) -> Option<&SummaryRequest> {
        self.summary.as_ref()
    }

    /// The request: with the model's summary (capped to the length planned for), or —
    /// `None`, or a summary that cannot be made to fit — the fallback marker.
    pub fn finish(&self, summary: Option<&str>, estimator: &Estimator) -> Compacted {
        let covers: Vec<ItemId> = self
            .items
            .iter()
            .filter(|i| i.action == Action::Summarized)
            .map(|i| i.id)
            .collect();
        let written = summary
            .map(str::trim)
            .filter(|s| !s.is_empty() && self.summary.is_some())
            .map(|s| {
                cap_with(
                    s,
                    self.summary_max_tokens.saturating_sub(2),
                    estimator,
                    |cut| format!("[… {} bytes of the summary cut …]", thousands(cut)),
                )
                .text
            });
        let stand_in = match (&written, &self.fallback) {
            (Some(text), _) => Some((summary_text(text), text.clone(), false)),
            (None, Some(marker)) => Some((marker.clone(), marker.clone(), true)),
            (None, None) => None,
        };
        let mut messages = Vec::with_capacity(self.items.len() + 1);
        for (i, item) in self.items.iter().enumerate() {
            if i == self.summary_at {
                if let Some((shown, _, _)) = &stand_in {
                    messages.push(Message::assistant(shown.clone(), vec![]));
                }
            }
            if item.action != Action::Summarized && !item.merged {
                messages.push(item.message.clone());
            }
        }
        if self.summary_at >= self.items.len() {
            if let Some((shown, _, _)) = &stand_in {
                messages.push(Message::assistant(shown.clone(), vec![]));
            }
        }
        // The items' counts are the plan's; only the stand-in is counted anew.
        let estimate = self.fixed_tokens
            + self
                .items
                .iter()
                .filter(|i| i.action != Action::Summarized)
                .map(|i| i.tokens)
                .sum::<u32>()
            + stand_in.as_ref().map_or(0, |(shown, _, _)| {
                estimator.message(&Message::assistant(shown.clone(), vec![]))
            });
        Compacted {
            messages,
            estimate,
            summary: stand_in.map(|(_, text, fallback)| NewSummary {
                text,
                replaces: covers,
                fallback,
            }),
        }
    }
}

/// Plans the next request of a session so that it fits `budget`.
///
/// `anchor`, when given and still covering the view's messages, lets the server's own
/// count of the last request decide whether compaction is needed at all.
pub fn plan_compaction(
    view: &[Item],
    tools: &[ToolSpec],
    budget: &Budget,
    estimator: &Estimator,
    options: &PlanOptions,
    anchor: Option<&Anchor>,
) -> Result<Plan, ContextError> {
    plan_compaction_after(view, tools, budget, estimator, options, anchor, &[])
}

/// [`plan_compaction`] for the next request of a conversation whose last plan elided the
/// person's instructions `elided_before`: those stay elided while the rest fits under the
/// limit, and when more must go, enough go to reach the target. The view's prefix then
/// changes once every several turns, not on each (the server's prompt cache holds).
pub fn plan_compaction_after(
    view: &[Item],
    tools: &[ToolSpec],
    budget: &Budget,
    estimator: &Estimator,
    options: &PlanOptions,
    anchor: Option<&Anchor>,
    elided_before: &[ItemId],
) -> Result<Plan, ContextError> {
    let planned = plan_keeping(
        view,
        tools,
        budget,
        estimator,
        options,
        anchor,
        elided_before,
    );
    match planned {
        // Long turns in a small window: the last turns kept verbatim can outgrow it (two
        // of 650 tokens beside 1,600 of tool definitions in 4,096). The turn before the
        // last is then summarised too; only the very last one stays whatever happens.
        Err(ContextError::NothingFits { .. }) if options.keep_last_turns > 1 => {
            let fewer = PlanOptions {
                keep_last_turns: 1,
                ..*options
            };
            plan_compaction_after(
                view,
                tools,
                budget,
                estimator,
                &fewer,
                anchor,
                elided_before,
            )
        }
        // The last turn itself is too long beside the goal (a long answer to the person's
        // previous message, in a small window): it is summarised too rather than refuse a
        // goal that fits on its own.
        Err(ContextError::NothingFits { .. }) if options.keep_last_turns == 1 => {
            let none = PlanOptions {
                keep_last_turns: 0,
                ..*options
            };
            plan_keeping(view, tools, budget, estimator, &none, anchor, elided_before)
        }
        planned => planned,
    }
}

fn plan_keeping(
    view: &[Item],
    tools: &[ToolSpec],
    budget: &Budget,
    estimator: &Estimator,
    options: &PlanOptions,
    anchor: Option<&Anchor>,
    elided_before: &[ItemId],
) -> Result<Plan, ContextError> {
    let limit = budget.limit();
    let fixed_tokens = estimator.tools(tools) + estimator.fixed();
    let nothing_fits = |needed: u32, what: Option<String>| ContextError::NothingFits {
        needed,
        limit,
        window: budget.window,
        reserve: budget.output_reserve,
        what,
    };
    if fixed_tokens >= limit {
        return Err(nothing_fits(
            fixed_tokens,
            Some(format!(
                "the tool definitions alone take {fixed_tokens} tokens"
            )),
        ));
    }
    let summary_max_tokens = options
        .summary_max_tokens
        .unwrap_or_else(|| (limit / 8).clamp(64, 2048))
        .min(limit / 2);
    let mut items: Vec<PlannedItem> = view
        .iter()
        .map(|item| PlannedItem {
            id: item.id,
            kind: item.kind.clone(),
            action: Action::Keep,
            tokens: estimator.message(&item.message),
            original: match item.kind {
                ItemKind::ToolResult { .. } => estimator.text(item.text()),
                _ => 0,
            },
            message: item.message.clone(),
            merged: false,
        })
        .collect();
    let mut plan = Plan {
        budget: *budget,
        estimate: 0,
        items: Vec::new(),
        steps: Vec::new(),
        summary: None,
        summary_at: usize::MAX,
        fallback: None,
        summary_max_tokens,
        fixed_tokens,
    };
    let sum = |items: &[PlannedItem]| -> u32 {
        items
            .iter()
            .filter(|i| i.action != Action::Summarized)
            .map(|i| i.tokens)
            .sum::<u32>()
    };
    let total = fixed_tokens + sum(&items);
    let anchored = anchor.map(|a| {
        let messages: Vec<Message> = view.iter().map(|i| i.message.clone()).collect();
        estimator.request(&messages, tools, Some(a))
    });
    let target = ((f64::from(limit) * options.target_fraction.clamp(0.1, 1.0)) as u32).max(1);
    // The person's messages elided last time, elided again: when that is enough, the
    // request's prefix is the one the server saw last (its prompt cache holds), and
    // nothing else changes. They come back verbatim once everything fits under the
    // target again (after a fresh context, or when a summary made the room).
    let raw = match anchored {
        Some(e) if e.anchored.is_some() => e.tokens,
        _ => total,
    };
    if !elided_before.is_empty() && raw > target {
        let mut again = items.clone();
        let mut t = total;
        let ids = elide_instructions(
            &mut again,
            view,
            elided_before,
            &mut t,
            More::None,
            estimator,
        );
        if !ids.is_empty() && t <= limit {
            plan.steps.push(Step::InstructionsElided { ids });
            plan.estimate = t;
            plan.items = again;
            return Ok(plan);
        }
    }
    let fits_as_is = match anchored {
        Some(e) if e.anchored.is_some() => e.tokens <= limit,
        _ => total <= limit,
    };
    if fits_as_is {
        plan.estimate = match anchored {
            Some(e) if e.anchored.is_some() => e.tokens,
            _ => total,
        };
        plan.items = items;
        return Ok(plan);
    }

    // Turns: an assistant message and the tool results after it; a summary alone.
    let turns = turns_of(&items);
    let recent_from = turns.len().saturating_sub(options.keep_last_turns);
    let recent: Vec<usize> = turns[recent_from..]
        .iter()
        .flat_map(|t| t.clone())
        .collect();
    let is_recent = |i: usize| recent.contains(&i);

    // 1. Old tool results, oldest first, tier by tier.
    let mut total = total;
    let mut elided = 0usize;
    'tiers: for keep in ELIDE_TIERS {
        for i in 0..items.len() {
            if total <= target {
                break 'tiers;
            }
            if is_recent(i) {
                continue;
            }
            let ItemKind::ToolResult {
                name, args_summary, ..
            } = &items[i].kind
            else {
                continue;
            };
            if items[i].tokens <= keep + 24 {
                continue;
            }
            let original = view[i].text();
            let (name, args) = (name.clone(), args_summary.clone());
            let capped = cap_counted(original, items[i].original, keep, estimator, |cut| {
                elision_marker(cut, &name, &args)
            });
            let before = items[i].tokens;
            let mut message = items[i].message.clone();
            message.content = Some(capped.text);
            let after = estimator.message(&message);
            if after >= before {
                continue;
            }
            if items[i].action == Action::Keep {
                elided += 1;
            }
            items[i].message = message;
            items[i].tokens = after;
            items[i].action = Action::Elided {
                cut_bytes: capped.cut_bytes,
            };
            total = total - before + after;
        }
    }
    if elided > 0 {
        let elided_bytes = items
            .iter()
            .map(|i| match i.action {
                Action::Elided { cut_bytes } => cut_bytes,
                _ => 0,
            })
            .sum();
        plan.steps.push(Step::ToolResultsElided {
            count: elided,
            bytes: elided_bytes,
        });
    }

    // 2. Older turns summarised, when eliding was not enough.
    // What the summary's place costs as planned, and as the fallback marker.
    let mut summary_room: Option<(u32, u32)> = None;
    if total > limit && recent_from > 0 {
        let header_cost = estimator.message(&Message::assistant(summary_text(""), vec![]));
        let summary_cost = header_cost + summary_max_tokens;
        // The shortest prefix of old turns that reaches the target; all of them if none
        // does (one summary either way, and the next turns get the room).
        let mut chosen = recent_from;
        let mut saved = 0u32;
        for (k, turn) in turns[..recent_from].iter().enumerate() {
            saved += turn.clone().map(|i| items[i].tokens).sum::<u32>();
            if (total + summary_cost).saturating_sub(saved) <= target {
                chosen = k + 1;
                break;
            }
        }
        let covered: Vec<usize> = turns[..chosen].iter().flat_map(|t| t.clone()).collect();
        let covered_tokens: u32 = covered.iter().map(|&i| items[i].tokens).sum();
        let fallback = fallback_marker(&covered.iter().map(|&i| &view[i]).collect::<Vec<_>>());
        let fallback_tokens = estimator.message(&Message::assistant(fallback.clone(), vec![]));
        if covered_tokens > fallback_tokens {
            for &i in &covered {
                items[i].action = Action::Summarized;
            }
            plan.summary_at = covered.last().map_or(0, |&last| last + 1);
            plan.steps.push(Step::TurnsToSummarize {
                items: covered.len(),
            });
            plan.fallback = Some(fallback);
            // A summary is worth asking for only when it may be shorter than the turns.
            let max_tokens = summary_max_tokens.min(covered_tokens.saturating_sub(header_cost) / 2);
            let room = budget
                .window
                .saturating_sub(max_tokens)
                .saturating_sub(budget.margin);
            let parts = summary_parts(&items, &covered);
            let omitted = |k: usize| {
                let items: Vec<&Item> = parts[..k].iter().map(|p| &view[p.index]).collect();
                fallback_marker(&items)
                    .replace(
                        "Earlier turns were dropped to fit the model's context window",
                        "Still earlier turns, too long to show here",
                    )
                    .replace(
                        " Their results are no longer here: redo a step if you need its output.",
                        "",
                    )
            };
            let request = (max_tokens >= 32)
                .then(|| fit_summary_request(&parts, room, estimator, omitted))
                .flatten();
            let stand_in = match request {
                Some(messages) => {
                    plan.summary_max_tokens = max_tokens;
                    plan.summary = Some(SummaryRequest {
                        messages,
                        max_tokens,
                        covers: covered.iter().map(|&i| items[i].id).collect(),
                    });
                    (header_cost + max_tokens).max(fallback_tokens)
                }
                None => {
                    plan.steps.push(Step::SummaryWouldOverflow);
                    fallback_tokens
                }
            };
            total = total - covered_tokens + stand_in;
            summary_room = Some((stand_in, fallback_tokens));
        }
    }

    // 3. A summary that cannot reach the target because the person's own messages fill
    //    the room would run again on the next turn, and the one after: the oldest of
    //    those messages go now, down to the target, so the next turns have room.
    if plan.summary_at != usize::MAX && total > target {
        let ids = elide_instructions(
            &mut items,
            view,
            elided_before,
            &mut total,
            More::Until(target),
            estimator,
        );
        if !ids.is_empty() {
            plan.steps.push(Step::InstructionsElided { ids });
        }
    }

    // 4. What is always kept does not fit: recent tool results first, then the oldest
    //    person instructions, then recent tool results again.
    if total > limit {
        let half = limit / 2;
        let capped = cap_recent(
            &mut items, view, &recent, half, &mut total, limit, estimator,
        );
        let mut capped_count = capped.0;
        let mut capped_bytes = capped.1;
        if total > limit {
            let ids = elide_instructions(
                &mut items,
                view,
                elided_before,
                &mut total,
                More::UnlessUnder { limit, target },
                estimator,
            );
            if !ids.is_empty() {
                plan.steps.push(Step::InstructionsElided { ids });
            }
        }
        if total > limit {
            let more = cap_recent(&mut items, view, &recent, 0, &mut total, limit, estimator);
            capped_count += more.0;
            capped_bytes += more.1;
        }
        if capped_count > 0 {
            plan.steps.push(Step::RecentToolResultsCapped {
                count: capped_count,
                bytes: capped_bytes,
            });
        }
    }
    // 5. The room kept for a summary is what is still too much (a small window, where the
    //    summary's own `max_tokens` is a large share): the shorter fixed marker instead.
    if total > limit && plan.summary.is_some() && !options.summary_required {
        if let Some((planned, fallback)) = summary_room {
            if planned > fallback {
                total = total - planned + fallback;
                plan.summary = None;
                plan.steps.push(Step::SummaryWouldOverflow);
            }
        }
    }
    if total > limit {
        if let Some(refusal) = goal_too_long(&items, fixed_tokens, limit) {
            return Err(refusal);
        }
        let biggest = items
            .iter()
            .filter(|i| i.action != Action::Summarized)
            .max_by_key(|i| i.tokens);
        let what = biggest.map(|i| {
            format!(
                "the largest part that must be kept ({}) takes {} tokens",
                kind_label(&i.kind),
                i.tokens
            )
        });
        return Err(nothing_fits(total, what));
    }
    plan.estimate = total;
    plan.items = items;
    Ok(plan)
}

/// The refusal in the person's terms when their current message, with the parts every
/// request carries, is over the limit; `None` when it would fit alone (something else
/// is to blame).
fn goal_too_long(items: &[PlannedItem], fixed_tokens: u32, limit: u32) -> Option<ContextError> {
    let goal = items.iter().find(|i| i.kind == ItemKind::Goal)?;
    let carried: u32 = fixed_tokens
        + items
            .iter()
            .filter(|i| {
                matches!(
                    i.kind,
                    ItemKind::SystemRules | ItemKind::WorkspaceInstructions
                )
            })
            .map(|i| i.tokens)
            .sum::<u32>();
    if carried + goal.tokens <= limit {
        return None;
    }
    let room = limit.saturating_sub(carried);
    let cut = goal.tokens - room;
    Some(ContextError::GoalTooLong {
        tokens: goal.tokens,
        room,
        cut,
        // About three words in four tokens of English prose.
        words: (cut * 3).div_ceil(4),
    })
}

/// How far [`elide_instructions`] goes past the ones elided last time.
#[derive(Clone, Copy)]
enum More {
    /// Those only.
    None,
    /// Nothing more when the rest then fits under `limit`; otherwise down to `target`.
    UnlessUnder { limit: u32, target: u32 },
    /// The oldest, until the total reaches this.
    Until(u32),
}

/// Replaces the oldest person instructions (never the goal) by one marker, standing where
/// the first of them stood: many short messages elided one by one would each leave a
/// marker nearly as long. The ones elided last time go first, all of them; then as many
/// more as `more` says. Returns the ids elided.
fn elide_instructions(
    items: &mut [PlannedItem],
    view: &[Item],
    elided_before: &[ItemId],
    total: &mut u32,
    more: More,
    estimator: &Estimator,
) -> Vec<ItemId> {
    let candidate = |i: usize, items: &[PlannedItem]| {
        items[i].kind == ItemKind::PersonInstruction && items[i].action == Action::Keep
    };
    let again: Vec<usize> = (0..items.len())
        .filter(|&i| elided_before.contains(&items[i].id) && candidate(i, items))
        .collect();
    let base = *total;
    let mut chosen: Vec<usize> = Vec::new();
    let mut cost = 0u32;
    let mut apply = |chosen: &mut Vec<usize>, i: usize, items: &[PlannedItem]| {
        chosen.push(i);
        chosen.sort_unstable();
        let marker =
            instructions_marker(&chosen.iter().map(|&c| view[c].text()).collect::<Vec<_>>());
        let saved: u32 = chosen.iter().map(|&c| items[c].tokens).sum();
        let mut message = items[chosen[0]].message.clone();
        message.content = Some(marker);
        cost = estimator.message(&message);
        (base + cost).saturating_sub(saved)
    };
    let mut now = base;
    for &i in &again {
        now = apply(&mut chosen, i, items);
    }
    let target = match more {
        More::None => None,
        More::UnlessUnder { limit, .. } if !again.is_empty() && now <= limit => None,
        More::UnlessUnder { target, .. } | More::Until(target) => Some(target),
    };
    if let Some(target) = target {
        for i in 0..items.len() {
            if now <= target {
                break;
            }
            // A lone short message can cost more as a marker than it saves; with the
            // next ones in the same marker it does not.
            if candidate(i, items) && !chosen.contains(&i) {
                now = apply(&mut chosen, i, items);
            }
        }
    }
    if chosen.is_empty() || now >= base {
        return Vec::new();
    }
    let marker = instructions_marker(&chosen.iter().map(|&c| view[c].text()).collect::<Vec<_>>());
    for (n, &c) in chosen.iter().enumerate() {
        items[c].action = Action::InstructionElided {
            bytes: view[c].text().len(),
        };
        if n == 0 {
            items[c].message.content = Some(marker.clone());
            items[c].tokens = cost;
        } else {
            items[c].tokens = 0;
            items[c].merged = true;
        }
    }
    *total = now;
    chosen.iter().map(|&c| items[c].id).collect()
}

/// The visible stand-in for the person's elided messages.
fn instructions_marker(texts: &[&str]) -> String {
    let bytes: usize = texts.iter().map(|t| t.len()).sum();
    match texts {
        [one] => format!(
            "[An earlier message from the person ({} bytes) was elided to fit the model's context window. It began: \"{}\"]",
            thousands(bytes),
            shorten(one, INSTRUCTION_EXCERPT)
        ),
        [first, .., last] => format!(
            "[{} earlier messages from the person ({} bytes) were elided to fit the model's context window. The first began: \"{}\" The last began: \"{}\"]",
            texts.len(),
            thousands(bytes),
            shorten(first, INSTRUCTION_EXCERPT / 2),
            shorten(last, INSTRUCTION_EXCERPT / 2)
        ),
        [] => String::new(),
    }
}

/// The tool results of the last turns, biggest first, capped so that each takes at most
/// `cap` tokens (0: as little as it must so the total fits). Returns (count, bytes cut).
fn cap_recent(
    items: &mut [PlannedItem],
    view: &[Item],
    recent: &[usize],
    cap: u32,
    total: &mut u32,
    limit: u32,
    estimator: &Estimator,
) -> (usize, usize) {
    let mut order: Vec<usize> = recent
        .iter()
        .copied()
        .filter(|&i| matches!(items[i].kind, ItemKind::ToolResult { .. }))
        .collect();
    order.sort_by_key(|&i| std::cmp::Reverse(items[i].tokens));
    let mut count = 0;
    let mut bytes = 0;
    for i in order {
        if *total <= limit {
            break;
        }
        let before = items[i].tokens;
        let excess = *total - limit;
        let allowed = if cap > 0 {
            cap
        } else {
            before.saturating_sub(excess)
        };
        if before <= allowed {
            continue;
        }
        let ItemKind::ToolResult {
            name, args_summary, ..
        } = &items[i].kind
        else {
            continue;
        };
        let (name, args) = (name.clone(), args_summary.clone());
        // The structure of the message is not the text's: leave it room.
        let current = if items[i].action == Action::Keep {
            items[i].original
        } else {
            estimator.text(items[i].message.content.as_deref().unwrap_or(""))
        };
        let text_room = allowed.saturating_sub(before.saturating_sub(current));
        let capped = cap_counted(
            view[i].text(),
            items[i].original,
            text_room,
            estimator,
            |cut| elision_marker(cut, &name, &args),
        );
        let mut message = items[i].message.clone();
        message.content = Some(capped.text);
        let after = estimator.message(&message);
        if after >= before {
            continue;
        }
        *total = *total - before + after;
        items[i].tokens = after;
        items[i].message = message;
        let cut = capped.cut_bytes;
        items[i].action = Action::Capped { cut_bytes: cut };
        count += 1;
        bytes += cut;
    }
    (count, bytes)
}

/// Positions of each turn: an assistant message and the tool results right after it; a
/// summary alone; a stray tool result alone. Protected items belong to no turn.
fn turns_of(items: &[PlannedItem]) -> Vec<std::ops::Range<usize>> {
    let mut turns: Vec<std::ops::Range<usize>> = Vec::new();
    let mut open: Option<usize> = None;
    for (i, item) in items.iter().enumerate() {
        match item.kind {
            ItemKind::AssistantTurn => {
                if let Some(start) = open.take() {
                    turns.push(start..i);
                }
                open = Some(i);
            }
            ItemKind::ToolResult { .. } => {
                if open.is_none() {
                    open = Some(i);
                }
            }
            ItemKind::Summary => {
                if let Some(start) = open.take() {
                    turns.push(start..i);
                }
                turns.push(i..i + 1);
            }
            _ => {
                if let Some(start) = open.take() {
                    turns.push(start..i);
                }
            }
        }
    }
    if let Some(start) = open {
        turns.push(start..items.len());
    }
    turns
}

fn elision_marker(cut: usize, tool: &str, args: &str) -> String {
    let call = if args.is_empty() {
        tool.to_owned()
    } else {
        format!("{tool}({args})")
    };
    format!(
        "[… {} bytes of this {call} output elided to fit the context window; {}]",
        thousands(cut),
        how_to_get_back(tool)
    )
}

/// The marker standing for summarised turns when no summary could be made: what was
/// there, counted and named, so the model knows to redo a step rather than assume.
fn fallback_marker(items: &[&Item]) -> String {
    let mut turns = 0usize;
    let mut calls: Vec<(String, usize, Vec<String>)> = Vec::new();
    let mut summaries = 0usize;
    for item in items {
        match &item.kind {
            ItemKind::AssistantTurn => turns += 1,
            ItemKind::Summary => summaries += 1,
            ItemKind::ToolResult {
                name, args_summary, ..
            } => match calls.iter_mut().find(|(n, _, _)| n == name) {
                Some((_, count, args)) => {
                    *count += 1;
                    if args.len() < 3 {
                        args.push(shorten(args_summary, 40));
                    }
                }
                None => calls.push((name.clone(), 1, vec![shorten(args_summary, 40)])),
            },
            _ => {}
        }
    }
    let mut text = format!(
        "[Earlier turns were dropped to fit the model's context window: {turns} assistant turn{}",
        if turns == 1 { "" } else { "s" }
    );
    if summaries > 0 {
        text.push_str(&format!(
            ", {summaries} earlier summar{}",
            if summaries == 1 { "y" } else { "ies" }
        ));
    }
    if !calls.is_empty() {
        text.push_str("; tool calls: ");
        let listed: Vec<String> = calls
            .iter()
            .take(8)
            .map(|(name, count, args)| {
                let args: Vec<&String> = args.iter().filter(|a| !a.is_empty()).collect();
                if args.is_empty() {
                    format!("{name} ×{count}")
                } else {
                    let shown: Vec<&str> = args.iter().map(|a| a.as_str()).collect();
                    format!("{name} ×{count} ({})", shown.join("; "))
                }
            })
            .collect();
        text.push_str(&listed.join(", "));
        if calls.len() > 8 {
            text.push_str(&format!(", and {} more tools", calls.len() - 8));
        }
    }
    text.push_str(". Their results are no longer here: redo a step if you need its output.]");
    text
}

const SUMMARY_PROMPT: &str = "You are compacting the history of a session between a person and a coding agent, so the agent can continue within its context window. Write a concise summary of the earlier turns below for the agent itself: what was done (files read or changed, commands run and what they showed), what was learnt, decisions made, and what remains open. Keep exact file paths, names and numbers. Do not restate the person's messages (they are kept verbatim) and do not add anything that is not in the turns. Answer with the summary only.";

/// One item of the turns to summarise, rendered for the summary request.
struct Part {
    label: String,
    body: String,
    /// Its position in the view.
    index: usize,
}

/// The turns to summarise (as already elided), each as a label and its text, with the
/// person's messages of that stretch for context.
fn summary_parts(items: &[PlannedItem], covered: &[usize]) -> Vec<Part> {
    let (Some(&first), Some(&last)) = (covered.first(), covered.last()) else {
        return Vec::new();
    };
    let mut parts = Vec::new();
    for (index, item) in items.iter().enumerate().take(last + 1).skip(first) {
        let label = match &item.kind {
            ItemKind::AssistantTurn => {
                let calls: Vec<String> = item
                    .message
                    .tool_calls
                    .iter()
                    .map(|c| format!("{}({})", c.name, summarize_args(&c.arguments, 200)))
                    .collect();
                if calls.is_empty() {
                    "assistant".to_owned()
                } else {
                    format!("assistant → {}", calls.join(", "))
                }
            }
            ItemKind::ToolResult { name, .. } => format!("{name} result"),
            ItemKind::Summary => "summary of still earlier turns".to_owned(),
            ItemKind::PersonInstruction | ItemKind::Goal => {
                "person (kept verbatim elsewhere; context only)".to_owned()
            }
            ItemKind::SystemRules | ItemKind::WorkspaceInstructions => continue,
        };
        let body = item.message.content.clone().unwrap_or_default();
        // The summary header is for the model reading the view, not for this request.
        let body = body
            .strip_prefix(crate::view::SUMMARY_HEADER)
            .map(|b| b.trim_start().to_owned())
            .unwrap_or(body);
        parts.push(Part { label, body, index });
    }
    parts
}

/// The summarisation request as messages, fitting `room`: whole if it fits; else each
/// part cut to its head and tail; else the oldest parts left out (named, not shown) as
/// many as needed. `None` when even that cannot fit.
fn fit_summary_request(
    parts: &[Part],
    room: u32,
    estimator: &Estimator,
    omitted: impl Fn(usize) -> String,
) -> Option<Vec<Message>> {
    let render = |skip: usize, per_part: Option<u32>| -> Vec<Message> {
        let mut text = String::from("Earlier turns to summarise:\n");
        if skip > 0 {
            text.push('\n');
            text.push_str(&omitted(skip));
            text.push('\n');
        }
        for part in &parts[skip..] {
            let body = match per_part {
                Some(max) => {
                    cap_with(&part.body, max, estimator, |cut| {
                        format!("[… {} bytes cut …]", thousands(cut))
                    })
                    .text
                }
                None => part.body.clone(),
            };
            text.push_str(&format!("\n### {}\n{body}\n", part.label));
        }
        vec![Message::system(SUMMARY_PROMPT), Message::user(text)]
    };
    let fits = |messages: &[Message]| -> bool {
        estimator.fixed() + messages.iter().map(|m| estimator.message(m)).sum::<u32>() <= room
    };
    let whole = render(0, None);
    if fits(&whole) {
        return Some(whole);
    }
    // Each part to its head and tail: a share of the room, at least 48 tokens.
    let per_part = (room / (parts.len().max(1) as u32 * 2)).max(48);
    let capped = render(0, Some(per_part));
    if fits(&capped) {
        return Some(capped);
    }
    // Leave out the oldest parts: the fewest that make it fit (binary search; fitting
    // only gets easier with more left out).
    let (mut lo, mut hi) = (1, parts.len());
    if !fits(&render(hi, Some(per_part))) {
        return None;
    }
    while lo < hi {
        let mid = (lo + hi) / 2;
        if fits(&render(mid, Some(per_part))) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    // Start on a turn, not on the results of a call left out.
    while hi < parts.len() && parts[hi].label.ends_with(" result") {
        hi += 1;
    }
    Some(render(hi, Some(per_part)))
}

fn kind_label(kind: &ItemKind) -> &'static str {
    match kind {
        ItemKind::SystemRules => "the system rules",
        ItemKind::WorkspaceInstructions => "the workspace instructions",
        ItemKind::PersonInstruction => "a message from the person",
        ItemKind::Goal => "the goal",
        ItemKind::AssistantTurn => "an assistant turn",
        ItemKind::ToolResult { .. } => "a tool result",
        ItemKind::Summary => "a summary",
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
