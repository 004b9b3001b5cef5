use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Subcommand;

use super::{print_json, CliError};
use pocketpilot_core::api::service::Runtime;
use pocketpilot_core::ops;
use pocketpilot_protocol::SessionTitles;

#[derive(Subcommand, Debug)]
pub enum ProviderCommand {
    /// Set the OpenAI-compatible provider (the key goes to the keychain: `pocketpilot key set`).
    Set {
        #[arg(long)]
        base_url: Option<String>,
        #[arg(long)]
        model: Option<String>,
        /// The keychain account the key is stored under.
        #[arg(long)]
        name: Option<String>,
        #[arg(long)]
        temperature: Option<f32>,
        #[arg(long)]
        max_tokens: Option<u32>,
        /// `true` or `false`.
        #[arg(long)]
        stream: Option<bool>,
        /// Extra request header, `Name: value` (repeatable).
        #[arg(long = "header")]
        headers: Vec<String>,
    },
    /// Show the provider settings (never the key).
    Show {
        #[arg(long)]
        json: bool,
    },
    /// Whether a session started in the window is named by the model after its first
    /// answer: `always`, `free-models` (the built-in model, a server on this computer, a
    /// model priced at zero; the default) or `off`. Without a value: the current one.
    Titles {
        #[arg(value_parser = session_titles)]
        mode: Option<SessionTitles>,
    },
}

fn session_titles(text: &str) -> Result<SessionTitles, String> {
    text.trim()
        .replace('-', "_")
        .parse()
        .map_err(|_| "expected always, free-models or off".to_owned())
}

fn titles_text(mode: SessionTitles) -> &'static str {
    match mode {
        SessionTitles::Always => "named by the model (always)",
        SessionTitles::FreeModels => "named by the model when it is free (the default)",
        SessionTitles::Off => "the first line of the first message (off)",
    }
}

/// Sets the session titles setting when `mode` is given; prints it either way.
fn titles(rt: &Arc<Runtime>, mode: Option<SessionTitles>) -> Result<ExitCode, CliError> {
    let mode = match mode {
        Some(mode) => {
            rt.call(ops::SetSessionTitles { titles: mode })?;
            mode
        }
        None => rt.call(ops::GetSessionTitles {})?,
    };
    let _ = writeln!(std::io::stdout(), "session titles: {}", titles_text(mode));
    Ok(ExitCode::SUCCESS)
}

pub fn provider(rt: &Arc<Runtime>, cmd: ProviderCommand) -> Result<ExitCode, CliError> {
    match cmd {
        ProviderCommand::Set {
            base_url,
            model,
            name,
            temperature,
            max_tokens,
            stream,
            headers,
        } => {
            let mut p = rt.call(ops::StoredProviderSettings {})?;
            if let Some(u) = base_url {
                let u = u.trim().trim_end_matches('/').to_owned();
                if !(u.starts_with("http://") || u.starts_with("https://")) {
                    return Err(CliError::Usage(format!(
                        "--base-url must start with http:// or https://, got `{u}`"
                    )));
                }
                p.base_url = Some(u);
            }
            if let Some(m) = model {
                p.model = Some(m);
            }
            if let Some(n) = name {
                p.name = n;
            }
            if temperature.is_some() {
                p.temperature = temperature;
            }
            if max_tokens.is_some() {
                p.max_tokens = max_tokens;
            }
            if let Some(s) = stream {
                p.stream = s;
            }
            for h in headers {
                let Some((k, v)) = h.split_once(':') else {
                    return Err(CliError::Usage(format!(
                        "--header must be `Name: value`, got `{h}`"
                    )));
                };
                p.extra_headers
                    .push((k.trim().to_owned(), v.trim().to_owned()));
            }
            rt.call(ops::SetProviderSettings { settings: p })?;
            let _ = writeln!(std::io::stdout(), "provider saved");
            Ok(ExitCode::SUCCESS)
        }
        ProviderCommand::Titles { mode } => titles(rt, mode),
        ProviderCommand::Show { json } => {
            let p = rt.call(ops::GetProviderSettings {})?;
            if json {
                print_json(&p);
            } else {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "name:     {}", p.name);
                let _ = writeln!(
                    out,
                    "base url: {}",
                    p.base_url.as_deref().unwrap_or("(not set)")
                );
                let _ = writeln!(
                    out,
                    "model:    {}",
                    p.model.as_deref().unwrap_or("(not set)")
                );
                let _ = writeln!(out, "stream:   {}", p.stream);
                let _ = writeln!(
                    out,
                    "titles:   {}",
                    titles_text(rt.call(ops::GetSessionTitles {})?)
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

#[derive(Subcommand, Debug)]
pub enum PolicyCommand {
    /// Allow a capability (e.g. `fs:write`, or an area like `shell`) in a workspace without asking.
    Allow {
        capability: String,
        #[arg(long)]
        workspace: Option<std::path::PathBuf>,
    },
    /// Deny a capability in a workspace. Deny always wins over allow.
    Deny {
        capability: String,
        #[arg(long)]
        workspace: Option<std::path::PathBuf>,
    },
    /// Remove every rule of a workspace (back to the defaults).
    Clear {
        #[arg(long)]
        workspace: Option<std::path::PathBuf>,
    },
    /// Show a workspace's rules.
    Show {
        #[arg(long)]
        workspace: Option<std::path::PathBuf>,
        #[arg(long)]
        json: bool,
    },
}

/// Changes a workspace's allow and deny rules.
fn edit_rules(
    rt: &Arc<Runtime>,
    ws: &str,
    f: &dyn Fn(&mut pocketpilot_tools::PolicyRules),
) -> Result<(), CliError> {
    let mut rules = rt.call(ops::GetPolicyRules {
        workspace: ws.to_owned(),
    })?;
    f(&mut rules);
    rt.call(ops::SetPolicyRules {
        workspace: ws.to_owned(),
        rules,
    })?;
    Ok(())
}

pub fn policy(rt: &Arc<Runtime>, cmd: PolicyCommand) -> Result<ExitCode, CliError> {
    let workspace = |w: Option<std::path::PathBuf>| -> Result<String, CliError> {
        let w = w
            .or_else(super::default_workspace)
            .ok_or_else(|| CliError::Usage("give --workspace".into()))?;
        let real = std::fs::canonicalize(&w).map_err(|_| {
            CliError::Usage(format!("the workspace {} does not exist", w.display()))
        })?;
        Ok(real.display().to_string())
    };
    let edit = |ws: &str, f: &dyn Fn(&mut pocketpilot_tools::PolicyRules)| edit_rules(rt, ws, f);
    // The rules stay names (the policy matches them as such); the grammar is checked here.
    let check = |cap: &str| -> Result<(), CliError> {
        cap.parse::<pocketpilot_protocol::Capability>()
            .map(drop)
            .map_err(|e| CliError::Usage(e.to_string()))
    };
    match cmd {
        PolicyCommand::Allow {
            capability,
            workspace: w,
        } => {
            check(&capability)?;
            let ws = workspace(w)?;
            edit(&ws, &|r| {
                if !r.allow.contains(&capability) {
                    r.allow.push(capability.clone());
                }
            })?;
            let _ = writeln!(std::io::stdout(), "allowed {capability} in {ws}");
        }
        PolicyCommand::Deny {
            capability,
            workspace: w,
        } => {
            check(&capability)?;
            let ws = workspace(w)?;
            edit(&ws, &|r| {
                if !r.deny.contains(&capability) {
                    r.deny.push(capability.clone());
                }
            })?;
            let _ = writeln!(std::io::stdout(), "denied {capability} in {ws}");
        }
        PolicyCommand::Clear { workspace: w } => {
            let ws = workspace(w)?;
            rt.call(ops::SetPolicyRules {
                workspace: ws.to_string(),
                rules: pocketpilot_tools::PolicyRules::default(),
            })?;
            let _ = writeln!(std::io::stdout(), "cleared the rules of {ws}");
        }
        PolicyCommand::Show { workspace: w, json } => {
            let ws = workspace(w)?;
            let rules = rt.call(ops::GetPolicyRules {
                workspace: ws.to_string(),
            })?;
            if json {
                print_json(&rules);
            } else {
                let _ = writeln!(
                    std::io::stdout(),
                    "{ws}\n  allow: {}\n  deny:  {}",
                    rules.allow.join(", "),
                    rules.deny.join(", ")
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Subcommand, Debug)]
pub enum KeyCommand {
    /// Store the API key in the OS keychain: typed without echo on a terminal, else read
    /// from stdin. PROVIDER defaults to the configured provider's name.
    Set { provider: Option<String> },
    /// Remove the API key from the OS keychain.
    Delete { provider: Option<String> },
}

pub fn key(rt: &Arc<Runtime>, cmd: KeyCommand) -> Result<ExitCode, CliError> {
    use pocketpilot_model::keychain;
    let name = |p: Option<String>| -> Result<String, CliError> {
        Ok(match p {
            Some(p) => p,
            None => rt.call(ops::GetProviderSettings {})?.name,
        })
    };
    match cmd {
        KeyCommand::Set { provider } => {
            let provider = name(provider)?;
            let secret = super::read_secret(&format!("API key for {provider}: "))?;
            keychain::set_key(&provider, &secret).map_err(|e| CliError::Other(e.to_string()))?;
            let _ = writeln!(
                std::io::stdout(),
                "key stored in the OS keychain for {provider}"
            );
        }
        KeyCommand::Delete { provider } => {
            let provider = name(provider)?;
            let removed =
                keychain::delete_key(&provider).map_err(|e| CliError::Other(e.to_string()))?;
            let _ = writeln!(
                std::io::stdout(),
                "{}",
                if removed {
                    format!("key for {provider} deleted")
                } else {
                    format!("no key stored for {provider}")
                }
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `auto`: the app and `serve` resume interrupted work at start; `ask`: they leave it for
/// `pocketpilot resume`.
pub fn recovery(
    rt: &Arc<Runtime>,
    mode: Option<pocketpilot_core::config::ResumeOnStart>,
) -> Result<ExitCode, CliError> {
    if let Some(m) = mode {
        rt.call(ops::SetResumeOnStart { mode: m })?;
    }
    let current = rt.call(ops::GetResumeOnStart {})?;
    let _ = writeln!(
        std::io::stdout(),
        "resume on start: {}",
        serde_json::to_value(current)
            .unwrap_or_default()
            .as_str()
            .unwrap_or("auto")
    );
    Ok(ExitCode::SUCCESS)
}
