//! Older turns replaced by a summary the model writes, or by a fixed marker.
use pocketpilot_model::Message;

use super::PlannedItem;
use crate::cap::cap_with;
use crate::estimate::Estimator;
use crate::view::{shorten, summarize_args, thousands, Item, ItemKind};

/// The marker standing for summarised turns when no summary could be made: what was
/// there, counted and named, so the model knows to redo a step rather than assume.
pub(super) fn fallback_marker(items: &[&Item]) -> String {
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

/// What stands in the summary request for the oldest `parts` left out of it: those turns
/// counted and named, as the fallback marker does.
pub(super) fn omitted_marker(parts: &[Part], view: &[Item]) -> String {
    let items: Vec<&Item> = parts.iter().map(|p| &view[p.index]).collect();
    fallback_marker(&items)
        .replace(
            "Earlier turns were dropped to fit the model's context window",
            "Still earlier turns, too long to show here",
        )
        .replace(
            " Their results are no longer here: redo a step if you need its output.",
            "",
        )
}

const SUMMARY_PROMPT: &str = "You are compacting the history of a session between a person and a coding agent, so the agent can continue within its context window. Write a concise summary of the earlier turns below for the agent itself: what was done (files read or changed, commands run and what they showed), what was learnt, decisions made, and what remains open. Keep exact file paths, names and numbers. Do not restate the person's messages (they are kept verbatim) and do not add anything that is not in the turns. Answer with the summary only.";

/// One item of the turns to summarise, rendered for the summary request.
pub(super) struct Part {
    label: String,
    body: String,
    /// Its position in the view.
    index: usize,
}

/// The turns to summarise (as already elided), each as a label and its text, with the
/// person's messages of that stretch for context.
pub(super) fn summary_parts(items: &[PlannedItem], covered: &[usize]) -> Vec<Part> {
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
pub(super) fn fit_summary_request(
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
