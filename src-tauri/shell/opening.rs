//! The app's state from its first moment: the store opens (and `quick_check` reads the
//! whole file) beside the window's start, so the window draws at once and never waits for
//! it. A command that needs the runtime before the store is open waits for it
//! (`AppState::runtime`); one that comes after a failed open gets the store's error, and
//! the window shows the recovery screen (`recovery.rs`). The tray, the triggers and the
//! close handler take the runtime only once it is there (`AppState::opened`).
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use pocketpilot_core::Runtime;
use pocketpilot_protocol::ErrorKind;
use pocketpilot_triggers::TriggerHost;

use super::recovery::StoreProblem;
use super::tray;
use super::wire::CommandError;

/// Where opening the store is.
#[derive(Debug, Clone)]
pub enum Opening {
    Pending,
    Open,
    /// Damaged, or written by a newer build: the recovery screen can answer it.
    Problem(StoreProblem),
    /// Anything else: the app ends; a command asked meanwhile gets this.
    Failed(String),
}

/// Managed from the start, before the store is open.
pub struct AppState {
    data_dir: PathBuf,
    opening: tokio::sync::watch::Sender<Opening>,
    runtime: OnceLock<Arc<Runtime>>,
    pub(super) tray: OnceLock<tray::Tray>,
    pub(super) triggers: Mutex<Option<TriggerHost>>,
}

impl AppState {
    pub fn new(data_dir: &Path) -> Self {
        Self {
            data_dir: data_dir.to_owned(),
            opening: tokio::sync::watch::Sender::new(Opening::Pending),
            runtime: OnceLock::new(),
            tray: OnceLock::new(),
            triggers: Mutex::new(None),
        }
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The store is open: commands waiting for it go on.
    pub fn open(&self, runtime: Arc<Runtime>) {
        // Set once: a second open (a restore from the recovery screen after a first one
        // succeeded) cannot happen, as the recovery screen refuses when the store is open.
        let _ = self.runtime.set(runtime);
        self.opening.send_replace(Opening::Open);
    }

    /// The store could not be opened, for a reason the recovery screen can answer.
    pub fn fail_with_problem(&self, problem: StoreProblem) {
        self.opening.send_replace(Opening::Problem(problem));
    }

    /// The store could not be opened, for any other reason: the app ends.
    pub fn fail(&self, message: String) {
        self.opening.send_replace(Opening::Failed(message));
    }

    /// The runtime, waiting while the store is still opening.
    pub async fn runtime(&self) -> Result<Arc<Runtime>, CommandError> {
        if let Some(rt) = self.runtime.get() {
            return Ok(rt.clone());
        }
        match self.settled().await {
            Some(Opening::Open) => self.runtime.get().cloned().ok_or_else(not_open),
            Some(Opening::Problem(p)) => Err(CommandError::new(ErrorKind::Store, p.message)),
            Some(Opening::Failed(message)) => Err(CommandError::new(ErrorKind::Store, message)),
            Some(Opening::Pending) | None => Err(not_open()),
        }
    }

    /// The runtime if the store is open, without waiting.
    pub fn opened(&self) -> Option<&Arc<Runtime>> {
        self.runtime.get()
    }

    /// How the open ended, waiting for it: `None` while it cannot end (never in practice:
    /// the sender lives as long as the state).
    pub async fn settled(&self) -> Option<Opening> {
        self.opening
            .subscribe()
            .wait_for(|o| !matches!(o, Opening::Pending))
            .await
            .map(|o| o.clone())
            .ok()
    }

    /// The recovery screen's problem, if that is where the open ended.
    pub fn problem(&self) -> Option<StoreProblem> {
        match &*self.opening.borrow() {
            Opening::Problem(p) => Some(p.clone()),
            Opening::Pending | Opening::Open | Opening::Failed(_) => None,
        }
    }

    pub(super) fn tray(&self) -> Option<&tray::Tray> {
        self.tray.get()
    }

    pub(super) fn has_trigger_host(&self) -> bool {
        super::lock(&self.triggers).is_some()
    }

    pub(super) fn take_trigger_host(&self) -> Option<TriggerHost> {
        super::lock(&self.triggers).take()
    }
}

fn not_open() -> CommandError {
    CommandError::new(ErrorKind::Store, "the store is not open")
}

#[cfg(test)]
#[path = "opening_tests.rs"]
mod opening_tests;
