//! `pocketpilot backup now|list|restore FILE|keep [DAYS]`, and what every other command
//! says when the store cannot be used (damaged, or from a newer build).
//!
//! `list` and `restore` never open the store: they are what a person runs when it does
//! not open, and a restore must not hold it open while it replaces it.
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Subcommand;
use pocketpilot_core::api::data::{self, StoreState};
use pocketpilot_core::api::service::Runtime;
use pocketpilot_core::ops;
use pocketpilot_store::backup::{BackupError, BackupFile, BackupSettings, Kept};
use pocketpilot_store::StoreError;

use super::{CliError, EXIT_STORE, EXIT_USAGE};

#[derive(Subcommand, Debug)]
pub enum BackupCommand {
    /// Copy the store into `<data>/backups/` now (runs go on meanwhile).
    Now,
    /// The backups kept, newest first.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Put a backup (a file, or a name from `backup list`) in place of the store. The
    /// current store is kept: as a backup, or moved to `<data>/damaged/` when damaged.
    Restore {
        file: PathBuf,
        /// Do not ask.
        #[arg(long)]
        yes: bool,
    },
    /// How many daily copies are kept (the newest of each schema version is kept too).
    Keep { days: Option<u32> },
}

impl BackupCommand {
    /// Whether it runs without opening the store.
    pub fn without_store(&self) -> bool {
        matches!(
            self,
            BackupCommand::List { .. } | BackupCommand::Restore { .. }
        )
    }
}

/// `list` and `restore`: run before (and instead of) opening the store.
pub fn without_store(cmd: BackupCommand, data_dir: &Path) -> ExitCode {
    let out = &mut std::io::stdout().lock();
    let result = match cmd {
        BackupCommand::List { json } => list(data_dir, json, out),
        BackupCommand::Restore { file, yes } => restore(data_dir, &file, yes, out),
        BackupCommand::Now | BackupCommand::Keep { .. } => Ok(ExitCode::from(EXIT_USAGE)),
    };
    result.unwrap_or_else(|e| fail(&e))
}

/// `now` and `keep`: on the open store.
pub fn with_store(rt: &Arc<Runtime>, cmd: BackupCommand) -> Result<ExitCode, CliError> {
    let out = &mut std::io::stdout().lock();
    match cmd {
        BackupCommand::Now => {
            let file = rt.call(ops::BackupNow {})?;
            let _ = writeln!(out, "{}", describe(&file));
        }
        BackupCommand::Keep { days: None } => {
            let s = rt.call(ops::GetBackupSettings {})?;
            let _ = writeln!(out, "keeping {} daily backups", s.keep_daily);
        }
        BackupCommand::Keep { days: Some(d) } => {
            let s = rt.call(ops::SetBackupSettings {
                settings: BackupSettings { keep_daily: d },
            })?;
            let _ = writeln!(out, "keeping {} daily backups", s.keep_daily);
        }
        BackupCommand::List { .. } | BackupCommand::Restore { .. } => {
            return Err(CliError::Usage("runs without the store".into()))
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `serve` with the daily backup beside it.
pub async fn serving(
    rt: &Arc<Runtime>,
    serve: impl std::future::Future<Output = Result<ExitCode, CliError>>,
) -> Result<ExitCode, CliError> {
    let daily = tokio::spawn(rt.clone().call(ops::KeepDailyBackups {}));
    let served = serve.await;
    daily.abort();
    served
}

fn describe(b: &BackupFile) -> String {
    format!(
        "{}  schema {}  {}  {:.1} MB",
        b.path,
        b.schema_version,
        b.taken_at,
        b.bytes as f64 / 1_048_576.0
    )
}

fn list(data_dir: &Path, json: bool, out: &mut dyn Write) -> Result<ExitCode, BackupError> {
    let all = data::backups_in(data_dir)?;
    if json {
        super::print_json(&all);
    } else if all.is_empty() {
        let _ = writeln!(out, "no backups yet");
    } else {
        for b in &all {
            let _ = writeln!(out, "{}", describe(b));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn restore(
    data_dir: &Path,
    file: &Path,
    yes: bool,
    out: &mut dyn Write,
) -> Result<ExitCode, BackupError> {
    let file = data::resolve_backup(data_dir, file);
    if !yes {
        if !std::io::stdin().is_terminal() {
            let _ = writeln!(
                std::io::stderr(),
                "pocketpilot: restoring replaces the store; run it on a terminal to be asked, or pass --yes"
            );
            return Ok(ExitCode::from(EXIT_USAGE));
        }
        let _ = write!(
            out,
            "Put {} in place of the store? The current store is kept. [y/N] ",
            file.display()
        );
        let _ = out.flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            let _ = writeln!(out, "nothing was changed");
            return Ok(ExitCode::from(super::EXIT_FAILED));
        }
    }
    let done = data::restore(data_dir, &file)?;
    let _ = writeln!(
        out,
        "restored {} (schema {})",
        done.from, done.schema_version
    );
    match &done.kept {
        Kept::Backup { file } => {
            let _ = writeln!(out, "the store it replaced is kept as {}", file.path);
        }
        Kept::SetAside { dir } => {
            let _ = writeln!(out, "the damaged store's files were moved to {dir}");
        }
        Kept::Nothing => {}
    }
    Ok(ExitCode::SUCCESS)
}

fn fail(e: &BackupError) -> ExitCode {
    let _ = writeln!(std::io::stderr(), "pocketpilot: {e}");
    let code = match e {
        BackupError::InUse { .. } => super::EXIT_BUSY,
        BackupError::NotUsable { .. } => EXIT_USAGE,
        _ => super::EXIT_FAILED,
    };
    ExitCode::from(code)
}

/// The store cannot be used: what is wrong, the backup that fits and the exact command to
/// put it back. `None` for any other error.
pub fn unusable_store(e: &StoreError, data_dir: &Path) -> Option<ExitCode> {
    if !matches!(
        e,
        StoreError::Damaged { .. } | StoreError::NewerSchema { .. }
    ) {
        return None;
    }
    let err = &mut std::io::stderr().lock();
    let _ = writeln!(err, "pocketpilot: {e}");
    let _ = match data::store_state(data_dir) {
        Ok(StoreState::Damaged {
            backup: Some(b), ..
        })
        | Ok(StoreState::Newer {
            backup: Some(b), ..
        }) => writeln!(
            err,
            "To put back the newest backup this build opens ({}, schema {}):\n  pocketpilot backup restore {}\n(`pocketpilot doctor` says more; nothing is deleted.)",
            b.taken_at, b.schema_version, b.name
        ),
        Ok(StoreState::Damaged { backup: None, .. }) => writeln!(
            err,
            "There is no backup to put back. `pocketpilot doctor` says more."
        ),
        _ => Ok(()),
    };
    Some(ExitCode::from(EXIT_STORE))
}
