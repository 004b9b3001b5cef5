use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Subcommand;
use pocketpilot_core::ops;
use pocketpilot_mcp::{McpServerConfig, McpTransport};

use super::escape::shown;
use super::{print_json, CliError};
use pocketpilot_core::api::service::Runtime;
use pocketpilot_core::api::settings::SettingsError;
use pocketpilot_core::engine::mcp::{self, McpConfigError};

#[derive(Subcommand, Debug)]
pub enum McpCommand {
    /// Add (or replace) a server: `mcp add NAME -- COMMAND ARGS…` or `mcp add NAME --url URL`.
    Add {
        name: String,
        /// Only for this workspace (default: every workspace).
        #[arg(long)]
        workspace: Option<PathBuf>,
        /// A streamable-HTTP endpoint instead of a command.
        #[arg(long, conflicts_with = "command")]
        url: Option<String>,
        /// The capability of its tools (default `mcp:execute`: each call needs approval).
        #[arg(long)]
        capability: Option<String>,
        /// Let tools the server marks read-only run without approval (`mcp:read`).
        #[arg(long)]
        allow_read_only: bool,
        /// An environment variable whose value comes from the keychain (`mcp secret`).
        #[arg(long = "secret-env", value_name = "VAR")]
        secret_env: Vec<String>,
        /// Extra (non-secret) environment, `NAME=value`.
        #[arg(long = "env", value_name = "NAME=VALUE")]
        env: Vec<String>,
        #[arg(long, default_value_t = 30)]
        startup_timeout_secs: u64,
        #[arg(long, default_value_t = 120)]
        call_timeout_secs: u64,
        /// The command and its arguments, after `--`.
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// List servers.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Delete a server.
    Delete {
        name: String,
        #[arg(long)]
        workspace: Option<PathBuf>,
    },
    /// Store a secret for a server's `--secret-env VAR` in the keychain (stdin or a prompt).
    Secret { name: String, var: String },
}

fn canonical(w: Option<PathBuf>) -> Result<Option<String>, CliError> {
    w.map(|w| {
        std::fs::canonicalize(&w)
            .map(|p| p.display().to_string())
            .map_err(|_| CliError::Usage(format!("the workspace {} does not exist", w.display())))
    })
    .transpose()
}

fn settings_error(e: SettingsError) -> CliError {
    match e {
        SettingsError::Mcp(McpConfigError::Store(s)) => CliError::Store(s),
        SettingsError::Runtime(r) => CliError::Runtime(r),
        SettingsError::Keychain(_) => CliError::Other(e.to_string()),
        _ => CliError::Usage(e.to_string()),
    }
}

pub fn mcp(rt: &Arc<Runtime>, cmd: McpCommand) -> Result<ExitCode, CliError> {
    match cmd {
        McpCommand::Add {
            name,
            workspace,
            url,
            capability,
            allow_read_only,
            secret_env,
            env,
            startup_timeout_secs,
            call_timeout_secs,
            command,
        } => {
            let transport = transport(url, &command, &env)?;
            let config = McpServerConfig {
                name: name.clone(),
                transport,
                capability,
                tool_capabilities: Default::default(),
                allow_read_only,
                startup_timeout_secs,
                call_timeout_secs,
                secret_env,
                keep_relative_paths: false,
                sandbox: Default::default(),
            };
            rt.call(ops::AddMcpServerConfig {
                workspace: canonical(workspace)?,
                config,
            })
            .map_err(settings_error)?;
            let _ = writeln!(std::io::stdout(), "MCP server {} added", shown(&name));
        }
        McpCommand::List { json } => list(rt, json)?,
        McpCommand::Delete { name, workspace } => {
            rt.call(ops::DeleteMcpServer {
                name: name.clone(),
                workspace: canonical(workspace)?,
            })
            .map_err(settings_error)?;
            let _ = writeln!(std::io::stdout(), "MCP server {} deleted", shown(&name));
        }
        McpCommand::Secret { name, var } => {
            let value = super::read_secret(&format!("{var} for {name}: "))?;
            pocketpilot_model::keychain::set_key(&mcp::secret_account(&name, &var), &value)
                .map_err(|e| CliError::Other(e.to_string()))?;
            let _ = writeln!(
                std::io::stdout(),
                "secret {} for {} stored in the OS keychain",
                shown(&var),
                shown(&name)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// How a server is reached: at `url`, or by running `command` (its first word the
/// program) with the `NAME=value` pairs of `env`.
fn transport(
    url: Option<String>,
    command: &[String],
    env: &[String],
) -> Result<McpTransport, CliError> {
    Ok(match (url, command.split_first()) {
        (Some(url), _) => McpTransport::Http { url },
        (None, Some((cmd, args))) => McpTransport::Stdio {
            command: cmd.clone(),
            args: args.to_vec(),
            env: env
                .iter()
                .map(|e| {
                    e.split_once('=')
                        .map(|(k, v)| (k.to_owned(), v.to_owned()))
                        .ok_or_else(|| {
                            CliError::Usage(format!("--env must be NAME=value, got `{e}`"))
                        })
                })
                .collect::<Result<_, _>>()?,
        },
        (None, None) => {
            return Err(CliError::Usage(
                "give `--url URL` or `-- COMMAND ARGS…`".into(),
            ))
        }
    })
}

fn list(rt: &Arc<Runtime>, json: bool) -> Result<(), CliError> {
    let all = rt.call(ops::ListMcpServers {}).map_err(settings_error)?;
    if json {
        print_json(&all);
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    for s in all {
        let how = match &s.config.transport {
            McpTransport::Stdio { command, args, .. } => format!("{command} {}", args.join(" ")),
            McpTransport::Http { url } => url.clone(),
        };
        let _ = writeln!(
            out,
            "{:<16} {:<40} {}",
            shown(&s.config.name),
            shown(s.workspace.as_deref().unwrap_or("(every workspace)")),
            shown(&how)
        );
    }
    Ok(())
}
