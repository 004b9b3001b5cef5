//! The eval suite as a test: every case in `evals/cases` must pass. And a recorded task,
//! replayed as a case, passes — while the same case with a wrong expectation fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use pocketpilot_core::ops;
use pocketpilot_core::{ApprovalAnswer, NewTask, Runtime, TaskStatus};
use pocketpilot_evals::{self as eval, RunOptions};
use serde_json::json;

/// The canary key goes into the environment once, before any runtime thread exists.
fn canary() -> String {
    static CANARY: OnceLock<String> = OnceLock::new();
    CANARY.get_or_init(eval::install_canary).clone()
}

fn tokio() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The `pocketpilot` program for `start.child` cases: `POCKETPILOT_BIN`, else the one
/// `cargo test --workspace` builds beside this test.
fn program() -> Option<std::path::PathBuf> {
    if let Some(bin) = std::env::var_os("POCKETPILOT_BIN") {
        return Some(bin.into());
    }
    let exe = std::env::current_exe().ok()?;
    let bin = exe.parent()?.parent()?.join("pocketpilot");
    bin.is_file().then_some(bin)
}

fn options(secret: String) -> RunOptions {
    RunOptions {
        real: false,
        jobs: 8,
        secret: Some(secret),
        provider: None,
        program: program(),
    }
}

#[test]
fn every_eval_case_passes() {
    let secret = canary();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../evals/cases");
    let mut cases = eval::load_cases(&dir).unwrap();
    assert!(cases.len() >= 60, "only {} cases", cases.len());
    let opts = options(secret);
    if opts.program.is_none() {
        // Without the binary (`-p pocketpilot-evals` alone) the child cases cannot run;
        // `pocketpilot eval` in the test command runs them.
        cases.retain(|c| !matches!(c.start, Some(eval::Start::Child(_))));
        println!("no pocketpilot binary: the start.child cases are left to `pocketpilot eval`");
    }
    let started = Instant::now();
    let results = tokio().block_on(eval::run_suite(&cases, &opts));
    let summary = eval::Summary::new(results, started.elapsed().as_secs_f64(), false);
    let table = eval::table(&summary);
    println!("{table}");
    assert!(
        table.ends_with(&format!("\n{} passed, 0 failed\n", cases.len())),
        "{table}"
    );
    assert_eq!(summary.failed, 0, "{table}");
}

#[test]
fn a_recorded_task_replayed_as_a_case_passes() {
    let secret = canary();
    tokio().block_on(async move {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().join("ws");
        std::fs::create_dir_all(&workspace).unwrap();
        std::fs::write(workspace.join("todo.txt"), "buy milk\n").unwrap();
        let script = dir.path().join("script.json");
        std::fs::write(
            &script,
            json!([
                { "text": "Reading.", "tool_calls": [{ "name": "read_file", "arguments": { "path": "todo.txt" } }] },
                { "text": "Writing.", "tool_calls": [
                    { "name": "write_file", "arguments": "{\"path\": \"done.txt\", \"content\": \"milk bought\\n\"}" },
                    { "name": "read_file", "arguments": { "path": "missing.txt" } }
                ] },
                { "text": "All done: milk bought." }
            ])
            .to_string(),
        )
        .unwrap();
        let rt = Runtime::open(&dir.path().join("data")).unwrap();
        let id = rt
            .call(ops::SubmitTask { new: NewTask {
                goal: "Do the todo list".into(),
                workspace: Some(workspace.clone()),
                trigger: pocketpilot_protocol::RunSource::Cli,
                provider: Some(format!("scripted:{}", script.display())),
                ..Default::default()
            } })
            .unwrap();
        let settle = |id| {
            let rt = rt.clone();
            async move { tokio::time::timeout(Duration::from_secs(30), rt.call(ops::WaitSettled { task_id: id })).await.unwrap().unwrap() }
        };
        assert_eq!(settle(id).await, TaskStatus::WaitingApproval);
        let approval = rt.call(ops::PendingApprovals {}).unwrap().remove(0);
        rt.call(ops::ResolveApproval { approval_id: approval.id, answer: ApprovalAnswer { approve: true, by: "test".into(), ..Default::default() } })
            .unwrap();
        assert_eq!(settle(id).await, TaskStatus::Completed);

        // Through the file, as `pocketpilot replay TASK --as-eval FILE` writes it.
        let case = eval::case_from_task(&rt, id).unwrap();
        let file = dir.path().join("case.json");
        std::fs::write(&file, serde_json::to_string_pretty(&case).unwrap()).unwrap();
        let mut cases = eval::parse_cases(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let case = cases.remove(0);
        assert_eq!(case.script["turns"].as_array().unwrap().len(), 3);
        assert_eq!(case.setup.files.get("todo.txt").map(String::as_str), Some("buy milk\n"));
        assert_eq!(case.expect.files.get("done.txt").map(String::as_str), Some("milk bought\n"));
        assert_eq!(case.expect.approvals.as_ref().unwrap().len(), 1);
        assert_eq!(case.expect.events.len(), 1, "the failed read is expected again");

        let result = eval::run_case(&case, &options(secret.clone())).await;
        assert!(result.passed, "{:?}", result.failures);
        assert_eq!(result.status.as_deref(), Some("completed"));

        // Scoring is not vacuous: a wrong expectation fails with its reason.
        let mut wrong = case.clone();
        wrong.expect.files.insert("done.txt".into(), "something else".into());
        wrong.expect.status = Some(TaskStatus::Failed);
        let result = eval::run_case(&wrong, &options(secret)).await;
        assert!(!result.passed);
        let reasons = result.failures.join("; ");
        assert!(reasons.contains("done.txt holds") && reasons.contains("expected failed"), "{reasons}");
    });
}
