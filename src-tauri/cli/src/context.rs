//! `pocketpilot session compact` and the context part of `session show` (issue 13).
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use super::{print_json, CliError};
use pocketpilot_core::api::service::Runtime;
use pocketpilot_core::engine::context::ContextFailure;
use pocketpilot_core::ops;

impl From<ContextFailure> for CliError {
    fn from(e: ContextFailure) -> Self {
        match e {
            ContextFailure::Store(s) => CliError::Store(s),
            ContextFailure::NoTask | ContextFailure::Busy(_) => CliError::Usage(e.to_string()),
            other => CliError::Other(other.to_string()),
        }
    }
}

/// The session's context use and compactions, for `session show --json`.
pub async fn context_json(rt: &Arc<Runtime>, session: i64) -> Result<serde_json::Value, CliError> {
    let used = rt
        .call(ops::GetContextUse {
            session_id: session,
        })
        .await?;
    let compactions = rt.call(ops::ListCompactions {
        session_id: session,
    })?;
    Ok(serde_json::json!({ "context": used, "compactions": compactions }))
}

/// Compacts a session now with its provider. Refused while it has a run.
pub async fn compact(rt: &Arc<Runtime>, session: i64, json: bool) -> Result<ExitCode, CliError> {
    let report = rt
        .call(ops::CompactNow {
            session_id: session,
        })
        .await?;
    if json {
        print_json(&report);
    } else {
        let _ = writeln!(
            std::io::stdout(),
            "session {session}: {} → {} tokens{}",
            report.tokens_before,
            report.tokens_after,
            if report.compacted {
                ""
            } else {
                " (nothing to compact)"
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}
