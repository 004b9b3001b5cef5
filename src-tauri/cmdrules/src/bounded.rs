//! Reading with a time limit. brush-parser backtracks, and fuzzing keeps finding text it
//! takes seconds, hours or forever to read (each shape found is refused before parsing:
//! see `shell::parse`); a command an agent sent must never hang the run that checks it.
//!
//! - Text that is plain words and operators ([`reads_plainly`]) cannot make the parser
//!   backtrack, and is read in place.
//! - Anything else is read on a reader thread, waited for up to [`BUDGET`]. A read that
//!   overruns is answered "ask" and its thread is left to finish: a thread cannot be
//!   stopped from outside.
//! - At most [`MAX_OVERRUNNING`] reads may be left running; past that nothing new is
//!   handed to a reader (it asks) until one ends, so what they cost stays bounded.
//! - Readers that answered in time wait, blocked, for the next read: starting a thread
//!   with its stack costs more than a short command's read.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Duration;

/// How long one read may take. A 4 KB command reads in about a millisecond; this leaves
/// room for a busy machine that does not run the thread for a while.
pub const BUDGET: Duration = Duration::from_secs(1);

/// How many reads that overran may still be running before new ones are refused.
pub const MAX_OVERRUNNING: usize = 2;

/// The parser descends one call per nesting level; the limits in `shell` keep that far
/// below this, which is the main thread's usual stack rather than a spawned thread's 2 MiB.
const STACK: usize = 8 << 20;

/// The readers of this process: [`BUDGET`] each, at most [`MAX_OVERRUNNING`] left running.
static READERS: Readers = Readers {
    budget: BUDGET,
    max_overrunning: MAX_OVERRUNNING,
    overrunning: &OVERRUNNING,
    idle: &IDLE,
};
static OVERRUNNING: AtomicUsize = AtomicUsize::new(0);
static IDLE: Mutex<Vec<Reader>> = Mutex::new(Vec::new());

/// How many readers wait for work: one per run checking a command at the same moment.
const MAX_IDLE: usize = 4;

/// A read, with its answer's way back inside.
type Job = Box<dyn FnOnce() + Send>;

/// A reader thread waiting for jobs; it ends when this is dropped and its job is done.
struct Reader {
    jobs: mpsc::Sender<Job>,
    placement: Placement,
}

impl Reader {
    fn start() -> Option<Reader> {
        let (jobs, incoming) = mpsc::channel::<Job>();
        let (placed, placement) = mpsc::sync_channel(1);
        thread::Builder::new()
            .name("command-reader".into())
            .stack_size(STACK)
            .spawn(move || {
                let _ = placed.send(Placement::of_this_thread());
                while let Ok(job) = incoming.recv() {
                    job();
                }
            })
            .ok()?;
        let placement = placement.recv().ok()?;
        Some(Reader { jobs, placement })
    }
}

/// Where a reader runs. On Linux it is moved to the CPU of the thread handing it a read:
/// that thread blocks until the answer, so its CPU is free, and the hand-over and the
/// answer then wake threads on one CPU, without an interrupt to another, and the read
/// finds that CPU's caches warm. On a two-core virtual machine that took 150-200 µs off
/// a 4 KB read's p50 (`bench-results/command-rules.txt`). A read left running gets its
/// own affinity back, so it does not crowd the caller's CPU. Elsewhere the scheduler
/// places readers.
#[cfg(target_os = "linux")]
mod placement {
    use rustix::thread::{gettid, sched_getaffinity, sched_getcpu, sched_setaffinity};
    use rustix::thread::{CpuSet, Pid};

    pub(super) struct Placement {
        tid: Pid,
        /// The reader's affinity as it started (the process's).
        own: Option<CpuSet>,
        /// The CPU it is held to, if any.
        on: Option<usize>,
    }

    impl Placement {
        /// Called on the reader thread itself.
        pub(super) fn of_this_thread() -> Self {
            Placement {
                tid: gettid(),
                own: sched_getaffinity(None).ok(),
                on: None,
            }
        }

        /// Holds the reader to the calling thread's CPU (a failure leaves it where it is).
        pub(super) fn follow_caller(&mut self) {
            let cpu = sched_getcpu();
            if self.on == Some(cpu) || cpu >= CpuSet::MAX_CPU {
                return;
            }
            let mut set = CpuSet::new();
            set.set(cpu);
            self.on = sched_setaffinity(Some(self.tid), &set).ok().map(|()| cpu);
        }

        /// Gives the reader its own affinity back.
        pub(super) fn release(&mut self) {
            if let Some(own) = &self.own {
                // If this fails the read still ends; it only shares the caller's CPU.
                let _ = sched_setaffinity(Some(self.tid), own);
            }
            self.on = None;
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod placement {
    pub(super) struct Placement;

    impl Placement {
        pub(super) fn of_this_thread() -> Self {
            Placement
        }
        pub(super) fn follow_caller(&mut self) {}
        pub(super) fn release(&mut self) {}
    }
}

use placement::Placement;

const RUNNING: u8 = 0;
const DONE: u8 = 1;
const LEFT: u8 = 2;

/// Why a read gave no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unread {
    /// It took longer than the budget.
    TooSlow,
    /// It was not started: earlier reads that overran are still running (or no thread
    /// could be started).
    Busy,
}

/// Reads `text` with `read`: here, at once, when the text is plain (see
/// [`reads_plainly`]); otherwise on a reader thread of this process's readers, waiting
/// for it up to [`BUDGET`]. A panic in `read` is passed on to the caller, as if it had
/// run here.
pub(crate) fn read_within_budget<T: Send + 'static>(
    text: &str,
    read: impl FnOnce(&str) -> T + Send + 'static,
) -> Result<T, Unread> {
    if reads_plainly(text) {
        return Ok(read(text));
    }
    on_reader(text, read)
}

/// Reads `text` with `read` on a reader thread, waiting for it up to [`BUDGET`], whatever
/// the text; for callers that have looked at [`reads_plainly`] themselves.
pub(crate) fn on_reader<T: Send + 'static>(
    text: &str,
    read: impl FnOnce(&str) -> T + Send + 'static,
) -> Result<T, Unread> {
    let text = text.to_string();
    READERS.run(move || read(&text))
}

/// Words that are shell grammar where a command starts.
const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for",
    "in", "select", "function", "time", "coproc",
];

/// Whether `text` is nothing but words of plain characters joined by blanks and the
/// operators `;`, `&`, `|`, `>` (so `&&`, `||`, `2>&1`, `>/dev/null`), with no reserved
/// word. In such text the parser has no alternative to backtrack into: no quote,
/// expansion, bracket, parenthesis, brace or here-document, no compound command. It is
/// read where it is asked for, sparing the hand-over to a reader thread and back (about
/// 70 µs on a two-core virtual machine, more than a typical command's whole read). The
/// fuzz target holds the inline reads to libFuzzer's timeout.
pub(crate) fn reads_plainly(text: &str) -> bool {
    let separator = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'>');
    let plain = |b: u8| {
        b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'_'
                    | b'.'
                    | b'/'
                    | b'='
                    | b':'
                    | b','
                    | b'+'
                    | b'@'
                    | b'%'
                    | b'^'
                    | b'~'
                    | b'*'
                    | b'?'
                    | b'#'
            )
    };
    // All ASCII when this holds, so splitting bytes splits characters.
    text.bytes().all(|b| plain(b) || separator(b))
        && text
            .as_bytes()
            .split(|b| separator(*b))
            .all(|word| !RESERVED.iter().any(|r| r.as_bytes() == word))
}

pub(crate) struct Readers {
    budget: Duration,
    max_overrunning: usize,
    /// Reads left running; `'static` because they decrement it when they end.
    overrunning: &'static AtomicUsize,
    idle: &'static Mutex<Vec<Reader>>,
}

impl Readers {
    pub(crate) fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, Unread> {
        if self.overrunning.load(Ordering::Acquire) >= self.max_overrunning {
            return Err(Unread::Busy);
        }
        let (tx, rx) = mpsc::sync_channel(1);
        let state = Arc::new(AtomicU8::new(RUNNING));
        let reader_state = Arc::clone(&state);
        let overrunning = self.overrunning;
        let job: Job = Box::new(move || {
            let out = panic::catch_unwind(AssertUnwindSafe(work));
            // A read the caller stopped waiting for frees its place when it ends.
            if reader_state.swap(DONE, Ordering::AcqRel) == LEFT {
                overrunning.fetch_sub(1, Ordering::AcqRel);
            }
            // The caller may be gone; then nobody wants the answer.
            let _ = tx.send(out);
        });
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let Some(mut reader) = idle.or_else(Reader::start) else {
            return Err(Unread::Busy);
        };
        reader.placement.follow_caller();
        // A reader's thread ends only when its sender is dropped: this send succeeds.
        if reader.jobs.send(job).is_err() {
            return Err(Unread::Busy);
        }
        let out = match rx.recv_timeout(self.budget) {
            Ok(out) => {
                let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
                if idle.len() < MAX_IDLE {
                    idle.push(reader);
                }
                out
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // Counted before it is marked left, so the reader's decrement (which only
                // a left reader does) always follows this increment.
                reader.placement.release();
                self.overrunning.fetch_add(1, Ordering::AcqRel);
                if state.swap(LEFT, Ordering::AcqRel) != DONE {
                    return Err(Unread::TooSlow);
                }
                // It finished between the timeout and now, and did not decrement.
                self.overrunning.fetch_sub(1, Ordering::AcqRel);
                rx.recv().map_err(|_| Unread::TooSlow)?
            }
            // The reader ends only after sending.
            Err(mpsc::RecvTimeoutError::Disconnected) => return Err(Unread::TooSlow),
        };
        match out {
            Ok(value) => Ok(value),
            Err(payload) => panic::resume_unwind(payload),
        }
    }
}

#[cfg(test)]
mod tests {
    //! With readers of their own (a short budget, a counter no other test shares) and
    //! work that waits for the test to let it go, so what overruns is decided here, not
    //! by the parser's speed.
    use super::*;

    fn readers(budget_ms: u64, max_overrunning: usize) -> Readers {
        Readers {
            budget: Duration::from_millis(budget_ms),
            max_overrunning,
            overrunning: Box::leak(Box::new(AtomicUsize::new(0))),
            idle: Box::leak(Box::new(Mutex::new(Vec::new()))),
        }
    }

    /// Work that ends when the returned sender sends (or is dropped).
    fn held() -> (mpsc::Sender<()>, impl FnOnce() -> u32 + Send + 'static) {
        let (go, wait) = mpsc::channel::<()>();
        (go, move || {
            let _ = wait.recv();
            7
        })
    }

    /// Hands `readers` work that overruns their budget, and the sender that lets it end.
    fn overrun(readers: &Readers) -> mpsc::Sender<()> {
        let (go, work) = held();
        assert_eq!(readers.run(work), Err(Unread::TooSlow));
        go
    }

    /// Waits (for an event, not a set time) until `readers` counts `n` left running.
    fn until_overrunning(readers: &Readers, n: usize) {
        while readers.overrunning.load(Ordering::Acquire) != n {
            thread::yield_now();
        }
    }

    #[test]
    fn a_read_within_budget_answers() {
        let readers = readers(10_000, 2);
        assert_eq!(readers.run(|| 7), Ok(7));
        assert_eq!(readers.overrunning.load(Ordering::Acquire), 0);
    }

    #[test]
    fn a_read_over_budget_asks_and_is_counted_until_it_ends() {
        // A real timeout is under test: the budget is 20 ms.
        let readers = readers(20, 2);
        let go = overrun(&readers);
        assert_eq!(readers.overrunning.load(Ordering::Acquire), 1);
        go.send(()).expect("the reader waits");
        until_overrunning(&readers, 0);
        assert_eq!(readers.run(|| 8), Ok(8));
    }

    #[test]
    fn past_the_reads_left_running_nothing_new_is_read_until_one_ends() {
        let readers = readers(20, 2);
        let first = overrun(&readers);
        let _second = overrun(&readers);
        // Even work that would answer at once is not started.
        assert_eq!(readers.run(|| 9), Err(Unread::Busy));
        first.send(()).expect("the reader waits");
        until_overrunning(&readers, 1);
        assert_eq!(readers.run(|| 9), Ok(9));
    }

    #[test]
    fn a_reader_that_answered_in_time_takes_the_next_read_and_one_left_running_does_not() {
        let readers = readers(20, 2);
        let here = thread::current().id();
        let first = readers.run(|| thread::current().id()).expect("read");
        assert_ne!(first, here);
        assert_eq!(readers.run(|| thread::current().id()), Ok(first));

        let (ids, seen) = mpsc::channel();
        let (go, wait) = mpsc::channel::<()>();
        let slow = move || {
            let _ = ids.send(thread::current().id());
            let _ = wait.recv();
        };
        assert_eq!(readers.run(slow), Err(Unread::TooSlow));
        let left = seen.recv().expect("the slow read started");
        assert_eq!(left, first, "the idle reader took it");
        let next = readers.run(|| thread::current().id()).expect("read");
        assert_ne!(next, left, "a reader left running is not handed more work");
        go.send(()).expect("the reader waits");
    }

    #[test]
    fn only_plain_words_and_operators_are_read_in_place() {
        for plain in [
            "cargo test -p core",
            "cargo test -p core 2>&1 | tee log && git diff --stat; ls *.rs >/dev/null",
            "make -j4 CFLAGS=-O2 # build",
            "ls ~/src",
        ] {
            assert!(reads_plainly(plain), "{plain}");
        }
        for not_plain in [
            "echo $HOME",
            "echo 'a'",
            "echo \"a\"",
            "echo a\\ b",
            "a $(b)",
            "a `b`",
            "(a)",
            "{ a; }",
            "a [x]",
            "a <<EOF",
            "a < in",
            "if a; then b; fi",
            "for x",
            "a; do",
            "! a",
            "a\rb",
        ] {
            assert!(!reads_plainly(not_plain), "{not_plain}");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_reader_runs_on_the_callers_cpu_and_one_left_running_gets_its_affinity_back() {
        use rustix::thread::sched_getaffinity;
        let cpus = || sched_getaffinity(None).map(|set| set.count()).ok();
        let own = cpus();
        assert!(own.is_some());
        let readers = readers(20, 2);
        assert_eq!(readers.run(cpus), Ok(Some(1)));

        let (go, wait) = mpsc::channel::<()>();
        let (counts, seen) = mpsc::channel();
        let slow = move || {
            let _ = wait.recv();
            let _ = counts.send(cpus());
        };
        assert_eq!(readers.run(slow), Err(Unread::TooSlow));
        go.send(()).expect("the reader waits");
        assert_eq!(seen.recv().expect("the read ends"), own);
    }

    #[test]
    fn a_panic_in_the_read_reaches_the_caller() {
        let readers = readers(10_000, 2);
        let caught = panic::catch_unwind(AssertUnwindSafe(|| {
            readers.run(|| -> u32 { panic!("inside the reader") })
        }));
        assert!(caught.is_err());
        assert_eq!(readers.overrunning.load(Ordering::Acquire), 0);
    }
}
