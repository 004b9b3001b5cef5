//! `pocketpilot changes`, `undo` and `redo` (issue 16).
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use pocketpilot_core::api::service::Runtime;
use pocketpilot_core::engine::changes::undo::{Options, Target};
use pocketpilot_core::ops;
use pocketpilot_protocol::changes::{ChangeList, FileChangeKind, Node, UndoReport, Undoable};

use super::escape::{shown, shown_block};
use super::{print_json, CliError};

/// Exit code of an undo or redo refused because files changed since.
pub const EXIT_CONFLICT: u8 = 10;

#[derive(clap::Args, Debug)]
pub struct ChangesArgs {
    /// The task whose changes to list.
    pub task: Option<i64>,
    /// Only this tool call of the task.
    #[arg(long)]
    pub call: Option<String>,
    /// Every task of this session instead.
    #[arg(long, conflicts_with = "task")]
    pub session: Option<i64>,
    #[arg(long)]
    pub json: bool,
    /// Apply the retention settings now (size cap, age limit) and say what was pruned.
    #[arg(long, conflicts_with_all = ["task", "session"])]
    pub prune: bool,
    /// Set the size cap of kept contents (MiB; default 2048), then prune.
    #[arg(long, requires = "prune")]
    pub max_mib: Option<u32>,
    /// Set the age limit of kept contents (days; default 30), then prune.
    #[arg(long, requires = "prune")]
    pub max_age_days: Option<u32>,
}

#[derive(clap::Args, Debug)]
pub struct UndoArgs {
    /// The task to undo.
    pub task: Option<i64>,
    /// Only this tool call of the task.
    #[arg(long, requires = "task")]
    pub call: Option<String>,
    /// Only this file of the task (a path relative to its workspace, as `changes` lists
    /// it); may be given more than once. The task's other files stay as they are.
    #[arg(
        long = "path",
        value_name = "PATH",
        requires = "task",
        conflicts_with = "call"
    )]
    pub paths: Vec<String>,
    /// With `--after TASK`: everything this session's tasks changed after that task.
    #[arg(long, conflicts_with = "task", requires = "after")]
    pub session: Option<i64>,
    #[arg(long, requires = "session")]
    pub after: Option<i64>,
    #[command(flatten)]
    pub how: HowArgs,
}

#[derive(clap::Args, Debug)]
pub struct RedoArgs {
    /// The undo to redo (its id, as `undo` printed it).
    pub undo: i64,
    #[command(flatten)]
    pub how: HowArgs,
}

#[derive(clap::Args, Debug)]
pub struct HowArgs {
    /// Say what would be restored; touch nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Where a file was changed since, keep that version and restore the rest.
    #[arg(long)]
    pub keep_theirs: bool,
    #[arg(long)]
    pub json: bool,
}

impl HowArgs {
    pub(crate) fn options(&self) -> Options {
        Options {
            dry_run: self.dry_run,
            keep_theirs: self.keep_theirs,
        }
    }
}

pub fn changes(rt: &Arc<Runtime>, a: ChangesArgs) -> Result<ExitCode, CliError> {
    if a.prune {
        if a.max_mib.is_some() || a.max_age_days.is_some() {
            let mut s = rt.call(ops::GetChangeSettings {})?;
            s.max_mib = a.max_mib.unwrap_or(s.max_mib);
            s.max_age_days = a.max_age_days.unwrap_or(s.max_age_days);
            rt.call(ops::SetChangeSettings { settings: s })?;
        }
        let p = rt.call(ops::PruneChanges {})?;
        if a.json {
            print_json(&p);
        } else {
            let _ = writeln!(
                std::io::stdout(),
                "pruned {} change set(s), {} blob(s), {} bytes freed; {} bytes kept",
                p.sets,
                p.blobs,
                p.bytes_freed,
                p.bytes_kept
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let target = match (a.task, a.session) {
        (Some(task_id), None) => Target::Task {
            task_id,
            call_id: a.call,
        },
        (None, Some(session_id)) => Target::Session {
            session_id,
            from_task: 0,
        },
        _ => return Err(CliError::Usage("give a TASK or --session SESSION".into())),
    };
    let list = rt.call(ops::GetChangeList { target })?;
    if a.json {
        print_json(&list);
    } else {
        print_list(&list);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_list(list: &ChangeList) {
    let mut out = std::io::stdout().lock();
    let state = match list.undoable {
        Undoable::Yes => "can be undone".to_owned(),
        Undoable::Undone => format!(
            "undone (undo {}; `pocketpilot redo {}` brings it back)",
            list.undone_by.unwrap_or_default(),
            list.undone_by.unwrap_or_default()
        ),
        Undoable::Pruned => "snapshot pruned: these changes can no longer be undone".into(),
        Undoable::Nothing => "nothing changed".into(),
    };
    let _ = writeln!(out, "{} file(s) changed; {state}", list.files.len());
    for f in &list.files {
        let name = match (&f.kind, &f.from) {
            (FileChangeKind::Renamed, Some(from)) => format!("{from} -> {}", f.path),
            _ => f.path.clone(),
        };
        let undone = f
            .undone_by
            .map(|u| format!("  (undone: undo {u})"))
            .unwrap_or_default();
        let _ = writeln!(out, "{:<9} {}{undone}", f.kind.as_str(), shown(&name));
    }
    for f in &list.files {
        if let Some(d) = &f.diff {
            let _ = write!(out, "{}", shown_block(d));
        }
    }
}

pub fn undo(rt: &Arc<Runtime>, a: UndoArgs) -> Result<ExitCode, CliError> {
    let target = match (a.task, a.session, a.after) {
        (Some(task_id), None, _) if !a.paths.is_empty() => Target::Files {
            task_id,
            paths: a.paths,
        },
        (Some(task_id), None, _) => Target::Task {
            task_id,
            call_id: a.call,
        },
        (None, Some(session_id), Some(after)) => Target::Session {
            session_id,
            from_task: after + 1,
        },
        _ => {
            return Err(CliError::Usage(
                "give a TASK [--call CALL | --path PATH], or --session SESSION --after TASK".into(),
            ))
        }
    };
    let report = rt.call(ops::Undo {
        target,
        opts: a.how.options(),
    })?;
    Ok(print_report(&report, a.how.json, false))
}

pub fn redo(rt: &Arc<Runtime>, a: RedoArgs) -> Result<ExitCode, CliError> {
    let report = rt.call(ops::Redo {
        undo_id: a.undo,
        opts: a.how.options(),
    })?;
    Ok(print_report(&report, a.how.json, false))
}

fn node_line(n: &Option<Node>) -> String {
    match n {
        None => "(nothing)".into(),
        Some(Node::File { hash, size, mode }) => {
            format!(
                "file, {size} bytes, mode {mode:o}, content {}",
                &hash[..12.min(hash.len())]
            )
        }
        Some(Node::Symlink { target }) => format!("symlink to {}", shown(target)),
        Some(Node::Dir { mode }) => format!("directory, mode {mode:o}"),
    }
}

/// Prints an undo's report and returns its exit code. For a rewind the caller prints the
/// JSON and the closing line itself.
pub(crate) fn print_report(r: &UndoReport, json: bool, rewind: bool) -> ExitCode {
    let refused = r.id.is_none() && !r.dry_run && !r.conflicts.is_empty();
    let code = if refused {
        ExitCode::from(EXIT_CONFLICT)
    } else {
        ExitCode::SUCCESS
    };
    if json {
        if !rewind {
            print_json(r);
        }
        return code;
    }
    let mut out = std::io::stdout().lock();
    let verb = if r.dry_run {
        "would restore"
    } else {
        "restored"
    };
    for p in &r.restored {
        let _ = writeln!(out, "{verb} {}", shown(p));
    }
    for p in &r.unchanged {
        let _ = writeln!(out, "already as before: {}", shown(p));
    }
    for c in &r.conflicts {
        let _ = writeln!(out, "changed since: {}", shown(&c.path));
        let _ = writeln!(out, "  before the task: {}", node_line(&c.original));
        let _ = writeln!(out, "  the task left:   {}", node_line(&c.task_left));
        let _ = writeln!(out, "  now:             {}", node_line(&c.current));
        if let Some(d) = &c.diff_since {
            let _ = write!(out, "{}", shown_block(d));
        }
    }
    if refused {
        let _ = writeln!(
            out,
            "refused: {} file(s) were changed since; nothing was restored. `--keep-theirs` keeps those and restores the rest",
            r.conflicts.len()
        );
    } else if let (Some(id), false) = (r.id, rewind) {
        let what = if r.kind == pocketpilot_protocol::changes::ChangeSetKind::Redo {
            "redo"
        } else {
            "undo"
        };
        let _ = writeln!(out, "{what} {id}: {} path(s) restored", r.restored.len());
        if !r.kept.is_empty() {
            let _ = writeln!(out, "kept your versions of: {}", shown(&r.kept.join(", ")));
        }
    }
    code
}
