//! TaskService: the only entry for creating, running, cancelling and answering tasks.
//! Creating is not running: `create_task` persists the task `queued` and returns its id;
//! `start` hands it to a worker (one tokio task per run).
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::{Limits, ProviderSettings};
use crate::engine::inbox::{self, InboxError};
use crate::engine::lease::SessionLease;
use crate::engine::recorder::{Recorder, Subscription};
use crate::engine::scheduler::RunRegistry;
use crate::engine::worker::{self, RunContext};
use crate::event::{EventKind, RuntimeEvent};
use crate::store::{
    self, approvals, entries, events, leases, sessions, submissions, tasks, Store, StoreError,
};
use crate::task::TaskStatus;
use pocketpilot_protocol::changes::{ChangeList, ChangeSettings, UndoReport};
use pocketpilot_protocol::{ApprovalStatus, Capability, ErrorKind, RunSource, SessionMode};

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("the goal is empty: say what the agent should do")]
    EmptyGoal,
    #[error("the workspace {0} does not exist or is not a folder")]
    Workspace(String),
    #[error("a new session needs a workspace folder")]
    NoWorkspace,
    #[error("task {id} has already ended ({status})")]
    AlreadyEnded { id: i64, status: TaskStatus },
    #[error("approval {0} is not pending")]
    NotPending(i64),
    #[error("task {id} is not paused ({status}): only a paused task can be continued or stopped")]
    NotPaused { id: i64, status: TaskStatus },
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// A raise that adds nothing to the budget that paused the task.
    #[error("task {id} paused because it ran out of {0}: continuing needs more {0}", budget_words(*.budget))]
    RaiseNeeded {
        id: i64,
        budget: pocketpilot_protocol::Budget,
    },
    /// A task that paused for a full disk cannot continue while the disk is still full.
    #[error("task {id} paused because the disk was full, and it still is ({} MB free, {} MB needed): free some space, then continue it", crate::store::space::mb(.full.free), crate::store::space::mb(*.needed))]
    StillFull {
        id: i64,
        full: crate::store::space::DiskFull,
        needed: u64,
    },
    /// A setting a person typed that cannot be saved; the message names the field.
    #[error("{0}")]
    InvalidValue(String),
    /// The model server failed: `summary` is a plain sentence, `source` the detail.
    #[error("{summary}")]
    Model {
        summary: String,
        source: pocketpilot_model::ProviderError,
    },
    /// No model is set up, or its settings cannot make a provider.
    #[error(transparent)]
    ProviderSetup(#[from] crate::engine::provider::ProviderSetupError),
    #[error(transparent)]
    Inbox(#[from] InboxError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Changes(#[from] crate::engine::changes::ChangeError),
    /// A path the window asked to open or show that is not one it may: outside the
    /// workspace, or not an instruction file in effect.
    #[error("{path} cannot be opened: {why}")]
    NotOpenable { path: String, why: String },
    #[error("session {session_id} is still working (task {task_id} is {}): stop that task first, then delete the session", doing(*.status))]
    SessionActive {
        session_id: i64,
        task_id: i64,
        status: TaskStatus,
    },
}

impl RuntimeError {
    /// A stable kind for the UI and the CLI; nobody matches on message text.
    pub fn kind(&self) -> ErrorKind {
        match self {
            RuntimeError::EmptyGoal => ErrorKind::EmptyGoal,
            RuntimeError::Workspace(_) | RuntimeError::NoWorkspace => ErrorKind::Workspace,
            RuntimeError::AlreadyEnded { .. } => ErrorKind::AlreadyEnded,
            RuntimeError::NotPending(_) | RuntimeError::NotPaused { .. } => ErrorKind::NotPending,
            RuntimeError::InvalidArguments(_)
            | RuntimeError::InvalidValue(_)
            | RuntimeError::RaiseNeeded { .. } => ErrorKind::InvalidArguments,
            RuntimeError::Model { source, .. } => source.kind(),
            RuntimeError::ProviderSetup(crate::engine::provider::ProviderSetupError::NoModel) => {
                ErrorKind::NoModel
            }
            RuntimeError::ProviderSetup(crate::engine::provider::ProviderSetupError::Invalid(
                _,
            )) => ErrorKind::ModelConfig,
            RuntimeError::Inbox(e) => e.kind(),
            RuntimeError::Store(e) => store_kind(e),
            RuntimeError::Changes(e) => e.kind(),
            RuntimeError::NotOpenable { .. } => ErrorKind::OutsideWorkspace,
            RuntimeError::SessionActive { .. } => ErrorKind::SessionActive,
            RuntimeError::StillFull { .. } => ErrorKind::DiskFull,
        }
    }

    /// What a person opens for more than the message (the model server's own error).
    pub fn detail(&self) -> Option<String> {
        match self {
            RuntimeError::Model { source, .. } => Some(source.to_string()),
            _ => None,
        }
    }
}

pub use crate::error_kind::store_kind;

/// The recorded failure of each failed task in `tasks`.
fn failures_of(
    c: &rusqlite::Connection,
    tasks: &[tasks::Task],
) -> Result<Vec<TaskFailure>, StoreError> {
    let mut out = Vec::new();
    for t in tasks.iter().filter(|t| t.status == TaskStatus::Failed) {
        let Some(ev) = events::last_of(c, t.id, EventKind::TaskFailed)? else {
            continue;
        };
        if let RuntimeEvent::TaskFailed {
            error,
            kind,
            summary,
        } = ev.event
        {
            out.push(TaskFailure {
                task_id: t.id,
                kind,
                // Events recorded before the sentence existed: the kind's own.
                summary: summary.unwrap_or_else(|| kind.plain_sentence(None)),
                error,
            });
        }
    }
    Ok(out)
}

/// A budget as a person counts it ("steps", "dollars").
fn budget_words(budget: pocketpilot_protocol::Budget) -> &'static str {
    use pocketpilot_protocol::Budget;
    match budget {
        Budget::Steps => "steps",
        Budget::Seconds => "seconds",
        Budget::Tokens => "tokens",
        Budget::Usd => "dollars",
    }
}

pub type Result<T, E = RuntimeError> = std::result::Result<T, E>;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct NewTask {
    pub goal: String,
    /// Required for a new session; ignored when `session_id` names one.
    pub workspace: Option<PathBuf>,
    pub session_id: Option<i64>,
    pub follow_up_of: Option<i64>,
    /// Who starts it; a person in the window unless said otherwise.
    #[serde(default)]
    pub trigger: RunSource,
    /// `scripted:FILE`, or `None` for the configured model.
    pub provider: Option<String>,
    /// Capabilities the person granted for this run explicitly (`--allow`).
    pub grants: Vec<Capability>,
    /// MCP servers/tools the run may use; `None`: every server of its workspace (`*`).
    #[serde(default)]
    pub mcp: Option<Vec<String>>,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SessionHistory {
    /// Oldest first.
    pub tasks: Vec<tasks::Task>,
    /// The entries of those tasks, in order.
    pub entries: Vec<store::Entry>,
    /// Whether the session has older tasks than these.
    pub earlier: bool,
    /// Why each failed task among them failed, as its `task_failed` event said.
    pub failures: Vec<TaskFailure>,
}

/// A failed task's error as recorded: its kind, a plain sentence and the detail, so a
/// transcript read back later says what the live one said.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TaskFailure {
    pub task_id: i64,
    pub kind: ErrorKind,
    /// For a person ("The model server did not accept the API key.").
    pub summary: String,
    /// The full error, behind a disclosure.
    pub error: String,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Counts {
    pub running: i64,
    pub waiting_approval: i64,
    /// Paused for the person: a budget ran out or the agent repeated itself (issue 19).
    #[serde(default)]
    pub paused: i64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ApprovalAnswer {
    pub approve: bool,
    /// Replaces the call's arguments; validated and guarded again before it runs.
    pub edited_arguments: Option<serde_json::Value>,
    pub session_grant: bool,
    pub note: Option<String>,
    pub by: String,
}

pub struct Runtime {
    pub(crate) store: Arc<Store>,
    pub(crate) recorder: Arc<Recorder>,
    /// Changes the window is told about besides task states (see `feed`).
    pub(crate) feed: crate::engine::feed::Feed,
    data_dir: PathBuf,
    runs: Arc<RunRegistry>,
    /// This process's identity in session leases.
    holder: String,
    /// Editors attached to sessions here (`pocketpilot acp`), whose file methods runs use.
    editors: Arc<crate::engine::editors::Editors>,
    /// The person's hooks file; `None` for a runtime isolated from the person's
    /// configuration (evals).
    person_hooks: Option<PathBuf>,
    /// New sessions' titles asked of the model (see `engine::title`).
    pub(crate) titles: Arc<crate::engine::title::Titles>,
}

impl Runtime {
    pub fn open(data_dir: &Path) -> Result<Arc<Self>> {
        Self::open_with_config(data_dir, crate::policy::hooks::person_file())
    }

    /// A runtime whose person's hooks file is `person_hooks` (or none), whatever the
    /// environment's configuration directory holds: an eval's runtime must not run the
    /// evaluating person's own hooks.
    pub fn open_with_config(data_dir: &Path, person_hooks: Option<PathBuf>) -> Result<Arc<Self>> {
        let store = Arc::new(Store::open_in_dir(data_dir)?);
        let limits = Limits::load(&store)?;
        let recorder = Recorder::new(store.clone(), Duration::from_millis(limits.delta_window_ms));
        let feed = crate::engine::feed::Feed::default();
        let rt = Arc::new(Self {
            store,
            recorder,
            titles: Arc::new(crate::engine::title::Titles::new(feed.clone())),
            feed,
            data_dir: data_dir.to_owned(),
            runs: Arc::new(RunRegistry::default()),
            holder: format!("{}-{}", std::process::id(), uuid::Uuid::now_v7()),
            editors: Arc::default(),
            person_hooks,
        });
        // An undo, redo or rewind a crash cut off completes before anything reads the
        // files or the conversation it was changing.
        rt.recover_cut_undos();
        Ok(rt)
    }

    /// The one entry point: carries out `op` and gives its typed reply (the ops are listed
    /// in the `ops` module).
    pub fn call<O: crate::api::call::Op<Self>>(self: &Arc<Self>, op: O) -> O::Reply {
        crate::api::call::sealed::Run::run(op, self)
    }

    /// The store, for a test that stages or damages what a run left behind. Everything
    /// else goes through [`Runtime::call`].
    #[cfg(feature = "testing")]
    pub fn store_for_tests(&self) -> &Arc<Store> {
        &self.store
    }

    /// The recorder, for a test that writes a run's events as its worker would.
    #[cfg(feature = "testing")]
    pub fn recorder_for_tests(&self) -> &Arc<Recorder> {
        &self.recorder
    }

    pub(crate) fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The limits runs get: what is stored, with the environment's overrides.
    pub(crate) fn limits(&self) -> Result<Limits> {
        Ok(Limits::load(&self.store)?)
    }

    /// The limits as stored, without the environment's overrides: what an edit starts from.
    pub(crate) fn stored_limits(&self) -> Result<Limits> {
        Ok(Limits::stored(&self.store)?)
    }

    pub(crate) fn provider_settings(&self) -> Result<ProviderSettings> {
        Ok(ProviderSettings::load(&self.store)?)
    }

    /// The provider as stored, without the environment's overrides: what an edit starts
    /// from.
    pub(crate) fn stored_provider_settings(&self) -> Result<ProviderSettings> {
        Ok(ProviderSettings::stored(&self.store)?)
    }

    /// Starts a run with `new.goal` as the person's input: in a new session (with
    /// `workspace`), or in an idle session (`session_id`; a busy one answers
    /// `ConversationBusy` — use `say` to queue). Persists the task `queued` and returns its
    /// id; nothing runs until `start`.
    pub(crate) fn create_task(&self, new: &NewTask) -> Result<i64> {
        let goal = new.goal.trim();
        if goal.is_empty() {
            return Err(RuntimeError::EmptyGoal);
        }
        if let Some(entries) = &new.mcp {
            crate::engine::mcp::whitelist(entries)
                .map_err(|e| RuntimeError::InvalidArguments(e.to_string()))?;
        }
        let workspace = match (&new.workspace, new.session_id) {
            (_, Some(_)) => None,
            (Some(w), None) => Some(canonical_workspace(w)?),
            (None, None) => return Err(RuntimeError::NoWorkspace),
        };
        let admitted = self.recorder.commit_admission(|tx, out| {
            let session_id = match new.session_id {
                Some(id) => sessions::get(tx, id)?.id,
                None => sessions::insert(
                    tx,
                    &crate::engine::title::from_goal(goal),
                    workspace.as_deref().unwrap_or_default(),
                )?,
            };
            if let Some(prev) = new.follow_up_of {
                tasks::get(tx, prev)?;
            }
            let submit = inbox::Submit {
                session_id,
                say: inbox::Say::Input {
                    text: goal.to_owned(),
                    when_busy: inbox::WhenBusy::Reject,
                    reject_if_idle: false,
                },
                request_id: None,
                provider: new.provider.clone(),
                trigger: Some(new.trigger),
                grants: new.grants.clone(),
                mcp: new.mcp.clone(),
            };
            let admitted = crate::engine::admission::admit(tx, &submit, out)?;
            if let (Some(task), Some(prev)) = (admitted.started, new.follow_up_of) {
                tasks::set_follow_up_of(tx, task, prev)?;
            }
            Ok::<_, RuntimeError>(admitted)
        })?;
        let id = admitted.started.ok_or_else(|| {
            RuntimeError::Inbox(InboxError::ConversationBusy(admitted.submission.session_id))
        })?;
        tracing::info!(
            task_id = id,
            session_id = admitted.submission.session_id,
            "task created"
        );
        Ok(id)
    }

    /// Follows every change the window shows (see `feed`). Needs a tokio runtime.
    pub(crate) fn changes(&self) -> crate::engine::feed::Changes {
        crate::engine::feed::Changes::follow(
            self.store.clone(),
            self.recorder.changes(),
            self.recorder.foreign_commits(),
            &self.feed,
        )
    }

    /// Says something to a session (see `inbox`): queued while it is busy, placed (and a
    /// run started, in this process) when it is idle.
    pub(crate) fn say(self: &Arc<Self>, submit: &inbox::Submit) -> Result<inbox::Admitted> {
        let submit_owned = submit.clone();
        let admitted = self.recorder.commit_admission_queued(move |tx, out| {
            Ok::<_, RuntimeError>(crate::engine::admission::admit(tx, &submit_owned, out)?)
        })?;
        self.feed.announce(crate::engine::feed::Change::Inbox {
            session_id: submit.session_id,
        });
        if admitted.started.is_some() {
            self.drive_in_background(submit.session_id);
        }
        Ok(admitted)
    }

    /// Withdraws a queued submission (→ unanswered, reason `aborted`).
    pub(crate) fn withdraw(&self, submission_id: i64) -> Result<store::Submission> {
        let s = self
            .store
            .write_with(|tx| inbox::withdraw(tx, submission_id).map_err(RuntimeError::from))?;
        self.feed.announce(crate::engine::feed::Change::Inbox {
            session_id: s.session_id,
        });
        Ok(s)
    }

    pub(crate) fn inbox(&self, session_id: i64) -> Result<Vec<store::Submission>> {
        Ok(self.store.read(|c| {
            sessions::get(c, session_id)?;
            submissions::queued(c, session_id)
        })?)
    }

    pub(crate) fn submissions(&self, session_id: i64) -> Result<Vec<store::Submission>> {
        Ok(self.store.read(|c| {
            sessions::get(c, session_id)?;
            submissions::list(c, session_id)
        })?)
    }

    pub(crate) fn session(&self, session_id: i64) -> Result<sessions::Session> {
        Ok(self.store.read(|c| sessions::get(c, session_id))?)
    }

    /// Renames a session (the sessions list and its header show the title).
    pub(crate) fn rename_session(&self, session_id: i64, title: &str) -> Result<sessions::Session> {
        let title = title.trim();
        if title.is_empty() {
            return Err(RuntimeError::InvalidArguments(
                "a session needs a title".into(),
            ));
        }
        self.store
            .write(|tx| sessions::set_title(tx, session_id, title))?;
        self.feed.announce(crate::engine::feed::Change::Refresh);
        self.session(session_id)
    }

    /// How many queued steers and follow-ups a boundary takes (`None` keeps the mode),
    /// read fresh at every boundary.
    pub(crate) fn set_session_modes(
        &self,
        session_id: i64,
        steering: Option<SessionMode>,
        follow_up: Option<SessionMode>,
    ) -> Result<()> {
        Ok(self
            .store
            .write(|tx| sessions::set_modes(tx, session_id, steering, follow_up))?)
    }

    pub(crate) fn set_provider_settings(&self, p: &ProviderSettings) -> Result<()> {
        if let Some(u) = &p.base_url {
            if !(u.starts_with("http://") || u.starts_with("https://")) {
                return Err(RuntimeError::InvalidArguments(format!(
                    "the base URL must start with http:// or https://, got `{u}`"
                )));
            }
        }
        Ok(p.save(&self.store)?)
    }

    pub(crate) fn set_limits(&self, l: &Limits) -> Result<()> {
        if l.max_steps == 0 || l.max_task_seconds == 0 {
            return Err(RuntimeError::InvalidArguments(
                "limits must be at least 1".into(),
            ));
        }
        l.check_money().map_err(RuntimeError::InvalidValue)?;
        Ok(self
            .store
            .write(|c| store::settings::set(c, crate::config::LIMITS_KEY, l))?)
    }

    /// Asks the configured model for a one-word reply: the settings screen's "test connection".
    pub(crate) async fn test_connection(&self) -> Result<String> {
        let settings = self.provider_settings()?;
        let provider = crate::engine::provider::build(None, &settings)?;
        let server = settings
            .base_url
            .as_deref()
            .and_then(crate::engine::worker::server_of);
        let reply = provider
            .complete(
                vec![pocketpilot_model::Message::user(
                    "Reply with the single word: ok",
                )],
                Vec::new(),
            )
            .await
            .map_err(|source| RuntimeError::Model {
                summary: source.kind().plain_sentence(server.as_deref()),
                source,
            })?;
        Ok(format!(
            "{} answered: {}",
            provider.label(),
            reply.text.trim()
        ))
    }

    /// The models the server at `base_url` lists (the settings form's URL, which may not
    /// be saved yet), asked with the stored key: the settings screen's model picker.
    pub(crate) async fn list_models(&self, base_url: &str) -> Result<Vec<String>> {
        let mut settings = self.provider_settings()?;
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(RuntimeError::InvalidArguments(format!(
                "the base URL must start with http:// or https://, got `{base_url}`"
            )));
        }
        settings.base_url = Some(base_url.to_owned());
        // Listing needs no model; the config wants one.
        settings.model.get_or_insert_with(String::new);
        let config = crate::engine::provider::openai_config(&settings)?;
        let server = crate::engine::worker::server_of(base_url);
        pocketpilot_model::openai::list_models(&config)
            .await
            .map_err(|source| RuntimeError::Model {
                summary: source.kind().plain_sentence(server.as_deref()),
                source,
            })
    }

    /// Tasks running and waiting for a person, for the tray.
    pub(crate) fn counts(&self) -> Result<Counts> {
        Ok(self.store.read(|c| {
            Ok(Counts {
                running: tasks::count_with_status(c, &[TaskStatus::Running, TaskStatus::Queued])?,
                waiting_approval: tasks::count_with_status(c, &[TaskStatus::WaitingApproval])?,
                paused: tasks::count_with_status(c, &[TaskStatus::Paused])?,
            })
        })?)
    }

    /// Whether the session has a run that is not terminal.
    pub(crate) fn is_busy(&self, session_id: i64) -> Result<bool> {
        Ok(self.store.read(|c| inbox::is_busy(c, session_id))?)
    }

    /// Hands a task's session to a worker in this process. Needs a tokio runtime.
    pub(crate) fn start(self: &Arc<Self>, task_id: i64) {
        if let Ok(task) = self.task(task_id) {
            self.drive_in_background(task.session_id);
        }
    }

    pub(crate) fn drive_in_background(self: &Arc<Self>, session_id: i64) {
        let rt = self.clone();
        tokio::spawn(async move { rt.drive(session_id).await });
    }

    /// Works a session until it is idle or waiting for a person: runs its current task,
    /// then each run its boundaries start. Exactly one process works a session at a time:
    /// without the lease this returns at once (the holder will place what was submitted);
    /// a worker that loses it stops (see `lease`).
    pub(crate) async fn drive(self: &Arc<Self>, session_id: i64) -> Result<()> {
        loop {
            let Some(lease) = SessionLease::acquire(&self.store, session_id, &self.holder)? else {
                return Ok(());
            };
            let heartbeat = lease.heartbeat();
            let worked = self.work_session(&lease).await;
            heartbeat.abort();
            if lease.is_lost() {
                return Ok(());
            }
            lease.release()?;
            worked?;
            // Something may have been started between our last look and the release (by a
            // process that could not take the lease): look once more.
            if self.runnable(session_id)?.is_none() {
                return Ok(());
            }
        }
    }

    fn run_context(&self) -> RunContext {
        RunContext {
            store: self.store.clone(),
            recorder: self.recorder.clone(),
            runs: self.runs.clone(),
            data_dir: self.data_dir.clone(),
            editors: self.editors.clone(),
            person_hooks: self.person_hooks.clone(),
            titles: self.titles.clone(),
        }
    }

    /// The person's hooks file this runtime uses (`None`: isolated from it).
    pub(crate) fn person_hooks_file(&self) -> Option<&Path> {
        self.person_hooks.as_deref()
    }

    /// Runs of `session_id` made by this process read and write files through `editor`
    /// (an ACP client's file methods), after the guard and the approvals as always.
    pub(crate) fn attach_editor(
        &self,
        session_id: i64,
        editor: Arc<dyn pocketpilot_tools::editor::EditorFiles>,
    ) {
        self.editors.attach(session_id, editor);
    }

    pub(crate) fn detach_editor(&self, session_id: i64) {
        self.editors.detach(session_id);
    }

    async fn work_session(self: &Arc<Self>, lease: &Arc<SessionLease>) -> Result<()> {
        while let Some(task) = self.runnable(lease.session_id)? {
            worker::run(self.run_context(), task, lease.clone()).await;
            if lease.is_lost() {
                return Ok(());
            }
            let after = self.task(task)?;
            if !after.status.is_terminal() && !after.status.needs_person() {
                // The worker could not finish it (already running here, or a store error).
                return Ok(());
            }
        }
        Ok(())
    }

    /// The session's task a worker should run now (queued, or running with nobody on it).
    fn runnable(&self, session_id: i64) -> Result<Option<i64>> {
        Ok(self
            .store
            .read(|c| inbox::current_task(c, session_id))?
            .filter(|t| matches!(t.status, TaskStatus::Queued | TaskStatus::Running))
            .filter(|t| !self.is_running_here(t.id))
            .map(|t| t.id))
    }

    /// Sessions with work that nobody is doing (after a crash or a restart).
    pub(crate) fn interrupted_sessions(&self) -> Result<Vec<i64>> {
        let mut ids: Vec<i64> = Vec::new();
        for status in [TaskStatus::Running, TaskStatus::Queued] {
            for t in self.store.read(|c| tasks::with_status(c, status))? {
                let held = self.store.read(|c| leases::holder(c, t.session_id))?;
                if held.is_none() && !ids.contains(&t.session_id) {
                    ids.push(t.session_id);
                }
            }
        }
        Ok(ids)
    }

    /// At start: resumes interrupted sessions when the setting says `auto` (the default),
    /// else only lists them. Returns the sessions and whether they were resumed.
    pub(crate) fn resume_on_start(self: &Arc<Self>) -> Result<(Vec<i64>, bool)> {
        let mode: crate::config::ResumeOnStart = self
            .store
            .read(|c| store::settings::get(c, crate::config::RESUME_KEY))?
            .unwrap_or_default();
        match mode {
            crate::config::ResumeOnStart::Auto => Ok((self.resume_all()?, true)),
            crate::config::ResumeOnStart::Ask => {
                let waiting = self.interrupted_sessions()?;
                if !waiting.is_empty() {
                    tracing::info!(sessions = ?waiting, "interrupted sessions wait for `pocketpilot resume`");
                }
                Ok((waiting, false))
            }
        }
    }

    pub(crate) fn set_resume_on_start(&self, mode: crate::config::ResumeOnStart) -> Result<()> {
        Ok(self
            .store
            .write(|c| store::settings::set(c, crate::config::RESUME_KEY, &mode))?)
    }

    /// Resumes every interrupted session, each on its own worker; returns their ids.
    pub(crate) fn resume_all(self: &Arc<Self>) -> Result<Vec<i64>> {
        let sessions = self.interrupted_sessions()?;
        for s in &sessions {
            self.drive_in_background(*s);
        }
        Ok(sessions)
    }

    /// Create and start: the id comes back before the model is asked anything.
    pub(crate) fn submit(self: &Arc<Self>, new: &NewTask) -> Result<i64> {
        let id = self.create_task(new)?;
        self.start(id);
        Ok(id)
    }

    pub(crate) fn is_running_here(&self, task_id: i64) -> bool {
        self.runs.is_running(task_id)
    }

    /// Cancels a task in any non-terminal state. A running worker stops its model stream
    /// and kills its tool process; a queued or waiting task is ended here.
    pub(crate) fn cancel(&self, task_id: i64) -> Result<()> {
        if self.runs.cancel(task_id) {
            return Ok(());
        }
        let task = self.task(task_id)?;
        if task.status.is_terminal() {
            return Err(RuntimeError::AlreadyEnded {
                id: task_id,
                status: task.status,
            });
        }
        let worked_elsewhere = self
            .store
            .read(|c| leases::holder(c, task.session_id))?
            .is_some_and(|(holder, _)| !holder.starts_with(&format!("{}/", self.holder)));
        if task.status == TaskStatus::Running && worked_elsewhere {
            // Another live process is running it: its worker watches for this flag.
            self.store.write(|tx| tasks::request_cancel(tx, task_id))?;
            return Ok(());
        }
        self.recorder.finish_run(
            task_id,
            &RuntimeEvent::TaskCancelled {
                reason: "cancelled by the user".into(),
            },
            false,
        )?;
        Ok(())
    }

    /// Answers a pending approval and continues the run in a new worker task.
    pub(crate) fn resolve_approval(
        self: &Arc<Self>,
        approval_id: i64,
        answer: ApprovalAnswer,
    ) -> Result<i64> {
        let approval = self.store.read(|c| approvals::get(c, approval_id))?;
        if approval.status != ApprovalStatus::Pending {
            return Err(RuntimeError::NotPending(approval_id));
        }
        if let Some(args) = &answer.edited_arguments {
            if !args.is_object() {
                return Err(RuntimeError::InvalidArguments(
                    "edited arguments must be a JSON object".into(),
                ));
            }
        }
        // issue 14: unsandboxed, "allow for this session" on a command is one-off.
        let answer = self.vet_session_grant(&approval, answer)?;
        let task_id = approval.task_id;
        self.recorder.record_for_person(
            task_id,
            &RuntimeEvent::ApprovalResolved {
                approval_id,
                call_id: approval.call_id.clone(),
                approved: answer.approve,
                session_grant: answer.approve && answer.session_grant,
                edited_arguments: answer.edited_arguments.clone(),
                note: answer.note.clone(),
                by: if answer.by.is_empty() {
                    "user".into()
                } else {
                    answer.by.clone()
                },
            },
        )?;
        let session_id = self.task(task_id)?.session_id;
        self.drive_in_background(session_id);
        Ok(task_id)
    }

    /// Issue 16: the changes of a task, a call or a session from a task on, with diffs.
    pub(crate) fn change_list(
        &self,
        target: &crate::engine::changes::undo::Target,
    ) -> Result<ChangeList> {
        Ok(crate::engine::changes::undo::list(
            &self.store,
            &self.data_dir,
            target,
        )?)
    }

    /// Per task of a session: files changed and whether they can be undone.
    pub(crate) fn change_summaries(
        &self,
        session_id: i64,
    ) -> Result<Vec<crate::engine::changes::undo::TaskChanges>> {
        Ok(crate::engine::changes::undo::summaries(
            &self.store,
            session_id,
        )?)
    }

    /// Undoes a target's changes; conflicts refuse unless `keep_theirs` (see the report).
    pub(crate) fn undo(
        &self,
        target: &crate::engine::changes::undo::Target,
        opts: crate::engine::changes::undo::Options,
    ) -> Result<UndoReport> {
        let report = crate::engine::changes::undo::undo(&self.store, &self.data_dir, target, opts)?;
        self.feed_changed();
        Ok(report)
    }

    /// Redoes an undo.
    pub(crate) fn redo(
        &self,
        undo_id: i64,
        opts: crate::engine::changes::undo::Options,
    ) -> Result<UndoReport> {
        let report =
            crate::engine::changes::undo::redo(&self.store, &self.data_dir, undo_id, opts)?;
        self.feed_changed();
        Ok(report)
    }

    /// Applies the retention settings now.
    pub(crate) fn prune_changes(&self) -> Result<crate::engine::changes::retention::Pruned> {
        Ok(crate::engine::changes::retention::prune(
            &self.store,
            &self.data_dir,
            chrono::Utc::now(),
        )?)
    }

    pub(crate) fn change_settings(&self) -> Result<ChangeSettings> {
        Ok(crate::engine::changes::load_settings(&self.store)?)
    }

    pub(crate) fn set_change_settings(&self, s: &ChangeSettings) -> Result<()> {
        if s.max_mib == 0 || s.max_age_days == 0 {
            return Err(RuntimeError::InvalidArguments(
                "the size cap and the age limit must be at least 1".into(),
            ));
        }
        Ok(crate::engine::changes::save_settings(&self.store, s)?)
    }

    /// An undo or redo changed files and the transcript: the window re-reads.
    fn feed_changed(&self) {
        self.feed.announce(crate::engine::feed::Change::Refresh);
    }

    pub(crate) fn task(&self, id: i64) -> Result<tasks::Task> {
        Ok(self.store.read(|c| tasks::get(c, id))?)
    }

    pub(crate) fn tasks(&self, limit: i64) -> Result<Vec<tasks::Task>> {
        Ok(self.store.read(|c| tasks::list(c, limit))?)
    }

    pub(crate) fn events(&self, task_id: i64) -> Result<Vec<store::StoredEvent>> {
        self.task(task_id)?;
        Ok(self.store.read(|c| events::list_after(c, task_id, 0))?)
    }

    pub(crate) fn sessions(&self) -> Result<Vec<sessions::Session>> {
        Ok(self.store.read(sessions::list)?)
    }

    pub(crate) fn session_tasks(&self, session_id: i64) -> Result<Vec<tasks::Task>> {
        Ok(self.store.read(|c| {
            sessions::get(c, session_id)?;
            tasks::list_for_session(c, session_id)
        })?)
    }

    /// What the window shows when it opens a session: its newest `tasks` tasks and their
    /// entries. Long sessions open as fast as short ones; older tasks come on request.
    pub(crate) fn session_history(&self, session_id: i64, tasks: u32) -> Result<SessionHistory> {
        let limit = i64::from(tasks.max(1));
        Ok(self.store.read(|c| {
            sessions::get(c, session_id)?;
            let mut recent = tasks::last_for_session(c, session_id, limit + 1)?;
            let earlier = recent.len() as i64 > limit;
            if earlier {
                recent.remove(0);
            }
            let entries = match recent.first() {
                Some(first) => entries::of_tasks_from(c, session_id, first.id)?,
                None => Vec::new(),
            };
            let failures = failures_of(c, &recent)?;
            Ok(SessionHistory {
                tasks: recent,
                entries,
                earlier,
                failures,
            })
        })?)
    }

    pub(crate) fn session_entries(&self, session_id: i64) -> Result<Vec<store::Entry>> {
        Ok(self.store.read(|c| {
            sessions::get(c, session_id)?;
            entries::list(c, session_id)
        })?)
    }

    pub(crate) fn pending_approvals(&self) -> Result<Vec<approvals::Approval>> {
        Ok(self.store.read(approvals::pending)?)
    }

    /// The person's rules for a workspace (canonical path).
    pub(crate) fn policy_rules(&self, workspace: &str) -> Result<pocketpilot_tools::PolicyRules> {
        Ok(self
            .store
            .read(|c| store::settings::get(c, &crate::config::workspace_rules_key(workspace)))?
            .unwrap_or_default())
    }

    pub(crate) fn set_policy_rules(
        &self,
        workspace: &str,
        rules: &pocketpilot_tools::PolicyRules,
    ) -> Result<()> {
        Ok(self.store.write(|c| {
            store::settings::set(c, &crate::config::workspace_rules_key(workspace), rules)
        })?)
    }

    pub(crate) fn subscribe(&self, task_id: i64, after_sequence: i64) -> Result<Subscription> {
        Ok(self.recorder.subscribe(task_id, after_sequence)?)
    }

    /// Waits until the task is terminal or waiting for an approval, and returns its status.
    pub(crate) async fn wait_settled(&self, task_id: i64) -> Result<TaskStatus> {
        let mut sub = self.subscribe(task_id, 0)?;
        while let Some(ev) = sub.next().await {
            let ev = ev?;
            if matches!(
                ev.kind(),
                EventKind::ApprovalRequired | EventKind::RunPaused
            ) || ev.kind().is_terminal()
            {
                let status = self.task(task_id)?.status;
                if status.needs_person() || status.is_terminal() {
                    return Ok(status);
                }
            }
        }
        Ok(self.task(task_id)?.status)
    }
}

pub(crate) fn canonical_workspace(path: &Path) -> Result<String> {
    let shown = path.display().to_string();
    let real = std::fs::canonicalize(path).map_err(|_| RuntimeError::Workspace(shown.clone()))?;
    if !real.is_dir() {
        return Err(RuntimeError::Workspace(shown));
    }
    real.to_str()
        .map(str::to_owned)
        .ok_or_else(|| RuntimeError::Workspace(format!("{shown} (the path is not valid UTF-8)")))
}

/// An open task's status as the refusal says it.
fn doing(status: crate::task::TaskStatus) -> &'static str {
    use crate::task::TaskStatus::*;
    match status {
        Queued => "queued",
        Running => "running",
        WaitingApproval => "waiting for an approval",
        Paused => "paused",
        Completed | Failed | Cancelled | BudgetExceeded => "ending",
    }
}

crate::api::call::op! {
    /// The data directory this runtime's store lives in.
    #[derive(Debug, Clone)]
    DataDir {} -> PathBuf
        = |rt, op| rt.data_dir().to_path_buf();
    /// The limits runs get: what is stored, with the environment's overrides.
    #[derive(Debug, Clone)]
    GetLimits {} -> Result<Limits>
        = |rt, op| rt.limits();
    /// The limits as stored, without the environment's overrides: what an edit starts from.
    #[derive(Debug, Clone)]
    StoredLimits {} -> Result<Limits>
        = |rt, op| rt.stored_limits();
    /// The model provider runs use: what is stored, with the environment's overrides.
    #[derive(Debug, Clone)]
    GetProviderSettings {} -> Result<ProviderSettings>
        = |rt, op| rt.provider_settings();
    /// The provider as stored, without the environment's overrides: what an edit starts from.
    #[derive(Debug, Clone)]
    StoredProviderSettings {} -> Result<ProviderSettings>
        = |rt, op| rt.stored_provider_settings();
    /// Starts a run with `new.goal` as the person's input: in a new session (with `workspace`), or
    /// in an idle session (`session_id`; a busy one answers `ConversationBusy` — use `say` to
    /// queue). Persists the task `queued` and returns its id; nothing runs until `start`.
    #[derive(Debug, Clone)]
    CreateTask { new: NewTask } -> Result<i64>
        = |rt, op| rt.create_task(&op.new);
    /// The one subscription to the runtime's changes (see `feed`): this process's task
    /// changes, the entry points' announcements, and a `Refresh` for each commit of another
    /// process. The window, the tray and the trigger host follow it. Needs a tokio runtime.
    #[derive(Debug, Clone)]
    WatchFeed {} -> crate::engine::feed::Changes
        = |rt, op| rt.changes();
    /// Says something to a session (see `inbox`): queued while it is busy, placed (and a run
    /// started, in this process) when it is idle.
    #[derive(Debug, Clone)]
    Say { submit: inbox::Submit } -> Result<inbox::Admitted>
        = |rt, op| rt.say(&op.submit);
    /// Withdraws a queued submission (→ unanswered, reason `aborted`).
    #[derive(Debug, Clone)]
    Withdraw { submission_id: i64 } -> Result<store::Submission>
        = |rt, op| rt.withdraw(op.submission_id);
    /// A session's inbox: what was said to it and waits for a boundary.
    #[derive(Debug, Clone)]
    GetInbox { session_id: i64 } -> Result<Vec<store::Submission>>
        = |rt, op| rt.inbox(op.session_id);
    /// Everything said to a session, placed or waiting, oldest first.
    #[derive(Debug, Clone)]
    ListSubmissions { session_id: i64 } -> Result<Vec<store::Submission>>
        = |rt, op| rt.submissions(op.session_id);
    /// One session.
    #[derive(Debug, Clone)]
    GetSession { session_id: i64 } -> Result<sessions::Session>
        = |rt, op| rt.session(op.session_id);
    /// Renames a session (the sessions list and its header show the title).
    #[derive(Debug, Clone)]
    RenameSession { session_id: i64, title: String } -> Result<sessions::Session>
        = |rt, op| rt.rename_session(op.session_id, &op.title);
    /// How many queued steers and follow-ups a boundary takes (`None` keeps the mode), read fresh
    /// at every boundary.
    #[derive(Debug, Clone)]
    SetSessionModes { session_id: i64, steering: Option<SessionMode>, follow_up: Option<SessionMode> } -> Result<()>
        = |rt, op| rt.set_session_modes(op.session_id, op.steering, op.follow_up);
    /// Saves the model provider (base URL, model, timeouts); checked first.
    #[derive(Debug, Clone)]
    SetProviderSettings { settings: ProviderSettings } -> Result<()>
        = |rt, op| rt.set_provider_settings(&op.settings);
    /// Saves the limits runs get (steps, time, tokens, money); refused when the step or
    /// time limit is 0 or a money limit is not valid.
    #[derive(Debug, Clone)]
    SetLimits { limits: Limits } -> Result<()>
        = |rt, op| rt.set_limits(&op.limits);
    /// Asks the configured model for a one-word reply: the settings screen's "test connection".
    #[derive(Debug, Clone)]
    TestConnection {} -> crate::api::call::Pending<Result<String>>
        = |rt, op| {
        let rt = std::sync::Arc::clone(rt);
        Box::pin(async move { rt.test_connection().await })
    };
    /// The models the server at `base_url` lists (the settings form's URL, which may not be saved
    /// yet), asked with the stored key: the settings screen's model picker.
    #[derive(Debug, Clone)]
    ListModels { base_url: String } -> crate::api::call::Pending<Result<Vec<String>>>
        = |rt, op| {
        let rt = std::sync::Arc::clone(rt);
        Box::pin(async move { rt.list_models(&op.base_url).await })
    };
    /// Tasks running and waiting for a person, for the tray.
    #[derive(Debug, Clone)]
    GetCounts {} -> Result<Counts>
        = |rt, op| rt.counts();
    /// Whether the session has a run that is not terminal.
    #[derive(Debug, Clone)]
    IsBusy { session_id: i64 } -> Result<bool>
        = |rt, op| rt.is_busy(op.session_id);
    /// Hands a task's session to a worker in this process. Needs a tokio runtime.
    #[derive(Debug, Clone)]
    StartTask { task_id: i64 } -> ()
        = |rt, op| rt.start(op.task_id);
    /// Works a session until it is idle or waiting for a person: runs its current task, then each
    /// run its boundaries start. Exactly one process works a session at a time: without the lease
    /// this returns at once (the holder will place what was submitted); a worker that loses it
    /// stops (see `lease`).
    #[derive(Debug, Clone)]
    DriveSession { session_id: i64 } -> crate::api::call::Pending<Result<()>>
        = |rt, op| {
        let rt = std::sync::Arc::clone(rt);
        Box::pin(async move { rt.drive(op.session_id).await })
    };
    /// The person's hooks file this runtime uses (`None`: isolated from it).
    #[derive(Debug, Clone)]
    PersonHooksFile {} -> Option<PathBuf>
        = |rt, op| rt.person_hooks_file().map(Path::to_path_buf);
    /// Runs of `session_id` made by this process read and write files through `editor` (an ACP
    /// client's file methods), after the guard and the approvals as always.
    AttachEditor { session_id: i64, editor: Arc<dyn pocketpilot_tools::editor::EditorFiles> } -> ()
        = |rt, op| rt.attach_editor(op.session_id, op.editor);
    /// Stops a session's runs from using an attached editor's files.
    #[derive(Debug, Clone)]
    DetachEditor { session_id: i64 } -> ()
        = |rt, op| rt.detach_editor(op.session_id);
    /// Sessions with work that nobody is doing (after a crash or a restart).
    #[derive(Debug, Clone)]
    InterruptedSessions {} -> Result<Vec<i64>>
        = |rt, op| rt.interrupted_sessions();
    /// At start: resumes interrupted sessions when the setting says `auto` (the default), else only
    /// lists them. Returns the sessions and whether they were resumed.
    #[derive(Debug, Clone)]
    ResumeOnStart {} -> Result<(Vec<i64>, bool)>
        = |rt, op| rt.resume_on_start();
    /// What the app does at start with interrupted sessions: resume, ask or leave them.
    #[derive(Debug, Clone)]
    SetResumeOnStart { mode: crate::config::ResumeOnStart } -> Result<()>
        = |rt, op| rt.set_resume_on_start(op.mode);
    /// Resumes every interrupted session, each on its own worker; returns their ids.
    #[derive(Debug, Clone)]
    ResumeAll {} -> Result<Vec<i64>>
        = |rt, op| rt.resume_all();
    /// Create and start: the id comes back before the model is asked anything.
    #[derive(Debug, Clone)]
    SubmitTask { new: NewTask } -> Result<i64>
        = |rt, op| rt.submit(&op.new);
    /// Whether a task is being worked by this process.
    #[derive(Debug, Clone)]
    IsRunningHere { task_id: i64 } -> bool
        = |rt, op| rt.is_running_here(op.task_id);
    /// Cancels a task in any non-terminal state. A running worker stops its model stream and kills
    /// its tool process; a queued or waiting task is ended here.
    #[derive(Debug, Clone)]
    CancelTask { task_id: i64 } -> Result<()>
        = |rt, op| rt.cancel(op.task_id);
    /// Answers a pending approval and continues the run in a new worker task.
    #[derive(Debug, Clone)]
    ResolveApproval { approval_id: i64, answer: ApprovalAnswer } -> Result<i64>
        = |rt, op| rt.resolve_approval(op.approval_id, op.answer);
    /// Issue 16: the changes of a task, a call or a session from a task on, with diffs.
    #[derive(Debug, Clone)]
    GetChangeList { target: crate::engine::changes::undo::Target } -> Result<ChangeList>
        = |rt, op| rt.change_list(&op.target);
    /// Per task of a session: files changed and whether they can be undone.
    #[derive(Debug, Clone)]
    ChangeSummaries { session_id: i64 } -> Result<Vec<crate::engine::changes::undo::TaskChanges>>
        = |rt, op| rt.change_summaries(op.session_id);
    /// Undoes a target's changes; conflicts refuse unless `keep_theirs` (see the report).
    #[derive(Debug, Clone)]
    Undo { target: crate::engine::changes::undo::Target, opts: crate::engine::changes::undo::Options } -> Result<UndoReport>
        = |rt, op| rt.undo(&op.target, op.opts);
    /// Redoes an undo.
    #[derive(Debug, Clone)]
    Redo { undo_id: i64, opts: crate::engine::changes::undo::Options } -> Result<UndoReport>
        = |rt, op| rt.redo(op.undo_id, op.opts);
    /// Applies the retention settings now.
    #[derive(Debug, Clone)]
    PruneChanges {} -> Result<crate::engine::changes::retention::Pruned>
        = |rt, op| rt.prune_changes();
    /// What the change journal keeps: how much disk, for how long, and what it never scans.
    #[derive(Debug, Clone)]
    GetChangeSettings {} -> Result<ChangeSettings>
        = |rt, op| rt.change_settings();
    /// Saves what the change journal keeps.
    #[derive(Debug, Clone)]
    SetChangeSettings { settings: ChangeSettings } -> Result<()>
        = |rt, op| rt.set_change_settings(&op.settings);
    /// One task.
    #[derive(Debug, Clone)]
    GetTask { id: i64 } -> Result<tasks::Task>
        = |rt, op| rt.task(op.id);
    /// The newest tasks, up to `limit`.
    #[derive(Debug, Clone)]
    ListTasks { limit: i64 } -> Result<Vec<tasks::Task>>
        = |rt, op| rt.tasks(op.limit);
    /// A task's stored events, oldest first.
    #[derive(Debug, Clone)]
    TaskEvents { task_id: i64 } -> Result<Vec<store::StoredEvent>>
        = |rt, op| rt.events(op.task_id);
    /// Every session, the most recently updated first.
    #[derive(Debug, Clone)]
    ListSessions {} -> Result<Vec<sessions::Session>>
        = |rt, op| rt.sessions();
    /// A session's tasks, oldest first.
    #[derive(Debug, Clone)]
    SessionTasks { session_id: i64 } -> Result<Vec<tasks::Task>>
        = |rt, op| rt.session_tasks(op.session_id);
    /// What the window shows when it opens a session: its newest `tasks` tasks and their entries.
    /// Long sessions open as fast as short ones; older tasks come on request.
    #[derive(Debug, Clone)]
    GetSessionHistory { session_id: i64, tasks: u32 } -> Result<SessionHistory>
        = |rt, op| rt.session_history(op.session_id, op.tasks);
    /// A session's transcript entries, oldest first.
    #[derive(Debug, Clone)]
    SessionEntries { session_id: i64 } -> Result<Vec<store::Entry>>
        = |rt, op| rt.session_entries(op.session_id);
    /// Every approval waiting for an answer.
    #[derive(Debug, Clone)]
    PendingApprovals {} -> Result<Vec<approvals::Approval>>
        = |rt, op| rt.pending_approvals();
    /// The person's rules for a workspace (canonical path).
    #[derive(Debug, Clone)]
    GetPolicyRules { workspace: String } -> Result<pocketpilot_tools::PolicyRules>
        = |rt, op| rt.policy_rules(&op.workspace);
    /// Saves a workspace's allow and deny rules.
    #[derive(Debug, Clone)]
    SetPolicyRules { workspace: String, rules: pocketpilot_tools::PolicyRules } -> Result<()>
        = |rt, op| rt.set_policy_rules(&op.workspace, &op.rules);
    /// A task's events after `after_sequence`, then live as they are committed, with no gap and no duplicate; ends at a terminal event.
    #[derive(Debug, Clone)]
    SubscribeTask { task_id: i64, after_sequence: i64 } -> Result<Subscription>
        = |rt, op| rt.subscribe(op.task_id, op.after_sequence);
    /// Waits until the task is terminal or waiting for an approval, and returns its status.
    #[derive(Debug, Clone)]
    WaitSettled { task_id: i64 } -> crate::api::call::Pending<Result<TaskStatus>>
        = |rt, op| {
        let rt = std::sync::Arc::clone(rt);
        Box::pin(async move { rt.wait_settled(op.task_id).await })
    };
}
