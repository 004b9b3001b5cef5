//! `pocketpilot rewind` and `session fork`: back to one of the person's messages, or a new
//! session from there.
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use pocketpilot_core::api::fork::{Fork, ForkPlace};
use pocketpilot_core::api::service::Runtime;
use pocketpilot_core::ops;

use super::changes::{print_report, HowArgs};
use super::escape::shown;
use super::{print_json, CliError};

#[derive(clap::Args, Debug)]
pub struct RewindArgs {
    /// The session to rewind.
    pub session: i64,
    /// The person's message to go back to (its entry id, as `session show` lists it): it
    /// and everything after it are set aside, and the files are as they were before it.
    #[arg(long = "to")]
    pub to: i64,
    #[command(flatten)]
    pub how: HowArgs,
}

#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("place").args(["worktree", "copy", "same"])))]
pub struct ForkArgs {
    /// The session to fork.
    pub session: i64,
    /// The person's message to fork at (its entry id): the new session's transcript is
    /// everything before it.
    #[arg(long = "at")]
    pub at: i64,
    /// Work in a `git worktree` on a new branch (without a flag: chosen for a workspace
    /// inside a git work tree).
    #[arg(long)]
    pub worktree: bool,
    /// Work in a copy of the workspace (reflinks where the filesystem has them; without a
    /// flag: chosen elsewhere).
    #[arg(long)]
    pub copy: bool,
    /// Work in the same folder as the original session.
    #[arg(long)]
    pub same: bool,
    /// Where the worktree or copy goes (default: beside the workspace; for a worktree,
    /// beside the repository's top folder).
    #[arg(long)]
    pub path: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
}

pub fn rewind(rt: &Arc<Runtime>, a: RewindArgs) -> Result<ExitCode, CliError> {
    let report = rt.call(ops::Rewind {
        session_id: a.session,
        to_entry: a.to,
        opts: a.how.options(),
    })?;
    if a.how.json {
        print_json(&report);
        return Ok(print_report(&report.files, true, true));
    }
    let code = print_report(&report.files, false, true);
    let mut out = std::io::stdout().lock();
    let n = report.set_aside.len();
    if let Some(id) = report.files.id {
        let _ = writeln!(
            out,
            "rewind {id}: session {} is back before entry {} ({n} entries set aside, {} path(s) restored); `pocketpilot redo {id}` takes it back",
            report.session_id,
            report.to_entry,
            report.files.restored.len()
        );
    } else if report.files.dry_run {
        let _ = writeln!(
            out,
            "would set aside {n} entries of session {} from entry {} on",
            report.session_id, report.to_entry
        );
    }
    Ok(code)
}

pub fn fork(rt: &Arc<Runtime>, a: ForkArgs) -> Result<ExitCode, CliError> {
    // No flag: the runtime chooses (a worktree in a git work tree, a copy elsewhere).
    let place = match (a.worktree, a.copy, a.same) {
        (true, _, _) => Some(ForkPlace::Worktree),
        (_, true, _) => Some(ForkPlace::Copy),
        (_, _, true) => Some(ForkPlace::Same),
        _ => None,
    };
    let fork = rt.call(ops::ForkSession {
        session_id: a.session,
        at_entry: a.at,
        place,
        path: a.path,
    })?;
    if a.json {
        print_json(&fork);
    } else {
        let _ = writeln!(
            std::io::stdout(),
            "session {}: a fork of session {} before entry {} ({} entries), {}",
            fork.session_id,
            fork.from_session,
            fork.at_entry,
            fork.entries,
            where_it_works(&fork)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The place the fork made, in words.
fn where_it_works(fork: &Fork) -> String {
    let at = shown(&fork.workspace);
    match fork.place {
        ForkPlace::Worktree => format!(
            "in a git worktree on branch {} at {at}",
            shown(fork.branch.as_deref().unwrap_or_default())
        ),
        ForkPlace::Copy => format!("in a copy at {at}"),
        ForkPlace::Same => format!("in the same folder, {at}"),
    }
}
