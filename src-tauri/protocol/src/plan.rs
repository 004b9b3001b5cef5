//! Plan mode: a run that only reads and ends with a plan (its steps, the files it will
//! change, the commands it will run); the person approves, edits or rejects it, and an
//! approved plan runs with grants scoped to what it lists.
use serde::{Deserialize, Serialize};

/// What a plan says will be done. The files and commands are what an approved plan's run
/// may write and run without asking; anything else asks as usual.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PlanContent {
    /// What will be done, in order, one short sentence each.
    pub steps: Vec<String>,
    /// Workspace-relative paths the plan will create or change.
    #[serde(default)]
    pub files: Vec<String>,
    /// Shell commands the plan will run, each exactly as it will be run.
    #[serde(default)]
    pub commands: Vec<String>,
}

crate::wire_enum! {
    /// Where a plan stands.
    pub enum PlanStatus {
        /// Written by the agent, waiting for the person.
        Proposed = "proposed",
        /// Approved: a run carries it out with its grants.
        Approved = "approved",
        /// Rejected: nothing of it runs.
        Rejected = "rejected",
    }
}

crate::wire_enum! {
    /// How the plan reached the runtime.
    pub enum PlanSource {
        /// The agent called `submit_plan` with the plan as its argument.
        Tool = "tool",
        /// The agent answered without calling it; the plan was read from the answer's text.
        Answer = "answer",
    }
}

/// A stored plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Plan {
    pub id: i64,
    pub session_id: i64,
    /// The task that planned.
    pub task_id: i64,
    pub status: PlanStatus,
    pub source: PlanSource,
    pub content: PlanContent,
    /// The steps marked done (1-based), in the order they were marked.
    pub done: Vec<u32>,
    /// The person changed the plan before deciding.
    pub edited: bool,
    /// The task that carries out the approved plan.
    pub run_task_id: Option<i64>,
    pub created_at: String,
    pub decided_at: Option<String>,
}

impl PlanContent {
    /// Why the plan cannot be offered to the person, if it cannot: it has no step, or a
    /// step, file or command is blank.
    pub fn problem(&self) -> Option<String> {
        if self.steps.is_empty() {
            return Some("a plan needs at least one step".into());
        }
        let blank = |list: &[String]| list.iter().any(|s| s.trim().is_empty());
        if blank(&self.steps) || blank(&self.files) || blank(&self.commands) {
            return Some("a step, file or command is empty".into());
        }
        None
    }

    /// The plan as text, for the model and the terminal: numbered steps, then the files
    /// and the commands. `done` ticks steps.
    pub fn render(&self, done: &[u32]) -> String {
        let mut out = String::from("Plan:\n");
        for (i, step) in self.steps.iter().enumerate() {
            let n = i as u32 + 1;
            let mark = if done.contains(&n) { "[x]" } else { "[ ]" };
            out.push_str(&format!("{mark} {n}. {step}\n"));
        }
        if !self.files.is_empty() {
            out.push_str(&format!(
                "Files it will change: {}\n",
                self.files.join(", ")
            ));
        }
        if !self.commands.is_empty() {
            let commands: Vec<String> = self.commands.iter().map(|c| format!("`{c}`")).collect();
            out.push_str(&format!("Commands it will run: {}\n", commands.join(", ")));
        }
        out
    }
}
