//! The settings screen's entry points into the runtime: the provider as stored, the API key
//! (write-only, in the OS keychain), the limits as stored, which fields the environment
//! overrides, and MCP servers. The window edits stored values only: an environment
//! override is reported next to its field and never saved (defect (b) of issue 12).
use pocketpilot_mcp::{McpServerConfig, McpTransport};
use pocketpilot_model::keychain::{self, KeychainError};
use pocketpilot_protocol::{
    EnvOverride, ErrorKind, LimitsForm, NewMcpServer, ProviderForm, SessionTitles, Setup,
};

use crate::api::service::{store_kind, Runtime, RuntimeError};
use crate::config::{Limits, ProviderSettings};
use crate::engine::feed::Change;
use crate::engine::mcp::{self, McpConfigError, StoredServer};

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("the API key is empty")]
    EmptyKey,
    #[error("the secret is empty")]
    EmptySecret,
    #[error("no MCP server `{server}` declares a secret `{var}` (declare it with `pocketpilot mcp add --secret-env`)")]
    UnknownSecret { server: String, var: String },
    #[error("the workspace {0} does not exist")]
    Workspace(String),
    #[error(transparent)]
    Keychain(#[from] KeychainError),
    #[error(transparent)]
    Mcp(#[from] McpConfigError),
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

impl SettingsError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            SettingsError::EmptyKey | SettingsError::EmptySecret => ErrorKind::InvalidArguments,
            SettingsError::UnknownSecret { .. } => ErrorKind::NotFound,
            SettingsError::Workspace(_) => ErrorKind::Workspace,
            // The keychain's errors never carry a key's text (see the keychain module).
            SettingsError::Keychain(_) => ErrorKind::Keychain,
            SettingsError::Mcp(McpConfigError::Invalid(_)) => ErrorKind::InvalidConfig,
            SettingsError::Mcp(McpConfigError::NotFound(_)) => ErrorKind::NotFound,
            SettingsError::Mcp(McpConfigError::Store(e)) => store_kind(e),
            SettingsError::Runtime(e) => e.kind(),
        }
    }
}

impl From<crate::store::StoreError> for SettingsError {
    fn from(e: crate::store::StoreError) -> Self {
        Self::Runtime(e.into())
    }
}

type Result<T, E = SettingsError> = std::result::Result<T, E>;

/// Blank text is no value.
fn blank(v: Option<String>) -> Option<String> {
    v.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty())
}

impl Runtime {
    /// Whether runs have a model to ask (environment included): without one the window
    /// leads to the settings screen. An endpoint without a model name is not enough.
    pub(crate) fn setup_status(&self) -> Result<Setup> {
        let configured = ProviderSettings::load(&self.store)?.is_configured();
        // Looked up only when it would be used: a configured provider always wins.
        let builtin = if configured {
            None
        } else {
            crate::engine::local_model::builtin_summary(self.data_dir(), &self.store)
        };
        Ok(Setup {
            provider_configured: configured,
            builtin,
        })
    }

    /// The provider as stored (no environment override applied): what the form edits.
    pub(crate) fn provider_form(&self) -> Result<ProviderForm> {
        Ok(ProviderSettings::stored(&self.store)?.into())
    }

    /// Saves the form's fields over the *stored* settings (what the form does not show,
    /// extra headers, is kept). An environment override is never written back.
    pub(crate) fn save_provider_form(&self, form: ProviderForm) -> Result<()> {
        let stored = ProviderSettings::stored(&self.store)?;
        self.set_provider_settings(&stored.with_form(form))?;
        Ok(())
    }

    /// The limits as stored (no environment override applied): what the form edits.
    pub(crate) fn limits_form(&self) -> Result<LimitsForm> {
        Ok(Limits::stored(&self.store)?.into())
    }

    pub(crate) fn save_limits_form(&self, form: LimitsForm) -> Result<()> {
        // Budgets the form does not show (money, the repetition guard) stay as stored.
        let mut limits = Limits::stored(&self.store)?;
        limits.apply_form(form);
        self.set_limits(&limits)?;
        Ok(())
    }

    /// Whether new sessions are named by the model after their first answer.
    pub(crate) fn session_titles(&self) -> Result<SessionTitles, RuntimeError> {
        Ok(self.store.read(crate::engine::title::load_setting)?)
    }

    pub(crate) fn set_session_titles(&self, titles: SessionTitles) -> Result<(), RuntimeError> {
        self.store.write(|tx| {
            crate::store::settings::set(tx, crate::engine::title::SESSION_TITLES_KEY, &titles)
        })?;
        Ok(())
    }

    /// Waits until no session title is being asked for (a title is asked in the
    /// background after a session's first answer).
    pub(crate) async fn titles_settled(&self) {
        self.titles.settled().await;
    }

    /// The provider and limit fields an environment variable overrides in this process.
    pub(crate) fn setting_overrides(&self) -> Result<Vec<EnvOverride>> {
        let mut out = ProviderSettings::env_overrides();
        out.extend(Limits::stored(&self.store)?.env_overrides());
        Ok(out)
    }

    /// Files the key in the OS keychain under the stored provider's name. Nothing reads it
    /// back.
    pub(crate) fn set_api_key(&self, key: &str) -> Result<()> {
        let key = key.trim();
        if key.is_empty() {
            return Err(SettingsError::EmptyKey);
        }
        Ok(keychain::set_key(&self.key_account()?, key)?)
    }

    /// Removes the provider's key; false when there was none.
    pub(crate) fn delete_api_key(&self) -> Result<bool> {
        Ok(keychain::delete_key(&self.key_account()?)?)
    }

    /// Whether a key is stored for the provider: a yes or no, never the key.
    pub(crate) fn api_key_stored(&self) -> Result<bool> {
        Ok(keychain::get_key(&self.key_account()?)?.is_some())
    }

    /// The keychain account: the provider's name as runs see it.
    fn key_account(&self) -> Result<String> {
        Ok(ProviderSettings::load(&self.store)?.name)
    }

    /// Every configured MCP server; runs pick theirs up when they start.
    pub(crate) fn mcp_servers(&self) -> Result<Vec<StoredServer>> {
        Ok(mcp::list(&self.store)?)
    }

    /// Adds (or replaces, by name and workspace) a server: a URL or a command, not both.
    /// A workspace is stored as its canonical path, the form sessions carry.
    pub(crate) fn add_mcp_server(&self, new: NewMcpServer) -> Result<StoredServer> {
        let server = stored_server(new)?;
        mcp::add(&self.store, server.clone())?;
        Ok(server)
    }

    /// Deletes a server by its name and workspace as listed (`None`: the global one).
    pub(crate) fn delete_mcp_server(&self, name: &str, workspace: Option<&str>) -> Result<()> {
        Ok(mcp::delete(&self.store, name, workspace)?)
    }

    /// Each secret variable the MCP servers declare, with whether the keychain has it.
    pub(crate) fn mcp_secrets(&self) -> Result<Vec<pocketpilot_protocol::McpSecret>> {
        let mut out = Vec::new();
        for s in mcp::list(&self.store)? {
            for var in &s.config.secret_env {
                let account = mcp::secret_account(&s.config.name, var);
                let stored = keychain::get_key(&account)?.is_some();
                let secret = pocketpilot_protocol::McpSecret {
                    server: s.config.name.clone(),
                    var: var.clone(),
                    stored,
                };
                if !out.contains(&secret) {
                    out.push(secret);
                }
            }
        }
        Ok(out)
    }

    /// Files an MCP server's secret in the keychain (write-only, like the API key). Only a
    /// variable a server declares is accepted, so a typo cannot file a secret nothing reads.
    pub(crate) fn set_mcp_secret(&self, server: &str, var: &str, value: &str) -> Result<()> {
        if value.trim().is_empty() {
            return Err(SettingsError::EmptySecret);
        }
        let declared = mcp::list(&self.store)?
            .iter()
            .any(|s| s.config.name == server && s.config.secret_env.iter().any(|v| v == var));
        if !declared {
            return Err(SettingsError::UnknownSecret {
                server: server.to_owned(),
                var: var.to_owned(),
            });
        }
        Ok(keychain::set_key(&mcp::secret_account(server, var), value)?)
    }

    /// Tells the window that trigger definitions or the host's state changed.
    pub(crate) fn announce_triggers(&self) {
        self.feed.announce(Change::Triggers);
    }
}

/// The stored form of a new server, validated as far as the form goes (`mcp::add`
/// validates the rest), its workspace made canonical.
fn stored_server(new: NewMcpServer) -> Result<StoredServer> {
    let transport = match (blank(new.url), blank(new.command)) {
        (Some(url), None) => McpTransport::Http { url },
        (None, Some(command)) => McpTransport::Stdio {
            command,
            args: new.args,
            env: new.env,
        },
        (Some(_), Some(_)) => {
            return Err(McpConfigError::Invalid("give a command or a URL, not both".into()).into())
        }
        (None, None) => {
            return Err(McpConfigError::Invalid(
                "give a command (a stdio server) or a URL (a streamable-HTTP server)".into(),
            )
            .into())
        }
    };
    let mut config = McpServerConfig::stdio(new.name.trim(), "", Vec::new());
    config.transport = transport;
    config.capability = blank(new.capability);
    config.allow_read_only = new.allow_read_only;
    if let Some(s) = new.startup_timeout_secs {
        config.startup_timeout_secs = s;
    }
    if let Some(s) = new.call_timeout_secs {
        config.call_timeout_secs = s;
    }
    let workspace = match blank(new.workspace) {
        None => None,
        Some(w) => Some(
            std::fs::canonicalize(&w)
                .map_err(|_| SettingsError::Workspace(w.clone()))?
                .display()
                .to_string(),
        ),
    };
    Ok(StoredServer { workspace, config })
}

crate::api::call::op! {
    /// Whether runs have a model to ask (environment included): without one the window leads to the
    /// settings screen. An endpoint without a model name is not enough.
    #[derive(Debug, Clone)]
    GetSetupStatus {} -> Result<Setup>
        = |rt, op| rt.setup_status();
    /// The provider as stored (no environment override applied): what the form edits.
    #[derive(Debug, Clone)]
    GetProviderForm {} -> Result<ProviderForm>
        = |rt, op| rt.provider_form();
    /// Saves the form's fields over the *stored* settings (what the form does not show, extra
    /// headers, is kept). An environment override is never written back.
    #[derive(Debug, Clone)]
    SaveProviderForm { form: ProviderForm } -> Result<()>
        = |rt, op| rt.save_provider_form(op.form);
    /// The limits as stored (no environment override applied): what the form edits.
    #[derive(Debug, Clone)]
    GetLimitsForm {} -> Result<LimitsForm>
        = |rt, op| rt.limits_form();
    /// Saves the limits as the settings screen edits them.
    #[derive(Debug, Clone)]
    SaveLimitsForm { form: LimitsForm } -> Result<()>
        = |rt, op| rt.save_limits_form(op.form);
    /// Whether new sessions are named by the model after their first answer.
    #[derive(Debug, Clone)]
    GetSessionTitles {} -> Result<SessionTitles, RuntimeError>
        = |rt, op| rt.session_titles();
    /// When new sessions get a title asked of the model: always, with free models only, or
    /// never.
    #[derive(Debug, Clone)]
    SetSessionTitles { titles: SessionTitles } -> Result<(), RuntimeError>
        = |rt, op| rt.set_session_titles(op.titles);
    /// Waits until no session title is being asked for (a title is asked in the background after a
    /// session's first answer).
    #[derive(Debug, Clone)]
    TitlesSettled {} -> crate::api::call::Pending<()>
        = |rt, op| {
        let rt = std::sync::Arc::clone(rt);
        Box::pin(async move { rt.titles_settled().await })
    };
    /// The provider and limit fields an environment variable overrides in this process.
    #[derive(Debug, Clone)]
    SettingOverrides {} -> Result<Vec<EnvOverride>>
        = |rt, op| rt.setting_overrides();
    /// Files the key in the OS keychain under the stored provider's name. Nothing reads it back.
    #[derive(Debug, Clone)]
    SetApiKey { key: String } -> Result<()>
        = |rt, op| rt.set_api_key(&op.key);
    /// Removes the provider's key; false when there was none.
    #[derive(Debug, Clone)]
    DeleteApiKey {} -> Result<bool>
        = |rt, op| rt.delete_api_key();
    /// Whether a key is stored for the provider: a yes or no, never the key.
    #[derive(Debug, Clone)]
    ApiKeyStored {} -> Result<bool>
        = |rt, op| rt.api_key_stored();
    /// Every configured MCP server; runs pick theirs up when they start.
    #[derive(Debug, Clone)]
    ListMcpServers {} -> Result<Vec<StoredServer>>
        = |rt, op| rt.mcp_servers();
    /// Adds (or replaces, by name and workspace) a server: a URL or a command, not both. A
    /// workspace is stored as its canonical path, the form sessions carry.
    #[derive(Debug, Clone)]
    AddMcpServer { new: NewMcpServer } -> Result<StoredServer>
        = |rt, op| rt.add_mcp_server(op.new);
    /// Deletes a server by its name and workspace as listed (`None`: the global one).
    #[derive(Debug, Clone)]
    DeleteMcpServer { name: String, workspace: Option<String> } -> Result<()>
        = |rt, op| rt.delete_mcp_server(&op.name, op.workspace.as_deref());
    /// Each secret variable the MCP servers declare, with whether the keychain has it.
    #[derive(Debug, Clone)]
    ListMcpSecrets {} -> Result<Vec<pocketpilot_protocol::McpSecret>>
        = |rt, op| rt.mcp_secrets();
    /// Files an MCP server's secret in the keychain (write-only, like the API key). Only a variable
    /// a server declares is accepted, so a typo cannot file a secret nothing reads.
    #[derive(Debug, Clone)]
    SetMcpSecret { server: String, var: String, value: String } -> Result<()>
        = |rt, op| rt.set_mcp_secret(&op.server, &op.var, &op.value);
    /// Tells the window that trigger definitions or the host's state changed.
    #[derive(Debug, Clone)]
    AnnounceTriggers {} -> ()
        = |rt, op| rt.announce_triggers();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> NewMcpServer {
        NewMcpServer {
            name: "files".into(),
            workspace: None,
            command: None,
            args: Vec::new(),
            env: Vec::new(),
            url: None,
            capability: None,
            allow_read_only: false,
            startup_timeout_secs: None,
            call_timeout_secs: None,
        }
    }

    #[test]
    fn a_server_needs_a_command_or_a_url_not_both() {
        assert!(matches!(
            stored_server(form()),
            Err(SettingsError::Mcp(McpConfigError::Invalid(_)))
        ));
        let both = NewMcpServer {
            command: Some("srv".into()),
            url: Some("http://127.0.0.1:1/mcp".into()),
            ..form()
        };
        assert!(matches!(
            stored_server(both),
            Err(SettingsError::Mcp(McpConfigError::Invalid(_)))
        ));
        let http = NewMcpServer {
            url: Some(" http://127.0.0.1:1/mcp ".into()),
            command: Some("  ".into()),
            ..form()
        };
        let s = stored_server(http).unwrap();
        assert_eq!(
            s.config.transport,
            McpTransport::Http {
                url: "http://127.0.0.1:1/mcp".into()
            }
        );
    }

    #[test]
    fn an_mcp_form_becomes_a_stored_server_the_runtime_validates() {
        let form = |command: Option<&str>, url: Option<&str>| NewMcpServer {
            name: " files ".into(),
            workspace: Some("  ".into()),
            command: command.map(Into::into),
            args: vec!["-y".into(), "server".into()],
            env: vec![("DEBUG".into(), "1".into())],
            url: url.map(Into::into),
            capability: Some(" ".into()),
            allow_read_only: true,
            startup_timeout_secs: None,
            call_timeout_secs: Some(5),
        };
        let stored = stored_server(form(Some("npx"), None)).expect("a stdio server");
        assert_eq!(
            stored.workspace, None,
            "a blank workspace means every workspace"
        );
        assert_eq!(stored.config.name, "files");
        assert_eq!(stored.config.capability, None);
        assert_eq!(stored.config.call_timeout_secs, 5);
        assert_eq!(stored.config.startup_timeout_secs, 30);
        assert!(stored.config.allow_read_only);
        assert_eq!(
            stored.config.transport,
            McpTransport::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "server".into()],
                env: vec![("DEBUG".into(), "1".into())],
            }
        );
        stored.config.validate().expect("valid");

        let http =
            stored_server(form(None, Some(" http://127.0.0.1:3001/mcp "))).expect("an HTTP server");
        assert_eq!(
            http.config.transport,
            McpTransport::Http {
                url: "http://127.0.0.1:3001/mcp".into()
            }
        );
        for (command, url) in [(None, None), (Some("npx"), Some("http://x"))] {
            let e = stored_server(form(command, url)).expect_err("one of the two");
            assert_eq!(e.kind(), ErrorKind::InvalidConfig);
        }
    }

    #[test]
    fn a_workspace_is_stored_canonical_and_must_exist() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("w");
        std::fs::create_dir(&sub).unwrap();
        let dotted = format!("{}/../w", sub.display());
        let s = stored_server(NewMcpServer {
            workspace: Some(dotted),
            command: Some("srv".into()),
            ..form()
        })
        .unwrap();
        let real = std::fs::canonicalize(&sub).unwrap();
        assert_eq!(s.workspace.as_deref(), Some(real.to_str().unwrap()));
        let missing = stored_server(NewMcpServer {
            workspace: Some(dir.path().join("nope").display().to_string()),
            command: Some("srv".into()),
            ..form()
        });
        assert!(matches!(missing, Err(SettingsError::Workspace(_))));
    }
}
