//! The entry points for hooks: the files that apply to a workspace with every command
//! they would run, and the person's consent to a workspace's file (by the hash of its
//! content, so a changed file asks again).
use std::path::Path;

use crate::api::service::{canonical_workspace, Runtime, RuntimeError};
use crate::policy::hooks::{self, HooksFile};
use pocketpilot_protocol::{HookInfo, HookScope, HooksFileInfo};

type Result<T, E = RuntimeError> = std::result::Result<T, E>;

impl Runtime {
    /// The person's hooks file, then the workspace's, as they are on disk now.
    pub(crate) fn hooks_in_effect(&self, workspace: &str) -> Result<Vec<HooksFileInfo>> {
        let workspace = canonical_workspace(Path::new(workspace))?;
        let consented = hooks::consented_hash(&self.store, &workspace)?;
        let mut files = Vec::new();
        let person = self
            .person_hooks_file()
            .map(|p| (p.to_owned(), HookScope::Person));
        let ws = Some((
            hooks::workspace_file(Path::new(&workspace)),
            HookScope::Workspace,
        ));
        for (path, scope) in person.into_iter().chain(ws) {
            match HooksFile::read(&path, scope) {
                Ok(Some(f)) => {
                    let runs = match scope {
                        HookScope::Person => true,
                        HookScope::Workspace => consented.as_deref() == Some(f.hash.as_str()),
                    };
                    files.push(info(f, runs));
                }
                Ok(None) => {}
                Err(e) => files.push(HooksFileInfo {
                    path: path.display().to_string(),
                    scope,
                    hash: String::new(),
                    runs: false,
                    hooks: Vec::new(),
                    problems: vec![e.to_string()],
                }),
            }
        }
        Ok(files)
    }

    /// Consents to the workspace's hooks file as it is now; with `hash`, only if that is
    /// still its content's hash (what the person reviewed). Returns the file consented to.
    pub(crate) fn consent_hooks(
        &self,
        workspace: &str,
        hash: Option<&str>,
    ) -> Result<HooksFileInfo> {
        let workspace = canonical_workspace(Path::new(workspace))?;
        let path = hooks::workspace_file(Path::new(&workspace));
        let file = HooksFile::read(&path, HookScope::Workspace)
            .map_err(|e| RuntimeError::InvalidArguments(e.to_string()))?
            .ok_or_else(|| {
                RuntimeError::InvalidArguments(format!("{} does not exist", path.display()))
            })?;
        if hash.is_some_and(|h| h != file.hash) {
            return Err(RuntimeError::InvalidArguments(format!(
                "{} changed since it was shown (its hash is now {}): review it again",
                path.display(),
                file.hash
            )));
        }
        hooks::set_consent(&self.store, &workspace, Some(&file.hash))?;
        Ok(info(file, true))
    }

    /// Takes the consent back: the workspace's hooks stop running.
    pub(crate) fn revoke_hooks(&self, workspace: &str) -> Result<()> {
        let workspace = canonical_workspace(Path::new(workspace))?;
        hooks::set_consent(&self.store, &workspace, None)?;
        Ok(())
    }
}

fn info(f: HooksFile, runs: bool) -> HooksFileInfo {
    HooksFileInfo {
        path: f.path.display().to_string(),
        scope: f.scope,
        hash: f.hash,
        runs,
        hooks: f
            .hooks
            .into_iter()
            .map(|h| HookInfo {
                event: h.event,
                matcher: h.matcher,
                command: h.command,
                timeout_secs: h.timeout_secs as u32,
            })
            .collect(),
        problems: f.problems,
    }
}

crate::api::call::op! {
    /// The person's hooks file, then the workspace's, as they are on disk now.
    #[derive(Debug, Clone)]
    GetHooksInEffect { workspace: String } -> Result<Vec<HooksFileInfo>>
        = |rt, op| rt.hooks_in_effect(&op.workspace);
    /// Consents to the workspace's hooks file as it is now; with `hash`, only if that is still its
    /// content's hash (what the person reviewed). Returns the file consented to.
    #[derive(Debug, Clone)]
    ConsentHooks { workspace: String, hash: Option<String> } -> Result<HooksFileInfo>
        = |rt, op| rt.consent_hooks(&op.workspace, op.hash.as_deref());
    /// Takes the consent back: the workspace's hooks stop running.
    #[derive(Debug, Clone)]
    RevokeHooks { workspace: String } -> Result<()>
        = |rt, op| rt.revoke_hooks(&op.workspace);
}
