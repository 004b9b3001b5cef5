//! `search_files` (fs:read): a regex over file contents and/or a glob on names, honouring
//! `.gitignore` (the `ignore` crate), with a result cap. Symlinks are not followed and every
//! file is opened through the sandbox, so the walk cannot be steered outside.
use std::path::Path;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::{guard_and_sandbox, looks_binary, parse_args};
use crate::guard::WorkspaceGuard;
use crate::sandbox::Sandbox;
use crate::tool::{Effect, Tool, ToolContext, ToolError, ToolOutput};

pub const DEFAULT_RESULTS: usize = 100;
pub const MAX_RESULTS: usize = 500;
/// Files larger than this are not searched for content.
const MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;
/// A matching line is shown up to this many characters.
const MAX_LINE_CHARS: usize = 300;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    #[serde(default)]
    pattern: Option<String>,
    #[serde(default)]
    glob: Option<String>,
    #[serde(default = "dot")]
    path: String,
    #[serde(default)]
    case_insensitive: bool,
    #[serde(default)]
    max_results: Option<usize>,
}

fn dot() -> String {
    ".".into()
}

struct Query {
    regex: Option<regex::Regex>,
    glob: Option<(globset::GlobMatcher, bool)>,
    limit: usize,
}

impl Query {
    fn from_args(args: &Args) -> Result<Self, ToolError> {
        if args.pattern.is_none() && args.glob.is_none() {
            return Err(ToolError::InvalidArguments(
                "give `pattern` (a regex over contents), `glob` (on file names), or both".into(),
            ));
        }
        let limit = args.max_results.unwrap_or(DEFAULT_RESULTS);
        if limit == 0 || limit > MAX_RESULTS {
            return Err(ToolError::InvalidArguments(format!(
                "max_results must be between 1 and {MAX_RESULTS}"
            )));
        }
        let regex = args
            .pattern
            .as_deref()
            .map(|p| {
                regex::RegexBuilder::new(p)
                    .case_insensitive(args.case_insensitive)
                    .size_limit(1 << 20)
                    .build()
                    .map_err(|e| ToolError::InvalidArguments(format!("bad regex: {e}")))
            })
            .transpose()?;
        let glob = args
            .glob
            .as_deref()
            .map(|g| {
                globset::GlobBuilder::new(g)
                    .case_insensitive(args.case_insensitive)
                    .literal_separator(true)
                    .build()
                    .map(|glob| (glob.compile_matcher(), g.contains('/')))
                    .map_err(|e| ToolError::InvalidArguments(format!("bad glob: {e}")))
            })
            .transpose()?;
        Ok(Self { regex, glob, limit })
    }

    /// A glob with a `/` matches the workspace-relative path, otherwise the file name.
    fn name_matches(&self, rel: &str, name: &str) -> bool {
        match &self.glob {
            None => true,
            Some((matcher, true)) => matcher.is_match(rel),
            Some((matcher, false)) => matcher.is_match(name),
        }
    }
}

pub struct SearchFiles;

#[async_trait]
impl Tool for SearchFiles {
    fn name(&self) -> &'static str {
        "search_files"
    }

    fn description(&self) -> &'static str {
        "Search the workspace. `pattern` is a regular expression matched against each line of \
         text files (results as path:line: text); `glob` filters file names (e.g. `*.rs`, or \
         `src/**/*.ts` with a slash to match the path). Files ignored by .gitignore are skipped."
    }

    fn brief(&self) -> &'static str {
        "Search file contents (regex `pattern`) or file names (`glob`)."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression (Rust regex syntax) to find in file contents."},
                "glob": {"type": "string", "description": "Glob on file names, or on the relative path if it contains `/`."},
                "path": {"type": "string", "description": "Directory to search, relative to the workspace root (default `.`)."},
                "case_insensitive": {"type": "boolean"},
                "max_results": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS}
            },
            "additionalProperties": false
        })
    }

    fn capability(&self) -> &'static str {
        "fs:read"
    }

    fn kind(&self) -> pocketpilot_model::ToolKind {
        pocketpilot_model::ToolKind::Search
    }

    fn replay_safe(&self) -> bool {
        true
    }

    fn effect(&self, args: &Value, _ctx: &ToolContext) -> Result<Effect, ToolError> {
        let args: Args = parse_args(args)?;
        Query::from_args(&args)?;
        Ok(Effect::None)
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(&args)?;
        let query = Query::from_args(&args)?;
        let (guard, sandbox) = guard_and_sandbox(ctx)?;
        let dir = guard.resolve_dir(&args.path)?;
        let cancel = ctx.cancel.clone();
        tokio::task::spawn_blocking(move || search(&guard, &sandbox, &dir, &query, &cancel))
            .await
            .map_err(|e| ToolError::Failed(format!("search stopped: {e}")))?
    }
}

fn search(
    guard: &WorkspaceGuard,
    sandbox: &Sandbox,
    dir: &Path,
    query: &Query,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let filter_guard = guard.clone();
    let walker = ignore::WalkBuilder::new(dir)
        .hidden(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |entry| {
            entry.file_name() != ".git" && !filter_guard.is_forbidden(entry.path())
        })
        .build();
    let mut results = Vec::new();
    let mut capped = false;
    'walk: for entry in walker {
        if cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|ft| ft.is_file()) {
            continue;
        }
        let rel = guard.relative(entry.path());
        let name = entry.file_name().to_string_lossy();
        if !query.name_matches(&rel, &name) {
            continue;
        }
        let Some(regex) = &query.regex else {
            if results.len() == query.limit {
                capped = true;
                break;
            }
            results.push(rel);
            continue;
        };
        // Unreadable, vanished, swapped or binary files are skipped, not fatal.
        let Ok(head) = sandbox.read_head(entry.path(), MAX_FILE_BYTES) else {
            continue;
        };
        if head.total_len > MAX_FILE_BYTES || looks_binary(&head.bytes) {
            continue;
        }
        let text = String::from_utf8_lossy(&head.bytes);
        for (number, line) in text.lines().enumerate() {
            if regex.is_match(line) {
                if results.len() == query.limit {
                    capped = true;
                    break 'walk;
                }
                results.push(format!("{rel}:{}: {}", number + 1, clip(line)));
            }
        }
    }
    let mut text = if results.is_empty() {
        "no matches".to_string()
    } else {
        results.join("\n")
    };
    if capped {
        text.push_str(&format!(
            "\n[result cap reached: {} shown; narrow the search]",
            query.limit
        ));
    }
    Ok(ToolOutput::text(text))
}

fn clip(line: &str) -> String {
    let mut chars = line.chars();
    let shown: String = chars.by_ref().take(MAX_LINE_CHARS).collect();
    if chars.next().is_some() {
        format!("{shown}…")
    } else {
        shown
    }
}

#[cfg(test)]
#[path = "search_files_tests.rs"]
mod tests;
