//! The context budget as the window and the CLI see it (issue 13): a session's context
//! meter, its compactions and resets (the transcript's dividers), the per-request figures,
//! and what a compaction asked for by the person did.
use serde::{Deserialize, Serialize};

use crate::event::{CompactionCause, WindowOrigin};

/// What one model request cost, as estimated and as the server counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ContextTurn {
    pub id: i64,
    pub session_id: i64,
    pub task_id: i64,
    pub window: u32,
    pub window_source: WindowOrigin,
    /// The most prompt tokens the request could be estimated at.
    pub budget: u32,
    pub estimate: u32,
    /// `usage.prompt_tokens` of the answer; `None` when the request failed or the server
    /// gave no usage.
    pub prompt_tokens: Option<u32>,
    /// How many messages the request carried (the system rules included).
    pub messages: u32,
    pub at: String,
}

/// What a session's context meter shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ContextUse {
    pub session_id: i64,
    /// The estimate of the next request as the view stands now.
    pub used: u32,
    pub window: u32,
    pub window_source: WindowOrigin,
    /// The most prompt tokens a request may take (window − answer − margin).
    pub limit: u32,
    /// The newest request actually sent: estimate and the server's count.
    pub last_request: Option<ContextTurn>,
    pub compactions: u32,
}

/// One compaction as the history shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CompactionInfo {
    pub entry_id: i64,
    pub task_id: Option<i64>,
    /// `None` for entries written before the cause was kept.
    pub cause: Option<CompactionCause>,
    pub summary: String,
    pub fallback: bool,
    /// The entries the summary stands for (the originals stay in the store).
    pub replaces: Vec<i64>,
    /// Tool results cut to head and tail in the same request.
    pub elided: Vec<i64>,
    /// Person instructions replaced by a marker (the last resort).
    pub instructions_elided: Vec<i64>,
    pub tokens_before: Option<u64>,
    pub tokens_after: Option<u64>,
    pub created_at: String,
}

/// What the transcript draws between its tasks: the compactions (a manual one sits after
/// its task; one the runtime made sits inside its task, where it happened) and the fresh
/// contexts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ContextMarks {
    pub compactions: Vec<CompactionInfo>,
    pub resets: Vec<ContextReset>,
}

/// A fresh context ("reset"): the model's view starts again after this entry. The
/// transcript shows it as a divider after the task `after_task`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ContextReset {
    pub entry_id: i64,
    /// The newest task with entries before it; `None`: before every task.
    pub after_task: Option<i64>,
    /// Hand-off text the next run starts from, if any.
    pub text: Option<String>,
    pub created_at: String,
}

/// What a compaction asked for by the person did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CompactReport {
    pub task_id: i64,
    pub tokens_before: u32,
    pub tokens_after: u32,
    pub compacted: bool,
}
