//! The eval suite: scripted cases, each run in its own temporary store and workspace
//! through the real runtime (store, worker, agent, tools, guard, policy), scored
//! automatically. DESIGN §13.
//!
//! - `case`: the case format (documented there) and its placeholders.
//! - `runner`: runs one case (setup, submit, answer approvals, inbox steps, a simulated
//!   crash and restart) and the suite (bounded concurrency).
//! - `score`: the checks of a settled case and the invariants every case must keep.
//! - `report`: the table (`N passed, M failed` on its own last line) and JSON.
//! - `replay`: a recorded task's model turns → a scripted case (a bug report becomes a
//!   regression test).
//! - `triggers`: hooks with the real listener, requests to it, a schedule on an
//!   injected clock.
//! - `child`: a run in a real `pocketpilot` child process, killed with SIGKILL and
//!   resumed.
//!
//! The only fake is the model: the scripted provider plays each case's turns (a
//! compromised model in the security cases). `--real` plays the same goals against the
//! configured model and reports without a pass requirement.
#![deny(clippy::print_stdout, clippy::print_stderr)]
mod case;
mod child;
mod http;
mod replay;
mod report;
mod runner;
mod score;
mod triggers;

use std::path::{Path, PathBuf};

pub use case::{
    Action, Answer, Case, ChildRun, Crash, CrashCall, EventMatch, Expect, ExpectApproval,
    ExpectUsage, HookRequest, HookSpec, InboxStep, KillAt, Schedule, Setup, Start, Tick, Token,
};
pub use replay::case_from_task;
pub use report::{summary_line, table, Summary};
pub use runner::{run_case, run_suite, CaseResult, RunOptions};

/// The environment variable holding the API key (see `pocketpilot_model::keychain`).
pub const API_KEY_ENV: &str = pocketpilot_model::keychain::ENV_API_KEY;

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a valid case file: {source}")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("two cases are named `{0}`")]
    Duplicate(String),
    #[error("no case files (*.json) in {0}")]
    NoCases(PathBuf),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("task {0} recorded no model turn: there is nothing to replay")]
    NothingToReplay(i64),
    #[error(transparent)]
    Runtime(#[from] pocketpilot_core::api::service::RuntimeError),
    #[error(transparent)]
    Store(#[from] pocketpilot_store::StoreError),
}

/// Every case in `dir` (`*.json`, each a case or an array of cases), in file then list
/// order. Names must be unique.
pub fn load_cases(dir: &Path) -> Result<Vec<Case>, EvalError> {
    let read_err = |source| EvalError::Read {
        path: dir.to_owned(),
        source,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(read_err)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(EvalError::NoCases(dir.to_owned()));
    }
    let mut cases: Vec<Case> = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).map_err(|source| EvalError::Read {
            path: path.clone(),
            source,
        })?;
        let parsed = parse_cases(&text).map_err(|source| EvalError::Parse {
            path: path.clone(),
            source,
        })?;
        for c in parsed {
            if cases.iter().any(|x| x.name == c.name) {
                return Err(EvalError::Duplicate(c.name));
            }
            cases.push(c);
        }
    }
    Ok(cases)
}

/// A case file's text: one case or an array of cases.
pub fn parse_cases(text: &str) -> Result<Vec<Case>, serde_json::Error> {
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        Many(Vec<Case>),
        One(Box<Case>),
    }
    Ok(match serde_json::from_str(text)? {
        OneOrMany::Many(v) => v,
        OneOrMany::One(c) => vec![*c],
    })
}

/// Where the cases are: `POCKETPILOT_EVAL_CASES`, else `evals/cases` under the current
/// directory or one of its parents, else the source tree this binary was built from.
pub fn default_cases_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("POCKETPILOT_EVAL_CASES").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Ok(cwd) = std::env::current_dir() {
        for dir in cwd.ancestors() {
            let candidate = dir.join("evals").join("cases");
            if candidate.is_dir() {
                return candidate;
            }
        }
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../evals/cases")
}

/// The secret the suite guards. Scripted runs put a canary API key in the environment
/// (unless one is set already: then that one is guarded) so that a leak has something to
/// leak; call this before starting threads that read the environment. Never printed.
pub fn install_canary() -> String {
    if let Some(existing) = std::env::var(API_KEY_ENV)
        .ok()
        .filter(|v| !v.trim().is_empty())
    {
        return existing;
    }
    let canary = format!("sk-eval-canary-{}", uuid::Uuid::now_v7().simple());
    std::env::set_var(API_KEY_ENV, &canary);
    canary
}
