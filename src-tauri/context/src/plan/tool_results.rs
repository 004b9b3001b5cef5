//! Tool results cut to their head and tail: old ones first, the last turns' when what is
//! always kept does not fit.
use super::{Action, PlannedItem};
use crate::cap::cap_counted;
use crate::estimate::Estimator;
use crate::view::{how_to_get_back, thousands, Item, ItemKind};
use pocketpilot_model::ToolKind;

/// Tokens kept of an old tool result, tier by tier.
const ELIDE_TIERS: [u32; 3] = [512, 128, 0];

/// Old tool results (not at the positions `recent`), oldest first, cut tier by tier until
/// the total reaches `target`. Returns how many were cut.
pub(super) fn elide_old(
    items: &mut [PlannedItem],
    view: &[Item],
    recent: &[usize],
    total: &mut u32,
    target: u32,
    estimator: &Estimator,
) -> usize {
    let mut elided = 0usize;
    for keep in ELIDE_TIERS {
        for i in 0..items.len() {
            if *total <= target {
                return elided;
            }
            if recent.contains(&i) {
                continue;
            }
            let ItemKind::ToolResult {
                name,
                args_summary,
                tool_kind,
                ..
            } = &items[i].kind
            else {
                continue;
            };
            if items[i].tokens <= keep + 24 {
                continue;
            }
            let original = view[i].text();
            let (name, args, kind) = (name.clone(), args_summary.clone(), *tool_kind);
            let capped = cap_counted(original, items[i].original, keep, estimator, |cut| {
                elision_marker(cut, kind, &name, &args)
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
            *total = *total - before + after;
        }
    }
    elided
}

/// The tool results of the last turns, biggest first, capped so that each takes at most
/// `cap` tokens (0: as little as it must so the total fits). Returns (count, bytes cut).
pub(super) fn cap_recent(
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
            name,
            args_summary,
            tool_kind,
            ..
        } = &items[i].kind
        else {
            continue;
        };
        let (name, args, kind) = (name.clone(), args_summary.clone(), *tool_kind);
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
            |cut| elision_marker(cut, kind, &name, &args),
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

fn elision_marker(cut: usize, kind: ToolKind, tool: &str, args: &str) -> String {
    let call = if args.is_empty() {
        tool.to_owned()
    } else {
        format!("{tool}({args})")
    };
    format!(
        "[… {} bytes of this {call} output elided to fit the context window; {}]",
        thousands(cut),
        how_to_get_back(kind, tool)
    )
}
