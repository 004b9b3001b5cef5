//! Shared fixtures for the tool tests: a real workspace in a temporary directory.
use std::path::{Path, PathBuf};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::tool::{Effect, Tool, ToolContext, ToolError, ToolOutput};

pub struct Fixture {
    /// Kept so the directory lives as long as the fixture.
    pub _dir: tempfile::TempDir,
    pub ctx: ToolContext,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap().join("ws");
        std::fs::create_dir(&root).unwrap();
        std::fs::create_dir(root.parent().unwrap().join("outside")).unwrap();
        let ctx = ToolContext::new(root, Vec::new(), CancellationToken::new());
        Self { _dir: dir, ctx }
    }

    pub fn root(&self) -> &Path {
        &self.ctx.workspace
    }

    /// A directory beside the workspace, for escape targets.
    pub fn outside(&self) -> PathBuf {
        self.ctx.workspace.parent().unwrap().join("outside")
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, content).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    pub async fn call(&self, tool: &dyn Tool, args: Value) -> Result<ToolOutput, ToolError> {
        tool.call(args, &self.ctx).await
    }

    pub fn effect(&self, tool: &dyn Tool, args: Value) -> Result<Effect, ToolError> {
        tool.effect(&args, &self.ctx)
    }
}

/// Every file under `dir` with its bytes, for "nothing changed" assertions.
pub fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            let ft = entry.file_type().unwrap();
            if ft.is_dir() {
                stack.push(entry.path());
            } else if ft.is_file() {
                out.push((entry.path(), std::fs::read(entry.path()).unwrap()));
            } else {
                out.push((entry.path(), Vec::new()));
            }
        }
    }
    out.sort();
    out
}
