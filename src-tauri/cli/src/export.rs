//! `pocketpilot export SESSION [--format md|json] [--out FILE]` and `export --all DIR`:
//! a session's transcript, tool calls and changed files, for reading or for another tool.
//! The JSON shape is `docs/export.md`'s (`format_version`).
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use pocketpilot_core::api::export::{file_name, ExportFormat};
use pocketpilot_core::api::service::Runtime;
use pocketpilot_core::ops;

use super::escape::{json_safe, shown};
use super::CliError;

#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// The session to export.
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub session: Option<i64>,
    /// Every session, one file each (`ID-title.md` or `.json`), into this directory.
    #[arg(long, value_name = "DIR", conflicts_with = "out")]
    pub all: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "md")]
    pub format: Format,
    /// Write to this file instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Md,
    Json,
}

impl From<Format> for ExportFormat {
    fn from(f: Format) -> Self {
        match f {
            Format::Md => ExportFormat::Md,
            Format::Json => ExportFormat::Json,
        }
    }
}

pub fn export(rt: &Arc<Runtime>, a: ExportArgs) -> Result<ExitCode, CliError> {
    if let Some(dir) = &a.all {
        return export_all(rt, dir, a.format);
    }
    let Some(session) = a.session else {
        return Err(CliError::Usage("give a SESSION or --all DIR".into()));
    };
    let text = render(rt, session, a.format)?;
    match &a.out {
        Some(path) => write_file(path, &text)?,
        None => {
            let _ = write!(std::io::stdout().lock(), "{text}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The export's text. Markdown comes with hidden characters of untrusted text written
/// visibly; JSON also has those a terminal could act on escaped (the meaning is unchanged).
fn render(rt: &Arc<Runtime>, session: i64, format: Format) -> Result<String, CliError> {
    let text = rt.call(ops::ExportText {
        session_id: session,
        format: format.into(),
    })?;
    Ok(match format {
        Format::Md => text,
        Format::Json => json_safe(text),
    })
}

fn export_all(rt: &Arc<Runtime>, dir: &Path, format: Format) -> Result<ExitCode, CliError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::Other(format!("cannot create {}: {e}", dir.display())))?;
    let sessions = rt.call(ops::ExportIndex {})?;
    for (id, title) in &sessions {
        let text = render(rt, *id, format)?;
        let ext = ExportFormat::from(format).extension();
        write_file(&dir.join(file_name(*id, title, ext)), &text)?;
    }
    let _ = writeln!(
        std::io::stderr(),
        "{} session(s) written to {}",
        sessions.len(),
        shown(&dir.display().to_string())
    );
    Ok(ExitCode::SUCCESS)
}

/// Written beside, then renamed over: a file that exists holds a whole export.
fn write_file(path: &Path, text: &str) -> Result<(), CliError> {
    let fail = |e: std::io::Error| CliError::Other(format!("cannot write {}: {e}", path.display()));
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".part");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text).map_err(fail)?;
    std::fs::rename(&tmp, path).map_err(fail)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::Format;
    use crate::{Cli, Command};

    fn parse(args: &[&str]) -> Result<super::ExportArgs, clap::Error> {
        let argv = ["pocketpilot", "export"].iter().chain(args);
        match Cli::try_parse_from(argv)?.command {
            Command::Export(a) => Ok(a),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn a_session_or_all_but_not_both() {
        let a = parse(&["3"]).unwrap();
        assert_eq!((a.session, a.format), (Some(3), Format::Md));
        let a = parse(&["--all", "/tmp/x", "--format", "json"]).unwrap();
        assert_eq!((a.session, a.format), (None, Format::Json));
        assert!(parse(&[]).is_err());
        assert!(parse(&["3", "--all", "/tmp/x"]).is_err());
        assert!(parse(&["--all", "/tmp/x", "--out", "f"]).is_err());
        assert!(parse(&["3", "--format", "html"]).is_err());
    }
}
