use super::*;
use crate::{sessions, tasks, Store};
use pocketpilot_protocol::RunSource;

fn with_task() -> (tempfile::TempDir, Store, i64, i64) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_dir(dir.path()).unwrap();
    let (s, t, u) = store
        .write(|tx| {
            let s = sessions::insert(tx, "t", "/w")?;
            let new = |goal| tasks::NewTask {
                session_id: s,
                goal,
                trigger: RunSource::Cli,
                provider: None,
                follow_up_of: None,
                grants: &[],
                mcp: &[],
            };
            Ok((
                s,
                tasks::insert(tx, &new("plan"))?,
                tasks::insert(tx, &new("do"))?,
            ))
        })
        .unwrap();
    let _ = u;
    (dir, store, s, t)
}

fn content() -> PlanContent {
    PlanContent {
        steps: vec!["read a".into(), "write b".into()],
        files: vec!["b.txt".into()],
        commands: vec!["cargo test".into()],
    }
}

#[test]
fn a_plan_is_proposed_decided_once_and_ticked_within_its_steps() {
    let (_dir, store, s, t) = with_task();
    let id = store
        .write(|tx| propose(tx, s, t, &content(), PlanSource::Tool))
        .unwrap();
    let plan = store.read(|c| get(c, id)).unwrap();
    assert_eq!(plan.status, PlanStatus::Proposed);
    assert_eq!(plan.content, content());
    assert_eq!(store.read(|c| for_task(c, t)).unwrap().unwrap().id, id);

    let mut edited = content();
    edited.commands.clear();
    store.write(|tx| edit(tx, id, &edited)).unwrap();
    store
        .write(|tx| decide(tx, id, PlanStatus::Approved, Some(t + 1)))
        .unwrap();
    let plan = store.read(|c| carried_by(c, t + 1)).unwrap().unwrap();
    assert!(plan.edited);
    assert!(plan.content.commands.is_empty());
    assert!(plan.decided_at.is_some());
    // Decided once: a second decision and an edit after it are refused.
    assert!(store
        .write(|tx| decide(tx, id, PlanStatus::Rejected, None))
        .is_err());
    assert!(store.write(|tx| edit(tx, id, &content())).is_err());

    store.write(|tx| step_done(tx, id, 2)).unwrap();
    store.write(|tx| step_done(tx, id, 2)).unwrap();
    assert!(store.write(|tx| step_done(tx, id, 3)).is_err());
    assert!(store.write(|tx| step_done(tx, id, 0)).is_err());
    assert_eq!(store.read(|c| get(c, id)).unwrap().done, vec![2]);
}

#[test]
fn plan_mode_is_the_task_s_or_its_session_s() {
    let (_dir, store, s, t) = with_task();
    assert!(!store.read(|c| task_plans(c, t)).unwrap());
    store.write(|tx| set_task_plan_mode(tx, t, true)).unwrap();
    assert!(store.read(|c| task_plans(c, t)).unwrap());
    assert!(!store.read(|c| task_plans(c, t + 1)).unwrap());
    store
        .write(|tx| set_session_plan_mode(tx, s, true))
        .unwrap();
    assert!(store.read(|c| task_plans(c, t + 1)).unwrap());
    assert!(store.read(|c| session_plan_mode(c, s)).unwrap());
    assert!(store
        .write(|tx| set_session_plan_mode(tx, 99, true))
        .is_err());
}
