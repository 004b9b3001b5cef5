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

use crate::cap::cap_with;
use crate::estimate::{Anchor, Estimator};
use crate::view::{summary_text, thousands, Item, ItemId, ItemKind};

mod instructions;
mod stages;
mod summary;
mod tool_results;

use stages::plan_keeping;

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
    /// Tokens taken off the room the summary request is fitted to, beyond the budget's
    /// margin: the server counted an earlier form of that request over its window, so
    /// the estimate of its text was short by about this much.
    pub summary_room_cut: u32,
}

impl Default for PlanOptions {
    fn default() -> Self {
        Self {
            keep_last_turns: 2,
            target_fraction: 0.7,
            summary_max_tokens: None,
            summary_required: false,
            summary_room_cut: 0,
        }
    }
}

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

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
