//! `pocketpilot search QUERY`: full-text search over every session's transcript, newest
//! first, one hit per line pair: where it is, then the matching line.
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use pocketpilot_core::api::service::Runtime;
use pocketpilot_core::ops;
use pocketpilot_core::store::search::{MARK_END, MARK_START};

use super::escape::shown;
use super::{print_json, CliError};

#[derive(clap::Args, Debug)]
pub struct SearchArgs {
    /// Words to find (all of them; the last also as the start of a word).
    #[arg(required = true)]
    pub query: Vec<String>,
    /// Only sessions in this workspace folder.
    #[arg(long)]
    pub workspace: Option<String>,
    /// The most hits to show.
    #[arg(long, default_value_t = 20)]
    pub limit: u32,
    #[arg(long)]
    pub json: bool,
}

pub fn search(rt: &Arc<Runtime>, a: SearchArgs) -> Result<ExitCode, CliError> {
    let typed = a.query.join(" ");
    if typed.trim().is_empty() {
        return Err(CliError::Usage("search needs a word to find".into()));
    }
    let hits = rt.call(ops::Search {
        typed: typed.to_string(),
        workspace: a.workspace.as_deref().map(|s| s.to_string()),
        limit: a.limit,
    })?;
    if a.json {
        print_json(&hits);
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    if hits.is_empty() {
        let _ = writeln!(out, "nothing matches {}", shown(&typed));
    }
    for h in &hits {
        let task = h.task_id.map(|t| format!(" task {t}")).unwrap_or_default();
        let _ = writeln!(
            out,
            "session {} {}{task} entry {} ({})",
            h.session_id,
            shown(&h.session_title),
            h.entry_id,
            h.kind.as_str()
        );
        // The match between brackets; the marks are control characters, never printed.
        let line = h.snippet.replace(MARK_START, "[").replace(MARK_END, "]");
        let _ = writeln!(out, "  {}", shown(&line));
    }
    Ok(ExitCode::SUCCESS)
}
