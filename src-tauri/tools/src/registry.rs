//! The tools by name. The runtime asks it for the specs offered to the model and for the
//! tool to run; MCP tools can be added beside the built-ins with `register`.
use std::sync::Arc;

use pocketpilot_model::ToolSpec;

use crate::builtin::{
    DeletePath, EditFile, FetchUrl, ListDir, ReadFile, RunCommand, SearchFiles, WriteFile,
};
use crate::tool::Tool;

#[derive(Clone, Default)]
pub struct Registry {
    tools: Vec<Arc<dyn Tool>>,
}

impl Registry {
    pub fn builtin() -> Registry {
        let tools: Vec<Arc<dyn Tool>> = vec![
            Arc::new(ReadFile),
            Arc::new(ListDir),
            Arc::new(SearchFiles),
            Arc::new(WriteFile),
            Arc::new(EditFile),
            Arc::new(DeletePath),
            Arc::new(RunCommand),
            Arc::new(FetchUrl),
        ];
        Registry { tools }
    }

    /// Adds a tool, replacing one with the same name.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        self.tools.retain(|t| t.name() != tool.name());
        self.tools.push(tool);
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name).cloned()
    }

    /// In registration order, so the prompt is stable from run to run.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.spec()).collect()
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|t| t.name()).collect()
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.names())
            .finish()
    }
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
