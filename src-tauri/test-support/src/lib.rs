//! Shared fixtures: a real data directory and workspace in a temp dir, a real runtime on
//! them, and scripted model turns written to a file (the only fake: the model).
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(dead_code, clippy::new_without_default)]

pub mod http;
pub mod llama;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use pocketpilot_core::config::Limits;
use pocketpilot_core::engine::recorder::TaskEvent;
use pocketpilot_core::ops;
use pocketpilot_core::{NewTask, Runtime, RuntimeEvent, TaskStatus};

pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub data_dir: PathBuf,
    pub workspace: PathBuf,
    pub rt: Arc<Runtime>,
}

impl Fixture {
    pub fn new() -> Self {
        Self::with_limits(Limits::default())
    }

    pub fn with_limits(limits: Limits) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().join("data");
        let workspace = dir.path().join("workspace");
        std::fs::create_dir_all(&workspace).unwrap();
        {
            let rt = Runtime::open(&data_dir).unwrap();
            rt.call(ops::SetLimits {
                limits: limits.clone(),
            })
            .unwrap();
        }
        let rt = Runtime::open(&data_dir).unwrap();
        Self {
            dir,
            data_dir,
            workspace,
            rt,
        }
    }

    pub fn script(&self, name: &str, json: serde_json::Value) -> String {
        let path = self.dir.path().join(name);
        std::fs::write(&path, json.to_string()).unwrap();
        format!("scripted:{}", path.display())
    }

    pub fn task(&self, goal: &str, provider: &str) -> NewTask {
        NewTask {
            goal: goal.into(),
            workspace: Some(self.workspace.clone()),
            trigger: pocketpilot_protocol::RunSource::Cli,
            provider: Some(provider.into()),
            ..Default::default()
        }
    }

    pub async fn settle(&self, id: i64) -> TaskStatus {
        tokio::time::timeout(
            Duration::from_secs(30),
            self.rt.call(ops::WaitSettled { task_id: id }),
        )
        .await
        .expect("the task did not settle in 30 s")
        .unwrap()
    }

    /// Creates and starts a task with `goal` on `provider` in a new session.
    pub fn submit(&self, goal: &str, provider: &str) -> i64 {
        self.rt
            .call(ops::SubmitTask {
                new: self.task(goal, provider),
            })
            .unwrap()
    }

    /// Answers an approval; gives the task it belongs to.
    pub fn answer(&self, approval_id: i64, answer: pocketpilot_core::ApprovalAnswer) -> i64 {
        self.rt
            .call(ops::ResolveApproval {
                approval_id,
                answer,
            })
            .unwrap()
    }

    /// Says something to a session (a follow-up, a steer, a note).
    pub fn say(
        &self,
        submit: pocketpilot_core::engine::inbox::Submit,
    ) -> Result<pocketpilot_core::engine::inbox::Admitted, pocketpilot_core::RuntimeError> {
        self.rt.call(ops::Say { submit })
    }

    pub fn kinds(&self, id: i64) -> Vec<String> {
        self.rt
            .call(ops::TaskEvents { task_id: id })
            .unwrap()
            .into_iter()
            .map(|e| e.kind().as_str().to_owned())
            .collect()
    }

    /// The first persisted event of `kind` in task `id` (the test fails without one).
    pub fn event(&self, id: i64, kind: &str) -> TaskEvent {
        self.rt
            .call(ops::TaskEvents { task_id: id })
            .unwrap()
            .into_iter()
            .find(|e| e.kind().as_str() == kind)
            .unwrap_or_else(|| panic!("task {id} has no {kind} event: {:?}", self.kinds(id)))
    }

    pub fn ws(&self, rel: &str) -> PathBuf {
        self.workspace.join(rel)
    }
}

/// Every event of a subscription until it closes.
pub async fn drain(mut sub: pocketpilot_core::engine::recorder::Subscription) -> Vec<TaskEvent> {
    let mut out = Vec::new();
    while let Some(ev) = tokio::time::timeout(Duration::from_secs(30), sub.next())
        .await
        .expect("subscription stalled")
    {
        out.push(ev.unwrap());
    }
    out
}

pub fn deltas(events: &[TaskEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match &e.event {
            RuntimeEvent::AssistantDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

pub fn sequences(events: &[TaskEvent]) -> Vec<i64> {
    events
        .iter()
        .filter(|e| e.sequence > 0)
        .map(|e| e.sequence)
        .collect()
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}
