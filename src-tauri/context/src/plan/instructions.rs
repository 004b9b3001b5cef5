//! The last resort: the person's oldest messages (never the goal) replaced by one marker.
use super::{Action, PlannedItem};
use crate::estimate::Estimator;
use crate::view::{shorten, thousands, Item, ItemId, ItemKind};

/// An old person instruction elided keeps this many characters of its start.
const INSTRUCTION_EXCERPT: usize = 160;

/// How far [`elide_instructions`] goes past the ones elided last time.
#[derive(Clone, Copy)]
pub(super) enum More {
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
pub(super) fn elide_instructions(
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
