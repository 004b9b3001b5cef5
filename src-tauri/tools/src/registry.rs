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
    /// Offer the lean specs (a small window): see [`Tool::lean_spec`].
    lean: bool,
    /// Tools kept but not offered: the policy denies them in this workspace. A call the
    /// model makes to one anyway is still found, and denied as any denied call is.
    withheld: Vec<String>,
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
        Registry {
            tools,
            ..Registry::default()
        }
    }

    /// Offers the lean specs from now on (`true`), or the full ones.
    pub fn set_lean(&mut self, lean: bool) {
        self.lean = lean;
    }

    pub fn is_lean(&self) -> bool {
        self.lean
    }

    /// Stops offering the tools for which `deny` is true; they stay callable by name.
    pub fn withhold(&mut self, deny: impl Fn(&dyn Tool) -> bool) {
        self.withheld = self
            .tools
            .iter()
            .filter(|t| deny(t.as_ref()))
            .map(|t| t.name().to_owned())
            .collect();
    }

    /// Stops offering, besides those already withheld, the tools for which `deny` is true.
    pub fn withhold_also(&mut self, deny: impl Fn(&dyn Tool) -> bool) {
        for t in &self.tools {
            if deny(t.as_ref()) && !self.withheld.iter().any(|w| w == t.name()) {
                self.withheld.push(t.name().to_owned());
            }
        }
    }

    /// Adds a tool, replacing one with the same name.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        self.tools.retain(|t| t.name() != tool.name());
        self.tools.push(tool);
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name).cloned()
    }

    /// The specs offered, in registration order, so the prompt is stable from run to run
    /// (byte for byte: the server's prompt cache depends on it).
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .filter(|t| !self.withheld.iter().any(|w| w == t.name()))
            .map(|t| if self.lean { t.lean_spec() } else { t.spec() })
            .collect()
    }

    /// Every registered tool's spec, withheld ones included: what a call written as text
    /// may name, so that a call to a withheld tool is refused by the policy as such.
    pub fn all_specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.lean_spec()).collect()
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|t| t.name()).collect()
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.names())
            .field("lean", &self.lean)
            .field("withheld", &self.withheld)
            .finish()
    }
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
