//! The suite's report: a table (case, status, time, reason for failure) closed by the line
//! `N passed, M failed` on its own, or the same as JSON.
use serde::Serialize;

use super::runner::CaseResult;

#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    pub seconds: f64,
    pub real: bool,
    pub cases: Vec<CaseResult>,
}

impl Summary {
    pub fn new(cases: Vec<CaseResult>, seconds: f64, real: bool) -> Self {
        let passed = cases.iter().filter(|c| c.passed).count();
        Self {
            passed,
            failed: cases.len() - passed,
            seconds,
            real,
            cases,
        }
    }
}

/// `N passed, M failed`.
pub fn summary_line(s: &Summary) -> String {
    format!("{} passed, {} failed", s.passed, s.failed)
}

/// The table, one row per case, failures' reasons joined with `; `.
pub fn table(s: &Summary) -> String {
    let width = s
        .cases
        .iter()
        .map(|c| c.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut out = format!(
        "{:<width$}  {:<6}  {:<16}  {:>7}  reason\n",
        "case", "result", "status", "time"
    );
    for c in &s.cases {
        let verdict = if c.passed { "pass" } else { "FAIL" };
        let reason = c.failures.join("; ");
        out.push_str(&format!(
            "{:<width$}  {:<6}  {:<16}  {:>6.2}s  {}\n",
            c.name,
            verdict,
            c.status.as_deref().unwrap_or("-"),
            c.seconds,
            reason
        ));
    }
    out.push_str(&format!("total {:.2}s\n", s.seconds));
    out.push_str(&summary_line(s));
    out.push('\n');
    out
}
