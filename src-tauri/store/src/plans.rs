//! Plans (plan mode): written when a planning run ends with one, decided by the person,
//! ticked step by step by the run that carries an approved one out.
use rusqlite::{params, Connection, OptionalExtension, Row};

use pocketpilot_protocol::{Plan, PlanContent, PlanSource, PlanStatus};

use super::{now, row::At, Result, StoreError};

const COLUMNS: &str =
    "id, session_id, task_id, status, source, content, done, edited, run_task_id, created_at, decided_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<Plan> {
    let at = At::new("plans", r, 0)?;
    Ok(Plan {
        id: at.id,
        session_id: r.get(1)?,
        task_id: r.get(2)?,
        status: at.name(3, "status")?,
        source: at.name(4, "source")?,
        content: at.json(5, "content")?,
        done: at.json(6, "done")?,
        edited: r.get(7)?,
        run_task_id: r.get(8)?,
        created_at: r.get(9)?,
        decided_at: r.get(10)?,
    })
}

fn json<T: serde::Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| StoreError::Invalid(e.to_string()))
}

/// Stores the plan a task ended with; a task has one plan, so a second replaces the first
/// while it is still only proposed.
pub fn propose(
    c: &Connection,
    session_id: i64,
    task_id: i64,
    content: &PlanContent,
    source: PlanSource,
) -> Result<i64> {
    if let Some(p) = for_task(c, task_id)? {
        if p.status != PlanStatus::Proposed {
            return Err(StoreError::Invalid(format!(
                "plan {} of task {task_id} is already {}",
                p.id, p.status
            )));
        }
        c.execute(
            "UPDATE plans SET content = ?2, source = ?3, edited = 0 WHERE id = ?1",
            params![p.id, json(content)?, source.as_str()],
        )?;
        return Ok(p.id);
    }
    c.execute(
        "INSERT INTO plans (session_id, task_id, status, source, content, created_at)
         VALUES (?1, ?2, 'proposed', ?3, ?4, ?5)",
        params![session_id, task_id, source.as_str(), json(content)?, now()],
    )?;
    Ok(c.last_insert_rowid())
}

pub fn get(c: &Connection, id: i64) -> Result<Plan> {
    c.query_row(
        &format!("SELECT {COLUMNS} FROM plans WHERE id = ?1"),
        [id],
        from_row,
    )
    .optional()?
    .ok_or_else(|| StoreError::not_found("plan", id))
}

/// The plan a task made, if it made one.
pub fn for_task(c: &Connection, task_id: i64) -> Result<Option<Plan>> {
    Ok(c.query_row(
        &format!("SELECT {COLUMNS} FROM plans WHERE task_id = ?1"),
        [task_id],
        from_row,
    )
    .optional()?)
}

/// The approved plan a task carries out, if it carries one out.
pub fn carried_by(c: &Connection, run_task_id: i64) -> Result<Option<Plan>> {
    Ok(c.query_row(
        &format!("SELECT {COLUMNS} FROM plans WHERE run_task_id = ?1 AND status = 'approved'"),
        [run_task_id],
        from_row,
    )
    .optional()?)
}

/// The plans of a session, oldest first.
pub fn for_session(c: &Connection, session_id: i64) -> Result<Vec<Plan>> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM plans WHERE session_id = ?1 ORDER BY id"
    ))?;
    let rows = stmt.query_map([session_id], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The person's changes to a proposed plan.
pub fn edit(c: &Connection, id: i64, content: &PlanContent) -> Result<()> {
    proposed(c, id)?;
    c.execute(
        "UPDATE plans SET content = ?2, edited = 1 WHERE id = ?1",
        params![id, json(content)?],
    )?;
    Ok(())
}

/// The person's decision on a proposed plan; `run_task_id`: the task that carries an
/// approved one out.
pub fn decide(c: &Connection, id: i64, status: PlanStatus, run_task_id: Option<i64>) -> Result<()> {
    proposed(c, id)?;
    c.execute(
        "UPDATE plans SET status = ?2, run_task_id = ?3, decided_at = ?4 WHERE id = ?1",
        params![id, status.as_str(), run_task_id, now()],
    )?;
    Ok(())
}

fn proposed(c: &Connection, id: i64) -> Result<Plan> {
    let plan = get(c, id)?;
    if plan.status != PlanStatus::Proposed {
        return Err(StoreError::Invalid(format!(
            "plan {id} is {}, not proposed",
            plan.status
        )));
    }
    Ok(plan)
}

/// Marks a step done (1-based); marking it again changes nothing.
pub fn step_done(c: &Connection, id: i64, step: u32) -> Result<Plan> {
    let mut plan = get(c, id)?;
    if step == 0 || step as usize > plan.content.steps.len() {
        return Err(StoreError::Invalid(format!(
            "plan {id} has no step {step} (it has {})",
            plan.content.steps.len()
        )));
    }
    if !plan.done.contains(&step) {
        plan.done.push(step);
        c.execute(
            "UPDATE plans SET done = ?2 WHERE id = ?1",
            params![id, json(&plan.done)?],
        )?;
    }
    Ok(plan)
}

/// Whether the task runs in plan mode (started so, or in a session set so).
pub fn task_plans(c: &Connection, task_id: i64) -> Result<bool> {
    let (task, session): (bool, bool) = c
        .query_row(
            "SELECT t.plan_mode, s.plan_mode FROM tasks t JOIN sessions s ON s.id = t.session_id
             WHERE t.id = ?1",
            [task_id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?
        .ok_or_else(|| StoreError::not_found("task", task_id))?;
    Ok(task || session)
}

/// Starts a task in plan mode (before it runs).
pub fn set_task_plan_mode(c: &Connection, task_id: i64, on: bool) -> Result<()> {
    let n = c.execute(
        "UPDATE tasks SET plan_mode = ?2 WHERE id = ?1",
        params![task_id, on],
    )?;
    if n == 0 {
        return Err(StoreError::not_found("task", task_id));
    }
    Ok(())
}

/// Every run of the session plans first (the session setting).
pub fn set_session_plan_mode(c: &Connection, session_id: i64, on: bool) -> Result<()> {
    let n = c.execute(
        "UPDATE sessions SET plan_mode = ?2 WHERE id = ?1",
        params![session_id, on],
    )?;
    if n == 0 {
        return Err(StoreError::not_found("session", session_id));
    }
    Ok(())
}

pub fn session_plan_mode(c: &Connection, session_id: i64) -> Result<bool> {
    c.query_row(
        "SELECT plan_mode FROM sessions WHERE id = ?1",
        [session_id],
        |r| r.get(0),
    )
    .optional()?
    .ok_or_else(|| StoreError::not_found("session", session_id))
}

/// Writes plan mode's note into the session's transcript for a planning task, once: a
/// system entry the model reads after the person's input.
pub fn note_once(c: &Connection, session_id: i64, task_id: i64, text: &str) -> Result<()> {
    let noted: bool = c.query_row(
        "SELECT EXISTS (SELECT 1 FROM entries WHERE task_id = ?1 AND kind = 'system'
         AND json_extract(content, '$.plan_mode') = 1)",
        [task_id],
        |r| r.get(0),
    )?;
    if !noted {
        crate::entries::append(
            c,
            session_id,
            Some(task_id),
            &pocketpilot_protocol::EntryKind::System,
            &serde_json::json!({ "text": text, "plan_mode": true }),
        )?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "plans_tests.rs"]
mod tests;
