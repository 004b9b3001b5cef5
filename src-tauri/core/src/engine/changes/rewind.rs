//! Rewind: going back to before one of the person's messages, conversation and files in
//! one step. It is an undo (so `redo` takes it back) of every call made after that
//! message, with the conversation's side in the same journal entry:
//! - the entries from the message on are set aside (`rewound_by`): still in the history,
//!   the exports and search, never sent to the model again;
//! - the call sets of the tool calls those entries hold are folded, inverted, planned
//!   against the disk (a file changed since refuses, or is kept with `keep_theirs`) and
//!   applied;
//! - a `system` note lists the restored files for the model's next turn.
//!
//! The journal entry (the undo set `applying`, the entries already set aside) commits
//! before any file is touched; a crash after it is completed by [`recover`] at the next
//! start, so a rewind is never left half done.
use std::collections::HashSet;
use std::path::Path;

use pocketpilot_changes::diff;
use pocketpilot_changes::restore::{self, Step};
use pocketpilot_protocol::changes::{Change, ChangeSetKind, ChangeSetStatus, UndoReport};
use pocketpilot_protocol::EntryKind;
use serde::Serialize;

use super::undo::{self, Act, Conversation, Options};
use super::{blob_store, ChangeError};
use crate::store::{change_sets, entries, leases, tasks, ChangeSet, Entry, Store};

/// What a rewind did (or, dry, would do).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RewindReport {
    pub session_id: i64,
    /// The person's message the conversation went back to (set aside with what follows).
    pub to_entry: i64,
    /// The entries set aside (or, dry, to set aside).
    pub set_aside: Vec<i64>,
    /// The files: what was restored, refused or kept. Its `id` is the rewind's id (an
    /// undo: `pocketpilot redo ID` takes the rewind back).
    pub files: UndoReport,
}

/// The entries a rewind to `to_entry` sets aside, checked: the entry is one of the
/// person's messages in the session, not set aside already.
fn entries_after(store: &Store, session_id: i64, to_entry: i64) -> Result<Vec<Entry>, ChangeError> {
    let (entry, all) =
        store.read(|c| Ok((entries::get(c, to_entry)?, entries::list(c, session_id)?)))?;
    let entry = entry
        .filter(|e| e.session_id == session_id && e.kind == EntryKind::User)
        .ok_or(ChangeError::NotAMessage {
            session_id,
            entry: to_entry,
        })?;
    if let Some(by) = entry.rewound_by {
        return Err(ChangeError::AlreadyRewound {
            entry: to_entry,
            by,
        });
    }
    Ok(all
        .into_iter()
        .filter(|e| e.id >= to_entry && e.rewound_by.is_none())
        .collect())
}

/// The (task, call id) of every tool call the entries hold.
fn calls_of(entries: &[Entry]) -> HashSet<(i64, String)> {
    let mut out = HashSet::new();
    for e in entries.iter().filter(|e| e.kind == EntryKind::Assistant) {
        let (Some(task_id), Some(calls)) = (
            e.task_id,
            e.content.get("tool_calls").and_then(|c| c.as_array()),
        ) else {
            continue;
        };
        for id in calls.iter().filter_map(|c| c.get("id")?.as_str()) {
            out.insert((task_id, id.to_owned()));
        }
    }
    out
}

/// The call sets of the calls made after the point, oldest first (pending ones a crash
/// cut off are finished first).
fn sets_after(
    store: &Store,
    data_dir: &Path,
    session_id: i64,
    calls: &HashSet<(i64, String)>,
) -> Result<Vec<ChangeSet>, ChangeError> {
    let read = |store: &Store| -> Result<Vec<ChangeSet>, ChangeError> {
        let all = store.read(|c| change_sets::of_session(c, session_id, 0, ChangeSetKind::Call))?;
        Ok(all
            .into_iter()
            .filter(|s| {
                s.call_id
                    .as_ref()
                    .is_some_and(|id| calls.contains(&(s.task_id, id.clone())))
            })
            .collect())
    };
    let sets = read(store)?;
    if undo::finish_pendings(store, data_dir, &sets)? {
        read(store)
    } else {
        Ok(sets)
    }
}

/// Rewinds `session_id` to before the person's message `to_entry` (see the module doc).
/// Refused while one of the session's tasks is open; a file changed since refuses the
/// whole rewind (the report lists the conflicts, nothing is touched) unless `keep_theirs`.
pub fn rewind(
    store: &Store,
    data_dir: &Path,
    session_id: i64,
    to_entry: i64,
    opts: Options,
) -> Result<RewindReport, ChangeError> {
    let session = store.read(|c| crate::store::sessions::get(c, session_id))?;
    if let Some(open) = store.read(|c| tasks::open_for_session(c, session_id))? {
        return Err(ChangeError::SessionOpen {
            session_id,
            task_id: open.id,
        });
    }
    // The session's lease, held for the whole rewind: no run starts meanwhile, and another
    // process that opens the store leaves this rewind alone (its holder is alive) instead
    // of completing it as if a crash had cut it off.
    let holder = format!("rewind-{}-{}", std::process::id(), uuid::Uuid::now_v7());
    let pid = i64::from(std::process::id());
    if !store.write(|tx| leases::acquire(tx, session_id, &holder, pid, LEASE_MS))? {
        let task_id = store
            .read(|c| tasks::last_for_session(c, session_id, 1))?
            .first()
            .map(|t| t.id)
            .unwrap_or_default();
        return Err(ChangeError::SessionOpen {
            session_id,
            task_id,
        });
    }
    let done = rewind_held(
        store,
        data_dir,
        session_id,
        to_entry,
        &session.workspace,
        opts,
    );
    if let Err(e) = store.write(|tx| leases::release(tx, session_id, &holder)) {
        tracing::warn!(session_id, error = %e, "a rewind's lease could not be released (it expires)");
    }
    done
}

/// How long a rewind's lease lasts unless released: long enough for any rewind; a crash
/// frees it sooner (its holder's process is gone).
const LEASE_MS: i64 = 30 * 60 * 1000;

fn rewind_held(
    store: &Store,
    data_dir: &Path,
    session_id: i64,
    to_entry: i64,
    session_workspace: &str,
    opts: Options,
) -> Result<RewindReport, ChangeError> {
    let after = entries_after(store, session_id, to_entry)?;
    let calls = calls_of(&after);
    let sets = sets_after(store, data_dir, session_id, &calls)?;
    let active: Vec<&ChangeSet> = sets.iter().filter(|s| s.undone_by.is_none()).collect();
    if active.iter().any(|s| s.status == ChangeSetStatus::Pruned) {
        return Err(ChangeError::Pruned(format!(
            "session {session_id} after entry {to_entry}"
        )));
    }
    // Files already undone one by one are as before their task: left out, so the rewind's
    // redo does not bring them back while their own undo still holds.
    let undone = undo::Undone::of(store, &sets)?;
    let left: Vec<Vec<Change>> = active.iter().map(|s| undone.left_in(s)).collect();
    let transitions: Vec<Change> = diff::collapse(left.iter().map(Vec::as_slice))
        .iter()
        .map(Change::inverted)
        .collect();
    let task_id = after
        .iter()
        .find_map(|e| e.task_id)
        .or_else(|| active.first().map(|s| s.task_id))
        .ok_or(ChangeError::NotAMessage {
            session_id,
            entry: to_entry,
        })?;
    // The rewind is recorded in the session's workspace (the journal's sets name it too).
    let workspace = active
        .first()
        .map(|s| s.workspace.clone())
        .unwrap_or_else(|| session_workspace.to_owned());
    let act = Act {
        kind: ChangeSetKind::Undo,
        session_id,
        task_id,
        workspace: &workspace,
        scope: "{\"type\":\"workspace\"}".into(),
        reverts: active.iter().map(|s| s.id).collect(),
        brings_back: Vec::new(),
        conversation: Conversation::SetAside {
            from_entry: to_entry,
        },
        message_what: format!("session {session_id} after entry {to_entry}"),
    };
    let files = undo::carry(store, data_dir, &act, &transitions, opts)?;
    Ok(RewindReport {
        session_id,
        to_entry,
        set_aside: after.iter().map(|e| e.id).collect(),
        files,
    })
}

/// Completes the undos, redos and rewinds a crash cut off between their journal entry
/// and their end: what is still as the journal left it is restored, what already is as
/// it should be is left, and the sets are marked and the session told. A path someone
/// changed meanwhile is kept as it is (and named in the note). Sessions a live process is
/// working in are left for later. Returns how many were completed.
pub fn recover(store: &Store, data_dir: &Path) -> Result<usize, ChangeError> {
    let cut = store.read(change_sets::applying)?;
    let mut done = 0;
    for set in cut {
        if undo::session_is_worked(store, set.session_id)? {
            continue;
        }
        let guard = undo::guard_for(data_dir, &set.workspace)?;
        let blobs = blob_store(data_dir)?;
        let paths: Vec<&str> = set.changes.iter().map(|c| c.path.as_str()).collect();
        restore::remove_leftovers(&guard, &paths)?;
        let planned = restore::plan(&guard, &blobs, &set.changes)?;
        let kept: Vec<String> = planned
            .iter()
            .filter(|p| matches!(p.step, Step::Conflict { .. }))
            .map(|p| p.change.path.clone())
            .collect();
        restore::apply(&guard, &blobs, &planned)?;
        let brings_back = match set.kind {
            ChangeSetKind::Redo => match set.reverts.first() {
                Some(u) => store
                    .read(|c| change_sets::get(c, *u))?
                    .map(|u| u.reverts)
                    .unwrap_or_default(),
                None => Vec::new(),
            },
            _ => Vec::new(),
        };
        let conversation = match (set.kind, set.rewind_to) {
            (ChangeSetKind::Undo, Some(from_entry)) => Conversation::SetAside { from_entry },
            (ChangeSetKind::Redo, _) => {
                let reverted = match set.reverts.first() {
                    Some(u) => store.read(|c| change_sets::get(c, *u))?,
                    None => None,
                };
                match reverted {
                    Some(u) if u.rewind_to.is_some() => Conversation::BringBack { rewind: u.id },
                    _ => Conversation::Untouched,
                }
            }
            _ => Conversation::Untouched,
        };
        let act = Act {
            kind: set.kind,
            session_id: set.session_id,
            task_id: set.task_id,
            workspace: &set.workspace,
            scope: set.scope.clone(),
            reverts: set.reverts.clone(),
            brings_back,
            conversation,
            message_what: format!("task {}", set.task_id),
        };
        undo::finish(store, &act, set.id, &set.changes, &kept)?;
        tracing::info!(
            set = set.id,
            session_id = set.session_id,
            "an undo cut off by a crash was completed"
        );
        done += 1;
    }
    Ok(done)
}
