//! The change journal in a run (issue 16): before a call's effect, the prior state of what
//! it may touch is kept (its known paths for file tools, a scan of the workspace for
//! commands and MCP tools) and committed as a `pending` change set; after the effect, the
//! changes are recorded. A call cut off by a crash is finished from its pending set's
//! index, so undo still knows what was there before.
//!
//! The orchestrator calls [`before`] and [`after`] around `Tool::call`; everything else
//! (undo, redo, lists, retention) is in `undo.rs` and `retention.rs`.
pub mod retention;
pub mod rewind;
pub mod undo;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use pocketpilot_changes::diff;
use pocketpilot_changes::scan::{self, Index, ScanOptions, Scope};
use pocketpilot_changes::{BlobStore, ChangesError};
use pocketpilot_protocol::changes::{ChangeSetKind, ChangeSetStatus, ChangeSettings, Node};
use pocketpilot_tools::guard::WorkspaceGuard;
use pocketpilot_tools::ToolContext;
use sha2::Digest;

use crate::store::{change_sets, settings, ChangeSet, Store, StoreError};

pub const SETTINGS_KEY: &str = "changes";

#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    #[error(transparent)]
    Files(#[from] ChangesError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the workspace {0} cannot be used: {1}")]
    Workspace(String, String),
    #[error("{0} has no recorded changes")]
    Nothing(String),
    #[error("{what} was already undone (undo {by}); `pocketpilot redo {by}` brings it back")]
    AlreadyUndone { what: String, by: i64 },
    #[error("the kept contents of {0} were pruned (retention); it can no longer be undone")]
    Pruned(String),
    #[error("change set {0} is not an undo that can be redone")]
    NotAnUndo(i64),
    #[error("undo {undo} was already redone ({by})")]
    AlreadyRedone { undo: i64, by: i64 },
    #[error("task {0} is still working in another process; wait for it or cancel it first")]
    Busy(i64),
    #[error("entry {entry} is not one of the person's messages in session {session_id} (`pocketpilot session show {session_id}` lists them)")]
    NotAMessage { session_id: i64, entry: i64 },
    #[error(
        "entry {entry} was already rewound (rewind {by}); `pocketpilot redo {by}` brings it back"
    )]
    AlreadyRewound { entry: i64, by: i64 },
    #[error("session {session_id} is still working (task {task_id}): stop or cancel it first")]
    SessionOpen { session_id: i64, task_id: i64 },
    /// The data directory's disk is full: no content is kept, so nothing may change.
    #[error("no changes can be kept: {0}")]
    DiskFull(#[from] crate::store::space::DiskFull),
}

impl ChangeError {
    /// The full disk behind this failure, if that is what it was.
    pub fn disk_full(&self, data_dir: &Path) -> Option<crate::store::space::DiskFull> {
        let space = crate::store::space::Space::new(data_dir);
        match self {
            ChangeError::DiskFull(d) => Some(*d),
            ChangeError::Files(ChangesError::Io { source, .. })
                if crate::store::space::is_no_space(source) =>
            {
                Some(space.full_now())
            }
            ChangeError::Store(e) if e.is_disk_full() => Some(space.full_now()),
            _ => None,
        }
    }
}

impl ChangeError {
    /// A stable kind for the CLI and the window.
    pub fn kind(&self) -> pocketpilot_protocol::ErrorKind {
        use pocketpilot_protocol::ErrorKind;
        match self {
            ChangeError::Files(ChangesError::Unsafe { .. }) => ErrorKind::OutsideWorkspace,
            ChangeError::Files(_) | ChangeError::Workspace(..) => ErrorKind::ChangeJournal,
            ChangeError::Store(e) => crate::error_kind::store_kind(e),
            ChangeError::Nothing(_)
            | ChangeError::AlreadyUndone { .. }
            | ChangeError::Pruned(_)
            | ChangeError::NotAnUndo(_)
            | ChangeError::AlreadyRedone { .. }
            | ChangeError::AlreadyRewound { .. } => ErrorKind::NothingToUndo,
            ChangeError::NotAMessage { .. } => ErrorKind::InvalidArguments,
            ChangeError::Busy(_) | ChangeError::SessionOpen { .. } => ErrorKind::ConversationBusy,
            ChangeError::DiskFull(_) => ErrorKind::DiskFull,
        }
    }
}

pub fn load_settings(store: &Store) -> Result<ChangeSettings, StoreError> {
    Ok(store
        .read(|c| settings::get(c, SETTINGS_KEY))?
        .unwrap_or_default())
}

pub fn save_settings(store: &Store, s: &ChangeSettings) -> Result<(), StoreError> {
    store.write(|tx| settings::set(tx, SETTINGS_KEY, s))
}

pub fn scan_options(s: &ChangeSettings) -> ScanOptions {
    ScanOptions {
        ignored: s.ignored.clone(),
        max_file_bytes: u64::from(s.max_file_mib) * 1024 * 1024,
    }
}

pub fn blob_store(data_dir: &Path) -> Result<BlobStore, ChangesError> {
    BlobStore::open(data_dir.join("blobs"))
}

/// The directories undo must never touch: the app's data and configuration.
pub fn forbidden_dirs(data_dir: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![data_dir.to_owned()];
    dirs.extend(dirs::config_dir().map(|d| d.join("pocketpilot")));
    dirs.extend(std::fs::canonicalize(data_dir).ok());
    dirs
}

/// The last index of a workspace, kept between runs so a new process hashes only what
/// changed: `<data>/changes/baselines/<sha256 of the workspace path>` holds the index
/// blob's name. A cache: losing it costs one full hashing scan, nothing else.
fn baseline_file(data_dir: &Path, workspace: &Path) -> PathBuf {
    let key = hex::encode(sha2::Sha256::digest(
        workspace.as_os_str().as_encoded_bytes(),
    ));
    data_dir.join("changes").join("baselines").join(key)
}

struct Baseline {
    index: Index,
    /// The index's blob, when it is the one stored.
    blob: Option<String>,
}

/// A run's change journal: its workspace, guard, blobs and the workspace's last index.
pub struct RunChanges {
    store: Arc<Store>,
    data_dir: PathBuf,
    blobs: BlobStore,
    guard: WorkspaceGuard,
    session_id: i64,
    task_id: i64,
    opts: ScanOptions,
    baseline: Mutex<Option<Baseline>>,
}

/// A call's kept prior state, from [`before`] to [`after`].
pub struct Pending {
    set_id: i64,
    scope: Scope,
    pre: Index,
}

impl RunChanges {
    pub fn open(
        store: Arc<Store>,
        data_dir: &Path,
        session_id: i64,
        task_id: i64,
        ctx: &ToolContext,
    ) -> Result<Self, ChangeError> {
        let guard = WorkspaceGuard::for_context(ctx).map_err(|e| {
            ChangeError::Workspace(ctx.workspace.display().to_string(), e.to_string())
        })?;
        // A journal keeps copies of what a run changes: it starts only with room for them.
        crate::store::space::Space::new(data_dir).check()?;
        let opts = scan_options(&load_settings(&store)?);
        let blobs = blob_store(data_dir)?;
        let baseline = load_baseline(data_dir, guard.root(), &blobs);
        Ok(Self {
            store,
            data_dir: data_dir.to_owned(),
            blobs,
            guard,
            session_id,
            task_id,
            opts,
            baseline: Mutex::new(baseline),
        })
    }

    pub fn workspace(&self) -> &Path {
        self.guard.root()
    }

    /// What a call of `capability` with `args` may touch; `None`: nothing (reads, lists,
    /// the network). `fs:` tools name their path; anything else (commands, MCP tools, whose
    /// default capability is `mcp:execute`) may touch the whole workspace, and so does an
    /// `fs:` call whose path the guard cannot resolve (it fails, but is never unkept).
    pub fn scope_for(&self, capability: &str, args: &serde_json::Value) -> Option<Scope> {
        let (area, verb) = capability.split_once(':').unwrap_or((capability, ""));
        if matches!(verb, "read" | "list" | "network") {
            return None;
        }
        let path = args.get("path").and_then(|p| p.as_str());
        match (area, verb, path) {
            ("fs", "delete", Some(p)) => Some(match self.guard.resolve_entry(p) {
                Ok(real) => Scope::Paths(vec![self.guard.relative(&real)]),
                Err(_) => Scope::Workspace,
            }),
            ("fs", _, Some(p)) => Some(match self.guard.resolve_for_write(p) {
                Ok(real) => Scope::Paths(vec![first_missing(self.guard.root(), &real)]),
                Err(_) => Scope::Workspace,
            }),
            _ => Some(Scope::Workspace),
        }
    }

    /// Keeps the prior state of `scope` and commits it as the call's pending set.
    pub fn keep_before(&self, call_id: &str, scope: Scope) -> Result<Pending, ChangeError> {
        let mut base = self.lock_baseline();
        let prev = base.as_ref().map(|b| &b.index);
        let (pre, _) = scan::scan(self.guard.root(), &scope, prev, &self.blobs, &self.opts)?;
        let pre_blob = self.index_blob(&scope, &pre, base.as_ref())?;
        let scope_json = serde_json::to_string(&scope).unwrap_or_default();
        let workspace = self.guard.root().display().to_string();
        let set_id = self.store.write(|tx| {
            change_sets::insert(
                tx,
                &change_sets::NewSet {
                    session_id: self.session_id,
                    task_id: self.task_id,
                    call_id: Some(call_id),
                    kind: ChangeSetKind::Call,
                    status: ChangeSetStatus::Pending,
                    workspace: &workspace,
                    scope: &scope_json,
                    pre_index: Some(&pre_blob),
                    changes: &[],
                    reverts: &[],
                },
            )
        })?;
        self.remember(&mut base, &scope, &pre, Some(pre_blob));
        Ok(Pending { set_id, scope, pre })
    }

    /// Records what the call changed (scanning `scope` again against its prior state).
    pub fn record_after(&self, p: Pending) -> Result<usize, ChangeError> {
        let mut base = self.lock_baseline();
        let (post, _) = scan::scan(
            self.guard.root(),
            &p.scope,
            Some(&p.pre),
            &self.blobs,
            &self.opts,
        )?;
        let changes = diff::changes(&p.pre, &post);
        let bytes = changes.iter().map(|c| added_bytes(&c.after)).sum::<u64>() as i64;
        self.store
            .write(|tx| change_sets::record(tx, p.set_id, &changes, bytes))?;
        self.remember(&mut base, &p.scope, &post, None);
        Ok(changes.len())
    }

    /// Finishes the pending set of a call that was cut off (a crash): its changes are
    /// what the workspace shows now against the prior state kept before it ran.
    pub fn finish_interrupted(&self, call_id: &str) -> Result<(), ChangeError> {
        let set = self
            .store
            .read(|c| change_sets::of_call(c, self.task_id, call_id))?;
        if let Some(set) = set.filter(|s| s.status == ChangeSetStatus::Pending) {
            finish_pending(&self.store, &self.blobs, &self.opts, &set)?;
            *self.lock_baseline() = None;
        }
        Ok(())
    }

    fn lock_baseline(&self) -> std::sync::MutexGuard<'_, Option<Baseline>> {
        self.baseline.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The pre-state's index as a blob; an index equal to the stored baseline reuses it.
    fn index_blob(
        &self,
        scope: &Scope,
        pre: &Index,
        base: Option<&Baseline>,
    ) -> Result<String, ChangeError> {
        if let (
            Scope::Workspace,
            Some(Baseline {
                index,
                blob: Some(b),
            }),
        ) = (scope, base)
        {
            if index.entries == pre.entries {
                return Ok(b.clone());
            }
        }
        Ok(self.blobs.put_bytes(&pre.to_bytes()?)?)
    }

    fn remember(
        &self,
        base: &mut Option<Baseline>,
        scope: &Scope,
        index: &Index,
        blob: Option<String>,
    ) {
        match scope {
            Scope::Workspace => {
                let unchanged = base
                    .as_ref()
                    .is_some_and(|b| b.index.entries == index.entries);
                if !unchanged {
                    let blob = blob.or_else(|| self.blobs.put_bytes(&index.to_bytes().ok()?).ok());
                    if let Some(b) = &blob {
                        save_baseline(&self.data_dir, self.guard.root(), b);
                    }
                    *base = Some(Baseline {
                        index: index.clone(),
                        blob,
                    });
                } else if let Some(b) = base.as_mut() {
                    // Same entries: the newer scan time keeps fewer files racy.
                    b.index.scanned_at_ns = index.scanned_at_ns;
                }
            }
            Scope::Paths(paths) => {
                if let Some(b) = base.as_mut() {
                    b.index = b.index.merged(paths, index);
                    b.blob = None;
                }
            }
        }
    }
}

/// Bytes of content a node adds to the blob store at most (a file's size).
fn added_bytes(n: &Option<Node>) -> u64 {
    match n {
        Some(Node::File { size, .. }) => *size,
        _ => 0,
    }
}

/// For a path to be written: the first of its components that does not exist yet, so
/// the directories a write creates are undone with it.
fn first_missing(root: &Path, real: &Path) -> String {
    let rel = real.strip_prefix(root).unwrap_or(real);
    let mut cur = PathBuf::new();
    for comp in rel.components() {
        cur.push(comp);
        if std::fs::symlink_metadata(root.join(&cur)).is_err() {
            break;
        }
    }
    cur.to_string_lossy().into_owned()
}

fn load_baseline(data_dir: &Path, workspace: &Path, blobs: &BlobStore) -> Option<Baseline> {
    let name = std::fs::read_to_string(baseline_file(data_dir, workspace)).ok()?;
    let name = name.trim().to_owned();
    let bytes = blobs.read(&name).ok()?;
    let index = Index::from_bytes(&name, &bytes).ok()?;
    Some(Baseline {
        index,
        blob: Some(name),
    })
}

fn save_baseline(data_dir: &Path, workspace: &Path, blob: &str) {
    let file = baseline_file(data_dir, workspace);
    let Some(dir) = file.parent() else { return };
    let tmp = file.with_extension(format!("tmp{}", std::process::id()));
    let ok = std::fs::create_dir_all(dir).is_ok()
        && std::fs::write(&tmp, blob).is_ok()
        && std::fs::rename(&tmp, &file).is_ok();
    if !ok {
        tracing::warn!(file = %file.display(), "the workspace's scan index could not be kept (the next run hashes everything)");
    }
}

/// A pending set finished from what the disk shows now (after a crash, or an undo asked
/// for a task whose call was cut off).
pub fn finish_pending(
    store: &Store,
    blobs: &BlobStore,
    opts: &ScanOptions,
    set: &ChangeSet,
) -> Result<usize, ChangeError> {
    let scope: Scope = serde_json::from_str(&set.scope).map_err(|e| ChangesError::BadIndex {
        what: format!("scope of change set {}", set.id),
        detail: e.to_string(),
    })?;
    let Some(pre_blob) = &set.pre_index else {
        store.write(|tx| change_sets::record(tx, set.id, &[], 0))?;
        return Ok(0);
    };
    let pre = Index::from_bytes(pre_blob, &blobs.read(pre_blob)?)?;
    let root = PathBuf::from(&set.workspace);
    let (post, _) = scan::scan(&root, &scope, Some(&pre), blobs, opts)?;
    let changes = diff::changes(&pre, &post);
    let bytes = changes.iter().map(|c| added_bytes(&c.after)).sum::<u64>() as i64;
    store.write(|tx| change_sets::record(tx, set.id, &changes, bytes))?;
    tracing::info!(
        task_id = set.task_id,
        set = set.id,
        changes = changes.len(),
        "an interrupted call's changes were recorded from its kept prior state"
    );
    Ok(changes.len())
}

/// The orchestrator's hook before an effect: keeps the prior state of what the call may
/// touch. `Ok(None)`: nothing to keep (a read, or no journal for this run).
pub async fn before(
    journal: Option<&Arc<RunChanges>>,
    capability: &str,
    args: &serde_json::Value,
    call_id: &str,
) -> Result<Option<Pending>, ChangeError> {
    let Some(j) = journal else { return Ok(None) };
    let Some(scope) = j.scope_for(capability, args) else {
        return Ok(None);
    };
    let (j, call_id) = (j.clone(), call_id.to_owned());
    let data_dir = j.data_dir.clone();
    // Keeping the prior state writes copies: it starts only with room for them.
    crate::store::space::Space::new(&data_dir).check()?;
    tokio::task::spawn_blocking(move || j.keep_before(&call_id, scope))
        .await
        .map_err(|e| ChangeError::Workspace("(scan)".into(), e.to_string()))?
        .map(Some)
        // Out of space is said as such: the run pauses rather than fail the call.
        .map_err(|e| match e.disk_full(&data_dir) {
            Some(full) => ChangeError::DiskFull(full),
            None => e,
        })
}

/// The orchestrator's hook after an effect: records the call's changes. A failure leaves
/// the set pending (finished later from its kept state) and is logged, never hidden.
pub async fn after(journal: Option<&Arc<RunChanges>>, pending: Option<Pending>) {
    let (Some(j), Some(p)) = (journal, pending) else {
        return;
    };
    let j = j.clone();
    let task_id = j.task_id;
    match tokio::task::spawn_blocking(move || j.record_after(p)).await {
        Ok(Ok(n)) => tracing::debug!(task_id, changes = n, "the call's changes were recorded"),
        Ok(Err(e)) => {
            tracing::warn!(task_id, error = %e, "the call's changes could not be recorded yet")
        }
        Err(e) => tracing::warn!(task_id, error = %e, "the change scan stopped"),
    }
}

/// The orchestrator's hook for a call found interrupted.
pub async fn interrupted(journal: Option<&Arc<RunChanges>>, call_id: &str) {
    let Some(j) = journal else { return };
    let (j, call) = (j.clone(), call_id.to_owned());
    let task_id = j.task_id;
    if let Ok(Err(e)) = tokio::task::spawn_blocking(move || j.finish_interrupted(&call)).await {
        tracing::warn!(task_id, error = %e, "an interrupted call's changes could not be recorded");
    }
}
