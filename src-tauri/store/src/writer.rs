//! The writer: the one write connection, and the group commit over it.
//!
//! Writes wait in a queue; whoever holds the connection — the writer thread, or a
//! synchronous caller that came with a borrowed closure — takes everything queued and
//! commits it as one group: one `BEGIN IMMEDIATE … COMMIT`, hence one fsync at
//! `synchronous=FULL`, however many callers it answers. Each caller's closure runs inside
//! its own SAVEPOINT, so one caller's error rolls back only its part. While one group
//! fsyncs, the next one gathers; nothing waits on a timer to make groups larger.
//!
//! Each caller is answered only after its group's COMMIT returned (so after the fsync),
//! and its after-commit hook runs then too, on the committing thread and while it still
//! holds the connection: hooks run in commit order, which the recorder's fan-out relies on.
use std::collections::VecDeque;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use rusqlite::{Connection, Transaction, TransactionBehavior};

use crate::StoreError;

/// Writes answered by one group at most: bounds how long the first of them waits.
const MAX_GROUP: usize = 1024;

/// What happened to one write that ran in a group, once the group's outcome is known.
type Settle = Box<dyn FnOnce(Option<&Arc<rusqlite::Error>>)>;

/// One caller's write: its closure, its after-commit hook and where its answer goes.
trait Job {
    /// Runs the closure in the group's transaction. `Ok`: it succeeded, settle it once the
    /// group commits (or fails to). `Err`: it failed; its savepoint is rolled back and the
    /// returned callback hands the caller its own error.
    fn run(self: Box<Self>, tx: &Transaction<'_>) -> Result<Settle, Box<dyn FnOnce()>>;
    /// The group could not even begin (e.g. the database stayed locked by another process
    /// past the busy timeout): the closure never ran.
    fn refuse(self: Box<Self>, err: Arc<rusqlite::Error>);
}

/// Where a caller waits for its answer.
pub(crate) enum Reply<R> {
    /// A thread blocked in `recv`.
    Blocking(std::sync::mpsc::SyncSender<R>),
    /// A future awaiting the receiver.
    Async(tokio::sync::oneshot::Sender<R>),
}

impl<R> Reply<R> {
    fn send(self, r: R) {
        // The caller may have gone away (a dropped future): the write stands regardless.
        match self {
            Reply::Blocking(tx) => {
                let _ = tx.send(r);
            }
            Reply::Async(tx) => {
                let _ = tx.send(r);
            }
        }
    }
}

pub(crate) struct Call<F, H, T, E> {
    pub f: F,
    pub then: H,
    pub reply: Reply<Result<T, E>>,
}

impl<F, H, T, E> Job for Call<F, H, T, E>
where
    F: FnOnce(&Transaction<'_>) -> Result<T, E>,
    H: FnOnce(&T) + 'static,
    T: 'static,
    E: From<StoreError> + 'static,
{
    fn run(self: Box<Self>, tx: &Transaction<'_>) -> Result<Settle, Box<dyn FnOnce()>> {
        let Call { f, then, reply } = *self;
        match f(tx) {
            Ok(value) => Ok(Box::new(
                move |failed: Option<&Arc<rusqlite::Error>>| match failed {
                    None => {
                        then(&value);
                        reply.send(Ok(value));
                    }
                    Some(e) => reply.send(Err(E::from(StoreError::NotCommitted(e.clone())))),
                },
            )),
            Err(e) => Err(Box::new(move || reply.send(Err(e)))),
        }
    }

    fn refuse(self: Box<Self>, err: Arc<rusqlite::Error>) {
        self.reply.send(Err(E::from(StoreError::NotCommitted(err))));
    }
}

/// Counters for benches and tests: how many groups committed, answering how many writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WriterStats {
    /// `COMMIT`s that succeeded (each one fsync).
    pub groups: u64,
    /// Writes whose closure succeeded and whose group committed.
    pub writes: u64,
    /// Writes waiting for the writer thread right now.
    pub queued: usize,
}

struct Queue {
    jobs: VecDeque<Box<dyn Job + Send + 'static>>,
    stopping: bool,
}

pub(crate) struct Shared {
    conn: Mutex<Connection>,
    queue: Mutex<Queue>,
    wake: Condvar,
    groups: AtomicU64,
    writes: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic inside a group is caught before it can unwind through these locks; a
    // poisoned lock can only come from a bug in this module, and the data it guards (a
    // connection whose transaction rolled back on drop, a queue) stays consistent.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub(crate) struct Writer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Writer {
    pub(crate) fn start(conn: Connection) -> Result<Self, StoreError> {
        let shared = Arc::new(Shared {
            conn: Mutex::new(conn),
            queue: Mutex::new(Queue {
                jobs: VecDeque::new(),
                stopping: false,
            }),
            wake: Condvar::new(),
            groups: AtomicU64::new(0),
            writes: AtomicU64::new(0),
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("pocketpilot-store-writer".into())
            .spawn(move || s.serve())
            .map_err(StoreError::WriterThread)?;
        Ok(Self {
            shared,
            thread: Some(thread),
        })
    }

    pub(crate) fn stats(&self) -> WriterStats {
        WriterStats {
            groups: self.shared.groups.load(Ordering::Relaxed),
            writes: self.shared.writes.load(Ordering::Relaxed),
            queued: lock(&self.shared.queue).jobs.len(),
        }
    }

    /// `PRAGMA data_version` of the writer connection, unless a group holds it right now.
    pub(crate) fn data_version(&self) -> Option<Result<i64, StoreError>> {
        let conn = match self.shared.conn.try_lock() {
            Ok(c) => c,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        Some(
            conn.query_row("PRAGMA data_version", [], |r| r.get(0))
                .map_err(StoreError::from),
        )
    }

    /// Queues a write for the writer thread (it joins the next group).
    pub(crate) fn submit<F, H, T, E>(&self, call: Call<F, H, T, E>)
    where
        F: FnOnce(&Transaction<'_>) -> Result<T, E> + Send + 'static,
        H: FnOnce(&T) + Send + 'static,
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
    {
        let mut q = lock(&self.shared.queue);
        q.jobs.push_back(Box::new(call));
        drop(q);
        self.shared.wake.notify_one();
    }

    /// Runs a borrowed closure on this thread, as the first write of a group that also
    /// takes whatever is queued. Returns once the group committed (or failed).
    pub(crate) fn run_here<'a, F, H, T, E>(&self, f: F, then: H) -> Result<T, E>
    where
        F: FnOnce(&Transaction<'_>) -> Result<T, E> + 'a,
        H: FnOnce(&T) + 'static,
        T: 'static,
        E: From<StoreError> + 'static,
    {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let own: Box<dyn Job + 'a> = Box::new(Call {
            f,
            then,
            reply: Reply::Blocking(tx),
        });
        let mut conn = lock(&self.shared.conn);
        let mut jobs = vec![own];
        for job in self.shared.take(MAX_GROUP - 1) {
            jobs.push(job);
        }
        let panicked = self.shared.run_group(&mut conn, jobs);
        drop(conn);
        if let Some(payload) = panicked.into_iter().next() {
            // Our own closure's panic (or a queued one's) surfaces here as it did before
            // groups existed; the other writes of the group were answered already.
            resume_unwind(payload);
        }
        rx.try_recv().unwrap_or(Err(E::from(StoreError::Abandoned)))
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        lock(&self.shared.queue).stopping = true;
        self.shared.wake.notify_all();
        if let Some(t) = self.thread.take() {
            // The thread commits what is queued before it stops. A hook or closure that
            // held the last handle to the store drops it on the writer thread itself, which
            // cannot wait for itself: it stops once its loop sees `stopping`.
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

type Panic = Box<dyn std::any::Any + Send>;

impl Shared {
    fn take(&self, n: usize) -> Vec<Box<dyn Job + Send + 'static>> {
        let mut q = lock(&self.queue);
        let n = n.min(q.jobs.len());
        q.jobs.drain(..n).collect()
    }

    /// The writer thread: sleeps until writes are queued, commits them as groups, and
    /// stops once the store is dropped and the queue is empty.
    fn serve(&self) {
        loop {
            let mut q = lock(&self.queue);
            while q.jobs.is_empty() && !q.stopping {
                q = self.wake.wait(q).unwrap_or_else(|p| p.into_inner());
            }
            if q.jobs.is_empty() {
                return;
            }
            drop(q);
            // Take the connection first, then the queue: writes that arrive while a
            // synchronous caller holds the connection join whichever group runs next.
            let mut conn = lock(&self.conn);
            let jobs = self.take(MAX_GROUP);
            if jobs.is_empty() {
                continue;
            }
            let jobs: Vec<Box<dyn Job>> = jobs.into_iter().map(|j| j as Box<dyn Job>).collect();
            for payload in self.run_group(&mut conn, jobs) {
                // Nobody to hand it to: the caller was answered `Abandoned` when its
                // reply was dropped.
                tracing::error!(panic = ?panic_text(&payload), "a store write panicked");
            }
        }
    }

    /// Commits `jobs` as one group (or as several if SQLite rolled the transaction back
    /// under us, e.g. on a full disk). Returns the panics caught in closures.
    fn run_group<'a>(&self, conn: &mut Connection, jobs: Vec<Box<dyn Job + 'a>>) -> Vec<Panic> {
        let mut panics = Vec::new();
        let mut jobs = jobs.into_iter().peekable();
        while jobs.peek().is_some() {
            let tx = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
                Ok(tx) => tx,
                Err(e) => {
                    let e = Arc::new(e);
                    for job in jobs {
                        job.refuse(e.clone());
                    }
                    return panics;
                }
            };
            let mut done: Vec<Settle> = Vec::new();
            let mut lost = None;
            for job in jobs.by_ref() {
                match run_one(&tx, job) {
                    Ran::Ok(settle) => done.push(settle),
                    Ran::Failed(tell) => tell(),
                    Ran::Panicked(p) => panics.push(p),
                }
                if tx.is_autocommit() {
                    // SQLite ended the whole transaction itself (SQLITE_FULL, an I/O error):
                    // what ran before is gone. Tell those callers, and carry on with the
                    // rest of the queue in a fresh transaction.
                    lost = Some(Arc::new(rusqlite::Error::SqliteFailure(
                        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ABORT),
                        Some("the group's transaction was rolled back by SQLite".into()),
                    )));
                    break;
                }
            }
            let failed = match lost {
                Some(e) => {
                    drop(tx);
                    Some(e)
                }
                None => tx.commit().err().map(Arc::new),
            };
            if failed.is_none() {
                self.groups.fetch_add(1, Ordering::Relaxed);
                self.writes.fetch_add(done.len() as u64, Ordering::Relaxed);
            } else if let Some(e) = &failed {
                tracing::warn!(error = %e, writes = done.len(), "a group of writes did not commit");
            }
            for settle in done {
                if let Err(p) = catch_unwind(AssertUnwindSafe(|| settle(failed.as_ref()))) {
                    panics.push(p);
                }
            }
        }
        panics
    }
}

enum Ran {
    Ok(Settle),
    Failed(Box<dyn FnOnce()>),
    Panicked(Panic),
}

/// One closure in its SAVEPOINT: released when it succeeded, rolled back when it failed
/// or panicked (and the panic caught, so the group's other writes still commit).
fn run_one(tx: &Transaction<'_>, job: Box<dyn Job + '_>) -> Ran {
    if let Err(e) = exec(tx, "SAVEPOINT write") {
        job.refuse(Arc::new(e));
        return Ran::Failed(Box::new(|| {}));
    }
    let outcome = catch_unwind(AssertUnwindSafe(|| job.run(tx)));
    let ok = matches!(outcome, Ok(Ok(_)));
    if tx.is_autocommit() {
        // Nothing left to release or roll back to.
    } else if ok {
        if let Err(e) = exec(tx, "RELEASE write") {
            tracing::warn!(error = %e, "could not release a write's savepoint");
            let _ = rollback_to(tx);
            return match outcome {
                Ok(Ok(settle)) => {
                    let e = Arc::new(e);
                    Ran::Failed(Box::new(move || settle(Some(&e))))
                }
                _ => Ran::Failed(Box::new(|| {})),
            };
        }
    } else if let Err(e) = rollback_to(tx) {
        tracing::warn!(error = %e, "could not roll back a write's savepoint");
    }
    match outcome {
        Ok(Ok(settle)) => Ran::Ok(settle),
        Ok(Err(tell)) => Ran::Failed(tell),
        Err(p) => Ran::Panicked(p),
    }
}

/// A statement prepared once per connection: savepoints are taken for every write.
fn exec(tx: &Transaction<'_>, sql: &str) -> rusqlite::Result<()> {
    tx.prepare_cached(sql)?.execute([])?;
    Ok(())
}

fn rollback_to(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    exec(tx, "ROLLBACK TO write")?;
    exec(tx, "RELEASE write")
}

fn panic_text(p: &Panic) -> &str {
    p.downcast_ref::<&str>()
        .copied()
        .or_else(|| p.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(not text)")
}
