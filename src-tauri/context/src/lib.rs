//! PocketPilot's context accounting, so that a session never outgrows its model.
//!
//! Pure: no I/O, no async, no clock. The runtime gives it the model's view (the messages
//! of the next request, each tagged with what it is), the model's window and an
//! estimator; it answers how many tokens that is and, when it is too many, a plan that
//! fits. See README.md for the promises and the order of compaction.
//!
//! - `estimate`: [`Estimator`] (a real tokenizer for OpenAI models, a calibrated
//!   shape-based estimate otherwise), [`Anchor`] (the server's count of a prefix).
//! - `view`: [`Item`] and [`ItemKind`]: what each message of the view is.
//! - `plan`: [`plan_compaction`], [`Budget`], [`Plan`] and what it finishes into.
//! - `cap`: [`cap_tool_output_tokens`]: a long text to its head and tail.
#![deny(clippy::print_stdout, clippy::print_stderr)]
mod cap;
mod estimate;
mod plan;
mod view;

pub use cap::{cap_tool_output_tokens, cap_with, Capped};
pub use estimate::{fingerprint, shape_count, Anchor, Calibration, Estimate, Estimator};
pub use plan::{
    plan_compaction, plan_compaction_after, Action, Budget, Compacted, ContextError, NewSummary,
    Plan, PlanOptions, PlannedItem, Step, SummaryRequest, MIN_RESERVE,
};
pub use view::{summarize_args, summary_text, Item, ItemId, ItemKind};

/// The context window of a well-known hosted model, by name (OpenAI's, from the table
/// `tiktoken-rs` keeps), for when the server does not say (OpenAI's API does not).
pub fn known_window(model: &str) -> Option<u32> {
    let bare = model.strip_prefix("openai/").unwrap_or(model);
    tiktoken_rs::model::get_context_size(bare).and_then(|n| u32::try_from(n).ok())
}
