//! The planner's stages, cheapest and least lossy first. Each runs only while the request
//! is still over what that stage aims at, and records what it did in the plan's steps.
use std::ops::Range;

use pocketpilot_model::{Message, ToolSpec};

use super::instructions::{elide_instructions, More};
use super::summary::{fallback_marker, fit_summary_request, omitted_marker, summary_parts};
use super::tool_results::{cap_recent, elide_old};
use super::{Action, Budget, ContextError, Plan, PlanOptions, PlannedItem, Step, SummaryRequest};
use crate::estimate::{Anchor, Estimator};
use crate::view::{summary_text, Item, ItemId, ItemKind};

/// A plan that keeps the last `options.keep_last_turns` turns verbatim, or what did not fit.
pub(super) fn plan_keeping(
    view: &[Item],
    tools: &[ToolSpec],
    budget: &Budget,
    estimator: &Estimator,
    options: &PlanOptions,
    anchor: Option<&Anchor>,
    elided_before: &[ItemId],
) -> Result<Plan, ContextError> {
    let fixed_tokens = estimator.tools(tools) + estimator.fixed();
    if fixed_tokens >= budget.limit() {
        return Err(nothing_fits(
            budget,
            fixed_tokens,
            Some(format!(
                "the tool definitions alone take {fixed_tokens} tokens"
            )),
        ));
    }
    let mut planning = Planning::new(view, budget, estimator, options, fixed_tokens);
    // The server's count of the last request, when it still covers the view, decides
    // whether anything needs to change.
    let counted = anchor
        .map(|a| {
            let messages: Vec<Message> = view.iter().map(|i| i.message.clone()).collect();
            estimator.request(&messages, tools, Some(a))
        })
        .filter(|e| e.anchored.is_some())
        .map_or(planning.total, |e| e.tokens);
    if planning.elide_as_before(elided_before, counted) {
        let total = planning.total;
        return Ok(planning.into_plan(total));
    }
    if counted <= planning.limit {
        return Ok(planning.into_plan(counted));
    }
    planning.split_turns(options.keep_last_turns);
    planning.elide_old_tool_results();
    planning.summarize_old_turns();
    planning.make_room_beside_summary(elided_before);
    planning.fit_what_is_kept(elided_before);
    if !options.summary_required {
        planning.marker_instead_of_summary();
    }
    planning.finish()
}

fn nothing_fits(budget: &Budget, needed: u32, what: Option<String>) -> ContextError {
    ContextError::NothingFits {
        needed,
        limit: budget.limit(),
        window: budget.window,
        reserve: budget.output_reserve,
        what,
    }
}

/// A plan in the making: the plan's items as changed so far, and their estimate.
struct Planning<'a> {
    view: &'a [Item],
    estimator: &'a Estimator,
    limit: u32,
    /// Once compacting, what to aim below.
    target: u32,
    /// The estimate of the request as planned so far.
    total: u32,
    plan: Plan,
    /// The turns before the last ones: those a summary may replace.
    old_turns: Vec<Range<usize>>,
    /// Positions of the items of the last turns.
    recent: Vec<usize>,
    /// What the summary's place costs as planned, and as the fallback marker.
    summary_room: Option<(u32, u32)>,
    /// [`PlanOptions::summary_room_cut`].
    summary_room_cut: u32,
}

impl<'a> Planning<'a> {
    fn new(
        view: &'a [Item],
        budget: &Budget,
        estimator: &'a Estimator,
        options: &PlanOptions,
        fixed_tokens: u32,
    ) -> Self {
        let limit = budget.limit();
        let items: Vec<PlannedItem> = view
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
        let total = fixed_tokens + items.iter().map(|i| i.tokens).sum::<u32>();
        let summary_max_tokens = options
            .summary_max_tokens
            .unwrap_or_else(|| (limit / 8).clamp(64, 2048))
            .min(limit / 2);
        Self {
            view,
            estimator,
            limit,
            target: ((f64::from(limit) * options.target_fraction.clamp(0.1, 1.0)) as u32).max(1),
            total,
            plan: Plan {
                budget: *budget,
                estimate: 0,
                items,
                steps: Vec::new(),
                summary: None,
                summary_at: usize::MAX,
                fallback: None,
                summary_max_tokens,
                fixed_tokens,
            },
            old_turns: Vec::new(),
            recent: Vec::new(),
            summary_room: None,
            summary_room_cut: options.summary_room_cut,
        }
    }

    fn into_plan(mut self, estimate: u32) -> Plan {
        self.plan.estimate = estimate;
        self.plan
    }

    /// The person's messages elided last time, elided again: when that is enough, the
    /// request's prefix is the one the server saw last (its prompt cache holds), and
    /// nothing else changes. They come back verbatim once everything fits under the
    /// target again (after a fresh context, or when a summary made the room). Whether
    /// that was enough; when not, nothing changed.
    fn elide_as_before(&mut self, elided_before: &[ItemId], counted: u32) -> bool {
        if elided_before.is_empty() || counted <= self.target {
            return false;
        }
        let mut items = self.plan.items.clone();
        let mut total = self.total;
        let ids = elide_instructions(
            &mut items,
            self.view,
            elided_before,
            &mut total,
            More::None,
            self.estimator,
        );
        if ids.is_empty() || total > self.limit {
            return false;
        }
        self.plan.steps.push(Step::InstructionsElided { ids });
        self.plan.items = items;
        self.total = total;
        true
    }

    /// Turns: an assistant message and the tool results after it; a summary alone.
    fn split_turns(&mut self, keep_last_turns: usize) {
        let mut turns = turns_of(&self.plan.items);
        let recent_from = turns.len().saturating_sub(keep_last_turns);
        self.recent = turns[recent_from..]
            .iter()
            .flat_map(|t| t.clone())
            .collect();
        turns.truncate(recent_from);
        self.old_turns = turns;
    }

    /// 1. Old tool results, oldest first, tier by tier.
    fn elide_old_tool_results(&mut self) {
        let items = &mut self.plan.items;
        let elided = elide_old(
            items,
            self.view,
            &self.recent,
            &mut self.total,
            self.target,
            self.estimator,
        );
        if elided > 0 {
            let bytes = items
                .iter()
                .map(|i| match i.action {
                    Action::Elided { cut_bytes } => cut_bytes,
                    _ => 0,
                })
                .sum();
            self.plan.steps.push(Step::ToolResultsElided {
                count: elided,
                bytes,
            });
        }
    }

    /// 2. Older turns summarised, when eliding was not enough: the shortest prefix of old
    ///    turns that reaches the target.
    fn summarize_old_turns(&mut self) {
        if self.total <= self.limit || self.old_turns.is_empty() {
            return;
        }
        let estimator = self.estimator;
        let header_cost = estimator.message(&Message::assistant(summary_text(""), vec![]));
        let covered = self.turns_to_summarize(header_cost + self.plan.summary_max_tokens);
        let items = &mut self.plan.items;
        let covered_tokens: u32 = covered.iter().map(|&i| items[i].tokens).sum();
        let fallback = fallback_marker(&covered.iter().map(|&i| &self.view[i]).collect::<Vec<_>>());
        let fallback_tokens = estimator.message(&Message::assistant(fallback.clone(), vec![]));
        if covered_tokens <= fallback_tokens {
            return;
        }
        for &i in &covered {
            items[i].action = Action::Summarized;
        }
        self.plan.summary_at = covered.last().map_or(0, |&last| last + 1);
        self.plan.steps.push(Step::TurnsToSummarize {
            items: covered.len(),
        });
        self.plan.fallback = Some(fallback);
        // A summary is worth asking for only when it may be shorter than the turns.
        let max_tokens = self
            .plan
            .summary_max_tokens
            .min(covered_tokens.saturating_sub(header_cost) / 2);
        let stand_in = match self.summary_messages(&covered, max_tokens) {
            Some(messages) => {
                self.plan.summary_max_tokens = max_tokens;
                self.plan.summary = Some(SummaryRequest {
                    messages,
                    max_tokens,
                    covers: covered.iter().map(|&i| self.plan.items[i].id).collect(),
                });
                (header_cost + max_tokens).max(fallback_tokens)
            }
            None => {
                self.plan.steps.push(Step::SummaryWouldOverflow);
                fallback_tokens
            }
        };
        self.total = self.total - covered_tokens + stand_in;
        self.summary_room = Some((stand_in, fallback_tokens));
    }

    /// The positions of the shortest prefix of old turns whose summary, costing
    /// `summary_cost`, reaches the target; all of them if none does (one summary either
    /// way, and the next turns get the room).
    fn turns_to_summarize(&self, summary_cost: u32) -> Vec<usize> {
        let items = &self.plan.items;
        let mut chosen = self.old_turns.len();
        let mut saved = 0u32;
        for (k, turn) in self.old_turns.iter().enumerate() {
            saved += turn.clone().map(|i| items[i].tokens).sum::<u32>();
            if (self.total + summary_cost).saturating_sub(saved) <= self.target {
                chosen = k + 1;
                break;
            }
        }
        self.old_turns[..chosen]
            .iter()
            .flat_map(|t| t.clone())
            .collect()
    }

    /// The request for a summary of the items at `covered` in `max_tokens`, made to fit
    /// the window; `None` when it cannot, or when so short a summary is not worth asking.
    fn summary_messages(&self, covered: &[usize], max_tokens: u32) -> Option<Vec<Message>> {
        if max_tokens < 32 {
            return None;
        }
        let budget = &self.plan.budget;
        let room = budget
            .window
            .saturating_sub(max_tokens)
            .saturating_sub(budget.margin)
            .saturating_sub(self.summary_room_cut);
        let parts = summary_parts(&self.plan.items, covered);
        let omitted = |k: usize| omitted_marker(&parts[..k], self.view);
        fit_summary_request(&parts, room, self.estimator, omitted)
    }

    /// 3. A summary that cannot reach the target because the person's own messages fill
    ///    the room would run again on the next turn, and the one after: the oldest of
    ///    those messages go now, down to the target, so the next turns have room.
    fn make_room_beside_summary(&mut self, elided_before: &[ItemId]) {
        if self.plan.summary_at == usize::MAX || self.total <= self.target {
            return;
        }
        self.elide_instructions(elided_before, More::Until(self.target));
    }

    /// 4. What is always kept does not fit: recent tool results first, then the oldest
    ///    person instructions, then recent tool results again.
    fn fit_what_is_kept(&mut self, elided_before: &[ItemId]) {
        if self.total <= self.limit {
            return;
        }
        let (mut count, mut bytes) = self.cap_recent(self.limit / 2);
        if self.total > self.limit {
            let more = More::UnlessUnder {
                limit: self.limit,
                target: self.target,
            };
            self.elide_instructions(elided_before, more);
        }
        if self.total > self.limit {
            let more = self.cap_recent(0);
            count += more.0;
            bytes += more.1;
        }
        if count > 0 {
            self.plan
                .steps
                .push(Step::RecentToolResultsCapped { count, bytes });
        }
    }

    /// 5. The room kept for a summary is what is still too much (a small window, where
    ///    the summary's own `max_tokens` is a large share): the shorter fixed marker
    ///    instead.
    fn marker_instead_of_summary(&mut self) {
        if self.total <= self.limit || self.plan.summary.is_none() {
            return;
        }
        if let Some((planned, fallback)) = self.summary_room {
            if planned > fallback {
                self.total = self.total - planned + fallback;
                self.plan.summary = None;
                self.plan.steps.push(Step::SummaryWouldOverflow);
            }
        }
    }

    /// The plan, or why even all of that is not enough.
    fn finish(self) -> Result<Plan, ContextError> {
        if self.total <= self.limit {
            let total = self.total;
            return Ok(self.into_plan(total));
        }
        let items = &self.plan.items;
        if let Some(refusal) = goal_too_long(items, self.plan.fixed_tokens, self.limit) {
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
        Err(nothing_fits(&self.plan.budget, self.total, what))
    }

    fn elide_instructions(&mut self, elided_before: &[ItemId], more: More) {
        let ids = elide_instructions(
            &mut self.plan.items,
            self.view,
            elided_before,
            &mut self.total,
            more,
            self.estimator,
        );
        if !ids.is_empty() {
            self.plan.steps.push(Step::InstructionsElided { ids });
        }
    }

    fn cap_recent(&mut self, cap: u32) -> (usize, usize) {
        cap_recent(
            &mut self.plan.items,
            self.view,
            &self.recent,
            cap,
            &mut self.total,
            self.limit,
            self.estimator,
        )
    }
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

/// Positions of each turn: an assistant message and the tool results right after it; a
/// summary alone; a stray tool result alone. Protected items belong to no turn.
fn turns_of(items: &[PlannedItem]) -> Vec<Range<usize>> {
    let mut turns: Vec<Range<usize>> = Vec::new();
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
