//! Tools, the workspace guard and the capability policy.
//!
//! Layout:
//! - `tool`: the `Tool` trait, its context, output, effect preview and errors.
//! - `registry`: the built-in tools by name (one file per tool under `builtin/`).
//! - `guard`: `WorkspaceGuard`, which resolves every path inside the workspace root.
//! - `sandbox`: execution-time file operations through a directory handle (cap-std), so a
//!   symlink swapped in after the guard's check cannot win.
//! - `policy`: the pure decision `allow | require_approval | deny` for a capability.
//! - `skills`: skills found in the workspace and the person's skills directory.
//! - `editor`: an editor's file methods (ACP), which the file tools use when offered.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod builtin;
pub mod editor;
pub mod guard;
pub mod links;
pub mod policy;
pub mod registry;
pub mod sandbox;
pub mod skills;
pub mod text;
pub mod tool;

pub use guard::{GuardError, WorkspaceGuard};
pub use policy::{decide, Decision, DecisionSource, PolicyRules};
pub use registry::Registry;
pub use tool::{
    lean_schema, CommandSandbox, Effect, SandboxMode, Tool, ToolContext, ToolError, ToolOutput,
};
