//! What the window may show or hand to the desktop's default app: a file a task changed,
//! inside that task's workspace; an instruction file in effect for a workspace. The check
//! is here, not in the shell or the page, so no caller can open an arbitrary path.
use std::path::{Component, Path, PathBuf};

use pocketpilot_protocol::InstructionText;

use crate::api::service::{Runtime, RuntimeError};
use crate::store::{sessions, tasks};

type Result<T, E = RuntimeError> = std::result::Result<T, E>;

/// `rel` under `root`, resolved: relative, plain components only (no `..`, not absolute),
/// an existing file or directory whose real path (symlinks followed) is still inside the
/// real root.
pub fn inside(root: &Path, rel: &str) -> Result<PathBuf> {
    let refuse = |why: &str| RuntimeError::NotOpenable {
        path: rel.to_owned(),
        why: why.to_owned(),
    };
    let p = Path::new(rel);
    if rel.is_empty() || p.is_absolute() {
        return Err(refuse("only a path inside the workspace, relative to it"));
    }
    if p.components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(refuse("`..` is not allowed"));
    }
    let root = std::fs::canonicalize(root).map_err(|e| refuse(&e.to_string()))?;
    let real = std::fs::canonicalize(root.join(p)).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => refuse("it does not exist (any more)"),
        _ => refuse(&e.to_string()),
    })?;
    if !real.starts_with(&root) {
        return Err(refuse("it leads outside the workspace"));
    }
    Ok(real)
}

impl Runtime {
    /// The real path of `rel` in the workspace of task `task_id` (see [`inside`]).
    pub(crate) fn task_file(&self, task_id: i64, rel: &str) -> Result<PathBuf> {
        let workspace = self.store.read(|c| {
            let t = tasks::get(c, task_id)?;
            Ok(sessions::get(c, t.session_id)?.workspace)
        })?;
        inside(Path::new(&workspace), rel)
    }

    /// The real path of one of the instruction files in effect for `workspace` (and
    /// `session`), for the desktop's editor: only a path that list names, and nothing is
    /// read from it.
    pub(crate) fn instruction_file(
        &self,
        workspace: &str,
        session: Option<i64>,
        rel: &str,
    ) -> Result<PathBuf> {
        let rules = self.rules_in_effect(workspace, session)?;
        if !rules.instructions.iter().any(|f| f.path == rel) {
            return Err(RuntimeError::NotOpenable {
                path: rel.to_owned(),
                why: "it is not one of the instruction files in effect here".into(),
            });
        }
        inside(Path::new(&rules.workspace), rel)
    }

    /// One of the instruction files in effect (see [`Self::instruction_file`]), read now.
    pub(crate) fn instruction_text(
        &self,
        workspace: &str,
        session: Option<i64>,
        rel: &str,
    ) -> Result<InstructionText> {
        let real = self.instruction_file(workspace, session, rel)?;
        let bytes = std::fs::read(&real).map_err(|e| RuntimeError::NotOpenable {
            path: rel.to_owned(),
            why: e.to_string(),
        })?;
        Ok(InstructionText {
            path: rel.to_owned(),
            absolute: real.display().to_string(),
            text: String::from_utf8_lossy(&bytes).into_owned(),
        })
    }
}

crate::api::call::op! {
    /// The real path of `rel` in the workspace of task `task_id` (see [`inside`]).
    #[derive(Debug, Clone)]
    TaskFile { task_id: i64, rel: String } -> Result<PathBuf>
        = |rt, op| rt.task_file(op.task_id, &op.rel);
    /// The real path of one of the instruction files in effect for `workspace` (and `session`), for
    /// the desktop's editor: only a path that list names, and nothing is read from it.
    #[derive(Debug, Clone)]
    InstructionFile { workspace: String, session: Option<i64>, rel: String } -> Result<PathBuf>
        = |rt, op| rt.instruction_file(&op.workspace, op.session, &op.rel);
    /// One of the instruction files in effect (see [`Self::instruction_file`]), read now.
    #[derive(Debug, Clone)]
    GetInstructionText { workspace: String, session: Option<i64>, rel: String } -> Result<InstructionText>
        = |rt, op| rt.instruction_text(&op.workspace, op.session, &op.rel);
}

#[cfg(test)]
#[path = "open_tests.rs"]
mod tests;
