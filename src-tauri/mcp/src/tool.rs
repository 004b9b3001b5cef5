//! One MCP tool as a PocketPilot `Tool`.
use std::sync::Arc;

use async_trait::async_trait;
use pocketpilot_tools::tool::ToolKind;
use pocketpilot_tools::{Effect, Tool, ToolContext, ToolError, ToolOutput, WorkspaceGuard};
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, Tool as McpToolInfo};
use rmcp::ServiceError;
use serde_json::{Map, Value};

use crate::config::McpTransport;
use crate::host::ServerConn;
use crate::naming::{identity, intern};
use crate::paths::guard_arguments;

/// Longest description offered to the model, in bytes.
const MAX_DESCRIPTION: usize = 2048;
/// Longest result text returned to the model, in bytes; the rest is cut with a marker.
pub const MAX_OUTPUT: usize = 100 * 1024;
/// Largest arguments accepted (as for the built-in tools).
const MAX_ARGS: usize = 2 * 1024 * 1024;

pub(crate) struct McpTool {
    server: Arc<ServerConn>,
    /// The server's own name for the tool.
    tool: String,
    /// `mcp:<server>:<tool>`.
    identity: String,
    model_name: &'static str,
    description: &'static str,
    capability: &'static str,
    kind: ToolKind,
    parameters: Value,
    read_only: bool,
}

impl McpTool {
    pub(crate) fn new(server: Arc<ServerConn>, info: &McpToolInfo, model_name: &str) -> Self {
        let read_only = info
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false);
        let identity = identity(&server.name, &info.name);
        let configured = server.config.capability_for(&info.name, read_only);
        let capability = super::naming::capability(&server.name, &info.name, &configured);
        let summary = info
            .description
            .as_deref()
            .or(info.title.as_deref())
            .unwrap_or("")
            .trim();
        let mut description = format!("[MCP tool {identity}] {summary}");
        truncate(&mut description, MAX_DESCRIPTION);
        let mut parameters = Value::Object((*info.input_schema).clone());
        if let Value::Object(map) = &mut parameters {
            map.remove("$schema");
            map.entry("type").or_insert_with(|| Value::from("object"));
            if map.get("type") == Some(&Value::from("object")) {
                map.entry("properties")
                    .or_insert_with(|| Value::Object(Map::new()));
            }
        }
        Self {
            tool: info.name.to_string(),
            identity,
            model_name: intern(model_name),
            description: intern(&description),
            kind: kind_of_verb(&configured),
            capability: intern(&capability),
            parameters,
            read_only,
            server,
        }
    }

    /// The arguments as the server will get them: an object, paths checked.
    fn prepare(&self, args: &Value, ctx: &ToolContext) -> Result<Map<String, Value>, ToolError> {
        let object = match args {
            Value::Null => return Ok(Map::new()),
            Value::Object(_) => args,
            other => {
                return Err(ToolError::InvalidArguments(format!(
                    "{} takes a JSON object, not {}",
                    self.identity,
                    json_kind(other)
                )))
            }
        };
        let size = serde_json::to_vec(object).map(|v| v.len()).unwrap_or(0);
        if size > MAX_ARGS {
            return Err(ToolError::InvalidArguments(format!(
                "arguments are {size} bytes; at most {MAX_ARGS}"
            )));
        }
        let guard = WorkspaceGuard::for_context(ctx).map_err(ToolError::from)?;
        let keep = self.server.config.keep_relative_paths;
        match guard_arguments(object, &guard, keep)? {
            Value::Object(map) => Ok(map),
            _ => Err(ToolError::InvalidArguments(
                "arguments must be an object".into(),
            )),
        }
    }

    fn unavailable(&self) -> ToolError {
        ToolError::Failed(format!(
            "{} is unavailable: {}",
            self.identity,
            self.server.stopped_message()
        ))
    }

    fn stopped_during_call(&self) -> ToolError {
        ToolError::Failed(format!(
            "{} failed: {}",
            self.identity,
            self.server.stopped_message()
        ))
    }

    fn service_error(&self, err: ServiceError) -> ToolError {
        match err {
            ServiceError::McpError(data) => ToolError::Failed(format!(
                "{} failed: {} (JSON-RPC error {})",
                self.identity, data.message, data.code.0
            )),
            ServiceError::TransportClosed | ServiceError::TransportSend(_)
                if self.server.is_stopped() =>
            {
                self.stopped_during_call()
            }
            other => ToolError::Failed(format!("{} failed: {other}", self.identity)),
        }
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &'static str {
        self.model_name
    }

    fn description(&self) -> &'static str {
        self.description
    }

    fn parameters(&self) -> Value {
        self.parameters.clone()
    }

    fn capability(&self) -> &'static str {
        self.capability
    }

    fn kind(&self) -> ToolKind {
        self.kind
    }

    /// A stdio server runs confined (see `host::server_policy`); an HTTP server is no
    /// process of ours.
    fn confinement_line(&self) -> Option<String> {
        match self.server.config.transport {
            McpTransport::Stdio { .. } => Some(
                self.server
                    .config
                    .sandbox
                    .approval_line(&pocketpilot_sandbox::probe()),
            ),
            McpTransport::Http { .. } => None,
        }
    }

    /// The server's `readOnlyHint`: only such calls are re-run after a crash.
    fn replay_safe(&self) -> bool {
        self.read_only
    }

    /// `Effect::Command` with `command` = `mcp:<server>:<tool> <arguments as compact JSON,
    /// after path rewriting>` and `cwd` = the workspace: what the approval dialog shows.
    /// A path outside the workspace is refused here already.
    fn effect(&self, args: &Value, ctx: &ToolContext) -> Result<Effect, ToolError> {
        let prepared = self.prepare(args, ctx)?;
        let json = serde_json::to_string(&Value::Object(prepared))
            .map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
        Ok(Effect::Command {
            command: format!("{} {json}", self.identity),
            cwd: ctx.workspace.display().to_string(),
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let arguments = self.prepare(&args, ctx)?;
        if self.server.is_stopped() {
            return Err(self.unavailable());
        }
        let params = CallToolRequestParams::new(self.tool.clone()).with_arguments(arguments);
        let timeout = self.server.config.call_timeout();
        let peer = self.server.peer();
        // Dropping the request future (cancel, timeout) makes rmcp send
        // `notifications/cancelled` to the server.
        let result = tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
            _ = tokio::time::sleep(timeout) => {
                tracing::warn!(server = %self.server.name, tool = %self.tool, "MCP call timed out");
                return Err(ToolError::TimedOut(timeout.as_secs()));
            }
            _ = self.server.stopped() => return Err(self.stopped_during_call()),
            result = peer.call_tool(params) => result,
        };
        let result = result.map_err(|e| self.service_error(e))?;
        let text = result_text(&result);
        if result.is_error == Some(true) {
            return Err(ToolError::Failed(format!(
                "{} reported an error: {text}",
                self.identity
            )));
        }
        Ok(ToolOutput::text(text))
    }
}

/// The text of a result: text blocks joined by newlines; other blocks described;
/// `structuredContent` as JSON when there is no text. Capped at [`MAX_OUTPUT`].
pub(crate) fn result_text(result: &CallToolResult) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut has_text = false;
    for block in &result.content {
        match block {
            ContentBlock::Text(t) => {
                has_text = true;
                parts.push(t.text.clone());
            }
            ContentBlock::Image(i) => parts.push(format!(
                "[image {}, {} bytes base64]",
                i.mime_type,
                i.data.len()
            )),
            ContentBlock::Audio(a) => parts.push(format!(
                "[audio {}, {} bytes base64]",
                a.mime_type,
                a.data.len()
            )),
            ContentBlock::Resource(r) => parts.push(describe_embedded(r)),
            ContentBlock::ResourceLink(link) => {
                parts.push(format!("[resource link {} ({})]", link.uri, link.name))
            }
            _ => parts.push("[content of a kind PocketPilot does not show]".into()),
        }
    }
    if !has_text {
        if let Some(structured) = &result.structured_content {
            parts.insert(0, structured.to_string());
        }
    }
    let mut text = parts.join("\n");
    if text.is_empty() {
        text = "(no content)".into();
    }
    if text.len() > MAX_OUTPUT {
        let total = text.len();
        truncate(&mut text, MAX_OUTPUT);
        text.push_str(&format!("\n[… output cut: {total} bytes in all]"));
    }
    text
}

fn describe_embedded(r: &rmcp::model::EmbeddedResource) -> String {
    // Serialised rather than matched: the resource contents enum is non-exhaustive.
    let value = serde_json::to_value(&r.resource).unwrap_or(Value::Null);
    let uri = value.get("uri").and_then(Value::as_str).unwrap_or("?");
    match value.get("text").and_then(Value::as_str) {
        Some(text) => format!("[resource {uri}]\n{text}"),
        None => {
            let mime = value
                .get("mimeType")
                .and_then(Value::as_str)
                .unwrap_or("binary");
            format!("[resource {uri}, {mime}]")
        }
    }
}

/// What a tool does, by the verb of the capability its server's configuration gives it
/// (`mcp:execute`, `fs:read`): the one declaration an MCP tool has of it.
fn kind_of_verb(capability: &str) -> ToolKind {
    match capability.rsplit(':').next().unwrap_or(capability) {
        "read" => ToolKind::Read,
        "list" => ToolKind::Search,
        "write" | "create" | "update" | "delete" => ToolKind::Write,
        "execute" => ToolKind::Command,
        "network" => ToolKind::Fetch,
        _ => ToolKind::Other,
    }
}

fn truncate(s: &mut String, max: usize) {
    if s.len() <= max {
        return;
    }
    let mut cut = max;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s.truncate(cut);
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_mcp_tools_kind_follows_its_capability_verb() {
        for (capability, kind) in [
            ("mcp:execute", ToolKind::Command),
            ("mcp:read", ToolKind::Read),
            ("fs:list", ToolKind::Search),
            ("mcp:write", ToolKind::Write),
            ("mcp:delete", ToolKind::Write),
            ("net:network", ToolKind::Fetch),
            ("mcp:unheard", ToolKind::Other),
        ] {
            assert_eq!(kind_of_verb(capability), kind, "{capability}");
        }
    }
}
