//! Tools, the workspace guard and the capability policy.
//!
//! Layout:
//! - `tool`: the `Tool` trait, its context, output, effect preview and errors.
//! - `registry`: the built-in tools by name (one file per tool under `builtin/`).
//! - `guard`: `WorkspaceGuard`, which resolves every path inside the workspace root.
//! - `policy`: the pure decision `allow | require_approval | deny` for a capability.
pub mod policy;
pub mod tool;

pub use policy::{decide, Decision, DecisionSource, PolicyRules};
pub use tool::{Effect, Tool, ToolContext, ToolError, ToolOutput};
