//! `pocketpilot models`: the local models the person keeps (list, import, pull, use, rm).
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Subcommand;
use pocketpilot_local::models::{human_bytes, Manifest, ModelError, ModelStore, PullProgress};
use tokio_util::sync::CancellationToken;

use super::{print_json, CliError};

/// The CLI's code for "cancelled" (see the crate's exit codes).
const EXIT_CANCELLED: u8 = 4;

#[derive(Subcommand, Debug)]
pub enum ModelsCommand {
    /// The models kept here; `*` marks the one in use.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Add a GGUF file (linked when on the same disk, else copied).
    Import {
        path: PathBuf,
        /// The name to keep it under (default: from the file name).
        #[arg(long)]
        name: Option<String>,
    },
    /// Download a GGUF model; an interrupted download resumes when pulled again.
    Pull {
        url: String,
        /// Refuse the download unless its sha256 is this.
        #[arg(long)]
        sha256: Option<String>,
        #[arg(long)]
        name: Option<String>,
    },
    /// Use this model for local runs.
    Use { name: String },
    /// Remove a model (a model shipped with the app keeps its file).
    Rm { name: String },
}

impl From<ModelError> for CliError {
    fn from(e: ModelError) -> Self {
        match e {
            ModelError::NotFound(_)
            | ModelError::InvalidName(_)
            | ModelError::InvalidSha256(_)
            | ModelError::Exists(_) => CliError::Usage(e.to_string()),
            other => CliError::Other(other.to_string()),
        }
    }
}

pub async fn models(cmd: ModelsCommand, data_dir: &Path) -> Result<ExitCode, CliError> {
    let store = ModelStore::new(data_dir);
    let mut out = std::io::stdout().lock();
    match cmd {
        ModelsCommand::List { json } => list(&store, json, &mut out)?,
        ModelsCommand::Import { path, name } => {
            let m = store.import(&path, name.as_deref())?;
            let _ = writeln!(out, "imported {}", describe(&m));
            note_tools(&m);
        }
        ModelsCommand::Pull { url, sha256, name } => {
            drop(out);
            return pull(&store, &url, sha256.as_deref(), name.as_deref()).await;
        }
        ModelsCommand::Use { name } => {
            store.use_model(&name)?;
            let _ = writeln!(out, "using {name}");
        }
        ModelsCommand::Rm { name } => {
            store.remove(&name)?;
            let _ = writeln!(out, "removed {name}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn list(store: &ModelStore, json: bool, out: &mut dyn Write) -> Result<(), CliError> {
    let models = store.list()?;
    let in_use = store.chosen()?.map(|m| m.name);
    if json {
        #[derive(serde::Serialize)]
        struct Row<'a> {
            #[serde(flatten)]
            manifest: &'a Manifest,
            in_use: bool,
        }
        let rows: Vec<Row> = models
            .iter()
            .map(|m| Row {
                manifest: m,
                in_use: in_use.as_deref() == Some(m.name.as_str()),
            })
            .collect();
        print_json(&rows);
        return Ok(());
    }
    if models.is_empty() {
        let _ = writeln!(
            out,
            "no models in {} (`pocketpilot models import PATH` or `models pull URL`)",
            store.dir().display()
        );
        return Ok(());
    }
    let width = models
        .iter()
        .map(|m| m.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = writeln!(
        out,
        "  {:width$}  {:>9}  {:>6}  {:9}  {:>7}",
        "NAME", "SIZE", "PARAMS", "QUANT", "CONTEXT"
    );
    for m in &models {
        let mark = if in_use.as_deref() == Some(m.name.as_str()) {
            '*'
        } else {
            ' '
        };
        let _ = writeln!(
            out,
            "{mark} {:width$}  {:>9}  {:>6}  {:9}  {:>7}",
            m.name,
            human_bytes(m.size),
            m.facts.parameters.map(count).unwrap_or_else(|| "-".into()),
            m.facts.quantization.as_deref().unwrap_or("-"),
            m.facts
                .training_context
                .map(|c| c.to_string())
                .unwrap_or_else(|| "-".into()),
        );
    }
    Ok(())
}

async fn pull(
    store: &ModelStore,
    url: &str,
    sha256: Option<&str>,
    name: Option<&str>,
) -> Result<ExitCode, CliError> {
    let cancel = CancellationToken::new();
    let on_ctrl_c = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        })
    };
    let terminal = std::io::stderr().is_terminal();
    let shown = AtomicBool::new(false);
    let show = |p: PullProgress| {
        if terminal {
            // One line, rewritten in place.
            let _ = write!(std::io::stderr(), "\r{}\x1b[K", progress_line(&p));
            shown.store(true, Ordering::Relaxed);
        }
    };
    let pulled = store.pull(url, sha256, name, &show, cancel).await;
    on_ctrl_c.abort();
    if shown.load(Ordering::Relaxed) {
        let _ = writeln!(std::io::stderr());
    }
    match pulled {
        Ok(m) => {
            let _ = writeln!(std::io::stdout(), "pulled {}", describe(&m));
            note_tools(&m);
            Ok(ExitCode::SUCCESS)
        }
        Err(ModelError::Cancelled) => {
            let _ = writeln!(std::io::stderr(), "pocketpilot: {}", ModelError::Cancelled);
            Ok(ExitCode::from(EXIT_CANCELLED))
        }
        Err(e) => Err(e.into()),
    }
}

fn progress_line(p: &PullProgress) -> String {
    let mut line = human_bytes(p.done);
    if let Some(total) = p.total.filter(|t| *t > 0) {
        #[allow(clippy::cast_precision_loss)] // a percentage for display
        let pct = p.done as f64 * 100.0 / total as f64;
        line.push_str(&format!(" of {} ({pct:.0}%)", human_bytes(total)));
    }
    if p.bytes_per_sec > 0.0 {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let rate = p.bytes_per_sec as u64;
        line.push_str(&format!(", {}/s", human_bytes(rate)));
    }
    if let Some(eta) = p.eta_secs {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let secs = eta.round() as u64;
        line.push_str(&format!(", {} left", duration(secs)));
    }
    line
}

fn duration(secs: u64) -> String {
    match secs {
        s if s >= 3600 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        s if s >= 60 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{s}s"),
    }
}

/// `135M`, `1.5B`.
fn count(n: u64) -> String {
    #[allow(clippy::cast_precision_loss)]
    let f = n as f64;
    match n {
        n if n >= 1_000_000_000 => format!("{:.1}B", f / 1e9),
        n if n >= 1_000_000 => format!("{:.0}M", f / 1e6),
        n if n >= 1_000 => format!("{:.0}K", f / 1e3),
        n => n.to_string(),
    }
}

fn describe(m: &Manifest) -> String {
    let mut parts = vec![human_bytes(m.size)];
    if let Some(p) = m.facts.parameters {
        parts.push(format!("{} parameters", count(p)));
    }
    if let Some(q) = &m.facts.quantization {
        parts.push(q.clone());
    }
    if let Some(c) = m.facts.training_context {
        parts.push(format!("context {c}"));
    }
    format!("{} ({})", m.name, parts.join(", "))
}

/// Agent runs lean on tool calls; a template that never mentions tools rarely makes them.
fn note_tools(m: &Manifest) {
    if !m.facts.template_mentions_tools {
        let _ = writeln!(
            std::io::stderr(),
            "note: {}'s chat template does not mention tools; it may not call them well",
            m.name
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_reads_well() {
        let p = PullProgress {
            done: 512 * 1024 * 1024,
            total: Some(1024 * 1024 * 1024),
            bytes_per_sec: 8.0 * 1024.0 * 1024.0,
            eta_secs: Some(64.0),
        };
        assert_eq!(
            progress_line(&p),
            "512 MiB of 1.0 GiB (50%), 8 MiB/s, 1m04s left"
        );
        assert_eq!(count(134_515_008), "135M");
        assert_eq!(count(1_543_714_304), "1.5B");
    }
}
