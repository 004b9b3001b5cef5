//! Starting servers and turning their tools into PocketPilot tools.
use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pocketpilot_sandbox::{CallGuard, Mode, SandboxPolicy};
use pocketpilot_tools::{Registry, Tool};
use process_wrap::tokio::{ChildWrapper, CommandWrap, CommandWrapper};
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ProtocolVersion, Tool as McpToolInfo,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{Peer, ServiceExt};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::watch;

use crate::config::{McpServerConfig, McpTransport, SecretEnv};
use crate::error::{McpError, McpProblem, McpProblemKind};
use crate::naming::NameAllocator;
use crate::stdio::{ReplyCap, StdioTransport, MAX_REPLY_BYTES};
use crate::tool::McpTool;
use crate::whitelist::McpWhitelist;

/// Lines of a server's stderr kept for error messages.
const STDERR_TAIL_LINES: usize = 5;
/// Longest stderr line kept (and logged), in bytes.
const STDERR_LINE_MAX: usize = 2000;
/// How long a graceful shutdown may take before the process group is killed.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

type Client = RunningService<RoleClient, ClientConfig>;

/// What [`connect`] needs beside the server configurations.
#[derive(Debug, Clone, Default)]
pub struct ConnectOptions {
    /// Which servers/tools this task may use; empty (the default) starts nothing.
    pub whitelist: McpWhitelist,
    /// Values of the servers' `secret_env` variables, from the keychain.
    pub secrets: SecretEnv,
    /// Working directory of stdio servers (the task's workspace); `None` = this process's.
    pub workspace: Option<PathBuf>,
    /// Environment stdio servers start from before secrets are scrubbed from it (like
    /// `ToolContext::base_env`); `None` = this process's environment.
    pub base_env: Option<Vec<(OsString, OsString)>>,
    /// Paths stdio servers must never reach (the app's data and config dirs), like
    /// `ToolContext::forbidden`.
    pub forbidden: Vec<PathBuf>,
}

/// The servers started for one run and the tools they offer. Dropping it (and every tool)
/// kills the servers; [`McpSession::shutdown`] closes them politely first.
pub struct McpSession {
    /// Ready to be registered, in configuration order then the server's order.
    pub tools: Vec<Arc<dyn Tool>>,
    /// Servers and whitelist entries that gave nothing, for the task's events.
    pub problems: Vec<McpProblem>,
    servers: Vec<Arc<ServerConn>>,
}

impl McpSession {
    /// Adds every tool to a registry (beside the built-ins).
    pub fn register_into(&self, registry: &mut Registry) {
        for tool in &self.tools {
            registry.register(tool.clone());
        }
    }

    /// Names of the servers that started.
    pub fn servers(&self) -> Vec<&str> {
        self.servers.iter().map(|s| s.name.as_str()).collect()
    }

    /// Servers that started and have stopped since (crashed, exited, connection lost), each
    /// as a problem with the tail of its stderr. For the task's events at the end of a run.
    pub fn stopped_servers(&self) -> Vec<McpProblem> {
        self.servers
            .iter()
            .filter(|s| s.is_stopped())
            .map(|s| McpProblem::new(&s.name, McpProblemKind::Stopped, s.stopped_message()))
            .collect()
    }

    /// Closes every server: stdin closed, then SIGTERM, then the process group killed.
    pub async fn shutdown(self) {
        let closing = self.servers.iter().map(|s| s.close());
        futures::future::join_all(closing).await;
    }

    pub fn into_parts(self) -> (Vec<Arc<dyn Tool>>, Vec<McpProblem>) {
        (self.tools, self.problems)
    }
}

impl std::fmt::Debug for McpSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpSession")
            .field("servers", &self.servers())
            .field(
                "tools",
                &self.tools.iter().map(|t| t.name()).collect::<Vec<_>>(),
            )
            .field("problems", &self.problems)
            .finish()
    }
}

/// Starts every configured server the whitelist names, concurrently, each within its
/// startup timeout, and wraps the whitelisted tools. Never fails and never waits longer
/// than the slowest startup timeout: whatever went wrong is in `problems`.
pub async fn connect(configs: &[McpServerConfig], opts: &ConnectOptions) -> McpSession {
    let mut problems = Vec::new();
    let mut wanted: Vec<&McpServerConfig> = Vec::new();
    for config in configs {
        if !opts.whitelist.allows_server(&config.name) {
            continue;
        }
        if let Err(err) = config.validate() {
            problems.push(err.into());
            continue;
        }
        if wanted.iter().any(|c| c.name == config.name) {
            problems.push(McpProblem::new(
                &config.name,
                McpProblemKind::InvalidConfig,
                format!(
                    "MCP server `{}` is configured twice; the first is used",
                    config.name
                ),
            ));
            continue;
        }
        wanted.push(config);
    }
    for named in opts.whitelist.named_servers() {
        if !configs.iter().any(|c| c.name == named) {
            problems.push(McpProblem::new(
                named,
                McpProblemKind::NotConfigured,
                format!("the whitelist names MCP server `{named}`, which is not configured"),
            ));
        }
    }

    let started = futures::future::join_all(wanted.iter().map(|c| start(c, opts))).await;

    let mut names = NameAllocator::default();
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    let mut servers = Vec::new();
    for result in started {
        let (server, listed) = match result {
            Ok(ok) => ok,
            Err(err) => {
                tracing::warn!(server = err.server(), kind = err.kind().as_str(), "{err}");
                problems.push(err.into());
                continue;
            }
        };
        for missing in opts
            .whitelist
            .named_tools(&server.name)
            .filter(|t| !listed.iter().any(|l| l.name == *t))
        {
            problems.push(McpProblem::new(
                &server.name,
                McpProblemKind::UnknownTool,
                format!(
                    "the whitelist names mcp:{}:{missing}, which the server does not offer",
                    server.name
                ),
            ));
        }
        for info in listed {
            if !opts.whitelist.allows_tool(&server.name, &info.name) {
                continue;
            }
            let model_name = names.allocate(&server.name, &info.name);
            tools.push(Arc::new(McpTool::new(server.clone(), &info, &model_name)));
        }
        tracing::info!(server = %server.name, "MCP server ready");
        servers.push(server);
    }
    McpSession {
        tools,
        problems,
        servers,
    }
}

/// [`connect`] with only a whitelist, for callers that want the pair. The servers live as
/// long as the returned tools.
pub async fn connect_tools(
    configs: &[McpServerConfig],
    whitelist: &McpWhitelist,
) -> (Vec<Arc<dyn Tool>>, Vec<McpProblem>) {
    let opts = ConnectOptions {
        whitelist: whitelist.clone(),
        ..ConnectOptions::default()
    };
    connect(configs, &opts).await.into_parts()
}

/// One running server, shared by its tools.
pub(crate) struct ServerConn {
    pub(crate) name: String,
    pub(crate) config: McpServerConfig,
    peer: Peer<RoleClient>,
    client: tokio::sync::Mutex<Option<Client>>,
    stderr: Arc<StderrTail>,
    reply_cap: ReplyCap,
}

impl ServerConn {
    pub(crate) fn peer(&self) -> &Peer<RoleClient> {
        &self.peer
    }

    /// The connection is gone: the process exited, the HTTP session failed, or it was
    /// closed.
    pub(crate) fn is_stopped(&self) -> bool {
        self.peer.is_transport_closed()
    }

    /// Resolves once the connection is gone (polled: rmcp exposes no signal for it).
    pub(crate) async fn stopped(&self) {
        while !self.is_stopped() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub(crate) fn stopped_message(&self) -> String {
        if self.reply_cap.exceeded() {
            return format!(
                "MCP server `{}` sent a message larger than {} MiB (the cap); it was \
                 disconnected",
                self.name,
                MAX_REPLY_BYTES / (1024 * 1024)
            );
        }
        let mut message = format!("MCP server `{}` has stopped", self.name);
        if let McpTransport::Stdio { .. } = self.config.transport {
            message.push_str(" (its process exited or closed its output)");
        }
        message.push_str(&self.stderr.describe());
        message
    }

    async fn close(&self) {
        let mut guard = self.client.lock().await;
        if let Some(mut client) = guard.take() {
            match client.close_with_timeout(SHUTDOWN_GRACE * 3).await {
                Ok(Some(reason)) => {
                    tracing::debug!(server = %self.name, ?reason, "MCP server closed")
                }
                Ok(None) => tracing::warn!(server = %self.name, "MCP server did not close in time"),
                Err(err) => tracing::warn!(server = %self.name, "closing MCP server: {err}"),
            }
        }
    }
}

fn client_info() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("pocketpilot", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
}

async fn start(
    config: &McpServerConfig,
    opts: &ConnectOptions,
) -> Result<(Arc<ServerConn>, Vec<McpToolInfo>), McpError> {
    let name = config.name.clone();
    let secs = config.startup_timeout_secs;
    let stderr = Arc::new(StderrTail::new(&name, &opts.secrets));
    let reply_cap = ReplyCap::default();
    let handshake = async {
        let client = match &config.transport {
            McpTransport::Stdio { command, args, env } => {
                let transport =
                    spawn_stdio(config, command, args, env, opts, &stderr, reply_cap.clone())?;
                client_info().serve(transport).await
            }
            McpTransport::Http { url } => {
                let transport = http_transport(config, url)?;
                client_info().serve(transport).await
            }
        }
        .map_err(|e| McpError::Initialize {
            server: name.clone(),
            message: e.to_string(),
        })?;
        let tools = client
            .peer()
            .list_all_tools()
            .await
            .map_err(|e| McpError::ListTools {
                server: name.clone(),
                message: e.to_string(),
            })?;
        Ok::<_, McpError>((client, tools))
    };
    // On a timeout the handshake future is dropped, and with it the child process (its
    // process group is killed).
    let outcome = tokio::time::timeout(config.startup_timeout(), handshake).await;
    let (client, tools) = match outcome {
        Ok(Ok(ok)) => ok,
        Ok(Err(err)) => return Err(with_stderr(err, &stderr).await),
        Err(_) => {
            return Err(with_stderr(
                McpError::StartupTimeout {
                    server: name.clone(),
                    secs,
                },
                &stderr,
            )
            .await)
        }
    };
    let conn = ServerConn {
        name,
        config: config.clone(),
        peer: client.peer().clone(),
        client: tokio::sync::Mutex::new(Some(client)),
        stderr,
        reply_cap,
    };
    Ok((Arc::new(conn), tools))
}

/// Adds the last stderr lines to a startup error (waiting briefly for a dying process's
/// last words).
async fn with_stderr(err: McpError, stderr: &StderrTail) -> McpError {
    stderr.wait_closed(Duration::from_millis(500)).await;
    let tail = stderr.describe();
    if tail.is_empty() {
        return err;
    }
    match err {
        McpError::Initialize { server, message } => McpError::Initialize {
            server,
            message: format!("{message}{tail}"),
        },
        McpError::ListTools { server, message } => McpError::ListTools {
            server,
            message: format!("{message}{tail}"),
        },
        McpError::Spawn { server, message } => McpError::Spawn {
            server,
            message: format!("{message}{tail}"),
        },
        // A timeout's message has no room for detail; the log has the lines.
        other => other,
    }
}

fn spawn_stdio(
    config: &McpServerConfig,
    command: &str,
    args: &[String],
    env: &[(String, String)],
    opts: &ConnectOptions,
    stderr: &Arc<StderrTail>,
    reply_cap: ReplyCap,
) -> Result<StdioTransport, McpError> {
    let spawn_err = |message: String| McpError::Spawn {
        server: config.name.clone(),
        message,
    };
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args);
    let workspace = match &opts.workspace {
        Some(dir) => dir.clone(),
        None => {
            std::env::current_dir().map_err(|e| spawn_err(format!("no working directory: {e}")))?
        }
    };
    cmd.current_dir(&workspace);
    let base: Vec<(OsString, OsString)> = match &opts.base_env {
        Some(env) => env.clone(),
        None => std::env::vars_os().collect(),
    };
    let policy = server_policy(config, command, args, &workspace, &base, opts);
    // Replaces the environment with the scrubbed base: the app's own secrets stay out
    // (as for run_command); the server's configured variables and secrets come after.
    let guard =
        pocketpilot_sandbox::confine(&mut cmd, &policy).map_err(|e| spawn_err(e.to_string()))?;
    cmd.envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    for name in &config.secret_env {
        match opts.secrets.get(name) {
            Some(value) => {
                cmd.env(name, value);
            }
            None => {
                return Err(spawn_err(format!(
                    "the secret for environment variable `{name}` was not provided (keychain)"
                )))
            }
        }
    }
    let mut wrapped = CommandWrap::from(cmd);
    // Killing the server means closing the sandbox's lifeline: its supervisor kills the
    // whole tree, grandchildren of `npx` or a shell script and detached ones included.
    wrapped.wrap(Sandboxed(Some(guard)));
    let (transport, child_stderr) = StdioTransport::spawn(wrapped, reply_cap)
        .map_err(|e| spawn_err(format!("`{command}`: {e}")))?;
    match child_stderr {
        Some(pipe) => {
            let tail = stderr.clone();
            tokio::spawn(async move { tail.pump(pipe).await });
        }
        None => stderr.mark_closed(),
    }
    Ok(transport)
}

/// The sandbox of one stdio server: its workspace writable, its install dir and the
/// script files named in its arguments readable, plus what its configuration adds.
fn server_policy(
    config: &McpServerConfig,
    command: &str,
    args: &[String],
    workspace: &std::path::Path,
    base: &[(OsString, OsString)],
    opts: &ConnectOptions,
) -> SandboxPolicy {
    let s = &config.sandbox;
    let mut extra_read = s.extra_read.clone();
    if let Some(home) = base.iter().find(|(k, _)| k == "HOME").map(|(_, v)| v) {
        extra_read.extend(pocketpilot_sandbox::toolchain_read_paths(
            std::path::Path::new(home),
        ));
    }
    if let Some(dir) = install_dir(command, base) {
        extra_read.push(dir);
    }
    // Files only: a directory argument (the filesystem server's root, say) is what the
    // server would serve, and is not widened here.
    extra_read.extend(
        args.iter()
            .map(PathBuf::from)
            .filter(|p| p.is_absolute() && p.is_file()),
    );
    SandboxPolicy {
        workspace: workspace.to_path_buf(),
        extra_read,
        extra_write: s.extra_write.clone(),
        deny: opts.forbidden.clone(),
        network: s.network,
        mode: if s.off { Mode::Off } else { Mode::Enforce },
        env_pass: s.env_pass.clone(),
        base_env: Some(base.to_vec()),
    }
}

/// Where the server's program lives: the outermost `node_modules` above it (npm packages
/// load their dependencies from there), else the directory of the resolved program.
/// Programs under the system dirs need nothing.
fn install_dir(command: &str, base: &[(OsString, OsString)]) -> Option<PathBuf> {
    let path = if command.contains('/') {
        PathBuf::from(command)
    } else {
        let search = base
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.clone())?;
        std::env::split_paths(&search)
            .map(|d| d.join(command))
            .find(|p| p.is_file())?
    };
    let resolved = std::fs::canonicalize(&path).ok()?;
    let mut best: Option<PathBuf> = None;
    for candidate in [path.as_path(), resolved.as_path()] {
        if let Some(nm) = candidate
            .ancestors()
            .filter(|a| a.file_name().is_some_and(|n| n == "node_modules"))
            .last()
        {
            best = Some(nm.to_path_buf());
            break;
        }
    }
    best.or_else(|| resolved.parent().map(|p| p.to_path_buf()))
}

/// Hands the call guard to the child wrapper, so it lives exactly as long as the server.
#[derive(Debug)]
struct Sandboxed(Option<CallGuard>);

impl CommandWrapper for Sandboxed {
    fn wrap_child(
        &mut self,
        inner: Box<dyn ChildWrapper>,
        _core: &CommandWrap,
    ) -> std::io::Result<Box<dyn ChildWrapper>> {
        Ok(Box::new(SandboxedChild {
            inner,
            guard: self.0.take(),
        }))
    }
}

/// A server under the sandbox's supervisor. Signals (SIGTERM of a graceful shutdown) go
/// to the supervisor, which forwards them to the server's process group; a kill closes
/// the lifeline instead of SIGKILLing the supervisor, which would leave the tree behind.
#[derive(Debug)]
struct SandboxedChild {
    inner: Box<dyn ChildWrapper>,
    guard: Option<CallGuard>,
}

impl ChildWrapper for SandboxedChild {
    fn inner(&self) -> &dyn ChildWrapper {
        self.inner.as_ref()
    }

    fn inner_mut(&mut self) -> &mut dyn ChildWrapper {
        self.inner.as_mut()
    }

    fn into_inner(self: Box<Self>) -> Box<dyn ChildWrapper> {
        self.inner
    }

    fn start_kill(&mut self) -> std::io::Result<()> {
        match &mut self.guard {
            Some(guard) => {
                guard.end();
                Ok(())
            }
            None => self.inner.start_kill(),
        }
    }
}

fn http_transport(
    config: &McpServerConfig,
    url: &str,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, McpError> {
    install_crypto_provider();
    let client = reqwest::Client::builder()
        .connect_timeout(config.startup_timeout())
        .build()
        .map_err(|e| McpError::Spawn {
            server: config.name.clone(),
            message: format!("HTTP client: {e}"),
        })?;
    Ok(StreamableHttpClientTransport::with_client(
        client,
        StreamableHttpClientTransportConfig::with_uri(url.to_string()),
    ))
}

/// reqwest is built without a bundled TLS crypto provider; ring (already in the app for the
/// other HTTP clients) becomes the process default unless one is installed already.
fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Err only if another thread installed one first, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// A server's stderr: every line to the log (tagged with the server's name, secret values
/// masked), the last few kept for error messages. Never to the terminal.
pub(crate) struct StderrTail {
    server: String,
    secrets: Vec<String>,
    lines: Mutex<VecDeque<String>>,
    closed_tx: watch::Sender<bool>,
}

impl StderrTail {
    fn new(server: &str, secrets: &SecretEnv) -> Self {
        // Short values would mask ordinary words; secrets are longer than this.
        let secrets = secrets
            .values()
            .filter(|v| v.len() >= 4)
            .map(str::to_string)
            .collect();
        Self {
            server: server.to_string(),
            secrets,
            lines: Mutex::new(VecDeque::new()),
            closed_tx: watch::channel(false).0,
        }
    }

    async fn pump(&self, pipe: tokio::process::ChildStderr) {
        let mut reader = BufReader::new(pipe);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf).await {
                Ok(0) => break,
                Ok(_) => self.line(&String::from_utf8_lossy(&buf)),
                Err(err) => {
                    tracing::debug!(server = %self.server, "reading stderr: {err}");
                    break;
                }
            }
        }
        self.mark_closed();
    }

    fn line(&self, raw: &str) {
        let mut line = raw.trim_end_matches(['\n', '\r']).to_string();
        for secret in &self.secrets {
            if line.contains(secret.as_str()) {
                line = line.replace(secret.as_str(), "***");
            }
        }
        if line.len() > STDERR_LINE_MAX {
            let mut cut = STDERR_LINE_MAX;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line.truncate(cut);
            line.push('…');
        }
        tracing::info!(target: "pocketpilot_mcp::server", server = %self.server, "{line}");
        if line.trim().is_empty() {
            return;
        }
        let mut lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        if lines.len() == STDERR_TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    fn mark_closed(&self) {
        self.closed_tx.send_replace(true);
    }

    async fn wait_closed(&self, at_most: Duration) {
        let mut rx = self.closed_tx.subscribe();
        let _ = tokio::time::timeout(at_most, rx.wait_for(|closed| *closed)).await;
    }

    /// `"; stderr: …"` with the last lines, or empty.
    fn describe(&self) -> String {
        let lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        if lines.is_empty() {
            return String::new();
        }
        let joined: Vec<&str> = lines.iter().map(String::as_str).collect();
        format!("; last stderr: {}", joined.join(" | "))
    }
}
