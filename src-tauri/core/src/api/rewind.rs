//! Going back to one of the person's messages: rewinding a session (conversation and files
//! together, see `engine::changes::rewind`) or forking a new session from there.
//!
//! A fork copies the transcript before the message (the entries the model would see, as
//! new entries of the new session, so the two sessions never share a row) and gives the
//! new session a place to work: a `git worktree` on a new branch (the workspace's
//! uncommitted changes to tracked files carried over, untracked files not), a copy of the
//! folder (`cp --reflink=auto -a`: copy-on-write where the filesystem has it), or the same
//! folder. The new session is told where it came from in a `system` note.
use std::path::{Path, PathBuf};
use std::process::Command;

use pocketpilot_protocol::EntryKind;
use serde::Serialize;

use crate::api::service::{Result, Runtime, RuntimeError};
use crate::engine::changes::rewind::{self, RewindReport};
use crate::engine::changes::undo::Options;
use crate::store::{entries, sessions, tasks};

/// Where a fork works.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum ForkPlace {
    /// A `git worktree` on a new branch (the workspace must be a git repository).
    Worktree,
    /// A copy of the workspace folder (reflinks where the filesystem has them).
    Copy,
    /// The same folder as the original session.
    Same,
}

/// What a fork made.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Fork {
    pub session_id: i64,
    pub from_session: i64,
    pub at_entry: i64,
    pub place: ForkPlace,
    pub workspace: String,
    /// The new branch, for a worktree.
    pub branch: Option<String>,
    /// Entries copied into the new session.
    pub entries: u32,
}

impl Runtime {
    /// Rewinds a session to before the person's message `to_entry`.
    pub fn rewind(&self, session_id: i64, to_entry: i64, opts: Options) -> Result<RewindReport> {
        let report = rewind::rewind(&self.store, self.data_dir(), session_id, to_entry, opts)?;
        if report.files.id.is_some() {
            self.feed.announce(crate::engine::feed::Change::Refresh);
        }
        Ok(report)
    }

    /// Completes undos, redos and rewinds a crash cut off (see `rewind::recover`). Run at
    /// open; a failure is logged and tried again at the next start.
    pub(crate) fn recover_cut_undos(&self) {
        match rewind::recover(&self.store, self.data_dir()) {
            Ok(0) => {}
            Ok(n) => tracing::info!(n, "undos cut off by a crash were completed"),
            Err(e) => {
                tracing::warn!(error = %e, "an undo cut off by a crash could not be completed yet")
            }
        }
    }

    /// Forks `session_id` at the person's message `at_entry` (see the module doc).
    /// `path`: where the worktree or copy goes (default: beside the workspace,
    /// `<name>-fork-<new session>`).
    pub fn fork_session(
        &self,
        session_id: i64,
        at_entry: i64,
        place: ForkPlace,
        path: Option<PathBuf>,
    ) -> Result<Fork> {
        let (session, entry, seen) = self.store.read(|c| {
            Ok((
                sessions::get(c, session_id)?,
                entries::get(c, at_entry)?,
                entries::since_head(c, session_id)?,
            ))
        })?;
        if !entry.is_some_and(|e| {
            e.session_id == session_id && e.kind == EntryKind::User && e.rewound_by.is_none()
        }) {
            return Err(RuntimeError::InvalidArguments(format!(
                "entry {at_entry} is not one of the person's messages in session {session_id} (`pocketpilot session show {session_id}` lists them)"
            )));
        }
        if let Some(open) = self
            .store
            .read(|c| tasks::open_for_session(c, session_id))?
        {
            return Err(RuntimeError::SessionActive {
                session_id,
                task_id: open.id,
                status: open.status,
            });
        }
        // The new session's id names its folder, so the row comes first; a failed copy
        // takes it away again.
        let title = format!("{} (fork)", session.title);
        let new_id = self
            .store
            .write(|tx| sessions::insert(tx, &title, &session.workspace))?;
        let made = place_for(&session.workspace, new_id, place, path);
        let (workspace, branch) = match made {
            Ok(m) => m,
            Err(e) => {
                self.store
                    .write(|tx| sessions::delete(tx, new_id).map(|_| ()))?;
                return Err(e);
            }
        };
        let kept: Vec<_> = seen
            .into_iter()
            .filter(|e| e.id < at_entry && e.kind != EntryKind::Compaction)
            .collect();
        let note = fork_note(session_id, at_entry, &workspace, place, branch.as_deref());
        let n = u32::try_from(kept.len()).unwrap_or(u32::MAX);
        self.store.write(|tx| {
            sessions::set_workspace(tx, new_id, &workspace)?;
            for e in &kept {
                entries::append(tx, new_id, None, &e.kind, &e.content)?;
            }
            entries::append(
                tx,
                new_id,
                None,
                &EntryKind::System,
                &serde_json::json!({ "text": note, "forked_from": session_id, "at_entry": at_entry }),
            )?;
            Ok(())
        })?;
        self.feed.announce(crate::engine::feed::Change::Refresh);
        Ok(Fork {
            session_id: new_id,
            from_session: session_id,
            at_entry,
            place,
            workspace,
            branch,
            entries: n,
        })
    }
}

/// The new session's first word to the model: where it came from and where it works.
fn fork_note(
    session_id: i64,
    at_entry: i64,
    workspace: &str,
    place: ForkPlace,
    branch: Option<&str>,
) -> String {
    let place = match place {
        ForkPlace::Worktree => format!(
            ", a git worktree on the branch {}",
            branch.unwrap_or_default()
        ),
        ForkPlace::Copy => ", a copy of the original workspace".to_owned(),
        ForkPlace::Same => ", the same folder as the original session".to_owned(),
    };
    format!(
        "This session is a fork of session {session_id}, made before one of the person's messages (entry {at_entry}). It works in {workspace}{place}; its files are as they were when it was forked."
    )
}

fn fork_error(what: impl std::fmt::Display) -> RuntimeError {
    RuntimeError::InvalidArguments(format!("the fork's workspace could not be made: {what}"))
}

/// Makes the fork's folder; returns it (absolute) and the worktree's branch.
fn place_for(
    workspace: &str,
    new_id: i64,
    place: ForkPlace,
    path: Option<PathBuf>,
) -> Result<(String, Option<String>)> {
    let ws = Path::new(workspace);
    if place == ForkPlace::Same {
        return Ok((workspace.to_owned(), None));
    }
    let dest = match path {
        Some(p) if p.is_absolute() => p,
        Some(p) => std::env::current_dir().map_err(fork_error)?.join(p),
        None => {
            let name = ws
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "workspace".into());
            ws.with_file_name(format!("{name}-fork-{new_id}"))
        }
    };
    if dest.exists() {
        return Err(fork_error(format!("{} already exists", dest.display())));
    }
    let branch = match place {
        ForkPlace::Worktree => {
            let branch = format!("pocketpilot/fork-{new_id}");
            git_worktree(ws, &dest, &branch)?;
            Some(branch)
        }
        ForkPlace::Copy => {
            run(Command::new("cp")
                .arg("--reflink=auto")
                .arg("-a")
                .arg("--")
                .arg(ws)
                .arg(&dest))?;
            None
        }
        ForkPlace::Same => None,
    };
    Ok((dest.display().to_string(), branch))
}

/// `git worktree add -b BRANCH DEST HEAD`, then the workspace's uncommitted changes to
/// tracked files (`git stash create` makes a commit of them without touching the
/// workspace, its index or its refs) applied in the new worktree.
fn git_worktree(ws: &Path, dest: &Path, branch: &str) -> Result<()> {
    let git = |dir: &Path| {
        let mut c = Command::new("git");
        c.arg("-C").arg(dir);
        c
    };
    let inside = git(ws)
        .args(["rev-parse", "--is-inside-work-tree"])
        .output()
        .map_err(fork_error)?;
    if !inside.status.success() {
        return Err(fork_error(format!(
            "{} is not a git repository (use --copy)",
            ws.display()
        )));
    }
    let stash = git(ws)
        .args(["stash", "create"])
        .output()
        .map_err(fork_error)?;
    let stash = String::from_utf8_lossy(&stash.stdout).trim().to_owned();
    run(git(ws)
        .args(["worktree", "add", "-q", "-b", branch])
        .arg(dest)
        .arg("HEAD"))?;
    if !stash.is_empty() {
        run(git(dest).args(["stash", "apply", "-q", &stash]))?;
    }
    Ok(())
}

fn run(c: &mut Command) -> Result<()> {
    let out = c.output().map_err(fork_error)?;
    if out.status.success() {
        Ok(())
    } else {
        Err(fork_error(String::from_utf8_lossy(&out.stderr).trim()))
    }
}
