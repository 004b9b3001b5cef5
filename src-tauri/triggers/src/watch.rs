//! File watches: a path or glob inside a workspace → a task naming the changed files.
//!
//! - The pattern is relative to the workspace (an absolute path inside it is made
//!   relative). `..`, and absolute paths or symlinked folders leading outside it, are
//!   refused. Globs use `globset` with `/` as a literal separator: `*.md` is the top
//!   folder only, `**/*.md` is every folder. A plain path names that file, or everything
//!   under that folder.
//! - Changes are debounced (`notify-debouncer-mini`, [`TriggerSettings::watch_debounce_ms`]),
//!   then filtered: not the agent's own writes (the `changed` paths of `tool_call_completed`
//!   events in this workspace within [`AGENT_WRITE_WINDOW`]; the filter first waits, bounded,
//!   for tool calls still in flight to record their outcome), not the guard's temp files
//!   (`.NAME.pocketpilot-*.tmp`), not PocketPilot's data directory.
//! - Rate limit: at most one task per watch per `min_interval_secs`; changes seen in
//!   between are coalesced into the next task.
use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use globset::{GlobBuilder, GlobMatcher};
use notify_debouncer_mini::notify::RecursiveMode;
use notify_debouncer_mini::{new_debouncer, DebounceEventResult};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::{canonical_workspace, stamp, Fire, Result, TriggerError, TriggerSettings};
use pocketpilot_core::api::service::Runtime;
use pocketpilot_core::ops;
use pocketpilot_protocol::RunSource;
use pocketpilot_store::triggers::Watch;

/// A change to a path the agent wrote this recently is taken as the agent's own.
pub const AGENT_WRITE_WINDOW: Duration = Duration::from_secs(15);
/// The longest the filter waits for in-flight tool calls to record what they changed.
const IN_FLIGHT_WAIT: Duration = Duration::from_secs(10);
/// The most file names listed in a goal.
const MAX_LISTED: usize = 50;
pub const DEFAULT_MIN_INTERVAL_SECS: i64 = 30;

#[derive(Debug, Clone, Default)]
pub struct NewWatch {
    pub pattern: String,
    pub workspace: PathBuf,
    pub goal: String,
    pub provider: Option<String>,
    /// At most one task per this many seconds (default 30).
    pub min_interval_secs: Option<i64>,
}

/// What a pattern matches, and the folder to watch for it.
#[derive(Debug, Clone)]
pub struct Pattern {
    root: PathBuf,
    watch_dir: PathBuf,
    matcher: Match,
}

#[derive(Debug, Clone)]
enum Match {
    Glob(GlobMatcher),
    /// A file, or everything under a folder.
    Path(String),
}

impl Pattern {
    /// Validates `pattern` against the (canonical) workspace root and returns it with the
    /// normalised, workspace-relative text to store.
    pub fn parse(root: &Path, pattern: &str) -> Result<(Self, String)> {
        let invalid = |reason: &str| TriggerError::InvalidPattern {
            pattern: pattern.to_owned(),
            reason: reason.to_owned(),
        };
        let trimmed = pattern.trim();
        if trimmed.is_empty() {
            return Err(invalid("it is empty"));
        }
        let as_path = Path::new(trimmed);
        let relative: PathBuf = if as_path.is_absolute() {
            as_path
                .strip_prefix(root)
                .map(Path::to_path_buf)
                .map_err(|_| TriggerError::OutsideWorkspace(pattern.to_owned()))?
        } else {
            as_path.to_path_buf()
        };
        let mut parts = Vec::new();
        for c in relative.components() {
            match c {
                Component::Normal(p) => parts.push(
                    p.to_str()
                        .ok_or_else(|| invalid("it is not valid UTF-8"))?
                        .to_owned(),
                ),
                Component::CurDir => {}
                Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                    return Err(TriggerError::OutsideWorkspace(pattern.to_owned()))
                }
            }
        }
        let text = if parts.is_empty() {
            "**".to_owned()
        } else {
            parts.join("/")
        };
        let is_glob = text.contains(['*', '?', '[', '{']);
        // The folders before the first glob character: watch there, not the whole tree.
        let literal: Vec<&str> = parts
            .iter()
            .take_while(|p| !p.contains(['*', '?', '[', '{']))
            .map(String::as_str)
            .collect();
        let mut watch_dir = root.to_path_buf();
        for p in &literal {
            let next = watch_dir.join(p);
            if !next.is_dir() {
                break;
            }
            watch_dir = next;
        }
        let real = std::fs::canonicalize(&watch_dir).map_err(|e| invalid(&e.to_string()))?;
        if !real.starts_with(root) {
            return Err(TriggerError::OutsideWorkspace(pattern.to_owned()));
        }
        let matcher = if is_glob {
            let glob = GlobBuilder::new(&text)
                .literal_separator(true)
                .build()
                .map_err(|e| invalid(&e.to_string()))?;
            Match::Glob(glob.compile_matcher())
        } else {
            Match::Path(text.clone())
        };
        Ok((
            Self {
                root: root.to_path_buf(),
                watch_dir: real,
                matcher,
            },
            text,
        ))
    }

    /// The workspace-relative path (with `/`) of `path` if the pattern matches it.
    pub fn relative_match(&self, path: &Path) -> Option<String> {
        let rel = path.strip_prefix(&self.root).ok()?;
        let rel = rel
            .components()
            .map(|c| c.as_os_str().to_str())
            .collect::<Option<Vec<_>>>()?
            .join("/");
        let hit = match &self.matcher {
            Match::Glob(g) => g.is_match(&rel),
            Match::Path(p) => rel == *p || rel.starts_with(&format!("{p}/")),
        };
        hit.then_some(rel)
    }
}

/// The guard's temporary files: `.NAME.pocketpilot-PID-N.tmp`.
pub fn is_agent_temp_file(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with('.') && n.contains(".pocketpilot-") && n.ends_with(".tmp"))
}

pub fn create(rt: &Arc<Runtime>, new: &NewWatch) -> Result<Watch> {
    let goal = new.goal.trim();
    if goal.is_empty() {
        return Err(TriggerError::EmptyGoal);
    }
    let workspace = canonical_workspace(&new.workspace)?;
    let (_, pattern) = Pattern::parse(Path::new(&workspace), &new.pattern)?;
    let interval = new
        .min_interval_secs
        .unwrap_or(DEFAULT_MIN_INTERVAL_SECS)
        .max(0);
    let watch = rt.call(ops::CreateWatch {
        pattern,
        workspace,
        goal: goal.to_owned(),
        provider: new.provider.clone(),
        min_interval_secs: interval,
    })?;
    tracing::info!(watch_id = watch.id, pattern = %watch.pattern, "watch created");
    Ok(watch)
}

pub fn list(rt: &Arc<Runtime>) -> Result<Vec<Watch>> {
    Ok(rt.call(ops::ListWatches {})?)
}

pub fn set_paused(rt: &Arc<Runtime>, id: i64, paused: bool) -> Result<()> {
    Ok(rt.call(ops::SetWatchPaused { id, paused })?)
}

pub fn delete(rt: &Arc<Runtime>, id: i64) -> Result<()> {
    Ok(rt.call(ops::DeleteWatch { id })?)
}

/// The goal of a watch's task: its own goal and the changed files.
pub fn goal_with_changes(goal: &str, changed: &BTreeSet<String>) -> String {
    let mut text = format!("{goal}\n\nChanged files:");
    for p in changed.iter().take(MAX_LISTED) {
        text.push_str("\n- ");
        text.push_str(p);
    }
    if changed.len() > MAX_LISTED {
        text.push_str(&format!("\n- …and {} more", changed.len() - MAX_LISTED));
    }
    text
}

// ------------------------------------------------------------------------------ runner

/// Runs one watch until `cancel` (the host stops it when it is paused or deleted).
/// `ready` is told once the file system watch is in place.
pub(crate) async fn run(
    rt: Arc<Runtime>,
    watch: Watch,
    settings: TriggerSettings,
    cancel: CancellationToken,
    ready: Option<tokio::sync::oneshot::Sender<()>>,
) {
    let span = tracing::info_span!("watch", watch_id = watch.id);
    async move {
        if let Err(e) = run_inner(&rt, &watch, &settings, &cancel, ready).await {
            tracing::error!(error = %e, "the watch stopped");
        }
    }
    .instrument(span)
    .await
}

async fn run_inner(
    rt: &Arc<Runtime>,
    w: &Watch,
    settings: &TriggerSettings,
    cancel: &CancellationToken,
    ready: Option<tokio::sync::oneshot::Sender<()>>,
) -> Result<()> {
    let root = PathBuf::from(&w.workspace);
    let (pattern, _) = Pattern::parse(&root, &w.pattern)?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Vec<PathBuf>>();
    let watch_err = |reason: String| TriggerError::Watch {
        path: pattern.watch_dir.display().to_string(),
        reason,
    };
    let mut debouncer = new_debouncer(
        Duration::from_millis(settings.watch_debounce_ms.max(10)),
        move |res: DebounceEventResult| match res {
            Ok(events) => {
                let _ = tx.send(events.into_iter().map(|e| e.path).collect());
            }
            Err(e) => tracing::warn!(error = %e, "file watch error"),
        },
    )
    .map_err(|e| watch_err(e.to_string()))?;
    debouncer
        .watcher()
        .watch(&pattern.watch_dir, RecursiveMode::Recursive)
        .map_err(|e| watch_err(e.to_string()))?;
    if let Some(ready) = ready {
        let _ = ready.send(());
    }
    let data_dir = std::fs::canonicalize(rt.call(ops::DataDir {}))
        .unwrap_or_else(|_| rt.call(ops::DataDir {}).to_path_buf());
    let min_interval = Duration::from_secs(w.min_interval_secs.max(0) as u64);
    let mut last_fire: Option<Instant> = None;
    let mut pending: BTreeSet<String> = BTreeSet::new();
    loop {
        // Wait for changes; with some pending, only until the rate limit allows a task.
        let deadline = match (pending.is_empty(), last_fire) {
            (true, _) => None,
            (false, Some(at)) => Some(at + min_interval),
            (false, None) => Some(Instant::now()),
        };
        let batch = tokio::select! {
            _ = cancel.cancelled() => return Ok(()),
            b = rx.recv() => match b {
                Some(b) => Some(b),
                None => return Err(watch_err("the watcher stopped".into())),
            },
            _ = sleep_until_opt(deadline) => None,
        };
        if let Some(paths) = batch {
            let fresh: BTreeSet<String> = paths
                .iter()
                .filter(|p| !p.starts_with(&data_dir) && !is_agent_temp_file(p))
                .filter_map(|p| pattern.relative_match(p))
                .collect();
            if fresh.is_empty() {
                continue;
            }
            let fresh = without_agent_writes(rt, &w.workspace, fresh, cancel).await?;
            if !fresh.is_empty() {
                tracing::debug!(changed = ?fresh, "changes");
            }
            pending.extend(fresh);
            continue;
        }
        if pending.is_empty() {
            continue;
        }
        let changed = std::mem::take(&mut pending);
        last_fire = Some(Instant::now());
        let (rt, w) = (rt.clone(), w.clone());
        super::blocking(move || fire_watch(&rt, &w, &changed)).await?;
    }
}

/// Until `deadline`, or never without one (a `select!` branch that is off).
pub(crate) async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Drops the paths the agent itself changed recently in this workspace.
async fn without_agent_writes(
    rt: &Arc<Runtime>,
    workspace: &str,
    mut paths: BTreeSet<String>,
    cancel: &CancellationToken,
) -> Result<BTreeSet<String>> {
    // A write may be on disk before its `tool_call_completed` is recorded: wait (bounded)
    // until no tool call of this workspace is in flight.
    let started = Instant::now();
    while rt.call(ops::ToolCallInFlight {
        workspace: workspace.to_owned(),
    })? {
        if started.elapsed() > IN_FLIGHT_WAIT || cancel.is_cancelled() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let window = chrono::Duration::from_std(AGENT_WRITE_WINDOW)
        .unwrap_or_else(|_| chrono::Duration::seconds(15));
    let since = stamp(chrono::Utc::now() - window);
    let agent = rt.call(ops::AgentChangesSince {
        workspace: workspace.to_owned(),
        since,
    })?;
    for p in agent {
        // `changed` of a deleted tree lists the folder too: drop what is under it.
        let prefix = format!("{p}/");
        paths.retain(|x| *x != p && !x.starts_with(&prefix));
    }
    Ok(paths)
}

fn fire_watch(rt: &Arc<Runtime>, w: &Watch, changed: &BTreeSet<String>) -> Result<()> {
    if TriggerSettings::load(rt)?.paused {
        let why = format!(
            "all triggers are paused ({} changed files dropped)",
            changed.len()
        );
        return super::skip(rt, RunSource::Watch, w.id, None, &why);
    }
    // The definition may have been paused or deleted since the runner started.
    match rt.call(ops::GetWatch { id: w.id })? {
        Some(current) if !current.paused => {}
        _ => return Ok(()),
    }
    let goal = goal_with_changes(&w.goal, changed);
    let fire = Fire {
        kind: RunSource::Watch,
        trigger_id: w.id,
        workspace: &w.workspace,
        goal: &goal,
        provider: w.provider.as_deref(),
        session_id: None,
        follow_up_of: None,
        scheduled_for: None,
        reason: None,
    };
    match super::fire(rt, &fire) {
        Ok(task_id) => {
            let at = stamp(chrono::Utc::now());
            rt.call(ops::NoteWatchFired {
                id: w.id,
                task_id,
                at,
            })?;
            Ok(())
        }
        Err(e) => super::skip(
            rt,
            RunSource::Watch,
            w.id,
            None,
            &format!("the task could not be created: {e}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pocketpilot_protocol::ErrorKind;

    fn root() -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let r = std::fs::canonicalize(d.path()).unwrap();
        std::fs::create_dir_all(r.join("docs/sub")).unwrap();
        (d, r)
    }

    #[test]
    fn patterns_inside_the_workspace_match_what_they_say() {
        let (_d, r) = root();
        let (p, text) = Pattern::parse(&r, "*.txt").unwrap();
        assert_eq!(text, "*.txt");
        assert_eq!(p.relative_match(&r.join("a.txt")).as_deref(), Some("a.txt"));
        assert_eq!(p.relative_match(&r.join("docs/a.txt")), None);
        let (p, _) = Pattern::parse(&r, "docs/**/*.md").unwrap();
        assert_eq!(p.watch_dir, r.join("docs"));
        assert!(p.relative_match(&r.join("docs/sub/x.md")).is_some());
        let (p, text) = Pattern::parse(&r, &r.join("docs").display().to_string()).unwrap();
        assert_eq!(text, "docs");
        assert!(p.relative_match(&r.join("docs/sub/x")).is_some());
        assert!(p.relative_match(&r.join("docsx")).is_none());
    }

    #[test]
    fn patterns_leading_outside_the_workspace_are_refused() {
        let (_d, r) = root();
        for bad in ["../x", "docs/../../y", "/etc/passwd", "/"] {
            let e = Pattern::parse(&r, bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::OutsideWorkspace, "{bad}");
        }
        #[cfg(unix)]
        {
            let outside = tempfile::tempdir().unwrap();
            std::os::unix::fs::symlink(outside.path(), r.join("link")).unwrap();
            let e = Pattern::parse(&r, "link/*.txt").unwrap_err();
            assert_eq!(e.kind(), ErrorKind::OutsideWorkspace);
        }
    }

    #[test]
    fn temp_files_of_the_guard_are_recognised() {
        assert!(is_agent_temp_file(Path::new(
            "/w/.a.txt.pocketpilot-12-0.tmp"
        )));
        assert!(!is_agent_temp_file(Path::new("/w/a.txt")));
        assert!(!is_agent_temp_file(Path::new("/w/.hidden.tmp")));
    }
}
