//! The conversation inbox: what is said to a busy session waits here, persisted at once,
//! and enters the transcript only at a boundary — so an answer never sits after words it
//! did not see.
//!
//! - A session is **busy** while it has a task that is not terminal.
//! - Admission (`admission::admit`), in one transaction: request-id dedupe first; `whenBusy: reject`
//!   on a busy session and `whenIdle: reject` on an idle one write nothing; a display-only
//!   write (`app.*`) is appended at once unless a reset is queued; everything else joins
//!   the inbox, and an idle session applies a `final` boundary at once.
//! - Boundaries (`select`): `postTools` takes every write, then the first steer (all with
//!   steeringMode `all`); `final` also takes the first follow-up (all with followUpMode
//!   `all`). Writes are placed first, then user items in submission order. A queued reset
//!   turns `postTools` into `final` and ends the current run (its inputs: unanswered/reset).
//! - Placed user items start the next run (a task whose goal is the first item's text);
//!   steers placed at `postTools` join the current run.
//! - A run is a person's or a trigger's (`RunSource`), never both, because a trigger's
//!   run never uses the grants a person gave: a trigger's steer does not join a person's
//!   run at `postTools` (it stays queued), and `final` takes only inputs of the first
//!   taken input's kind of source. So a webhook's `when_busy: steer` into a person's
//!   working run becomes its own run, without grants, right after the person's answer.
//! - A run that fails leaves the inbox as it is; the next submission or `continue` places
//!   the queued items.
use pocketpilot_protocol::{
    Capability, EntryKind, ErrorKind, RunSource, SessionMode, SubmissionKind, SubmissionMode,
    SubmissionStatus,
};
use rusqlite::Transaction;
use serde::{Deserialize, Serialize};

use crate::event::RuntimeEvent;
use crate::store::{self, entries, events, sessions, submissions, tasks, StoreError, Submission};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum WhenBusy {
    #[default]
    FollowUp,
    Steer,
    Reject,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Say {
    Input {
        text: String,
        #[serde(default)]
        when_busy: WhenBusy,
        #[serde(default)]
        reject_if_idle: bool,
    },
    /// Places queued items and runs again on the existing context. Idle only.
    Continue,
    /// An entry of kind `kind`. `app.*` kinds are display-only: the model never sees them.
    Write {
        kind: String,
        data: serde_json::Value,
    },
    /// A new context head, with optional hand-off text for the next run.
    Reset { text: Option<String> },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Submit {
    pub session_id: i64,
    pub say: Say,
    #[serde(default)]
    pub request_id: Option<String>,
    /// For the run this may start: the provider spec, trigger and grants.
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default)]
    pub trigger: Option<RunSource>,
    #[serde(default)]
    pub grants: Vec<Capability>,
    /// MCP whitelist for a run this may start; `None`: the session's last run's.
    #[serde(default)]
    pub mcp: Option<Vec<String>>,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Admitted {
    pub submission: Submission,
    /// A run this submission started (the caller hands it to a worker).
    pub started: Option<i64>,
    pub deduplicated: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum InboxError {
    #[error(
        "session {0} is busy: the agent is still working (submit a follow-up or a steer instead)"
    )]
    ConversationBusy(i64),
    #[error("session {0} is idle: nothing is running to add this to")]
    ConversationIdle(i64),
    #[error("request {request_id} already identifies a submission of type {kind}")]
    RequestMismatch {
        request_id: String,
        kind: SubmissionKind,
    },
    #[error("submission {id} is {status}, not queued: {what}")]
    NotQueued {
        id: i64,
        status: SubmissionStatus,
        what: &'static str,
    },
    #[error("the inbox of session {session_id} is full: {max_queued} submissions wait already (withdraw some, or wait for the agent to take them)")]
    InboxFull { session_id: i64, max_queued: u64 },
    #[error("invalid submission: {0}")]
    Invalid(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub use pocketpilot_protocol::Boundary;

impl InboxError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            InboxError::ConversationBusy(_) => ErrorKind::ConversationBusy,
            InboxError::ConversationIdle(_) => ErrorKind::ConversationIdle,
            InboxError::RequestMismatch { .. } => ErrorKind::RequestMismatch,
            InboxError::NotQueued { .. } => ErrorKind::NotQueued,
            InboxError::InboxFull { .. } => ErrorKind::InboxFull,
            InboxError::Invalid(_) => ErrorKind::InvalidArguments,
            InboxError::Store(e) => crate::error_kind::store_kind(e),
        }
    }
}

/// Which inbox items (by index) a boundary takes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    pub writes: Vec<usize>,
    pub users: Vec<usize>,
    /// A queued reset promoted `postTools` to `final`.
    pub reset: bool,
}

pub fn is_display_only(kind: &str) -> bool {
    kind.starts_with("app.")
}

/// The pure selection rule; see the module doc.
pub fn select(
    items: &[Submission],
    at: Boundary,
    steering_all: bool,
    follow_up_all: bool,
) -> Selection {
    let reset = items.iter().any(|s| s.kind == SubmissionKind::Reset);
    let is_final = at == Boundary::Final || reset;
    let pick = |mode: SubmissionMode, all: bool| -> Vec<usize> {
        let idx: Vec<usize> = items
            .iter()
            .enumerate()
            .filter(|(_, s)| s.mode == Some(mode))
            .map(|(i, _)| i)
            .collect();
        if all {
            idx
        } else {
            idx.into_iter().take(1).collect()
        }
    };
    let writes = pick(SubmissionMode::Write, true);
    let mut users = pick(SubmissionMode::Steer, steering_all);
    if is_final {
        users.extend(pick(SubmissionMode::FollowUp, follow_up_all));
    }
    users.sort_unstable();
    Selection {
        writes,
        users,
        reset: reset && at == Boundary::PostTools,
    }
}

pub fn is_busy(c: &rusqlite::Connection, session_id: i64) -> Result<bool, StoreError> {
    Ok(current_task(c, session_id)?.is_some())
}

/// The session's task that is not terminal, if any (there is at most one).
pub fn current_task(
    c: &rusqlite::Connection,
    session_id: i64,
) -> Result<Option<tasks::Task>, StoreError> {
    tasks::open_for_session(c, session_id)
}

#[derive(Debug, Default)]
pub struct Placement {
    /// User items placed (submission id, text).
    pub users: Vec<(i64, String)>,
    pub next_task: Option<i64>,
    /// A reset entry was placed.
    pub reset: bool,
}

/// A steer or follow-up that a trigger (webhook, cron, watch) submitted: the run it enters
/// must not use grants a person gave (see `RunSource`).
fn is_trigger_input(item: &Submission) -> bool {
    matches!(
        item.mode,
        Some(SubmissionMode::Steer | SubmissionMode::FollowUp)
    ) && match Option::<RunSource>::deserialize(&item.content["trigger"]) {
        Ok(source) => source.is_some_and(|s| s.is_trigger()),
        // A name nobody knows gets no grant it might not deserve.
        Err(_) => true,
    }
}

/// A queued item always has a mode; one without is a corrupt row.
fn queued_mode(item: &Submission) -> Result<SubmissionMode, StoreError> {
    item.mode.ok_or_else(|| {
        StoreError::from(store::CorruptRow {
            table: "submissions",
            id: item.id.to_string(),
            column: "mode",
            detail: "a queued submission has no mode".into(),
        })
    })
}

fn modes(c: &rusqlite::Connection, session_id: i64) -> Result<(bool, bool), StoreError> {
    let s = sessions::get(c, session_id)?;
    Ok((
        s.steering_mode == SessionMode::All,
        s.follow_up_mode == SessionMode::All,
    ))
}

/// Places the selected writes, then returns the selected user items (in order).
fn place_writes(
    tx: &Transaction<'_>,
    session_id: i64,
    items: &[Submission],
    sel: &Selection,
) -> Result<bool, StoreError> {
    let mut reset = false;
    for &i in &sel.writes {
        let w = &items[i];
        let entry = if w.kind == SubmissionKind::Reset {
            reset = true;
            entries::append(
                tx,
                session_id,
                None,
                &EntryKind::Reset,
                &serde_json::json!({ "text": w.content["text"] }),
            )?
        } else {
            let kind = w.content["kind"]
                .as_str()
                .and_then(EntryKind::written)
                .ok_or_else(|| {
                    StoreError::Invalid(format!(
                        "submission {}: a write without a kind it may have",
                        w.id
                    ))
                })?;
            entries::append(tx, session_id, None, &kind, &w.content["data"])?
        };
        submissions::done(tx, w.id, Some(entry), None)?;
    }
    Ok(reset)
}

/// The `final` boundary: after an answer (`current` = the run that answered), or on an
/// idle session. Starts the next run when it placed user items.
pub fn final_boundary(
    tx: &Transaction<'_>,
    session_id: i64,
    current: Option<&tasks::Task>,
    out: &mut Vec<store::StoredEvent>,
) -> Result<Placement, StoreError> {
    let items = submissions::queued(tx, session_id)?;
    if items.is_empty() {
        return Ok(Placement::default());
    }
    let (steer_all, follow_all) = modes(tx, session_id)?;
    let mut sel = select(&items, Boundary::Final, steer_all, follow_all);
    // A run is a person's or a trigger's, never both: the inputs from the other kind of
    // source than the first wait for the next run, so a trigger's words get no grant a
    // person gave and a person's words keep theirs.
    if let Some(&first) = sel.users.first() {
        let from_trigger = is_trigger_input(&items[first]);
        sel.users
            .retain(|&i| is_trigger_input(&items[i]) == from_trigger);
    }
    let reset = place_writes(tx, session_id, &items, &sel)?;
    let mut placement = Placement {
        reset,
        ..Default::default()
    };
    if sel.users.is_empty() {
        return Ok(placement);
    }
    let first = &items[sel.users[0]];
    let goal = first.content["text"]
        .as_str()
        .unwrap_or("(follow-up)")
        .to_owned();
    // The run's source is its inputs' (all of one kind, see above).
    let task_id = start_run(
        tx,
        session_id,
        current.map(|t| t.id),
        &goal,
        &first.content,
        out,
    )?;
    for &i in &sel.users {
        let item = &items[i];
        let text = item.content["text"].as_str().unwrap_or_default().to_owned();
        let entry = entries::append(
            tx,
            session_id,
            Some(task_id),
            &EntryKind::User,
            &serde_json::json!({ "text": text }),
        )?;
        submissions::place(tx, item.id, task_id, entry)?;
        let ev = RuntimeEvent::InputPlaced {
            submission_id: item.id,
            mode: queued_mode(item)?,
            boundary: Boundary::Final,
            text: text.clone(),
        };
        out.push(events::append(tx, task_id, &ev)?);
        placement.users.push((item.id, text));
    }
    placement.next_task = Some(task_id);
    Ok(placement)
}

/// Creates a run (task) in `queued`, with its `task_created` event.
pub(crate) fn start_run(
    tx: &Transaction<'_>,
    session_id: i64,
    follow_up_of: Option<i64>,
    goal: &str,
    meta: &serde_json::Value,
    out: &mut Vec<store::StoredEvent>,
) -> Result<i64, StoreError> {
    // The session's newest task only (by index), whatever its length.
    let previous = tasks::last_for_session(tx, session_id, 1)?.pop();
    let follow_up_of = follow_up_of.or(previous.as_ref().map(|t| t.id));
    let provider = meta["provider"]
        .as_str()
        .map(str::to_owned)
        .or_else(|| previous.as_ref().and_then(|t| t.provider.clone()));
    let trigger = Option::<RunSource>::deserialize(&meta["trigger"])
        .map_err(|e| StoreError::Invalid(format!("a submission's trigger: {e}")))?
        .or_else(|| previous.as_ref().map(|t| t.trigger))
        .unwrap_or_default();
    let grants: Vec<Capability> =
        serde_json::from_value(meta["grants"].clone()).unwrap_or_default();
    let mcp: Vec<String> = serde_json::from_value(meta["mcp"].clone())
        .ok()
        .or_else(|| previous.as_ref().map(|t| t.mcp.clone()))
        .unwrap_or_else(|| vec!["*".into()]);
    let id = tasks::insert(
        tx,
        &tasks::NewTask {
            session_id,
            goal,
            trigger,
            provider: provider.as_deref(),
            follow_up_of,
            grants: &grants,
            mcp: &mcp,
        },
    )?;
    let created = RuntimeEvent::TaskCreated {
        session_id,
        goal: goal.to_owned(),
        trigger,
        follow_up_of,
    };
    out.push(events::append(tx, id, &created)?);
    sessions::touch(tx, session_id)?;
    Ok(id)
}

#[derive(Debug, Default)]
pub struct PostTools {
    /// Steers placed into the current run: (submission id, text).
    pub steers: Vec<(i64, String)>,
    /// A queued reset ends the current run here.
    pub end_run: bool,
}

/// The `postTools` boundary of `task` (after a round of tool results, before the model is
/// asked again).
pub fn post_tools_boundary(
    tx: &Transaction<'_>,
    task: &tasks::Task,
    out: &mut Vec<store::StoredEvent>,
) -> Result<PostTools, StoreError> {
    let mut items = submissions::queued(tx, task.session_id)?;
    // A trigger's steer never joins a person's run: it would act under the grants the
    // person gave there. It waits for the `final` boundary and starts a run of its own.
    if task.trigger.is_interactive() {
        items.retain(|s| !is_trigger_input(s));
    }
    if items.is_empty() {
        return Ok(PostTools::default());
    }
    let (steer_all, follow_all) = modes(tx, task.session_id)?;
    let sel = select(&items, Boundary::PostTools, steer_all, follow_all);
    if sel.reset {
        // The reset ends this run; the final boundary (after the run is settled) places it.
        return Ok(PostTools {
            steers: Vec::new(),
            end_run: true,
        });
    }
    place_writes(tx, task.session_id, &items, &sel)?;
    let mut result = PostTools::default();
    for &i in &sel.users {
        let item = &items[i];
        let text = item.content["text"].as_str().unwrap_or_default().to_owned();
        let entry = entries::append(
            tx,
            task.session_id,
            Some(task.id),
            &EntryKind::User,
            &serde_json::json!({ "text": text }),
        )?;
        submissions::place(tx, item.id, task.id, entry)?;
        let ev = RuntimeEvent::InputPlaced {
            submission_id: item.id,
            mode: queued_mode(item)?,
            boundary: Boundary::PostTools,
            text: text.clone(),
        };
        out.push(events::append(tx, task.id, &ev)?);
        result.steers.push((item.id, text));
    }
    Ok(result)
}

/// Settles the inputs of a run that ended: done (answered by the last assistant entry)
/// or unanswered with `reason`.
pub fn settle_run(
    tx: &Transaction<'_>,
    task: &tasks::Task,
    answered: bool,
    reason: &str,
) -> Result<(), StoreError> {
    let answer: Option<i64> = if answered {
        tx.query_row(
            "SELECT MAX(id) FROM entries WHERE task_id = ?1 AND kind = 'assistant'",
            [task.id],
            |r| r.get(0),
        )?
    } else {
        None
    };
    for s in submissions::placed_in(tx, task.id)? {
        if answered {
            submissions::done(tx, s.id, None, answer)?;
        } else {
            submissions::unanswered(tx, s.id, reason)?;
        }
    }
    Ok(())
}

/// Withdraws a queued submission.
pub fn withdraw(tx: &Transaction<'_>, id: i64) -> Result<Submission, InboxError> {
    let s = submissions::get(tx, id)?;
    match s.status {
        SubmissionStatus::Queued => {
            submissions::unanswered(tx, id, "aborted")?;
            Ok(submissions::get(tx, id)?)
        }
        SubmissionStatus::Placed => Err(InboxError::NotQueued {
            id,
            status: s.status,
            what: "it was already placed in the transcript",
        }),
        SubmissionStatus::Done | SubmissionStatus::Unanswered => Err(InboxError::NotQueued {
            id,
            status: s.status,
            what: "it has already been settled",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: i64, kind: &str, mode: &str) -> Submission {
        Submission {
            id,
            session_id: 1,
            kind: kind.parse().unwrap(),
            mode: Some(mode.parse().unwrap()),
            status: SubmissionStatus::Queued,
            reason: None,
            request_id: None,
            content: serde_json::Value::Null,
            task_id: None,
            entry_id: None,
            answer_id: None,
            created_at: String::new(),
        }
    }

    #[test]
    fn post_tools_takes_writes_and_the_first_steer_only() {
        let items = [
            item(1, "input", "followUp"),
            item(2, "input", "steer"),
            item(3, "write", "write"),
            item(4, "input", "steer"),
        ];
        let sel = select(&items, Boundary::PostTools, false, false);
        assert_eq!(sel.writes, [2]);
        assert_eq!(sel.users, [1]);
        let all = select(&items, Boundary::PostTools, true, true);
        assert_eq!(all.users, [1, 3]);
    }

    #[test]
    fn final_takes_steers_and_follow_ups_in_submission_order() {
        let items = [
            item(1, "input", "followUp"),
            item(2, "input", "steer"),
            item(3, "input", "followUp"),
            item(4, "input", "steer"),
        ];
        assert_eq!(select(&items, Boundary::Final, false, false).users, [0, 1]);
        assert_eq!(
            select(&items, Boundary::Final, false, true).users,
            [0, 1, 2]
        );
        assert_eq!(
            select(&items, Boundary::Final, true, true).users,
            [0, 1, 2, 3]
        );
    }

    #[test]
    fn a_queued_reset_promotes_post_tools_to_final() {
        let items = [item(1, "input", "followUp"), item(2, "reset", "write")];
        let sel = select(&items, Boundary::PostTools, false, false);
        assert!(sel.reset);
        assert_eq!(sel.users, [0]);
        assert!(!select(&items, Boundary::Final, false, false).reset);
    }
}
