//! The workspace's own rules as the window shows them (issue 18): the instruction files in
//! effect, the person's memories, the skills found. All of it reaches the model as
//! untrusted data; none of it can change the tools, the policy or the approvals.
use serde::{Deserialize, Serialize};

crate::wire_enum! {
    /// Whom a memory is for: every workspace, or one.
    pub enum MemoryScope {
        Global = "global",
        Workspace = "workspace",
    }
}

crate::wire_enum! {
    /// Where a skill was found.
    pub enum SkillSource {
        /// The workspace's `.agents/skills/`.
        Workspace = "workspace",
        /// The person's own skills directory.
        Personal = "personal",
    }
}

/// A durable note given to the model on every run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Memory {
    pub id: i64,
    pub scope: MemoryScope,
    /// The canonical workspace path for a workspace memory.
    pub workspace: Option<String>,
    pub text: String,
    /// The task whose agent proposed it; `None` when the person wrote it.
    pub task_id: Option<i64>,
    pub created_at: String,
    pub updated_at: String,
}

/// One instruction file (`AGENTS.md`) as it is given to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct InstructionFile {
    /// Relative to the workspace root (`AGENTS.md`, `crates/app/AGENTS.md`).
    pub path: String,
    pub bytes: u32,
    /// Cut at the size cap (a marker says so in the text the model reads).
    pub truncated: bool,
}

/// One instruction file in effect, as the window shows it read-only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct InstructionText {
    /// As listed: relative to the workspace root.
    pub path: String,
    /// Where it is on disk (resolved), for the desktop's editor.
    pub absolute: String,
    /// Its text as it is on disk now (not cut at the size cap; invalid UTF-8 replaced).
    pub text: String,
}

/// A skill found on disk, and whether the person switched it off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SkillInfo {
    pub name: String,
    pub description: String,
    pub source: SkillSource,
    /// The skill's folder, absolute: the key its on/off switch is stored under.
    pub dir: String,
    pub enabled: bool,
}

/// What the "Instructions in effect" screen shows for a workspace (or a session in it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RulesInEffect {
    pub workspace: String,
    /// Root first, nearest last: where two disagree the later one wins.
    pub instructions: Vec<InstructionFile>,
    pub memories: Vec<Memory>,
    pub skills: Vec<SkillInfo>,
    /// Whether a memory the agent proposes is kept without asking (the setting).
    pub auto_accept_memories: bool,
    /// Problems found while reading (a SKILL.md without front matter, an unreadable file).
    pub problems: Vec<String>,
    /// The hooks files that apply: the person's, then the workspace's (with whether its
    /// content is consented to, so it runs).
    #[serde(default)]
    pub hooks: Vec<HooksFileInfo>,
}

/// A hooks file as the person reviews it: every command it would run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct HooksFileInfo {
    pub path: String,
    pub scope: crate::event::HookScope,
    /// SHA-256 of the file's content: what a consent names.
    pub hash: String,
    /// Whether its hooks run: always for the person's; for the workspace's, when the
    /// person consented to this exact content.
    pub runs: bool,
    pub hooks: Vec<HookInfo>,
    /// Entries skipped (an unknown event, a bad matcher), or why the file cannot be used.
    pub problems: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct HookInfo {
    pub event: crate::event::HookEvent,
    /// The tool-name pattern; `None`: every tool (or not a tool event).
    pub matcher: Option<String>,
    pub command: String,
    pub timeout_secs: u32,
}
