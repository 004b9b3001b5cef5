//! Forking a session at one of the person's messages: a new session whose transcript is
//! the old one before that message, working in a place of its own.
//!
//! The transcript before the message (the entries the model would see) is copied as new
//! entries of the new session, so the two sessions never share a row. The place is the
//! caller's choice or, when it names none, the runtime's (`choose`): a workspace inside a
//! git work tree gets a `git worktree` on a new branch `pocketpilot/fork-N` (HEAD plus the
//! uncommitted changes to tracked files; untracked files are not carried), any other a
//! copy of the folder (`cp --reflink=auto -a`: copy-on-write where the filesystem has it).
//! The same folder is only ever asked for. The new session is told where it came from in
//! a `system` note; the reply says which place was made, where, and on which branch.
use std::path::{Path, PathBuf};
use std::process::Command;

use pocketpilot_protocol::EntryKind;
use serde::Serialize;

use crate::api::service::{Result, Runtime, RuntimeError};
use crate::store::{entries, sessions, tasks};

/// Where a fork works.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum ForkPlace {
    /// A `git worktree` on a new branch (the workspace must be in a git work tree).
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
    /// The place made: the one asked for, or the runtime's choice when none was.
    pub place: ForkPlace,
    /// The new session's workspace (absolute).
    pub workspace: String,
    /// The new branch, for a worktree.
    pub branch: Option<String>,
    /// Entries copied into the new session.
    pub entries: u32,
}

impl Runtime {
    /// Forks `session_id` at the person's message `at_entry` (see the module doc).
    /// `place`: `None` lets the runtime choose (a worktree in a git work tree, else a
    /// copy). `path`: where the worktree or copy goes (default: beside the workspace, or
    /// beside the repository's top folder for a worktree, `<name>-fork-<new session>`).
    pub(crate) fn fork_session(
        &self,
        session_id: i64,
        at_entry: i64,
        place: Option<ForkPlace>,
        path: Option<PathBuf>,
    ) -> Result<Fork> {
        let (session, seen) = self.fork_point(session_id, at_entry)?;
        let plan = plan(Path::new(&session.workspace), place)?;
        // The new session's id names its folder, so the row comes first; a failed copy
        // takes it away again.
        let title = format!("{} (fork)", session.title);
        let new_id = self
            .store
            .write(|tx| sessions::insert(tx, &title, &session.workspace))?;
        let (workspace, branch) = match make(&plan, Path::new(&session.workspace), new_id, path) {
            Ok(m) => m,
            Err(e) => {
                self.store
                    .write(|tx| sessions::delete(tx, new_id).map(|_| ()))?;
                return Err(e);
            }
        };
        let place = plan.place();
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

    /// The session and the entries the model sees, when `at_entry` is one of the person's
    /// messages in it (not set aside) and no task of the session is open.
    fn fork_point(
        &self,
        session_id: i64,
        at_entry: i64,
    ) -> Result<(sessions::Session, Vec<entries::Entry>)> {
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
        Ok((session, seen))
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

/// A workspace's place in a git work tree: the work tree's top folder and the workspace's
/// path under it (empty at the top).
#[derive(Debug, Clone, PartialEq)]
struct Repo {
    top: PathBuf,
    prefix: PathBuf,
}

/// What a fork will make, decided before anything is made.
#[derive(Debug, Clone, PartialEq)]
enum Plan {
    Worktree(Repo),
    Copy,
    Same,
}

impl Plan {
    fn place(&self) -> ForkPlace {
        match self {
            Plan::Worktree(_) => ForkPlace::Worktree,
            Plan::Copy => ForkPlace::Copy,
            Plan::Same => ForkPlace::Same,
        }
    }
}

/// The place asked for, or the runtime's choice (`None`): a worktree when the workspace
/// can have one (see `repo_of`), a copy otherwise. A worktree asked for where it cannot be
/// is refused with the reason.
fn plan(ws: &Path, asked: Option<ForkPlace>) -> Result<Plan> {
    match asked {
        Some(ForkPlace::Same) => Ok(Plan::Same),
        Some(ForkPlace::Copy) => Ok(Plan::Copy),
        Some(ForkPlace::Worktree) => repo_of(ws)
            .map(Plan::Worktree)
            .map_err(|why| fork_error(format!("{why} (use --copy)"))),
        None => Ok(repo_of(ws).map_or(Plan::Copy, Plan::Worktree)),
    }
}

/// `git -C dir`, deaf to a `GIT_DIR` or `GIT_WORK_TREE` the app itself was started with
/// (from a git hook, say), which would point every command at another repository.
fn git(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.arg("-C")
        .arg(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE");
    c
}

/// Where `ws` sits in a git work tree, when a worktree of it would hold the workspace: git
/// runs, `ws` is inside a work tree, HEAD is a commit (a worktree starts from one), and
/// `ws` is in that commit (an untracked or ignored folder would not be in the worktree).
/// Otherwise why not, in words.
fn repo_of(ws: &Path) -> std::result::Result<Repo, String> {
    let shown = ws.display();
    let out = git(ws)
        .args(["rev-parse", "--show-toplevel", "--show-prefix"])
        .output()
        .map_err(|e| format!("git could not be run ({e})"))?;
    if !out.status.success() {
        return Err(format!("{shown} is not in a git work tree"));
    }
    let said = String::from_utf8_lossy(&out.stdout);
    let mut lines = said.lines();
    let top = PathBuf::from(lines.next().unwrap_or_default());
    let prefix = lines.next().unwrap_or_default().trim_end_matches('/');
    if !top.is_absolute() {
        return Err(format!("{shown} is not in a git work tree"));
    }
    let head = git(ws)
        .args(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])
        .output()
        .map_err(|e| format!("git could not be run ({e})"))?;
    if !head.status.success() {
        return Err(format!(
            "the repository at {} has no commit yet",
            top.display()
        ));
    }
    if !prefix.is_empty() {
        let tracked = git(&top)
            .args(["rev-parse", "--verify", "--quiet"])
            .arg(format!("HEAD:{prefix}"))
            .output()
            .map_err(|e| format!("git could not be run ({e})"))?;
        if !tracked.status.success() {
            return Err(format!(
                "{shown} is not in the last commit of the repository at {}",
                top.display()
            ));
        }
    }
    Ok(Repo {
        top,
        prefix: PathBuf::from(prefix),
    })
}

/// `<dir's name>-fork-<id>` beside `dir`.
fn beside(dir: &Path, new_id: i64) -> PathBuf {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "workspace".into());
    dir.with_file_name(format!("{name}-fork-{new_id}"))
}

/// Makes the fork's folder; returns the new workspace (absolute) and the worktree's branch.
fn make(
    plan: &Plan,
    ws: &Path,
    new_id: i64,
    path: Option<PathBuf>,
) -> Result<(String, Option<String>)> {
    let origin = match plan {
        Plan::Same => return Ok((ws.display().to_string(), None)),
        Plan::Worktree(repo) => repo.top.as_path(),
        Plan::Copy => ws,
    };
    let dest = match path {
        Some(p) if p.is_absolute() => p,
        Some(p) => std::env::current_dir().map_err(fork_error)?.join(p),
        None => beside(origin, new_id),
    };
    if dest.exists() {
        return Err(fork_error(format!("{} already exists", dest.display())));
    }
    match plan {
        Plan::Worktree(repo) => {
            let branch = format!("pocketpilot/fork-{new_id}");
            git_worktree(&repo.top, &dest, &branch)?;
            let workspace = if repo.prefix.as_os_str().is_empty() {
                dest
            } else {
                dest.join(&repo.prefix)
            };
            Ok((workspace.display().to_string(), Some(branch)))
        }
        Plan::Copy => {
            run(Command::new("cp")
                .arg("--reflink=auto")
                .arg("-a")
                .arg("--")
                .arg(ws)
                .arg(&dest))?;
            Ok((dest.display().to_string(), None))
        }
        Plan::Same => Ok((ws.display().to_string(), None)),
    }
}

/// `git worktree add -b BRANCH DEST HEAD`, then the work tree's uncommitted changes to
/// tracked files (`git stash create` makes a commit of them without touching the work
/// tree, its index or its refs) applied in the new worktree.
fn git_worktree(top: &Path, dest: &Path, branch: &str) -> Result<()> {
    // The stash commit only carries the changes over and is never on a branch, so whose
    // name it bears does not matter; naming one spares a machine without a git identity
    // the refusal, and a refusal is an error, never changes silently left behind.
    let stash = git(top)
        .args(["stash", "create"])
        .env("GIT_AUTHOR_NAME", "PocketPilot")
        .env("GIT_AUTHOR_EMAIL", "pocketpilot@localhost")
        .env("GIT_COMMITTER_NAME", "PocketPilot")
        .env("GIT_COMMITTER_EMAIL", "pocketpilot@localhost")
        .output()
        .map_err(fork_error)?;
    if !stash.status.success() {
        return Err(fork_error(String::from_utf8_lossy(&stash.stderr).trim()));
    }
    let stash = String::from_utf8_lossy(&stash.stdout).trim().to_owned();
    run(git(top)
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

crate::api::call::op! {
    /// Forks `session_id` at the person's message `at_entry` (see the module doc). `place`: `None`
    /// lets the runtime choose (a worktree in a git work tree, else a copy). `path`: where the
    /// worktree or copy goes (default: beside the workspace, or beside the repository's top folder
    /// for a worktree, `<name>-fork-<new session>`).
    #[derive(Debug, Clone)]
    ForkSession { session_id: i64, at_entry: i64, place: Option<ForkPlace>, path: Option<PathBuf> } -> Result<Fork>
        = |rt, op| rt.fork_session(op.session_id, op.at_entry, op.place, op.path);
}

#[cfg(test)]
#[path = "fork_tests.rs"]
mod tests;
