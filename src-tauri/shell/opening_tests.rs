//! The app's state before, during and after the store's open: a call waits while the store
//! opens and then gets the runtime; a store that cannot be opened answers every waiting
//! and later call with the store's error, never a hang. Real stores in temp dirs.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::path::Path;
use std::sync::Arc;

use pocketpilot_core::api::data;
use pocketpilot_core::Runtime;
use pocketpilot_protocol::ErrorKind;

use super::super::recovery::{problem_of, StoreProblem, StoreProblemKind};
use super::{AppState, Opening};

/// A call asked now; `None` while it still waits after the scheduler had every chance
/// to run it (nothing can wake it but the open ending).
async fn still_waiting(call: &tokio::task::JoinHandle<impl Send + 'static>) -> bool {
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    !call.is_finished()
}

/// The problem the recovery screen shows for the store in `dir`, which must not open.
fn problem(dir: &Path) -> StoreProblem {
    let err = match Runtime::open(dir) {
        Ok(_) => panic!("the store must not open"),
        Err(e) => e,
    };
    problem_of(&err, dir).expect("a problem the recovery screen answers")
}

fn ask(state: &Arc<AppState>) -> tokio::task::JoinHandle<Result<Arc<Runtime>, ErrorKind>> {
    let state = state.clone();
    tokio::spawn(async move { state.runtime().await.map_err(|e| e.kind) })
}

#[tokio::test]
async fn a_call_while_the_store_opens_waits_and_then_gets_the_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let state = Arc::new(AppState::new(dir.path()));
    assert!(state.opened().is_none());
    let call = ask(&state);
    assert!(
        still_waiting(&call).await,
        "a call before the open must wait for it"
    );

    let rt = tokio::task::spawn_blocking({
        let dir = dir.path().to_owned();
        move || Runtime::open(&dir)
    })
    .await
    .unwrap()
    .unwrap();
    state.open(rt.clone());

    let got = call.await.unwrap().expect("the runtime once open");
    assert!(Arc::ptr_eq(&got, &rt));
    assert!(state.opened().is_some_and(|r| Arc::ptr_eq(r, &rt)));
    assert!(state.problem().is_none());
    // Later calls do not wait.
    assert!(Arc::ptr_eq(&state.runtime().await.unwrap(), &rt));
}

fn damage(store: &Path) {
    // Not a database at all: the header and the first pages overwritten.
    std::fs::write(store, vec![0x55_u8; 16 * 1024]).unwrap();
}

#[tokio::test]
async fn a_damaged_store_answers_waiting_and_later_calls_with_the_store_error() {
    let dir = tempfile::tempdir().unwrap();
    // A real store, closed, then damaged.
    drop(Runtime::open(dir.path()).unwrap());
    let store = data::store_path(dir.path());
    damage(&store);
    let before = std::fs::read(&store).unwrap();

    let state = Arc::new(AppState::new(dir.path()));
    let call = ask(&state);
    assert!(still_waiting(&call).await);

    let problem = problem(dir.path());
    assert_eq!(problem.kind, StoreProblemKind::Damaged);
    state.fail_with_problem(problem);

    assert_eq!(call.await.unwrap().err(), Some(ErrorKind::Store));
    assert_eq!(
        state.runtime().await.err().map(|e| e.kind),
        Some(ErrorKind::Store)
    );
    assert!(state.opened().is_none());
    assert!(matches!(state.settled().await, Some(Opening::Problem(_))));
    assert_eq!(
        state.problem().map(|p| p.kind),
        Some(StoreProblemKind::Damaged)
    );
    // Nothing wrote to the damaged file.
    assert_eq!(std::fs::read(&store).unwrap(), before);
}

#[tokio::test]
async fn a_store_from_a_newer_build_is_a_problem_too() {
    let dir = tempfile::tempdir().unwrap();
    drop(Runtime::open(dir.path()).unwrap());
    let store = data::store_path(dir.path());
    rusqlite::Connection::open(&store)
        .unwrap()
        .pragma_update(None, "user_version", 9999)
        .unwrap();

    let state = Arc::new(AppState::new(dir.path()));
    let call = ask(&state);
    let problem = problem(dir.path());
    assert_eq!(problem.kind, StoreProblemKind::Newer);
    state.fail_with_problem(problem);
    assert_eq!(call.await.unwrap().err(), Some(ErrorKind::Store));
}

#[tokio::test]
async fn an_open_that_failed_otherwise_answers_with_its_message() {
    let dir = tempfile::tempdir().unwrap();
    let state = Arc::new(AppState::new(dir.path()));
    let call = ask(&state);
    assert!(still_waiting(&call).await);
    state.fail("opening the store did not finish".into());
    assert_eq!(call.await.unwrap().err(), Some(ErrorKind::Store));
    assert!(state.problem().is_none());
}
