//! Structured logs: JSON lines in `<data dir>/logs/pocketpilot.log.YYYY-MM-DD` (rotated
//! daily), level from `POCKETPILOT_LOG` or `RUST_LOG` (default `info`). Spans carry
//! `task_id` and `session_id`. Secrets are never given to the logger.
use std::path::{Path, PathBuf};

use tracing_appender::non_blocking::{NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::{fmt, prelude::*, EnvFilter};

const BUFFERED_LINES: usize = 4_096;

pub fn log_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("logs")
}

/// Installs the global logger; keep the guard alive for the life of the process.
pub fn init(data_dir: &Path) -> Option<WorkerGuard> {
    let filter = std::env::var("POCKETPILOT_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "info".into());
    // The appender prunes old files at start and complains if the folder is missing.
    std::fs::create_dir_all(log_dir(data_dir)).ok()?;
    let appender = tracing_appender::rolling::Builder::new()
        .rotation(tracing_appender::rolling::Rotation::DAILY)
        .filename_prefix("pocketpilot.log")
        .max_log_files(14)
        .build(log_dir(data_dir))
        .ok()?;
    // The channel's slots are allocated up front: the default 128,000 lines is 4 MB of
    // resident memory for a logger that writes a few lines a second. 4,096 lines absorb
    // any burst the runtime makes; past that, lines are dropped rather than the caller
    // blocked (the appender's default, kept).
    let (writer, guard) = NonBlockingBuilder::default()
        .buffered_lines_limit(BUFFERED_LINES)
        .finish(appender);
    let layer = fmt::layer()
        .json()
        .with_current_span(true)
        .with_span_list(true)
        .with_writer(writer);
    tracing_subscriber::registry()
        .with(EnvFilter::new(filter))
        .with(layer)
        .try_init()
        .ok()?;
    Some(guard)
}

/// Log lines, oldest first, optionally only those of one task.
pub fn read(data_dir: &Path, task: Option<i64>) -> std::io::Result<Vec<String>> {
    let dir = log_dir(data_dir);
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd.filter_map(|e| e.ok().map(|e| e.path())).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f)?;
        for line in text.lines() {
            if let Some(id) = task {
                let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
                    continue;
                };
                if !line_has_task(&v, id) {
                    continue;
                }
            }
            out.push(line.to_owned());
        }
    }
    Ok(out)
}

fn line_has_task(v: &serde_json::Value, id: i64) -> bool {
    let hit = |s: &serde_json::Value| s.get("task_id").and_then(|t| t.as_i64()) == Some(id);
    hit(v)
        || v.get("fields").is_some_and(hit)
        || v.get("span").is_some_and(hit)
        || v.get("spans")
            .and_then(|s| s.as_array())
            .is_some_and(|a| a.iter().any(hit))
}
