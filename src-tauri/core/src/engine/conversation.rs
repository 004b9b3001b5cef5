//! A run's conversation: the session's entries the model may see, read from the store once
//! when the run starts and then extended with what is committed after them (answers, tool
//! calls and results, the person's steers and follow-ups placed mid-run, hook messages,
//! compactions), never read whole again. Each request's view is made from it (see
//! `context`), so a request costs what the view holds, not the length of the session.
//!
//! What it keeps is what a fresh read would give: the entries from the newest `reset` on,
//! none a rewind set aside (`rewound_by`), none a compaction replaced (the compaction
//! stands for them). A rewind needs the session's lease, which a run holds, so nothing it
//! already keeps is set aside while it runs; a reset placed mid-run starts it over.
use std::collections::HashSet;

use pocketpilot_model::ToolCall;
use pocketpilot_protocol::EntryKind;
use rusqlite::Connection;

use crate::policy::instructions::WorkedPaths;
use crate::store::{entries, Entry, StoreError};

/// See the module doc.
#[derive(Debug, Clone)]
pub struct Conversation {
    session_id: i64,
    /// Since the newest reset, none rewound, none replaced by a compaction.
    kept: Vec<Entry>,
    /// The newest entry looked at: the next catch-up reads only what comes after it.
    seen: i64,
    /// The paths of every call since the reset (replaced ones too), for the workspace's
    /// instruction files.
    worked: WorkedPaths,
}

impl Conversation {
    /// The session's conversation as the store has it now.
    pub fn open(c: &Connection, session_id: i64) -> Result<Self, StoreError> {
        Ok(Self::of(session_id, entries::since_head(c, session_id)?))
    }

    /// The conversation of `since_head`, the entries a fresh read gives.
    pub fn of(session_id: i64, since_head: Vec<Entry>) -> Self {
        let mut conversation = Self {
            session_id,
            kept: Vec::new(),
            seen: 0,
            worked: WorkedPaths::default(),
        };
        conversation.extend(since_head);
        conversation
    }

    /// Takes in the entries committed since it last looked.
    pub fn catch_up(&mut self, c: &Connection) -> Result<(), StoreError> {
        let new = entries::after(c, self.session_id, self.seen)?;
        self.extend(new);
        Ok(())
    }

    fn extend(&mut self, new: Vec<Entry>) {
        for e in new {
            self.seen = self.seen.max(e.id);
            if e.rewound_by.is_some() {
                continue;
            }
            match &e.kind {
                EntryKind::Reset => {
                    self.kept.clear();
                    self.worked = WorkedPaths::default();
                }
                EntryKind::Compaction => {
                    let gone: HashSet<i64> = replaces_of(&e).into_iter().collect();
                    if !gone.is_empty() {
                        self.kept.retain(|k| !gone.contains(&k.id));
                    }
                }
                EntryKind::Assistant => {
                    for call in calls_of(&e) {
                        self.worked.add(&call);
                    }
                }
                _ => {}
            }
            self.kept.push(e);
        }
    }

    /// The entries the model may see, in order.
    pub fn entries(&self) -> &[Entry] {
        &self.kept
    }

    /// The paths the conversation's calls named (see [`WorkedPaths`]).
    pub fn worked(&self) -> &WorkedPaths {
        &self.worked
    }

    pub fn session_id(&self) -> i64 {
        self.session_id
    }
}

/// The calls an assistant entry made.
pub(crate) fn calls_of(e: &Entry) -> Vec<ToolCall> {
    e.content
        .get("tool_calls")
        .cloned()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default()
}

/// The entries a compaction entry stands for.
pub(crate) fn replaces_of(e: &Entry) -> Vec<i64> {
    ids_of(e, "replaces")
}

/// A list of entry ids in a compaction entry; absent in entries written before it was kept.
pub(crate) fn ids_of(e: &Entry, field: &str) -> Vec<i64> {
    e.content
        .get(field)
        .and_then(|v| v.as_array())
        .map(|a| a.iter().filter_map(|v| v.as_i64()).collect())
        .unwrap_or_default()
}
