//! Admission of one submission, in three steps inside the caller's transaction:
//!
//! 1. **read** what the decision needs of the session, once and by index
//!    ([`SessionFacts::read`]): the session row, its open task (`tasks_open`), how many
//!    submissions wait and whether a reset is among them (`submissions_status`), the cap.
//!    Nothing here grows with the number of tasks or submissions the session has settled.
//! 2. **decide** with a pure function ([`decide`]): refuse (busy, idle, invalid, full), or
//!    say where the submission goes. Unit-tested without a database.
//! 3. **write** the verdict ([`write`]): the submission row and, on an idle session, the
//!    `final` boundary that places it and starts a run.
//!
//! A refusal writes nothing: the decision comes before the first write.
use pocketpilot_protocol::{EntryKind, SubmissionKind, SubmissionMode, SubmissionStatus};
use rusqlite::Transaction;

use crate::config::InboxSettings;
use crate::engine::inbox::{self, Admitted, InboxError, Say, Submit, WhenBusy};
use crate::store::{self, entries, sessions, submissions, tasks, StoreError};

/// What admission knows of a session when it decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionFacts {
    pub session_id: i64,
    /// The session has a task that is not terminal.
    pub busy: bool,
    pub queued: u64,
    pub reset_queued: bool,
    /// Submissions the inbox may hold.
    pub max_queued: u64,
}

impl SessionFacts {
    pub fn read(c: &rusqlite::Connection, session_id: i64) -> Result<Self, StoreError> {
        let session = sessions::get(c, session_id)?;
        let busy = tasks::open_for_session(c, session.id)?.is_some();
        let summary = submissions::queue_summary(c, session.id)?;
        Ok(Self {
            session_id: session.id,
            busy,
            queued: summary.queued,
            reset_queued: summary.reset,
            max_queued: InboxSettings::read(c)?.max_queued,
        })
    }
}

/// Where a submission goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Joins the inbox; on an idle session the `final` boundary applies at once.
    Queue(SubmissionMode),
    /// A write appended to the transcript at once (display-only, or nothing to wait for).
    AppendNow,
    /// `continue` on an idle session: places what waits, or runs on the context as it is.
    Continue,
}

/// The pure rule: see the module doc and `inbox`'s.
pub fn decide(say: &Say, f: &SessionFacts) -> Result<Verdict, InboxError> {
    let verdict = match say {
        Say::Input {
            text,
            when_busy,
            reject_if_idle,
        } => {
            if text.trim().is_empty() {
                return Err(InboxError::Invalid("the text is empty".into()));
            }
            if f.busy && *when_busy == WhenBusy::Reject {
                return Err(InboxError::ConversationBusy(f.session_id));
            }
            if !f.busy && *reject_if_idle {
                return Err(InboxError::ConversationIdle(f.session_id));
            }
            Verdict::Queue(if *when_busy == WhenBusy::Steer {
                SubmissionMode::Steer
            } else {
                SubmissionMode::FollowUp
            })
        }
        Say::Continue if f.busy => return Err(InboxError::ConversationBusy(f.session_id)),
        Say::Continue => Verdict::Continue,
        Say::Write { kind, .. } => {
            if EntryKind::written(kind).is_none() {
                return Err(InboxError::Invalid(format!(
                    "`{kind}` is not a kind a write may have"
                )));
            }
            let now =
                (inbox::is_display_only(kind) && !f.reset_queued) || (!f.busy && f.queued == 0);
            if now {
                Verdict::AppendNow
            } else {
                Verdict::Queue(SubmissionMode::Write)
            }
        }
        Say::Reset { .. } => Verdict::Queue(SubmissionMode::Write),
    };
    if matches!(verdict, Verdict::Queue(_)) && f.queued >= f.max_queued {
        return Err(InboxError::InboxFull {
            session_id: f.session_id,
            max_queued: f.max_queued,
        });
    }
    Ok(verdict)
}

pub(crate) fn kind_of(say: &Say) -> SubmissionKind {
    match say {
        Say::Input { .. } => SubmissionKind::Input,
        Say::Continue => SubmissionKind::Continue,
        Say::Write { .. } => SubmissionKind::Write,
        Say::Reset { .. } => SubmissionKind::Reset,
    }
}

/// Takes a submission, in the caller's transaction: read, decide, write. The events it
/// produced (to publish after commit) are pushed to `out`.
pub fn admit(
    tx: &Transaction<'_>,
    s: &Submit,
    out: &mut Vec<store::StoredEvent>,
) -> Result<Admitted, InboxError> {
    if let Some(existing) = duplicate(tx, s)? {
        return Ok(Admitted {
            submission: existing,
            started: None,
            deduplicated: true,
        });
    }
    let facts = SessionFacts::read(tx, s.session_id)?;
    let verdict = decide(&s.say, &facts)?;
    Ok(write(tx, s, &facts, verdict, out)?)
}

/// The submission a repeated request id already names (same kind), if any.
fn duplicate(tx: &Transaction<'_>, s: &Submit) -> Result<Option<store::Submission>, InboxError> {
    let Some(rid) = &s.request_id else {
        return Ok(None);
    };
    let Some(existing) = submissions::by_request(tx, s.session_id, rid)? else {
        return Ok(None);
    };
    if existing.kind != kind_of(&s.say) {
        return Err(InboxError::RequestMismatch {
            request_id: rid.clone(),
            kind: existing.kind,
        });
    }
    Ok(Some(existing))
}

/// What the submission row holds: the run settings it may start a run with, and its text
/// (an input), entry (a write) or hand-off (a reset).
fn content_of(s: &Submit) -> serde_json::Value {
    let mut run_meta = serde_json::json!({
        "provider": s.provider, "trigger": s.trigger, "grants": s.grants, "mcp": s.mcp,
    });
    match &s.say {
        Say::Input { text, .. } => run_meta["text"] = serde_json::json!(text.trim()),
        Say::Write { kind, data } => return serde_json::json!({ "kind": kind, "data": data }),
        Say::Reset { text } => return serde_json::json!({ "text": text }),
        Say::Continue => {}
    }
    run_meta
}

/// Carries out `verdict`.
pub fn write(
    tx: &Transaction<'_>,
    s: &Submit,
    facts: &SessionFacts,
    verdict: Verdict,
    out: &mut Vec<store::StoredEvent>,
) -> Result<Admitted, StoreError> {
    let session_id = facts.session_id;
    let content = content_of(s);
    let insert = |mode: Option<SubmissionMode>, status: SubmissionStatus| {
        submissions::insert(
            tx,
            &submissions::NewSubmission {
                session_id,
                kind: kind_of(&s.say),
                mode,
                status,
                request_id: s.request_id.as_deref(),
                content: &content,
            },
        )
    };
    let (id, started) = match verdict {
        Verdict::Queue(mode) => {
            let id = insert(Some(mode), SubmissionStatus::Queued)?;
            let started = if facts.busy {
                None
            } else {
                inbox::final_boundary(tx, session_id, None, out)?.next_task
            };
            (id, started)
        }
        Verdict::AppendNow => {
            let Say::Write { kind, data } = &s.say else {
                return Err(StoreError::Invalid(
                    "only a write is appended at once".into(),
                ));
            };
            let kind = EntryKind::written(kind).ok_or_else(|| {
                StoreError::Invalid(format!("`{kind}` is not a kind a write may have"))
            })?;
            let entry = entries::append(tx, session_id, None, &kind, data)?;
            let id = insert(None, SubmissionStatus::Done)?;
            submissions::done(tx, id, Some(entry), None)?;
            (id, None)
        }
        Verdict::Continue => {
            let id = insert(None, SubmissionStatus::Placed)?;
            let task_id = match inbox::final_boundary(tx, session_id, None, out)?.next_task {
                Some(t) => t,
                // Nothing queued: run again on the context as it stands.
                None => inbox::start_run(tx, session_id, None, "(continue)", &content, out)?,
            };
            submissions::set_task(tx, id, task_id)?;
            (id, Some(task_id))
        }
    };
    Ok(Admitted {
        submission: submissions::get(tx, id)?,
        started,
        deduplicated: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(busy: bool, queued: u64) -> SessionFacts {
        SessionFacts {
            session_id: 7,
            busy,
            queued,
            reset_queued: false,
            max_queued: 3,
        }
    }

    fn input(when_busy: WhenBusy, reject_if_idle: bool) -> Say {
        Say::Input {
            text: "hi".into(),
            when_busy,
            reject_if_idle,
        }
    }

    fn write(kind: &str) -> Say {
        Say::Write {
            kind: kind.into(),
            data: serde_json::json!({}),
        }
    }

    #[test]
    fn inputs_queue_as_follow_ups_or_steers_and_respect_busy_and_idle_rejects() {
        let idle = facts(false, 0);
        let busy = facts(true, 0);
        assert_eq!(
            decide(&input(WhenBusy::FollowUp, false), &busy).unwrap(),
            Verdict::Queue(SubmissionMode::FollowUp)
        );
        assert_eq!(
            decide(&input(WhenBusy::Steer, false), &idle).unwrap(),
            Verdict::Queue(SubmissionMode::Steer)
        );
        assert!(matches!(
            decide(&input(WhenBusy::Reject, false), &busy),
            Err(InboxError::ConversationBusy(7))
        ));
        assert_eq!(
            decide(&input(WhenBusy::Reject, false), &idle).unwrap(),
            Verdict::Queue(SubmissionMode::FollowUp)
        );
        assert!(matches!(
            decide(&input(WhenBusy::FollowUp, true), &idle),
            Err(InboxError::ConversationIdle(7))
        ));
        let empty = Say::Input {
            text: "  ".into(),
            when_busy: WhenBusy::FollowUp,
            reject_if_idle: false,
        };
        assert!(matches!(decide(&empty, &busy), Err(InboxError::Invalid(_))));
    }

    #[test]
    fn continue_is_for_an_idle_session_only() {
        assert_eq!(
            decide(&Say::Continue, &facts(false, 2)).unwrap(),
            Verdict::Continue
        );
        assert!(matches!(
            decide(&Say::Continue, &facts(true, 0)),
            Err(InboxError::ConversationBusy(7))
        ));
    }

    #[test]
    fn writes_append_at_once_unless_something_must_come_first() {
        assert_eq!(
            decide(&write("app.note"), &facts(true, 2)).unwrap(),
            Verdict::AppendNow
        );
        assert_eq!(
            decide(&write("note"), &facts(false, 0)).unwrap(),
            Verdict::AppendNow
        );
        assert_eq!(
            decide(&write("note"), &facts(true, 0)).unwrap(),
            Verdict::Queue(SubmissionMode::Write)
        );
        let reset_waits = SessionFacts {
            reset_queued: true,
            ..facts(true, 1)
        };
        assert_eq!(
            decide(&write("app.note"), &reset_waits).unwrap(),
            Verdict::Queue(SubmissionMode::Write)
        );
        for reserved in ["user", "assistant", "tool_result", "reset", " "] {
            assert!(matches!(
                decide(&write(reserved), &facts(true, 0)),
                Err(InboxError::Invalid(_))
            ));
        }
    }

    #[test]
    fn a_full_inbox_refuses_what_would_queue_and_takes_what_would_not() {
        let full = facts(true, 3);
        for say in [
            input(WhenBusy::FollowUp, false),
            input(WhenBusy::Steer, false),
            write("note"),
            Say::Reset { text: None },
        ] {
            assert!(
                matches!(
                    decide(&say, &full),
                    Err(InboxError::InboxFull {
                        session_id: 7,
                        max_queued: 3
                    })
                ),
                "{say:?}"
            );
        }
        assert_eq!(
            decide(&write("app.note"), &full).unwrap(),
            Verdict::AppendNow
        );
        assert_eq!(
            decide(&Say::Continue, &facts(false, 3)).unwrap(),
            Verdict::Continue
        );
        assert!(decide(&input(WhenBusy::FollowUp, false), &facts(true, 2)).is_ok());
    }
}
