//! Where a run's events go, and why one could not be recorded. Shared by the agent loop and
//! the tool-call orchestrator (neither imports the other's internals through it).
use crate::engine::lease::LeaseError;
use crate::event::RuntimeEvent;
use crate::store::StoreError;

/// Why a run's event could not be recorded. The run stops rather than act unrecorded.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Another process works the session now: this one records nothing more.
    #[error(transparent)]
    Lease(#[from] LeaseError),
    /// The data directory's disk is full: the run pauses until space is freed.
    #[error(transparent)]
    DiskFull(#[from] crate::store::space::DiskFull),
}

impl RecordError {
    /// The full disk behind this failure, if that is what it was.
    pub fn disk_full(&self) -> Option<crate::store::space::DiskFull> {
        match self {
            RecordError::DiskFull(d) => Some(*d),
            _ => None,
        }
    }
}

/// Where the agent's events go. `emit` returns once the event is durable.
pub trait EventSink: Send + Sync {
    fn emit(&self, event: RuntimeEvent) -> Result<(), RecordError>;
    fn delta(&self, text: &str);
    /// The `postTools` boundary: after a round of tool results, before the model is asked
    /// again. Returns the steers placed into this run, or that a queued reset ends it.
    fn post_tools(&self) -> Result<Boundary, RecordError>;
    /// Before each model request: a money budget that has run out (issue 19), as the
    /// reason the run pauses. Sinks outside a run have none.
    fn money_out(&self) -> Result<Option<crate::policy::cost::MoneyOut>, RecordError> {
        Ok(None)
    }
    /// At a run's start, how a call its last turn (`turn`) left open stands in the store:
    /// its approval answered, or started before a crash and never finished; `None` for
    /// neither (a fresh call). Sinks outside a run have none.
    fn left_open(
        &self,
        _turn: u32,
        _call: &pocketpilot_model::ToolCall,
    ) -> Result<Option<LeftOpen>, RecordError> {
        Ok(None)
    }
}

/// A call left open by a run's last turn, as the store has it (see `EventSink::left_open`).
#[derive(Debug)]
pub enum LeftOpen {
    Answered(Box<crate::store::Approval>),
    Interrupted(crate::store::ToolCallRecord),
}

/// What the `postTools` boundary decided.
#[derive(Debug, Default)]
pub struct Boundary {
    pub steers: Vec<String>,
    pub end_run: bool,
}
