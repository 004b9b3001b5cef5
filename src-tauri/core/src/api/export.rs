//! A session taken out of PocketPilot: the person's words, the answers, every tool call with
//! its arguments and result, and the files each task changed (with diffs where the change
//! journal still holds both sides). Two renderings of one [`SessionExport`]: JSON, whose
//! shape is versioned by [`FORMAT_VERSION`] (`docs/export.md`), and Markdown for reading.
//!
//! Only reads: an export never writes to the store.
use std::fmt::Write;

use pocketpilot_protocol::changes::{FileChange, FileChangeKind};
use pocketpilot_protocol::{EntryKind, RunSource, TaskStatus, ToolCallStatus};
use serde::Serialize;
use serde_json::Value;

use crate::api::service::{Result, Runtime};
use crate::engine::changes::undo::Target;
use crate::store::{costs, tool_calls};

/// The JSON shape's version. A field added keeps it; a field removed, renamed or given
/// another meaning raises it.
pub const FORMAT_VERSION: u32 = 1;

/// What an export is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    Md,
    Json,
}

impl ExportFormat {
    pub fn extension(self) -> &'static str {
        match self {
            ExportFormat::Md => "md",
            ExportFormat::Json => "json",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct SessionExport {
    pub format_version: u32,
    /// When this was written (UTC, RFC 3339).
    pub exported_at: String,
    pub session: SessionPart,
    /// Oldest first.
    pub tasks: Vec<TaskPart>,
    /// The session's transcript in order: what the person said, the model's turns, tool
    /// results, and the runtime's own entries (resets, summaries).
    pub transcript: Vec<TranscriptItem>,
    /// What the session's model turns cost.
    pub cost: costs::Totals,
}

#[derive(Debug, Clone, Serialize)]
pub struct SessionPart {
    pub id: i64,
    pub title: String,
    pub workspace: String,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct TaskPart {
    pub id: i64,
    pub goal: String,
    pub status: TaskStatus,
    pub trigger: RunSource,
    pub provider: Option<String>,
    pub follow_up_of: Option<i64>,
    pub final_answer: Option<String>,
    pub error: Option<String>,
    pub steps: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub created_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    /// In the order they were asked.
    pub tool_calls: Vec<ToolCallPart>,
    /// Directories left out, as `pocketpilot changes TASK` lists them.
    pub files_changed: Vec<FileChange>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ToolCallPart {
    pub call_id: String,
    pub step: i64,
    pub name: String,
    /// As the model sent them: JSON when they parse, else the text as a string.
    pub arguments: Value,
    pub status: ToolCallStatus,
    /// `None` while the call waits (for an approval) or was never finished.
    pub output: Option<String>,
    pub is_error: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct TranscriptItem {
    pub id: i64,
    pub task_id: Option<i64>,
    /// `user`, `assistant`, `tool_result`, `system`, `reset`, `compaction`, or a kind a
    /// write named.
    pub kind: String,
    pub at: String,
    pub text: Option<String>,
    /// The calls an assistant turn asked for (`[{id, name, arguments}]`); empty otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<Value>,
    /// The call a tool result answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// The rewind that set this entry aside (kept in the history, no longer sent to the
    /// model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rewound_by: Option<i64>,
}

impl Runtime {
    /// Everything a session holds that a person would take elsewhere.
    pub(crate) fn export_session(&self, session_id: i64) -> Result<SessionExport> {
        let session = self.session(session_id)?;
        let tasks = self.session_tasks(session_id)?;
        let entries = self.session_entries(session_id)?;
        let mut parts = Vec::with_capacity(tasks.len());
        for t in tasks {
            let calls = self.store.read(|c| tool_calls::list(c, t.id))?;
            let changes = self.change_list(&Target::Task {
                task_id: t.id,
                call_id: None,
            })?;
            parts.push(TaskPart {
                id: t.id,
                goal: t.goal,
                status: t.status,
                trigger: t.trigger,
                provider: t.provider,
                follow_up_of: t.follow_up_of,
                final_answer: t.final_answer,
                error: t.error,
                steps: t.step_count,
                prompt_tokens: t.prompt_tokens,
                completion_tokens: t.completion_tokens,
                created_at: t.created_at,
                started_at: t.started_at,
                finished_at: t.finished_at,
                tool_calls: calls.into_iter().map(call_part).collect(),
                files_changed: changes.files,
            });
        }
        Ok(SessionExport {
            format_version: FORMAT_VERSION,
            exported_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            session: SessionPart {
                id: session.id,
                title: session.title,
                workspace: session.workspace,
                created_at: session.created_at,
                updated_at: session.updated_at,
            },
            tasks: parts,
            transcript: entries.into_iter().map(transcript_item).collect(),
            cost: self.session_cost(session_id)?,
        })
    }

    /// The session as a file's text. Markdown is for reading: control and invisible
    /// characters from the model or tools are written visibly (`\x1b`). JSON keeps every
    /// character (serde escapes the controls).
    pub(crate) fn export_text(&self, session_id: i64, format: ExportFormat) -> Result<String> {
        let x = self.export_session(session_id)?;
        Ok(match format {
            ExportFormat::Md => pocketpilot_protocol::visible(&to_markdown(&x)).into_owned(),
            ExportFormat::Json => {
                let mut text = serde_json::to_string_pretty(&x).map_err(|e| {
                    crate::api::service::RuntimeError::InvalidArguments(e.to_string())
                })?;
                text.push('\n');
                text
            }
        })
    }

    /// Every session's id and title, newest first: what `export --all` walks.
    pub(crate) fn export_index(&self) -> Result<Vec<(i64, String)>> {
        Ok(self
            .sessions()?
            .into_iter()
            .map(|s| (s.id, s.title))
            .collect())
    }
}

fn call_part(r: tool_calls::ToolCallRecord) -> ToolCallPart {
    ToolCallPart {
        arguments: serde_json::from_str(&r.arguments).unwrap_or(Value::String(r.arguments)),
        call_id: r.call_id,
        step: r.step,
        name: r.name,
        status: r.status,
        output: r.output,
        is_error: r.is_error,
    }
}

fn transcript_item(e: crate::store::Entry) -> TranscriptItem {
    let text = e
        .content
        .get("text")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let tool_calls = match e.kind {
        EntryKind::Assistant => e
            .content
            .get("tool_calls")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    let (call_id, is_error) = match e.kind {
        EntryKind::ToolResult => (
            e.content
                .get("call_id")
                .and_then(Value::as_str)
                .map(str::to_owned),
            e.content.get("is_error").and_then(Value::as_bool),
        ),
        _ => (None, None),
    };
    TranscriptItem {
        id: e.id,
        task_id: e.task_id,
        kind: e.kind.as_str().to_owned(),
        at: e.created_at,
        text,
        tool_calls,
        call_id,
        is_error,
        rewound_by: e.rewound_by,
    }
}

/// A file name for a session's export: its id, then its title's words, lower case, joined
/// by `-` (at most 48 characters of them), then `ext`. Unique because the id is.
pub fn file_name(id: i64, title: &str, ext: &str) -> String {
    let mut slug = String::new();
    for word in title
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let word = word.to_lowercase();
        if slug.chars().count() + word.chars().count() + 1 > 48 {
            break;
        }
        if !slug.is_empty() {
            slug.push('-');
        }
        slug.push_str(&word);
    }
    if slug.is_empty() {
        format!("{id}.{ext}")
    } else {
        format!("{id}-{slug}.{ext}")
    }
}

/// The session as Markdown, in the order it happened: each task's header where its first
/// entry is, the person's words, the model's turns with the calls they asked for, each
/// result, then the task's answer and the files it changed with their diffs.
pub fn to_markdown(x: &SessionExport) -> String {
    let mut out = String::new();
    let s = &x.session;
    let _ = writeln!(out, "# {}\n", one_line(&s.title));
    let _ = writeln!(
        out,
        "Session {} · workspace `{}` · started {} · exported {}\n",
        s.id,
        one_line(&s.workspace),
        s.created_at,
        x.exported_at
    );
    let task_of = |id: Option<i64>| id.and_then(|id| x.tasks.iter().find(|t| t.id == id));
    let mut shown_task: Option<i64> = None;
    // Whether the current task's answer was shown where the model gave it.
    let mut answered = false;
    let mut done = std::collections::HashSet::new();
    for item in &x.transcript {
        if item.task_id != shown_task {
            if let Some(prev) = task_of(shown_task) {
                task_footer(&mut out, prev, answered);
                done.insert(prev.id);
            }
            if let Some(t) = task_of(item.task_id) {
                task_header(&mut out, t);
            }
            shown_task = item.task_id;
            answered = false;
        }
        let answer = task_of(item.task_id).and_then(|t| t.final_answer.as_deref());
        let is_answer = EntryKind::of(&item.kind) == EntryKind::Assistant
            && item.tool_calls.is_empty()
            && answer.is_some_and(|a| Some(a.trim()) == item.text.as_deref().map(str::trim));
        if is_answer {
            let _ = writeln!(out, "### Answer\n\n{}\n", answer.unwrap_or("").trim_end());
            answered = true;
        } else {
            transcript_md(&mut out, item);
        }
    }
    if let Some(prev) = task_of(shown_task) {
        task_footer(&mut out, prev, answered);
        done.insert(prev.id);
    }
    // A task with no entry (one still queued) still has its goal and status.
    for t in x.tasks.iter().filter(|t| !done.contains(&t.id)) {
        task_header(&mut out, t);
        task_footer(&mut out, t, false);
    }
    let c = &x.cost;
    let _ = writeln!(
        out,
        "---\n\n{} model turn(s), {} prompt and {} completion tokens, ${:.4}{}.",
        c.turns,
        c.prompt_tokens,
        c.completion_tokens,
        c.cost_usd,
        if c.unpriced_turns > 0 {
            format!(" ({} turn(s) without a price)", c.unpriced_turns)
        } else {
            String::new()
        }
    );
    out
}

fn task_header(out: &mut String, t: &TaskPart) {
    let _ = writeln!(out, "## Task {}: {}\n", t.id, one_line(&t.goal));
    let _ = writeln!(
        out,
        "Status: {} · {} step(s) · {} prompt / {} completion tokens · from {}{}\n",
        t.status,
        t.steps,
        t.prompt_tokens,
        t.completion_tokens,
        t.trigger,
        t.finished_at
            .as_ref()
            .map(|f| format!(" · finished {f}"))
            .unwrap_or_default()
    );
}

/// The task's answer (unless it was shown as the model's last turn), its error, and the
/// files it changed with their diffs.
fn task_footer(out: &mut String, t: &TaskPart, answered: bool) {
    if let (Some(a), false) = (&t.final_answer, answered) {
        let _ = writeln!(out, "### Answer\n\n{}\n", a.trim_end());
    }
    if let Some(e) = &t.error {
        let _ = writeln!(out, "### Error\n\n{}", fenced(e, ""));
    }
    if t.files_changed.is_empty() {
        return;
    }
    let _ = writeln!(out, "### Files changed\n");
    for f in &t.files_changed {
        let name = match (&f.kind, &f.from) {
            (FileChangeKind::Renamed, Some(from)) => format!("`{from}` → `{}`", f.path),
            _ => format!("`{}`", f.path),
        };
        let _ = writeln!(out, "- {} {name}", f.kind);
    }
    out.push('\n');
    for f in &t.files_changed {
        if let Some(d) = &f.diff {
            let _ = writeln!(out, "{}", fenced(d, "diff"));
        }
    }
}

fn transcript_md(out: &mut String, item: &TranscriptItem) {
    let text = item.text.as_deref().unwrap_or("");
    if let Some(by) = item.rewound_by {
        let _ = writeln!(
            out,
            "*(set aside by rewind {by}: no longer sent to the model)*\n"
        );
    }
    match EntryKind::of(&item.kind) {
        EntryKind::User => {
            let _ = writeln!(out, "**You** ({}):\n\n{}\n", item.at, quote(text));
        }
        EntryKind::Assistant => {
            if !text.trim().is_empty() {
                let _ = writeln!(out, "**PocketPilot:**\n\n{}\n", text.trim_end());
            }
            for call in &item.tool_calls {
                let name = call.get("name").and_then(Value::as_str).unwrap_or("?");
                let id = call.get("id").and_then(Value::as_str).unwrap_or("");
                let args = call.get("arguments").map(pretty).unwrap_or_default();
                let _ = writeln!(
                    out,
                    "Tool call `{}` ({}):\n\n{}",
                    one_line(name),
                    one_line(id),
                    fenced(&args, "json")
                );
            }
        }
        EntryKind::ToolResult => {
            let what = if item.is_error == Some(true) {
                "failed"
            } else {
                "result"
            };
            let _ = writeln!(
                out,
                "Tool {what} ({}):\n\n{}",
                one_line(item.call_id.as_deref().unwrap_or("")),
                fenced(text, "")
            );
        }
        EntryKind::Reset => {
            let _ = writeln!(out, "*— context reset —*\n");
        }
        EntryKind::Compaction => {
            let _ = writeln!(out, "*Summary of earlier turns:*\n\n{}\n", quote(text));
        }
        EntryKind::System => {
            let _ = writeln!(out, "*Note to the model:*\n\n{}\n", quote(text));
        }
        EntryKind::Written(kind) => {
            let _ = writeln!(out, "*{}:*\n\n{}\n", one_line(&kind), quote(text));
        }
    }
}

/// Arguments the model sent as a JSON string are shown as the JSON they hold.
fn pretty(v: &Value) -> String {
    let v = match v {
        Value::String(s) => serde_json::from_str::<Value>(s).unwrap_or_else(|_| v.clone()),
        other => other.clone(),
    };
    serde_json::to_string_pretty(&v).unwrap_or_default()
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

fn quote(s: &str) -> String {
    s.trim_end()
        .lines()
        .map(|l| format!("> {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A fenced block that no run of backticks inside `text` can close early.
fn fenced(text: &str, lang: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let body = text.trim_end_matches('\n');
    format!("{fence}{lang}\n{body}\n{fence}\n")
}

crate::api::call::op! {
    /// Everything a session holds that a person would take elsewhere.
    #[derive(Debug, Clone)]
    ExportSession { session_id: i64 } -> Result<SessionExport>
        = |rt, op| rt.export_session(op.session_id);
    /// The session as a file's text. Markdown is for reading: control and invisible characters from
    /// the model or tools are written visibly (`\x1b`). JSON keeps every character (serde escapes
    /// the controls).
    #[derive(Debug, Clone)]
    ExportText { session_id: i64, format: ExportFormat } -> Result<String>
        = |rt, op| rt.export_text(op.session_id, op.format);
    /// Every session's id and title, newest first: what `export --all` walks.
    #[derive(Debug, Clone)]
    ExportIndex {} -> Result<Vec<(i64, String)>>
        = |rt, op| rt.export_index();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_the_id_and_the_titles_words() {
        assert_eq!(file_name(7, "Fix the build!", "md"), "7-fix-the-build.md");
        assert_eq!(
            file_name(8, "../../etc/passwd", "json"),
            "8-etc-passwd.json"
        );
        assert_eq!(file_name(9, "  ", "md"), "9.md");
        let long = file_name(10, &"word ".repeat(40), "md");
        assert!(long.len() <= "10-".len() + 48 + ".md".len(), "{long}");
    }

    #[test]
    fn a_fence_outlasts_the_backticks_inside() {
        let f = fenced("a ```` b", "");
        assert!(f.starts_with("`````\n"), "{f}");
        assert!(f.ends_with("\n`````\n"), "{f}");
        assert_eq!(fenced("x", "diff"), "```diff\nx\n```\n");
    }
}
