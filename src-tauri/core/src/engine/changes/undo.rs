//! Undo, redo and the change lists (issue 16). An undo reverts the recorded change sets
//! of a task, of one call, or of a session from a task on: the sets are folded into one
//! transition per path, inverted, planned against the disk (conflicts refuse) and applied;
//! the undo is itself a change set, so it can be redone. The session's next turn sees a
//! `system` entry saying what the person reverted.
//!
//! An undo of some files of a task (`Target::Files`) reverts the task's changes to those
//! paths only. It marks no set `undone_by` (the sets are only partly reverted): its row
//! names the paths in its scope, and a path counts as undone while an applied undo that
//! changed it is not redone ([`Undone`]). The task's undo then leaves those paths
//! out, and redoing the file undo brings back just those files.
use std::collections::BTreeMap;
use std::path::Path;

use pocketpilot_changes::diff;
use pocketpilot_changes::restore::{self, Planned, Step};
use pocketpilot_changes::BlobStore;
use pocketpilot_protocol::changes::{
    Change, ChangeList, ChangeSetKind, ChangeSetStatus, Conflict, Node, UndoReport, Undoable,
};
use pocketpilot_protocol::EntryKind;
use pocketpilot_tools::guard::WorkspaceGuard;

use super::{blob_store, finish_pending, forbidden_dirs, load_settings, scan_options, ChangeError};
use crate::store::{change_sets, entries, leases, tasks, ChangeSet, Store};

/// Whose changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A task's, or one of its calls'.
    Task {
        task_id: i64,
        call_id: Option<String>,
    },
    /// Some files of a task: everything its calls did to these paths.
    Files { task_id: i64, paths: Vec<String> },
    /// A session's from task `from_task` on (that task included).
    Session { session_id: i64, from_task: i64 },
}

/// What an undo's row says it covered (its `scope`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum UndoScope {
    /// Whole change sets (a task, a call, a session's tasks): they are marked `undone_by`.
    Workspace,
    /// Only these paths of a task; no set is marked.
    Files { paths: Vec<String> },
}

impl UndoScope {
    fn of(set: &ChangeSet) -> UndoScope {
        serde_json::from_str(&set.scope).unwrap_or(UndoScope::Workspace)
    }
    fn json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{\"type\":\"workspace\"}".into())
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Plan only: nothing is touched or recorded.
    pub dry_run: bool,
    /// Files someone changed since are left as they are; the rest is undone.
    pub keep_theirs: bool,
}

impl Options {
    /// Undo for real; files changed since refuse it unless `keep_theirs`.
    pub fn apply(keep_theirs: bool) -> Self {
        Self {
            dry_run: false,
            keep_theirs,
        }
    }
}

impl Target {
    fn describe(&self) -> String {
        match self {
            Target::Task {
                task_id,
                call_id: None,
            } => format!("task {task_id}"),
            Target::Task {
                task_id,
                call_id: Some(c),
            } => format!("call {c} of task {task_id}"),
            Target::Files { task_id, paths } => {
                format!("{} of task {task_id}", paths.join(", "))
            }
            Target::Session {
                session_id,
                from_task,
            } => {
                format!("session {session_id} from task {from_task} on")
            }
        }
    }
}

/// The call sets of a target, oldest first; pending ones whose run is gone are finished
/// first (a crash cut them off).
fn call_sets(
    store: &Store,
    data_dir: &Path,
    target: &Target,
) -> Result<Vec<ChangeSet>, ChangeError> {
    let read = |store: &Store| -> Result<Vec<ChangeSet>, ChangeError> {
        Ok(store.read(|c| match target {
            Target::Files { task_id, .. } => {
                tasks::get(c, *task_id)?;
                change_sets::of_task(c, *task_id, ChangeSetKind::Call)
            }
            Target::Task { task_id, call_id } => {
                tasks::get(c, *task_id)?;
                let all = change_sets::of_task(c, *task_id, ChangeSetKind::Call)?;
                Ok(all
                    .into_iter()
                    .filter(|s| call_id.is_none() || s.call_id == *call_id)
                    .collect())
            }
            Target::Session {
                session_id,
                from_task,
            } => change_sets::of_session(c, *session_id, *from_task, ChangeSetKind::Call),
        })?)
    };
    let sets = read(store)?;
    if finish_pendings(store, data_dir, &sets)? {
        read(store)
    } else {
        Ok(sets)
    }
}

/// Finishes the pending sets among `sets` (a crash cut their calls off); whether there
/// were any, so the caller reads them again.
pub(super) fn finish_pendings(
    store: &Store,
    data_dir: &Path,
    sets: &[ChangeSet],
) -> Result<bool, ChangeError> {
    if !sets.iter().any(|s| s.status == ChangeSetStatus::Pending) {
        return Ok(false);
    }
    let blobs = blob_store(data_dir)?;
    let opts = scan_options(&load_settings(store)?);
    for s in sets.iter().filter(|s| s.status == ChangeSetStatus::Pending) {
        if session_is_worked(store, s.session_id)? {
            return Err(ChangeError::Busy(s.task_id));
        }
        finish_pending(store, &blobs, &opts, s)?;
    }
    Ok(true)
}

/// Whether a live process holds the session's lease (its run may still be changing files).
pub(super) fn session_is_worked(store: &Store, session_id: i64) -> Result<bool, ChangeError> {
    let holder = store.read(|c| leases::holder(c, session_id))?;
    Ok(holder
        .is_some_and(|(_, pid)| pid != i64::from(std::process::id()) && leases::pid_alive(pid)))
}

pub(super) fn guard_for(data_dir: &Path, workspace: &str) -> Result<WorkspaceGuard, ChangeError> {
    WorkspaceGuard::new(workspace, &forbidden_dirs(data_dir))
        .map_err(|e| ChangeError::Workspace(workspace.to_owned(), e.to_string()))
}

/// What undos still in effect (applied, not redone) reverted among some call sets.
#[derive(Debug, Default)]
pub(super) struct Undone {
    /// Per path: the latest such undo that changed it (of whole sets or of files alone).
    by_path: BTreeMap<String, i64>,
    /// Per task and path: the undo of those files alone that reverted it.
    file_undos: BTreeMap<(i64, String), i64>,
}

impl Undone {
    /// Reads the undos of the sets' session that cover them.
    pub(super) fn of(store: &Store, sets: &[ChangeSet]) -> Result<Undone, ChangeError> {
        let Some(first) = sets.first() else {
            return Ok(Undone::default());
        };
        let undos = store.read(|c| change_sets::in_session(c, first.session_id))?;
        Ok(Undone::among(&undos, sets))
    }

    /// `undos`: any of the session's sets (the others are skipped).
    fn among(undos: &[ChangeSet], sets: &[ChangeSet]) -> Undone {
        let mut out = Undone::default();
        for u in undos.iter().filter(|u| {
            u.kind == ChangeSetKind::Undo
                && u.status == ChangeSetStatus::Applied
                && u.undone_by.is_none()
        }) {
            let files = matches!(UndoScope::of(u), UndoScope::Files { .. });
            let covers = if files {
                sets.iter().any(|s| s.task_id == u.task_id)
            } else {
                sets.iter().any(|s| u.reverts.contains(&s.id))
            };
            if !covers {
                continue;
            }
            for c in &u.changes {
                out.by_path.insert(c.path.clone(), u.id);
                if files {
                    out.file_undos.insert((u.task_id, c.path.clone()), u.id);
                }
            }
        }
        out
    }

    fn path(&self, path: &str) -> Option<i64> {
        self.by_path.get(path).copied()
    }

    /// The changes of `set` an undo of files alone has not already reverted: what an undo
    /// of whole sets (a task, a session's tasks, a rewind) still has to revert.
    pub(super) fn left_in(&self, set: &ChangeSet) -> Vec<Change> {
        set.changes
            .iter()
            .filter(|c| !self.file_undos.contains_key(&(set.task_id, c.path.clone())))
            .cloned()
            .collect()
    }
}

/// Undoes `target`'s changes (see the module doc).
pub fn undo(
    store: &Store,
    data_dir: &Path,
    target: &Target,
    opts: Options,
) -> Result<UndoReport, ChangeError> {
    let sets = call_sets(store, data_dir, target)?;
    let what = target.describe();
    if sets.is_empty() {
        return Err(ChangeError::Nothing(what));
    }
    let undone = Undone::of(store, &sets)?;
    let already = || ChangeError::AlreadyUndone {
        what: what.clone(),
        by: sets
            .iter()
            .filter_map(|s| s.undone_by)
            .chain(undone.by_path.values().copied())
            .max()
            .unwrap_or_default(),
    };
    if let Target::Files { task_id, paths } = target {
        files_undoable(*task_id, paths, &sets, &undone)?;
    }
    // Which sets are still in effect is known per path for a file undo (checked above:
    // a set undone as a whole may have had such a path brought back by a redo).
    let active: Vec<&ChangeSet> = match target {
        Target::Files { .. } => sets.iter().collect(),
        _ => sets.iter().filter(|s| s.undone_by.is_none()).collect(),
    };
    let Some(first) = active.first() else {
        return Err(already());
    };
    let transitions = transitions_of(target, &active, &undone, &what)?;
    if transitions.is_empty() {
        return Err(already());
    }
    let mut task_ids: Vec<i64> = active.iter().map(|s| s.task_id).collect();
    task_ids.dedup();
    let (scope, reverts) = match target {
        // Only partly reverted: no set is marked, the row names its paths.
        Target::Files { paths, .. } => (
            UndoScope::Files {
                paths: paths.clone(),
            },
            Vec::new(),
        ),
        _ => (UndoScope::Workspace, active.iter().map(|s| s.id).collect()),
    };
    let act = Act {
        kind: ChangeSetKind::Undo,
        session_id: first.session_id,
        task_id: first.task_id,
        workspace: &first.workspace,
        scope: scope.json(),
        reverts,
        brings_back: Vec::new(),
        conversation: Conversation::Untouched,
        message_what: match target {
            Target::Task {
                call_id: Some(c),
                task_id,
            } => format!("tool call {c} of task {task_id}"),
            Target::Files { .. } => what.clone(),
            _ => tasks_phrase(&task_ids),
        },
    };
    carry(store, data_dir, &act, &transitions, opts)
}

/// Each path of a file undo is one the task changed and that no undo still holds.
fn files_undoable(
    task_id: i64,
    paths: &[String],
    sets: &[ChangeSet],
    undone: &Undone,
) -> Result<(), ChangeError> {
    for p in paths {
        if !sets.iter().any(|s| s.changes.iter().any(|c| &c.path == p)) {
            return Err(ChangeError::Nothing(format!("{p} in task {task_id}")));
        }
        if let Some(by) = undone.path(p) {
            return Err(ChangeError::AlreadyUndone {
                what: format!("{p} of task {task_id}"),
                by,
            });
        }
    }
    Ok(())
}

/// The inverted transitions an undo of `target` applies: a file undo's paths from every
/// set; for any other undo, what file undos have not already reverted.
fn transitions_of(
    target: &Target,
    active: &[&ChangeSet],
    undone: &Undone,
    what: &str,
) -> Result<Vec<Change>, ChangeError> {
    let kept: Vec<(&ChangeSet, Vec<Change>)> = active
        .iter()
        .map(|s| {
            let left = match target {
                Target::Files { paths, .. } => s
                    .changes
                    .iter()
                    .filter(|c| paths.contains(&c.path))
                    .cloned()
                    .collect(),
                _ => undone.left_in(s),
            };
            (*s, left)
        })
        .filter(|(_, left)| !left.is_empty())
        .collect();
    if kept
        .iter()
        .any(|(s, _)| s.status == ChangeSetStatus::Pruned)
    {
        return Err(ChangeError::Pruned(what.to_owned()));
    }
    Ok(diff::collapse(kept.iter().map(|(_, c)| c.as_slice()))
        .iter()
        .map(Change::inverted)
        .collect())
}

/// Redoes an undo: its transitions the other way round, with the same conflict checks.
pub fn redo(
    store: &Store,
    data_dir: &Path,
    undo_id: i64,
    opts: Options,
) -> Result<UndoReport, ChangeError> {
    let u = store
        .read(|c| change_sets::get(c, undo_id))?
        .filter(|u| u.kind == ChangeSetKind::Undo && u.status == ChangeSetStatus::Applied)
        .ok_or(ChangeError::NotAnUndo(undo_id))?;
    if let Some(by) = u.undone_by {
        return Err(ChangeError::AlreadyRedone { undo: undo_id, by });
    }
    let reverted = store.read(|c| {
        u.reverts
            .iter()
            .map(|id| change_sets::get(c, *id))
            .collect::<Result<Vec<_>, _>>()
    })?;
    let mut task_ids: Vec<i64> = reverted.iter().flatten().map(|s| s.task_id).collect();
    task_ids.dedup();
    let transitions: Vec<Change> = u.changes.iter().map(Change::inverted).collect();
    let act = Act {
        kind: ChangeSetKind::Redo,
        session_id: u.session_id,
        task_id: u.task_id,
        workspace: &u.workspace,
        scope: UndoScope::Workspace.json(),
        reverts: vec![u.id],
        brings_back: u.reverts.clone(),
        conversation: match u.rewind_to {
            Some(_) => Conversation::BringBack { rewind: u.id },
            None => Conversation::Untouched,
        },
        message_what: tasks_phrase(&task_ids),
    };
    carry(store, data_dir, &act, &transitions, opts)
}

fn tasks_phrase(ids: &[i64]) -> String {
    match ids {
        [one] => format!("task {one}"),
        many => format!(
            "tasks {}",
            many.iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// What an undo or redo does to the conversation besides the files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Conversation {
    /// A plain undo or redo: a `system` entry tells the model, nothing else changes.
    Untouched,
    /// A rewind: the session's entries from this person's message on are set aside.
    SetAside { from_entry: i64 },
    /// The redo of the rewind `rewind`: what it set aside is back (and its note goes).
    BringBack { rewind: i64 },
}

/// An undo or a redo about to be carried out.
pub(super) struct Act<'a> {
    pub kind: ChangeSetKind,
    pub session_id: i64,
    pub task_id: i64,
    pub workspace: &'a str,
    /// The row's scope: JSON of `UndoScope`.
    pub scope: String,
    /// Sets this one reverts (marked `undone_by` it).
    pub reverts: Vec<i64>,
    /// Sets a redo brings back (their `undone_by` cleared).
    pub brings_back: Vec<i64>,
    pub conversation: Conversation,
    pub message_what: String,
}

/// Plans, and unless dry or refused, journals, applies and tells the session. The
/// journal entry (the set `applying`, with the conversation's side already done) commits
/// before any file is touched, so a crash in between is completed at the next start
/// (the `recover` of the rewind module).
pub(super) fn carry(
    store: &Store,
    data_dir: &Path,
    act: &Act<'_>,
    transitions: &[Change],
    opts: Options,
) -> Result<UndoReport, ChangeError> {
    let guard = guard_for(data_dir, act.workspace)?;
    let blobs = blob_store(data_dir)?;
    let planned = restore::plan(&guard, &blobs, transitions)?;
    let mut report = report_of(&planned, &blobs, act.kind, opts);
    if opts.dry_run || (!report.conflicts.is_empty() && !opts.keep_theirs) {
        return Ok(report);
    }
    let kept_changes: Vec<Change> = planned
        .iter()
        .filter(|p| !matches!(p.step, Step::Conflict { .. }))
        .map(|p| p.change.clone())
        .collect();
    let id = store.write(|tx| {
        let id = change_sets::insert(
            tx,
            &change_sets::NewSet {
                session_id: act.session_id,
                task_id: act.task_id,
                call_id: None,
                kind: act.kind,
                status: ChangeSetStatus::Applying,
                workspace: act.workspace,
                scope: &act.scope,
                pre_index: None,
                changes: &kept_changes,
                reverts: &act.reverts,
            },
        )?;
        match act.conversation {
            Conversation::Untouched => {}
            Conversation::SetAside { from_entry } => {
                change_sets::set_rewind_to(tx, id, from_entry)?;
                entries::rewind(tx, act.session_id, from_entry, id)?;
            }
            Conversation::BringBack { rewind } => {
                entries::unrewind(tx, rewind)?;
                entries::rewind_note(tx, act.session_id, rewind, id)?;
            }
        }
        Ok(id)
    })?;
    restore::apply(&guard, &blobs, &planned)?;
    finish(store, act, id, &kept_changes, &report.kept)?;
    report.id = Some(id);
    Ok(report)
}

/// The end of an undo or redo whose files are done: the sets are marked and the model is
/// told, in one write.
pub(super) fn finish(
    store: &Store,
    act: &Act<'_>,
    id: i64,
    changes: &[Change],
    kept: &[String],
) -> Result<(), ChangeError> {
    let message = model_message(act, changes, kept);
    store.write(|tx| {
        change_sets::set_status(tx, id, ChangeSetStatus::Applied)?;
        change_sets::set_undone_by(tx, &act.reverts, Some(id))?;
        change_sets::set_undone_by(tx, &act.brings_back, None)?;
        entries::append(
            tx,
            act.session_id,
            None,
            &EntryKind::System,
            &serde_json::json!({ "text": message, "change_set": id }),
        )?;
        Ok(())
    })?;
    Ok(())
}

/// What the model reads at the session's next turn.
fn model_message(act: &Act<'_>, changes: &[Change], kept: &[String]) -> String {
    let files: Vec<&str> = changes
        .iter()
        .filter(|c| {
            !matches!(
                (&c.before, &c.after),
                (Some(Node::Dir { .. }) | None, Some(Node::Dir { .. }) | None)
            )
        })
        .map(|c| c.path.as_str())
        .collect();
    let mut text = match (act.conversation, act.kind) {
        (Conversation::SetAside { .. }, _) => format!(
            "The person rewound the conversation to before one of their messages: that message and everything after it were set aside. {} file(s) were restored to how they were at that point: {}.",
            files.len(),
            files.join(", ")
        ),
        (Conversation::BringBack { rewind }, _) => format!(
            "The person undid rewind {rewind}: the conversation is back as it was, and {} file(s) are again as the agent left them: {}.",
            files.len(),
            files.join(", ")
        ),
        (Conversation::Untouched, ChangeSetKind::Redo) => format!(
            "The person re-applied the changes of {}: {} file(s) are now as they were before: {}.",
            act.message_what,
            files.len(),
            files.join(", ")
        ),
        (Conversation::Untouched, _) => format!(
            "The person reverted the changes of {}: {} file(s) are now as they were before: {}.",
            act.message_what,
            files.len(),
            files.join(", ")
        ),
    };
    if !kept.is_empty() {
        text.push_str(&format!(
            " They kept their own versions of: {}.",
            kept.join(", ")
        ));
    }
    if !matches!(act.conversation, Conversation::BringBack { .. }) {
        text.push_str(" Do not assume those changes are still there.");
    }
    text
}

pub(super) fn report_of(
    planned: &[Planned],
    blobs: &BlobStore,
    kind: ChangeSetKind,
    opts: Options,
) -> UndoReport {
    let mut r = UndoReport {
        id: None,
        kind,
        dry_run: opts.dry_run,
        restored: Vec::new(),
        unchanged: Vec::new(),
        conflicts: Vec::new(),
        kept: Vec::new(),
    };
    for p in planned {
        match &p.step {
            Step::Apply => r.restored.push(p.change.path.clone()),
            Step::Already => r.unchanged.push(p.change.path.clone()),
            Step::Conflict { current } => {
                r.conflicts.push(Conflict {
                    path: p.change.path.clone(),
                    original: p.change.after.clone(),
                    task_left: p.change.before.clone(),
                    current: current.clone(),
                    diff_since: diff::text_diff(
                        blobs,
                        &p.change.path,
                        p.change.before.as_ref(),
                        current.as_ref(),
                    ),
                });
                if opts.keep_theirs {
                    r.kept.push(p.change.path.clone());
                }
            }
        }
    }
    r
}

/// The changes of a target, with diffs, and whether they can be undone now.
pub fn list(store: &Store, data_dir: &Path, target: &Target) -> Result<ChangeList, ChangeError> {
    let sets = call_sets(store, data_dir, target)?;
    let blobs = blob_store(data_dir)?;
    let collapsed = diff::collapse(sets.iter().map(|s| s.changes.as_slice()));
    let call_of = |path: &str| {
        sets.iter()
            .rev()
            .find(|s| s.changes.iter().any(|c| c.path == path))
            .and_then(|s| s.call_id.clone())
    };
    let mut files = diff::file_changes(&collapsed, &blobs, &call_of);
    let undone = Undone::of(store, &sets)?;
    for f in &mut files {
        f.undone_by = undone
            .path(&f.path)
            .or_else(|| f.from.as_deref().and_then(|p| undone.path(p)));
    }
    let (mut undoable, mut undone_by) = undoable(&sets, files.is_empty());
    // Every file undone one by one: the task is undone too (its last file undo is the
    // one a redo takes back first).
    if undoable == Undoable::Yes && files.iter().all(|f| f.undone_by.is_some()) {
        undoable = Undoable::Undone;
        undone_by = files.iter().filter_map(|f| f.undone_by).max();
    }
    let mut task_ids: Vec<i64> = sets.iter().map(|s| s.task_id).collect();
    task_ids.dedup();
    Ok(ChangeList {
        task_ids,
        files,
        undoable,
        undone_by,
        set_ids: sets.iter().map(|s| s.id).collect(),
    })
}

fn undoable(sets: &[ChangeSet], no_files: bool) -> (Undoable, Option<i64>) {
    if sets.is_empty() || no_files {
        return (Undoable::Nothing, None);
    }
    if sets.iter().any(|s| s.status == ChangeSetStatus::Pruned) {
        return (Undoable::Pruned, None);
    }
    if sets.iter().all(|s| s.undone_by.is_some()) {
        return (
            Undoable::Undone,
            sets.iter().filter_map(|s| s.undone_by).max(),
        );
    }
    (Undoable::Yes, None)
}

/// Per task of a session: how many files its calls changed and whether it can be undone
/// (for "N files changed" under each answer). Tasks without changes are left out.
pub fn summaries(store: &Store, session_id: i64) -> Result<Vec<TaskChanges>, ChangeError> {
    let (sets, undos) = store.read(|c| {
        Ok((
            change_sets::of_session(c, session_id, 0, ChangeSetKind::Call)?,
            change_sets::in_session(c, session_id)?,
        ))
    })?;
    let mut out: Vec<TaskChanges> = Vec::new();
    let mut by_task: std::collections::BTreeMap<i64, Vec<ChangeSet>> = Default::default();
    for s in sets {
        by_task.entry(s.task_id).or_default().push(s);
    }
    for (task_id, sets) in by_task {
        let collapsed = diff::collapse(sets.iter().map(|s| s.changes.as_slice()));
        let file_paths: Vec<&str> = collapsed
            .iter()
            .filter(|c| {
                matches!(c.before, Some(Node::File { .. } | Node::Symlink { .. }))
                    || matches!(c.after, Some(Node::File { .. } | Node::Symlink { .. }))
            })
            .map(|c| c.path.as_str())
            .collect();
        let files = file_paths.len() as u32;
        let pending = sets.iter().any(|s| s.status == ChangeSetStatus::Pending);
        let (mut undoable, mut undone_by) = undoable(&sets, files == 0 && !pending);
        // Every file undone one by one: the task reads as undone, as in its change list.
        let undone = Undone::among(&undos, &sets);
        if undoable == Undoable::Yes && file_paths.iter().all(|p| undone.path(p).is_some()) {
            undoable = Undoable::Undone;
            undone_by = file_paths.iter().filter_map(|p| undone.path(p)).max();
        }
        out.push(TaskChanges {
            task_id,
            files,
            undoable,
            undone_by,
        });
    }
    Ok(out)
}

/// One task's line under its answer.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TaskChanges {
    pub task_id: i64,
    pub files: u32,
    pub undoable: Undoable,
    pub undone_by: Option<i64>,
}
