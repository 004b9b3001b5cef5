//! The OpenAI chat-completions wire format: the request we send, the chunks and
//! completions we read. Reading is lenient: unknown fields (`timings`, `logprobs`,
//! `system_fingerprint`, ...) are ignored and every field may be missing or `null`.
use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::chat::{Message, Role, ToolCall, ToolSpec, Usage};

use super::config::{OpenAiConfig, ToolChoice};

#[derive(Serialize)]
pub(crate) struct ChatRequest<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<WireToolChoice<'a>>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
}

/// `"auto"`, `"none"`, `"required"` or `{"type":"function","function":{"name":..}}`.
#[derive(Serialize)]
#[serde(untagged)]
enum WireToolChoice<'a> {
    Mode(&'static str),
    Function {
        #[serde(rename = "type")]
        kind: &'static str,
        function: WireFunctionName<'a>,
    },
}

#[derive(Serialize)]
struct WireFunctionName<'a> {
    name: &'a str,
}

/// The configured choice, when this request takes one: only with tools (servers refuse
/// a `tool_choice` without them), and a forcing one only when the last message is the
/// person's, not a tool result.
fn tool_choice<'a>(
    choice: Option<&'a ToolChoice>,
    messages: &[Message],
    tools: &[ToolSpec],
) -> Option<WireToolChoice<'a>> {
    let choice = choice?;
    if tools.is_empty() {
        return None;
    }
    if choice.forces_a_call() && messages.last().map(|m| m.role) != Some(Role::User) {
        return None;
    }
    Some(match choice {
        ToolChoice::Auto => WireToolChoice::Mode("auto"),
        ToolChoice::None => WireToolChoice::Mode("none"),
        ToolChoice::Required => WireToolChoice::Mode("required"),
        ToolChoice::Function(name) => WireToolChoice::Function {
            kind: "function",
            function: WireFunctionName { name },
        },
    })
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: Role,
    /// Always present: `null` for an assistant turn that only called tools.
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireToolCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

#[derive(Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionCall<'a>,
}

#[derive(Serialize)]
struct WireFunctionCall<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a serde_json::Value,
}

/// The JSON body of a chat-completions request.
pub(crate) fn request_body(
    config: &OpenAiConfig,
    messages: &[Message],
    tools: &[ToolSpec],
    stream: bool,
) -> Result<Vec<u8>, serde_json::Error> {
    let request = ChatRequest {
        model: &config.model,
        messages: messages.iter().map(wire_message).collect(),
        tools: tools
            .iter()
            .map(|t| WireTool {
                kind: "function",
                function: WireFunction {
                    name: &t.name,
                    description: &t.description,
                    parameters: &t.parameters,
                },
            })
            .collect(),
        tool_choice: tool_choice(config.tool_choice.as_ref(), messages, tools),
        stream,
        stream_options: stream.then_some(StreamOptions {
            include_usage: true,
        }),
        temperature: config.temperature,
        max_tokens: config.max_tokens,
    };
    serde_json::to_vec(&request)
}

/// A call's arguments as history: what the model wrote when it is a JSON object, else
/// `{}`. A call the model broke (empty or not JSON) stays in the transcript with its
/// observation saying what was wrong, but servers that render history through the chat
/// template parse these arguments (llama.cpp answers HTTP 500 "Failed to parse tool call
/// arguments as JSON"), so a broken call must not make every later request fail.
fn sendable_arguments(arguments: &str) -> &str {
    match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(serde_json::Value::Object(_)) => arguments,
        _ => "{}",
    }
}

fn wire_message(m: &Message) -> WireMessage<'_> {
    WireMessage {
        role: m.role,
        content: m.content.as_deref(),
        tool_calls: m
            .tool_calls
            .iter()
            .map(|c| WireToolCall {
                id: &c.id,
                kind: "function",
                function: WireFunctionCall {
                    name: &c.name,
                    arguments: sendable_arguments(&c.arguments),
                },
            })
            .collect(),
        tool_call_id: m.tool_call_id.as_deref(),
    }
}

/// One `data:` payload of a streamed answer. Borrowed from the event text where no
/// JSON escapes stand in the way.
#[derive(Deserialize, Debug, Default)]
pub(crate) struct Chunk<'a> {
    #[serde(default, borrow)]
    pub choices: Option<Vec<ChunkChoice<'a>>>,
    #[serde(default)]
    pub usage: Option<WireUsage>,
    /// Some servers (vLLM, OpenRouter) report a failure inside an open stream.
    #[serde(default)]
    pub error: Option<serde_json::Value>,
}

#[derive(Deserialize, Debug, Default)]
pub(crate) struct ChunkChoice<'a> {
    #[serde(default, borrow)]
    pub delta: Option<Delta<'a>>,
    #[serde(default, borrow)]
    pub finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Debug, Default)]
pub(crate) struct Delta<'a> {
    #[serde(default, borrow)]
    pub content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub tool_calls: Option<Vec<ToolCallDelta<'a>>>,
}

#[derive(Deserialize, Debug, Default)]
pub(crate) struct ToolCallDelta<'a> {
    /// Missing on servers that only ever send one call; taken as 0.
    #[serde(default)]
    pub index: Option<usize>,
    #[serde(default, borrow)]
    pub id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize, Debug, Default)]
pub(crate) struct FunctionDelta<'a> {
    #[serde(default, borrow)]
    pub name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub arguments: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Debug, Default, Clone, Copy)]
pub(crate) struct WireUsage {
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    #[serde(default)]
    pub total_tokens: Option<u64>,
    /// OpenAI, vLLM, llama.cpp: how many of the prompt tokens came from the server's cache.
    #[serde(default)]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
}

#[derive(Deserialize, Debug, Default, Clone, Copy)]
pub(crate) struct PromptTokensDetails {
    #[serde(default)]
    pub cached_tokens: Option<u64>,
}

impl WireUsage {
    pub(crate) fn cached_tokens(&self) -> Option<u64> {
        self.prompt_tokens_details.and_then(|d| d.cached_tokens)
    }
}

impl From<WireUsage> for Usage {
    fn from(u: WireUsage) -> Self {
        let prompt_tokens = u.prompt_tokens.unwrap_or(0);
        let completion_tokens = u.completion_tokens.unwrap_or(0);
        Usage {
            prompt_tokens,
            completion_tokens,
            total_tokens: u.total_tokens.unwrap_or(prompt_tokens + completion_tokens),
        }
    }
}

/// A non-streamed answer.
#[derive(Deserialize, Debug, Default)]
pub(crate) struct Completion {
    #[serde(default)]
    pub choices: Vec<CompletionChoice>,
    #[serde(default)]
    pub usage: Option<WireUsage>,
}

#[derive(Deserialize, Debug, Default)]
pub(crate) struct CompletionChoice {
    #[serde(default)]
    pub message: Option<CompletionMessage>,
    #[serde(default)]
    pub finish_reason: Option<String>,
}

#[derive(Deserialize, Debug, Default)]
pub(crate) struct CompletionMessage {
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub tool_calls: Option<Vec<CompletionToolCall>>,
}

#[derive(Deserialize, Debug, Default)]
pub(crate) struct CompletionToolCall {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub function: Option<CompletionFunction>,
}

#[derive(Deserialize, Debug, Default)]
pub(crate) struct CompletionFunction {
    #[serde(default)]
    pub name: Option<String>,
    /// A JSON string by the spec; some servers send the object itself.
    #[serde(default)]
    pub arguments: Option<serde_json::Value>,
}

impl CompletionToolCall {
    pub(crate) fn into_tool_call(self, position: usize) -> ToolCall {
        let function = self.function.unwrap_or_default();
        let arguments = match function.arguments {
            None | Some(serde_json::Value::Null) => String::new(),
            Some(serde_json::Value::String(raw)) => raw,
            Some(other) => other.to_string(),
        };
        ToolCall {
            id: self
                .id
                .filter(|id| !id.is_empty())
                .unwrap_or_else(|| format!("call_{position}")),
            name: function.name.unwrap_or_default(),
            arguments,
        }
    }
}

/// The human part of an error body: `{"error":{"message":..,"code":..}}`,
/// `{"error":"text"}`, `{"message":..}`, `{"detail":..}` or plain text.
pub(crate) fn error_message(body: &str) -> String {
    const MAX: usize = 600;
    let text = match serde_json::from_str::<serde_json::Value>(body) {
        Ok(json) => json_error_message(&json).unwrap_or_else(|| body.trim().to_owned()),
        Err(_) => body.trim().to_owned(),
    };
    if text.len() <= MAX {
        return text;
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

pub(crate) fn json_error_message(json: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    let as_text = |v: &Value| match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    };
    let error = json.get("error");
    if let Some(text) = error.and_then(as_text) {
        return Some(text);
    }
    if let Some(err) = error.filter(|e| e.is_object()) {
        let message = err.get("message").and_then(as_text);
        let code = match err.get("code") {
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        let kind = err.get("type").and_then(as_text);
        let detail = match (code, kind) {
            (Some(code), _) => Some(code),
            (None, kind) => kind,
        };
        return match (message, detail) {
            (Some(m), Some(d)) => Some(format!("{m} ({d})")),
            (Some(m), None) => Some(m),
            (None, Some(d)) => Some(d),
            (None, None) => Some(err.to_string()),
        };
    }
    ["message", "detail"]
        .iter()
        .find_map(|key| json.get(*key).and_then(as_text))
}
