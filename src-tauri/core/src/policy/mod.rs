//! What a run may do and spend: command rules (`cargo test *`), confinement (the OS sandbox applied to its commands),
//! costs and money budgets, pauses, the repetition guard, the secrets commands never
//! inherit, the quarantine of untrusted text, and the workspace's rules (instructions, memories, skills). Pure decisions
//! over the store's settings; it imports neither `engine` nor `api`.
pub mod command_rules;
pub mod confinement;
pub mod cost;
pub mod hooks;
pub mod instructions;
pub mod memory;
pub mod pause;
pub mod plan;
pub mod quarantine;
pub mod repetition;
pub mod rules;
pub mod secret_env;
