//! The change journal's records (issue 16): what a path was before and after a tool call,
//! the change sets that group them, and what the CLI and the window show of them.
use serde::{Deserialize, Serialize};

/// One workspace entry as the journal keeps it. A file's content is the blob `hash` in the
/// data dir's blob store (SHA-256, hex); a symlink is its target, never followed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Node {
    File { hash: String, size: u64, mode: u32 },
    Symlink { target: String },
    Dir { mode: u32 },
}

/// One path's transition. `None`: nothing was there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Change {
    /// Relative to the workspace root, `/`-separated.
    pub path: String,
    pub before: Option<Node>,
    pub after: Option<Node>,
}

impl Change {
    /// The same transition the other way round: what undoing (or redoing) it does.
    pub fn inverted(&self) -> Change {
        Change {
            path: self.path.clone(),
            before: self.after.clone(),
            after: self.before.clone(),
        }
    }

    pub fn kind(&self) -> FileChangeKind {
        match (&self.before, &self.after) {
            (None, _) => FileChangeKind::Added,
            (_, None) => FileChangeKind::Deleted,
            _ => FileChangeKind::Modified,
        }
    }
}

crate::wire_enum! {
    /// What a change set records: a tool call's effect, an undo, or a redo of an undo.
    pub enum ChangeSetKind {
        Call = "call",
        Undo = "undo",
        Redo = "redo",
    }
}

crate::wire_enum! {
    /// `pending`: the prior state is kept and the effect may be running (or was cut off);
    /// `recorded`: the call's changes are known; `applying` → `applied`: an undo or redo;
    /// `pruned`: retention dropped the blobs, it can no longer be undone.
    pub enum ChangeSetStatus {
        Pending = "pending",
        Recorded = "recorded",
        Applying = "applying",
        Applied = "applied",
        Pruned = "pruned",
    }
}

crate::wire_enum! {
    /// How a file changed, as listed. A deletion and an addition of the same content in
    /// one list are shown as one rename.
    pub enum FileChangeKind {
        Added = "added",
        Modified = "modified",
        Deleted = "deleted",
        Renamed = "renamed",
    }
}

crate::wire_enum! {
    /// Whether a task's (or a call's) changes can be undone now.
    pub enum Undoable {
        Yes = "yes",
        /// Already undone (see `undone_by`): redo the undo to bring them back.
        Undone = "undone",
        /// Retention removed the kept contents.
        Pruned = "pruned",
        /// Nothing to undo.
        Nothing = "nothing",
    }
}

/// One file of a change list, with its diff.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct FileChange {
    pub path: String,
    pub kind: FileChangeKind,
    /// The old path of a rename.
    pub from: Option<String>,
    pub before: Option<Node>,
    pub after: Option<Node>,
    /// A unified diff for text files; `None` for binary or large files, directories and
    /// contents that were pruned.
    pub diff: Option<String>,
    pub call_id: Option<String>,
    /// The undo (of the task, or of this file alone) that reverted this file and still
    /// holds: the file is as it was before the task, the diff is what was undone.
    pub undone_by: Option<i64>,
}

/// The changes of a task (or of one call, or of a session after a point).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ChangeList {
    pub task_ids: Vec<i64>,
    /// Directories are left out: these are the files, symlinks included.
    pub files: Vec<FileChange>,
    pub undoable: Undoable,
    /// The undo that reverted them, when `undoable` is `undone`.
    pub undone_by: Option<i64>,
    /// The change sets listed (call sets), oldest first.
    pub set_ids: Vec<i64>,
}

/// A file an undo (or redo) refuses: someone changed it since. Its three versions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Conflict {
    pub path: String,
    /// What it was before the task.
    pub original: Option<Node>,
    /// What the task left.
    pub task_left: Option<Node>,
    /// What is there now.
    pub current: Option<Node>,
    /// Diff from what the task left to what is there now (text files).
    pub diff_since: Option<String>,
}

/// What an undo (or redo) did or, dry, would do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct UndoReport {
    /// The undo (or redo) change set; `None` when nothing was applied (dry run, refusal).
    pub id: Option<i64>,
    pub kind: ChangeSetKind,
    pub dry_run: bool,
    /// Paths restored (or, dry, to restore), files and directories.
    pub restored: Vec<String>,
    /// Paths already as they should be.
    pub unchanged: Vec<String>,
    /// Refused paths. Without `keep_theirs` any conflict refuses the whole undo.
    pub conflicts: Vec<Conflict>,
    /// Conflicting paths left as the person has them (`keep_theirs`).
    pub kept: Vec<String>,
}

/// Directory names the scan never enters by default (at any depth): dependencies, build
/// output and version control.
pub const DEFAULT_IGNORED: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    "node_modules",
    "target",
    "__pycache__",
    ".venv",
    ".tox",
    ".mypy_cache",
    ".pytest_cache",
    ".gradle",
    ".next",
    ".cache",
];

/// The change journal's settings (shown in Settings): what is scanned and how long kept
/// contents stay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(default)]
pub struct ChangeSettings {
    /// Kept contents may use this much disk (MiB); the oldest tasks' are pruned first.
    pub max_mib: u32,
    /// Kept contents older than this many days are pruned.
    pub max_age_days: u32,
    /// Directory names never scanned.
    pub ignored: Vec<String>,
    /// Files larger than this (MiB) are listed as changed but not kept.
    pub max_file_mib: u32,
}

impl Default for ChangeSettings {
    fn default() -> Self {
        Self {
            max_mib: 2048,
            max_age_days: 30,
            ignored: DEFAULT_IGNORED.iter().map(|s| (*s).to_owned()).collect(),
            max_file_mib: 256,
        }
    }
}
