use rusqlite::{params, Connection, OptionalExtension, Row};
use serde::Serialize;

use super::{now, row::At, CorruptRow, Result, StoreError};
use pocketpilot_protocol::task::{RunSource, TaskStatus};
use pocketpilot_protocol::Capability;

#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Task {
    pub id: i64,
    pub session_id: i64,
    pub goal: String,
    pub trigger: RunSource,
    pub provider: Option<String>,
    pub follow_up_of: Option<i64>,
    pub status: TaskStatus,
    pub step_count: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub active_ms: i64,
    /// What the person allowed for this run when it started (`--allow`).
    pub grants: Vec<Capability>,
    /// MCP servers/tools this run may use (`*`, `server`, `server:tool`).
    pub mcp: Vec<String>,
    pub final_answer: Option<String>,
    pub error: Option<String>,
    pub created_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    /// What people added to this task's budgets when continuing it (issue 19).
    pub extra: Extra,
    /// Why it is paused, while it is.
    pub pause: Option<Pause>,
}

/// Budget added to a task on top of the limits (`pocketpilot raise`).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Extra {
    pub steps: u32,
    pub seconds: u32,
    pub tokens: u32,
    pub usd: f64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Pause {
    pub reason: pocketpilot_protocol::PauseReason,
    pub budget: Option<pocketpilot_protocol::Budget>,
    pub message: String,
    /// When the pause lifts by itself (the daily cap for unattended runs resets then);
    /// `None`: only a person continues it.
    pub resumes_at: Option<String>,
}

const COLUMNS: &str = "id, session_id, goal, trigger, provider, follow_up_of, status, step_count, \
    prompt_tokens, completion_tokens, active_ms, grants, final_answer, error, created_at, started_at, finished_at, mcp, \
    extra_steps, extra_seconds, extra_tokens, extra_usd, pause_reason, pause_budget, pause_message, \
    pause_resumes_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<Task> {
    let at = At::new("tasks", r, 0)?;
    Ok(Task {
        id: at.id,
        session_id: r.get(1)?,
        goal: r.get(2)?,
        trigger: at.name(3, "trigger")?,
        provider: r.get(4)?,
        follow_up_of: r.get(5)?,
        status: at.name(6, "status")?,
        step_count: r.get(7)?,
        prompt_tokens: r.get(8)?,
        completion_tokens: r.get(9)?,
        active_ms: r.get(10)?,
        grants: at.json(11, "grants")?,
        final_answer: r.get(12)?,
        error: r.get(13)?,
        created_at: r.get(14)?,
        started_at: r.get(15)?,
        finished_at: r.get(16)?,
        mcp: at.json(17, "mcp")?,
        extra: Extra {
            steps: r.get(18)?,
            seconds: r.get(19)?,
            tokens: r.get(20)?,
            usd: r.get(21)?,
        },
        pause: match r.get::<_, Option<String>>(22)? {
            None => None,
            Some(_) => Some(Pause {
                reason: at.name(22, "pause_reason")?,
                budget: at.opt_name(23, "pause_budget")?,
                message: r.get::<_, Option<String>>(24)?.unwrap_or_default(),
                resumes_at: r.get(25)?,
            }),
        },
    })
}

/// The task pauses for the person (its status is set by the caller's transition).
pub fn set_pause(c: &Connection, id: i64, pause: Option<&Pause>) -> Result<()> {
    c.execute(
        "UPDATE tasks SET pause_reason = ?2, pause_budget = ?3, pause_message = ?4, \
         pause_resumes_at = ?5 WHERE id = ?1",
        params![
            id,
            pause.map(|p| p.reason.as_str()),
            pause.and_then(|p| p.budget).map(|b| b.as_str()),
            pause.map(|p| p.message.as_str()),
            pause.and_then(|p| p.resumes_at.as_deref()),
        ],
    )?;
    Ok(())
}

/// The paused tasks whose pause lifts by itself at or before `now` (a stamp), oldest first.
pub fn parked_until(c: &Connection, now: &str) -> Result<Vec<Task>> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM tasks WHERE pause_resumes_at IS NOT NULL AND pause_resumes_at <= ?1 \
         AND status = ?2 ORDER BY id"
    ))?;
    let rows = stmt.query_map(params![now, TaskStatus::Paused.as_str()], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// When the soonest pause that lifts by itself lifts (`pause_resumes_at` of a paused
/// task), if any: the trigger host sleeps until then instead of looking on a timer.
pub fn next_resume_at(c: &Connection) -> Result<Option<String>> {
    let mut stmt = c.prepare_cached(
        "SELECT MIN(pause_resumes_at) FROM tasks WHERE pause_resumes_at IS NOT NULL AND status = ?1",
    )?;
    Ok(stmt.query_row(params![TaskStatus::Paused.as_str()], |r| r.get(0))?)
}

/// Adds what a person raised to the task's budgets.
pub fn add_extra(c: &Connection, id: i64, raise: &pocketpilot_protocol::Raise) -> Result<()> {
    c.execute(
        "UPDATE tasks SET extra_steps = extra_steps + ?2, extra_seconds = extra_seconds + ?3, \
         extra_tokens = extra_tokens + ?4, extra_usd = extra_usd + ?5 WHERE id = ?1",
        params![id, raise.steps, raise.seconds, raise.tokens, raise.usd],
    )?;
    Ok(())
}

pub struct NewTask<'a> {
    pub session_id: i64,
    pub goal: &'a str,
    pub trigger: RunSource,
    pub provider: Option<&'a str>,
    pub follow_up_of: Option<i64>,
    pub grants: &'a [Capability],
    pub mcp: &'a [String],
}

pub fn insert(c: &Connection, t: &NewTask<'_>) -> Result<i64> {
    c.execute(
        "INSERT INTO tasks (session_id, goal, trigger, provider, follow_up_of, status, grants, created_at, mcp)
         VALUES (?1, ?2, ?3, ?4, ?5, 'queued', ?6, ?7, ?8)",
        params![
            t.session_id,
            t.goal,
            t.trigger.as_str(),
            t.provider,
            t.follow_up_of,
            super::json(&t.grants),
            now(),
            super::json(&t.mcp)
        ],
    )?;
    Ok(c.last_insert_rowid())
}

pub fn get(c: &Connection, id: i64) -> Result<Task> {
    c.prepare_cached(&format!("SELECT {COLUMNS} FROM tasks WHERE id = ?1"))?
        .query_row([id], from_row)
        .optional()?
        .ok_or_else(|| StoreError::not_found("task", id))
}

pub fn list(c: &Connection, limit: i64) -> Result<Vec<Task>> {
    let mut stmt = c.prepare(&format!(
        "SELECT {COLUMNS} FROM tasks ORDER BY id DESC LIMIT ?1"
    ))?;
    let rows = stmt.query_map([limit], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub fn list_for_session(c: &Connection, session_id: i64) -> Result<Vec<Task>> {
    let mut stmt = c.prepare(&format!(
        "SELECT {COLUMNS} FROM tasks WHERE session_id = ?1 ORDER BY id"
    ))?;
    let rows = stmt.query_map([session_id], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The statuses a task is not done in, as the SQL of [`open_for_session`] and the
/// `tasks_open` index spell them (literals, so that SQLite can use the partial index).
pub const OPEN_STATUSES_SQL: &str = "('queued','running','waiting_approval','paused')";

/// The session's task that is not terminal, if any (there is at most one). Through the
/// `tasks_open` partial index: one row read however many tasks the session has ended.
pub fn open_for_session(c: &Connection, session_id: i64) -> Result<Option<Task>> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM tasks WHERE session_id = ?1 AND status IN {OPEN_STATUSES_SQL} \
         ORDER BY id DESC LIMIT 1"
    ))?;
    Ok(stmt.query_row([session_id], from_row).optional()?)
}

/// A session's newest `limit` tasks, oldest first.
pub fn last_for_session(c: &Connection, session_id: i64, limit: i64) -> Result<Vec<Task>> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM tasks WHERE session_id = ?1 ORDER BY id DESC LIMIT ?2"
    ))?;
    let rows = stmt.query_map(params![session_id, limit], from_row)?;
    let mut out: Vec<Task> = rows.collect::<rusqlite::Result<_>>()?;
    out.reverse();
    Ok(out)
}

/// How many tasks have one of these statuses (the `tasks_status` index; the tray asks
/// often).
pub fn count_with_status(c: &Connection, statuses: &[TaskStatus]) -> Result<i64> {
    let mut n = 0;
    for status in statuses {
        n += c.query_row(
            "SELECT count(*) FROM tasks WHERE status = ?1",
            [status.as_str()],
            |r| r.get::<_, i64>(0),
        )?;
    }
    Ok(n)
}

pub fn with_status(c: &Connection, status: TaskStatus) -> Result<Vec<Task>> {
    let mut stmt = c.prepare(&format!(
        "SELECT {COLUMNS} FROM tasks WHERE status = ?1 ORDER BY id"
    ))?;
    let rows = stmt.query_map([status.as_str()], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Moves a task to `to`, enforcing the state machine. Errors leave the task as it was.
pub fn set_status(c: &Connection, id: i64, to: TaskStatus) -> Result<TaskStatus> {
    let from: String = c
        .query_row("SELECT status FROM tasks WHERE id = ?1", [id], |r| r.get(0))
        .optional()?
        .ok_or_else(|| StoreError::not_found("task", id))?;
    let from: TaskStatus = from
        .parse()
        .map_err(|e: pocketpilot_protocol::UnknownName| {
            StoreError::from(CorruptRow {
                table: "tasks",
                id: id.to_string(),
                column: "status",
                detail: e.to_string(),
            })
        })?;
    from.check(id, to)
        .map_err(|e| StoreError::Invalid(e.to_string()))?;
    let at = now();
    c.execute(
        "UPDATE tasks SET status = ?2,
            started_at = CASE WHEN ?2 = 'running' AND started_at IS NULL THEN ?3 ELSE started_at END,
            finished_at = CASE WHEN ?4 THEN ?3 ELSE finished_at END
         WHERE id = ?1",
        params![id, to.as_str(), at, to.is_terminal()],
    )?;
    Ok(from)
}

pub fn finish(
    c: &Connection,
    id: i64,
    final_answer: Option<&str>,
    error: Option<&str>,
) -> Result<()> {
    c.execute(
        "UPDATE tasks SET final_answer = COALESCE(?2, final_answer), error = COALESCE(?3, error) WHERE id = ?1",
        params![id, final_answer, error],
    )?;
    Ok(())
}

pub fn add_usage(c: &Connection, id: i64, prompt: u64, completion: u64) -> Result<()> {
    c.execute(
        "UPDATE tasks SET prompt_tokens = prompt_tokens + ?2, completion_tokens = completion_tokens + ?3 WHERE id = ?1",
        params![id, prompt as i64, completion as i64],
    )?;
    Ok(())
}

pub fn set_step(c: &Connection, id: i64, step: u32) -> Result<()> {
    c.execute(
        "UPDATE tasks SET step_count = MAX(step_count, ?2) WHERE id = ?1",
        params![id, step],
    )?;
    Ok(())
}

pub fn add_active_ms(c: &Connection, id: i64, ms: u64) -> Result<()> {
    c.execute(
        "UPDATE tasks SET active_ms = active_ms + ?2 WHERE id = ?1",
        params![id, ms as i64],
    )?;
    Ok(())
}

pub fn add_grant(c: &Connection, id: i64, capability: &Capability) -> Result<()> {
    let mut task = get(c, id)?;
    if !task.grants.contains(capability) {
        task.grants.push(capability.clone());
    }
    c.execute(
        "UPDATE tasks SET grants = ?2 WHERE id = ?1",
        params![id, super::json(&task.grants)],
    )?;
    Ok(())
}

/// Asks whichever process runs the task to cancel it.
pub fn request_cancel(c: &Connection, id: i64) -> Result<()> {
    c.execute("UPDATE tasks SET cancel_requested = 1 WHERE id = ?1", [id])?;
    Ok(())
}

pub fn cancel_requested(c: &Connection, id: i64) -> Result<bool> {
    Ok(c.query_row(
        "SELECT cancel_requested FROM tasks WHERE id = ?1",
        [id],
        |r| r.get(0),
    )?)
}

pub fn set_follow_up_of(c: &Connection, id: i64, follow_up_of: i64) -> Result<()> {
    c.execute(
        "UPDATE tasks SET follow_up_of = ?2 WHERE id = ?1",
        params![id, follow_up_of],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pocketpilot_protocol::task::ALL_STATUSES;

    #[test]
    fn the_open_statuses_are_exactly_the_non_terminal_ones() {
        let open: Vec<String> = ALL_STATUSES
            .into_iter()
            .filter(|s| !s.is_terminal())
            .map(|s| format!("'{}'", s.as_str()))
            .collect();
        assert_eq!(OPEN_STATUSES_SQL, format!("({})", open.join(",")));
    }

    #[test]
    fn the_open_task_is_read_through_the_partial_index() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::Store::open_in_dir(dir.path()).unwrap();
        let (session, open) = store
            .write(|tx| {
                let session = crate::sessions::insert(tx, "t", "/w")?;
                let new = NewTask {
                    session_id: session,
                    goal: "g",
                    trigger: RunSource::Cli,
                    provider: None,
                    follow_up_of: None,
                    grants: &[],
                    mcp: &[],
                };
                for _ in 0..3 {
                    let id = insert(tx, &new)?;
                    set_status(tx, id, TaskStatus::Running)?;
                    set_status(tx, id, TaskStatus::Completed)?;
                }
                let open = insert(tx, &new)?;
                set_status(tx, open, TaskStatus::Running)?;
                set_status(tx, open, TaskStatus::WaitingApproval)?;
                insert(
                    tx,
                    &NewTask {
                        session_id: crate::sessions::insert(tx, "u", "/w")?,
                        ..new
                    },
                )?;
                Ok((session, open))
            })
            .unwrap();
        let found = store.read(|c| open_for_session(c, session)).unwrap();
        assert_eq!(found.map(|t| t.id), Some(open));
        let plan: Vec<String> = store
            .read(|c| {
                let mut stmt = c.prepare(&format!(
                    "EXPLAIN QUERY PLAN SELECT id FROM tasks WHERE session_id = 1 AND status IN {OPEN_STATUSES_SQL} ORDER BY id DESC LIMIT 1"
                ))?;
                let rows = stmt.query_map([], |r| r.get::<_, String>(3))?;
                Ok(rows.collect::<rusqlite::Result<_>>()?)
            })
            .unwrap();
        assert!(
            plan.iter().any(|p| p.contains("tasks_open")),
            "plan: {plan:?}"
        );
        store
            .write(|tx| {
                set_status(tx, open, TaskStatus::Cancelled)?;
                Ok(())
            })
            .unwrap();
        assert_eq!(store.read(|c| open_for_session(c, session)).unwrap(), None);
    }
}
