//! `pocketpilot eval` and `pocketpilot replay TASK --as-eval FILE`.
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use super::{print_json, CliError};
use pocketpilot_core::api::service::Runtime;
use pocketpilot_core::ops;
use pocketpilot_evals as eval;

#[derive(clap::Args, Debug)]
pub struct EvalArgs {
    /// Play the same goals against the configured model (reported, no pass requirement).
    #[arg(long)]
    pub real: bool,
    /// Print the results as JSON (the closing `N passed, M failed` goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// Only cases whose name contains this text.
    #[arg(long)]
    pub filter: Option<String>,
    /// The folder of case files (default: `POCKETPILOT_EVAL_CASES`, else `evals/cases`).
    #[arg(long)]
    pub cases: Option<PathBuf>,
    /// Cases run at once.
    #[arg(long, default_value_t = 8)]
    pub jobs: usize,
}

#[derive(clap::Args, Debug)]
pub struct ReplayArgs {
    /// The recorded task.
    pub task: i64,
    /// Write the task as a scripted eval case to FILE.
    #[arg(long = "as-eval", value_name = "FILE")]
    pub as_eval: PathBuf,
}

pub async fn eval(rt: &Arc<Runtime>, args: EvalArgs) -> Result<ExitCode, CliError> {
    let dir = args.cases.clone().unwrap_or_else(eval::default_cases_dir);
    let mut cases = eval::load_cases(&dir).map_err(|e| CliError::Usage(e.to_string()))?;
    if let Some(f) = &args.filter {
        cases.retain(|c| c.name.contains(f.as_str()));
    }
    if cases.is_empty() {
        return Err(CliError::Usage(format!(
            "no case matches `{}` in {}",
            args.filter.as_deref().unwrap_or_default(),
            dir.display()
        )));
    }
    let opts = if args.real {
        let settings = rt.call(ops::GetProviderSettings {})?;
        // The configured key is the secret to guard; it is compared, never printed.
        let secret = pocketpilot_model::keychain::resolve_api_key(&settings.name)
            .ok()
            .flatten();
        eval::RunOptions {
            real: true,
            jobs: args.jobs.max(1),
            secret,
            provider: Some(settings),
            program: std::env::current_exe().ok(),
        }
    } else {
        eval::RunOptions {
            real: false,
            jobs: args.jobs.max(1),
            secret: Some(eval::install_canary()),
            provider: None,
            program: std::env::current_exe().ok(),
        }
    };
    let started = Instant::now();
    let results = eval::run_suite(&cases, &opts).await;
    let summary = eval::Summary::new(results, started.elapsed().as_secs_f64(), args.real);
    if args.json {
        print_json(&summary);
        let _ = writeln!(std::io::stderr(), "{}", eval::summary_line(&summary));
    } else {
        let _ = write!(std::io::stdout().lock(), "{}", eval::table(&summary));
    }
    // --real reports; only the scripted suite has a pass requirement.
    Ok(if summary.failed == 0 || args.real {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(super::EXIT_FAILED)
    })
}

pub fn replay(rt: &Arc<Runtime>, args: ReplayArgs) -> Result<ExitCode, CliError> {
    let case = eval::case_from_task(rt, args.task).map_err(|e| match e {
        eval::EvalError::Runtime(r) => CliError::Runtime(r),
        other => CliError::Other(other.to_string()),
    })?;
    let text = serde_json::to_string_pretty(&case).map_err(|e| CliError::Other(e.to_string()))?;
    std::fs::write(&args.as_eval, format!("{text}\n"))
        .map_err(|e| CliError::Other(format!("cannot write {}: {e}", args.as_eval.display())))?;
    let _ = writeln!(
        std::io::stdout().lock(),
        "wrote case `{}` ({} model turns) to {}",
        case.name,
        case.script["turns"].as_array().map_or(0, Vec::len),
        args.as_eval.display()
    );
    Ok(ExitCode::SUCCESS)
}
