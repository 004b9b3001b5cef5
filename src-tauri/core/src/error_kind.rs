//! Stable kinds of the errors of lower layers, for the UI and the CLI.
use crate::store::StoreError;
use pocketpilot_protocol::ErrorKind;

/// The kind of a store error: a missing row is the caller's mistake, the rest is the machine.
pub fn store_kind(e: &StoreError) -> ErrorKind {
    match e {
        StoreError::NotFound { .. } => ErrorKind::NotFound,
        StoreError::DataDir { .. } => ErrorKind::Io,
        StoreError::LeaseLost { .. } => ErrorKind::LeaseLost,
        StoreError::Damaged { .. }
        | StoreError::NewerSchema { .. }
        | StoreError::Backup(_)
        | StoreError::NotMigrated { .. }
        | StoreError::Invalid(_)
        | StoreError::CorruptRow(_)
        | StoreError::Sqlite(_)
        | StoreError::NotCommitted(_)
        | StoreError::Abandoned
        | StoreError::WriterThread(_) => ErrorKind::Store,
    }
}
