//! Tool calls a model wrote as text in its answer, made proper calls.
//!
//! Small local models (SmolLM2, Qwen, Hermes-tuned models behind llama.cpp) often write
//! their call in the answer instead of returning `tool_calls`. [`extract_text_calls`]
//! reads such an answer and returns the calls it holds, the calls it could not read (each
//! with what was wrong), and the text that is left. It is pure: the runtime decides what
//! to do with the result, and every call it returns still goes through the policy, the
//! approval and the tool's guard like any other.
//!
//! What counts as a call, and what is only a mention:
//! - a `<tool_call>…</tool_call>` tag (an unclosed one runs to the end) outside any code
//!   fence, block quote or inline code is a call;
//! - after `<|python_tag|>` (Llama 3.x), the JSON object is a call;
//! - a bare JSON object (or an array of them) is a call only when it is the whole answer;
//! - a fenced block (```` ```json ````, ```` ```tool_call ````, unlabelled) is a call when
//!   it is the whole answer, or when it is the only fenced block and ends the answer;
//! - anything after "for example", "e.g.", "such as", "like this" … in the same
//!   paragraph (or the paragraph just before) is a mention, never a call;
//! - only offered tools become calls: a name that differs from exactly one offered tool
//!   in case, `-`/`_` or a known prefix (`functions.`) is that tool; none or several is a
//!   [`BrokenCall`] naming the offered tools.
//!
//! The family of the model's chat template says which tags it uses: a Hermes model's
//! `<|python_tag|>` and a Llama model's `<tool_call>` are text, not calls.
use serde_json::{Map, Value};

use crate::chat::{ModelResponse, ToolCall, ToolSpec};
use pocketpilot_protocol::{TextCallFix, ToolErrorKind};

/// The chat template family of the model, as far as the server says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TemplateFamily {
    /// `<tool_call>{json}</tool_call>` (Hermes, Qwen 2.5/3, SmolLM2).
    Hermes,
    /// `<|python_tag|>` and bare JSON calls (Llama 3.x).
    Llama,
    /// Unknown: every form is read.
    #[default]
    Generic,
}

impl TemplateFamily {
    /// From the chat template the server reports (llama.cpp `/props` `chat_template`).
    pub fn from_chat_template(template: &str) -> Self {
        if template.contains("<tool_call>") {
            TemplateFamily::Hermes
        } else if template.contains("<|python_tag|>") || template.contains("<|eom_id|>") {
            TemplateFamily::Llama
        } else {
            TemplateFamily::Generic
        }
    }

    /// From the model's name, when that is all the server says.
    pub fn from_model_name(model: &str) -> Self {
        let m = model.to_ascii_lowercase();
        if ["hermes", "qwen", "smollm"].iter().any(|k| m.contains(k)) {
            TemplateFamily::Hermes
        } else if ["llama-3", "llama3", "llama-4", "llama4"]
            .iter()
            .any(|k| m.contains(k))
        {
            TemplateFamily::Llama
        } else {
            TemplateFamily::Generic
        }
    }

    fn reads_tags(self) -> bool {
        matches!(self, TemplateFamily::Hermes | TemplateFamily::Generic)
    }

    fn reads_python_tag(self) -> bool {
        matches!(self, TemplateFamily::Llama | TemplateFamily::Generic)
    }
}

/// What an answer's text holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TextCalls {
    /// The calls, in the order they were written.
    pub calls: Vec<RepairedCall>,
    /// What looked like calls and could not be made calls.
    pub broken: Vec<BrokenCall>,
    /// The answer without the repaired calls (broken ones stay, so the model sees what it
    /// wrote beside what was wrong).
    pub remaining_text: String,
}

impl TextCalls {
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty() && self.broken.is_empty()
    }

    /// The turn's calls in written order: the repaired ones, and for each broken one a
    /// call that can never run (its name as written and its arguments as written, which
    /// are not a JSON object, or a name no tool has), so the transcript answers it.
    pub fn tool_calls(&self) -> Vec<ToolCall> {
        let mut all: Vec<(usize, ToolCall)> = self
            .calls
            .iter()
            .map(|c| (c.order, c.call.clone()))
            .chain(self.broken.iter().map(|b| (b.order, b.call.clone())))
            .collect();
        all.sort_by_key(|(order, _)| *order);
        all.into_iter().map(|(_, c)| c).collect()
    }
}

/// A call read from the text.
#[derive(Debug, Clone, PartialEq)]
pub struct RepairedCall {
    /// Id `text_call_{n}`, `n` counting the calls and broken calls of the answer from 1.
    pub call: ToolCall,
    /// The text it was read from, exactly as written.
    pub original: String,
    pub fixes: Vec<TextCallFix>,
    order: usize,
}

/// Text that was a call, but not one that can run.
#[derive(Debug, Clone, PartialEq)]
pub struct BrokenCall {
    /// Stands for it in the turn (see [`TextCalls::tool_calls`]).
    pub call: ToolCall,
    pub original: String,
    pub problem: Problem,
    order: usize,
}

/// What was wrong with a call written as text; the model reads its sentence.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    #[error("arguments are not valid JSON: {0}")]
    InvalidJson(String),
    #[error("arguments must be a JSON object")]
    ArgumentsNotObject,
    #[error("the call names no tool (write {{\"name\": …, \"arguments\": {{…}}}})")]
    NoName,
    #[error("there is no tool named `{name}`; offered tools: {offered}")]
    UnknownTool { name: String, offered: String },
    #[error(
        "`{name}` could be any of {candidates}; use the exact name of one offered tool: {offered}"
    )]
    AmbiguousName {
        name: String,
        candidates: String,
        offered: String,
    },
}

impl Problem {
    /// The tool error a refused call is recorded with.
    pub fn kind(&self) -> ToolErrorKind {
        match self {
            Problem::UnknownTool { .. } | Problem::AmbiguousName { .. } | Problem::NoName => {
                ToolErrorKind::UnknownTool
            }
            Problem::InvalidJson(_) | Problem::ArgumentsNotObject => {
                ToolErrorKind::InvalidArguments
            }
        }
    }
}

/// The text calls of a response, only when it has no proper `tool_calls` (those win,
/// and its text is then never read for calls) and its text holds any.
pub fn repair_response(
    response: &ModelResponse,
    offered: &[ToolSpec],
    family: TemplateFamily,
) -> Option<TextCalls> {
    if !response.tool_calls.is_empty() || offered.is_empty() {
        return None;
    }
    let found = extract_text_calls(&response.text, offered, family);
    (!found.is_empty()).then_some(found)
}

/// Reads the calls written in `text` (see the module doc for what counts).
pub fn extract_text_calls(text: &str, offered: &[ToolSpec], family: TemplateFamily) -> TextCalls {
    let layout = Layout::of(text);
    let mut found: Vec<Found> = Vec::new();
    if let Some(whole) = whole_answer(text, &layout) {
        found.extend(whole);
    } else {
        if family.reads_tags() {
            found.extend(tags(text, &layout));
        }
        if family.reads_python_tag() {
            found.extend(python_tag(text, &layout));
        }
        if found.is_empty() {
            found.extend(closing_fence(text, &layout).into_iter().flatten());
        }
    }
    found.sort_by_key(|f| f.span.0);
    let mut out = TextCalls::default();
    let mut removed: Vec<(usize, usize)> = Vec::new();
    for (i, f) in found.into_iter().enumerate() {
        let id = format!("text_call_{}", i + 1);
        let original = text[f.span.0..f.span.1].to_owned();
        match resolve(f.body, offered, f.fixes) {
            Ok((name, arguments, fixes)) => {
                removed.push(f.span);
                out.calls.push(RepairedCall {
                    call: ToolCall {
                        id,
                        name,
                        arguments,
                    },
                    original,
                    fixes,
                    order: i,
                });
            }
            Err((problem, name, arguments)) => out.broken.push(BrokenCall {
                call: ToolCall {
                    id,
                    name: name.unwrap_or_else(|| "tool_call".into()),
                    arguments,
                },
                original,
                problem,
                order: i,
            }),
        }
    }
    out.remaining_text = without(text, &removed);
    out
}

/// A piece of the text that is a call, before its name and arguments are checked.
struct Found {
    span: (usize, usize),
    body: Body,
    fixes: Vec<TextCallFix>,
}

enum Body {
    Json(Value),
    /// The text could not be read as JSON (the parser's message, the text).
    Unreadable(String, String),
}

/// Where fences, block quotes and inline code are: what the text quotes rather than says.
struct Layout {
    fences: Vec<Fence>,
    /// Byte ranges of block-quote lines.
    quotes: Vec<(usize, usize)>,
}

struct Fence {
    /// From the opening fence line's start to the end of the closing fence line.
    span: (usize, usize),
    lang: String,
    body: (usize, usize),
}

impl Layout {
    fn of(text: &str) -> Self {
        let mut fences = Vec::new();
        let mut quotes = Vec::new();
        let mut open: Option<(usize, char, usize, String, usize)> = None;
        let mut pos = 0;
        for line in text.split_inclusive('\n') {
            let start = pos;
            pos += line.len();
            let trimmed = line.trim_start_matches([' ', '\t']);
            let indent = line.len() - trimmed.len();
            let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~');
            let run = marker.map_or(0, |m| trimmed.chars().take_while(|c| *c == m).count());
            match (&open, marker) {
                (None, Some(m)) if run >= 3 && indent <= 3 => {
                    let lang = trimmed[run..].trim().to_ascii_lowercase();
                    open = Some((start, m, run, lang, pos));
                }
                (Some((_, m, n, _, _)), Some(c))
                    if c == *m && run >= *n && trimmed[run..].trim().is_empty() =>
                {
                    if let Some((s, _, _, lang, body)) = open.take() {
                        fences.push(Fence {
                            span: (s, pos),
                            lang,
                            body: (body, start),
                        });
                    }
                }
                (None, _) if trimmed.starts_with('>') => quotes.push((start, pos)),
                _ => {}
            }
        }
        if let Some((s, _, _, lang, body)) = open {
            fences.push(Fence {
                span: (s, text.len()),
                lang,
                body: (body, text.len()),
            });
        }
        Layout { fences, quotes }
    }

    fn quoted(&self, at: usize) -> bool {
        let within = |(s, e): &(usize, usize)| *s <= at && at < *e;
        self.fences.iter().any(|f| within(&f.span)) || self.quotes.iter().any(within)
    }
}

/// The whole answer as one call (bare JSON, or a fenced block): the forms where there is
/// no prose around to quote it.
fn whole_answer(text: &str, layout: &Layout) -> Option<Vec<Found>> {
    let start = text.len() - text.trim_start().len();
    let end = text.trim_end().len();
    if start >= end {
        return None;
    }
    let span = (start, end);
    let body = &text[start..end];
    if body.starts_with('{') || body.starts_with('[') {
        let fixes = vec![TextCallFix::WholeAnswerJson];
        return json_calls(body, span, fixes, false);
    }
    let [fence] = layout.fences.as_slice() else {
        return None;
    };
    if !text[..fence.span.0].trim().is_empty() || !text[fence.span.1..].trim().is_empty() {
        return None;
    }
    fenced(text, fence, span)
}

/// The calls of a fenced block: its JSON, or the tags it wraps.
fn fenced(text: &str, fence: &Fence, span: (usize, usize)) -> Option<Vec<Found>> {
    let inner = text[fence.body.0..fence.body.1].trim();
    let labelled_call = matches!(
        fence.lang.as_str(),
        "tool_call" | "tool_calls" | "tool_code"
    );
    if !matches!(fence.lang.as_str(), "" | "json" | "json5") && !labelled_call {
        return None;
    }
    if let Some(rest) = inner.strip_prefix("<tool_call>") {
        let json = rest.trim_end().trim_end_matches("</tool_call>");
        let fixes = vec![TextCallFix::FencedBlock, TextCallFix::ToolCallTag];
        return Some(vec![one(json, span, fixes)]);
    }
    json_calls(inner, span, vec![TextCallFix::FencedBlock], labelled_call)
}

/// A fenced call that closes an answer which has some prose before it ("I'll read it.
/// ```json {…} ```"): the only fence, nothing after it, no example named before it.
fn closing_fence(text: &str, layout: &Layout) -> Option<Vec<Found>> {
    let [fence] = layout.fences.as_slice() else {
        return None;
    };
    if !text[fence.span.1..].trim().is_empty() || introduces_example(&text[..fence.span.0]) {
        return None;
    }
    let span = (fence.span.0, text.trim_end().len().max(fence.span.0));
    fenced(text, fence, span)
}

/// JSON text that is one call object, or an array of them. `sure`: the text is a call
/// whatever it looks like (a `tool_call` fence); otherwise it must look like one.
fn json_calls(
    body: &str,
    span: (usize, usize),
    fixes: Vec<TextCallFix>,
    sure: bool,
) -> Option<Vec<Found>> {
    let mut stream = serde_json::Deserializer::from_str(body).into_iter::<Value>();
    if let Some(Ok(_)) = stream.next() {
        // A whole JSON value and then prose: the JSON is what the prose talks about.
        if !sure && !body[stream.byte_offset()..].trim().is_empty() {
            return None;
        }
    }
    match serde_json::from_str::<Value>(body) {
        Ok(Value::Array(items)) if !items.is_empty() && items.iter().all(looks_like_call) => {
            // Several calls in one piece of text: each is recorded with all of it.
            Some(
                items
                    .into_iter()
                    .map(|v| Found {
                        span,
                        body: Body::Json(v),
                        fixes: fixes.clone(),
                    })
                    .collect(),
            )
        }
        Ok(v) if sure || looks_like_call(&v) => Some(vec![Found {
            span,
            body: Body::Json(v),
            fixes,
        }]),
        Ok(_) => None,
        // An answer that is broken JSON naming a tool is a broken call; other broken
        // JSON is just text.
        Err(e) if sure || body.contains("\"name\"") => Some(vec![Found {
            span,
            body: Body::Unreadable(e.to_string(), body.to_owned()),
            fixes,
        }]),
        Err(_) => None,
    }
}

/// One call's JSON as written inside a tag.
fn one(json: &str, span: (usize, usize), fixes: Vec<TextCallFix>) -> Found {
    let json = json.trim();
    let json = strip_fence(json);
    let body = match first_value(json) {
        Ok(v) => Body::Json(v),
        Err(e) => Body::Unreadable(e, json.to_owned()),
    };
    Found { span, body, fixes }
}

/// `{"name": …}` with only a call's keys (OpenAI's nested `function` too).
fn looks_like_call(v: &Value) -> bool {
    let Value::Object(map) = v else {
        return false;
    };
    if let Some(f) = map.get("function").filter(|f| f.is_object()) {
        return map
            .keys()
            .all(|k| ["function", "type", "id"].contains(&k.as_str()))
            && looks_like_call(f);
    }
    map.get("name").is_some_and(Value::is_string)
        && map
            .keys()
            .all(|k| ["name", "arguments", "parameters", "type", "id"].contains(&k.as_str()))
}

/// Every `<tool_call>` tag the text says (not quotes).
fn tags(text: &str, layout: &Layout) -> Vec<Found> {
    const OPEN: &str = "<tool_call>";
    const CLOSE: &str = "</tool_call>";
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find(OPEN) {
        let start = from + i;
        let body_start = start + OPEN.len();
        let (body_end, end) = match text[body_start..].find(CLOSE) {
            Some(j) => (body_start + j, body_start + j + CLOSE.len()),
            // Cut off by the stop token, or never closed: to the end.
            None => (text.len(), text.len()),
        };
        spans.push((start, body_start, body_end, end));
        from = end;
    }
    let in_code = inline_code(text, &spans);
    let mut found = Vec::new();
    for (i, &(start, body_start, body_end, end)) in spans.iter().enumerate() {
        // The calls before it are set aside: their arguments are no introduction.
        let earlier: Vec<(usize, usize)> = spans[..i].iter().map(|t| (t.0, t.3)).collect();
        let mention = layout.quoted(start)
            || in_code.iter().any(|(s, e)| *s <= start && start < *e)
            || introduces_example(&cut(&text[..start], &earlier));
        if !mention {
            let body = &text[body_start..body_end];
            found.push(one(body, (start, end), vec![TextCallFix::ToolCallTag]));
        }
    }
    found
}

/// `<|python_tag|>{json}` (Llama 3.x), up to an end-of-message token or the end.
fn python_tag(text: &str, layout: &Layout) -> Vec<Found> {
    const TAG: &str = "<|python_tag|>";
    let Some(start) = text.find(TAG) else {
        return Vec::new();
    };
    if layout.quoted(start)
        || inline_code(text, &[])
            .iter()
            .any(|(s, e)| *s <= start && start < *e)
        || introduces_example(&text[..start])
    {
        return Vec::new();
    }
    let body_start = start + TAG.len();
    let rest = &text[body_start..];
    let body_len = ["<|eom_id|>", "<|eot_id|>"]
        .iter()
        .filter_map(|t| rest.find(t))
        .min()
        .unwrap_or(rest.len());
    let end = rest[body_len..]
        .strip_prefix("<|eom_id|>")
        .or_else(|| rest[body_len..].strip_prefix("<|eot_id|>"))
        .map_or(body_start + body_len, |after| text.len() - after.len());
    vec![one(
        &rest[..body_len],
        (start, end),
        vec![TextCallFix::PythonTag],
    )]
}

/// Inline code spans (`` `…` ``) outside fences, with the `skip` ranges (tags) left out so
/// a backtick inside a call's arguments pairs with nothing.
fn inline_code(text: &str, skip: &[(usize, usize, usize, usize)]) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut spans = Vec::new();
    let mut open: Option<(usize, usize)> = None;
    let mut i = 0;
    while i < bytes.len() {
        if let Some((_, _, _, end)) = skip.iter().find(|(s, ..)| *s == i) {
            i = *end;
            continue;
        }
        if bytes[i] != b'`' {
            i += 1;
            continue;
        }
        let run = bytes[i..].iter().take_while(|b| **b == b'`').count();
        match open {
            Some((s, n)) if n == run => {
                spans.push((s, i + run));
                open = None;
            }
            None if run < 3 => open = Some((i, run)),
            _ => {}
        }
        i += run;
    }
    spans
}

/// Whether the paragraph leading up to the end of `before` (or, when that is blank, the
/// one before it) introduces an example: what follows is a mention, not a call.
fn introduces_example(before: &str) -> bool {
    const PHRASES: [&str; 7] = [
        "example",
        "e.g.",
        "such as",
        "like this",
        "like so",
        "for instance",
        "something like",
    ];
    let trimmed = before.trim_end();
    let paragraph_start = trimmed
        .rfind("\n\n")
        .or_else(|| trimmed.rfind("\n \n"))
        .map_or(0, |i| i + 1);
    let paragraph = trimmed[paragraph_start..].to_lowercase();
    PHRASES.iter().any(|p| paragraph.contains(p))
}

/// The name and arguments of a found call, checked against the offered tools.
type Resolved = (String, String, Vec<TextCallFix>);
type Refused = (Problem, Option<String>, String);

fn resolve(
    body: Body,
    offered: &[ToolSpec],
    mut fixes: Vec<TextCallFix>,
) -> Result<Resolved, Refused> {
    let map = match body {
        Body::Json(Value::Object(map)) => map,
        Body::Json(other) => {
            return Err((Problem::NoName, None, other.to_string()));
        }
        Body::Unreadable(error, raw) => {
            return Err((Problem::InvalidJson(error), written_name(&raw), raw));
        }
    };
    let map = match map.get("function") {
        Some(Value::Object(inner)) => inner.clone(),
        _ => map,
    };
    let written = map.get("name").and_then(Value::as_str).map(str::to_owned);
    let arguments = arguments_of(&map, &mut fixes);
    let Some(name) = written.clone() else {
        let raw = arguments.unwrap_or_else(|(_, raw)| raw);
        return Err((Problem::NoName, None, raw));
    };
    let tool = match match_tool(&name, offered) {
        Ok(tool) => tool,
        Err(problem) => {
            let raw = arguments.unwrap_or_else(|(_, raw)| raw);
            return Err((problem, written, raw));
        }
    };
    match arguments {
        Ok(args) => {
            if tool != name {
                fixes.push(TextCallFix::NameNormalised);
            }
            Ok((tool, args, fixes))
        }
        // Named as written: a name that is not exactly a tool's, or arguments that are
        // not an object, can never run from the transcript.
        Err((problem, raw)) => Err((problem, written, raw)),
    }
}

/// The arguments as a JSON object's text, or what was wrong and the text as written.
fn arguments_of(
    map: &Map<String, Value>,
    fixes: &mut Vec<TextCallFix>,
) -> Result<String, (Problem, String)> {
    let value = match (map.get("arguments"), map.get("parameters")) {
        (Some(v), _) => v,
        (None, Some(v)) => {
            fixes.push(TextCallFix::ParametersKey);
            v
        }
        (None, None) => {
            fixes.push(TextCallFix::ArgumentsMissing);
            return Ok("{}".into());
        }
    };
    match value {
        Value::Object(_) => Ok(value.to_string()),
        Value::Null => {
            fixes.push(TextCallFix::ArgumentsMissing);
            Ok("{}".into())
        }
        Value::String(inner) => match serde_json::from_str::<Value>(inner) {
            Ok(v @ Value::Object(_)) => {
                fixes.push(TextCallFix::ArgumentsUnquoted);
                Ok(v.to_string())
            }
            Ok(_) => Err((Problem::ArgumentsNotObject, inner.clone())),
            Err(e) => Err((Problem::InvalidJson(e.to_string()), inner.clone())),
        },
        other => Err((Problem::ArgumentsNotObject, other.to_string())),
    }
}

/// The offered tool `name` stands for: itself, or the one tool equal to it once case,
/// `-`/`_`/spaces and a known prefix are set aside.
fn match_tool(name: &str, offered: &[ToolSpec]) -> Result<String, Problem> {
    if offered.iter().any(|t| t.name == name) {
        return Ok(name.to_owned());
    }
    let wanted = normalised(name);
    let candidates: Vec<&str> = offered
        .iter()
        .filter(|t| normalised(&t.name) == wanted)
        .map(|t| t.name.as_str())
        .collect();
    let offered_list = || {
        offered
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match candidates.as_slice() {
        [one] => Ok((*one).to_owned()),
        [] => Err(Problem::UnknownTool {
            name: name.to_owned(),
            offered: offered_list(),
        }),
        many => Err(Problem::AmbiguousName {
            name: name.to_owned(),
            candidates: many.join(", "),
            offered: offered_list(),
        }),
    }
}

fn normalised(name: &str) -> String {
    let lower = name.trim().to_lowercase();
    let bare = ["functions.", "function.", "tools.", "tool.", "default_api."]
        .iter()
        .find_map(|p| lower.strip_prefix(p))
        .unwrap_or(&lower);
    bare.chars()
        .map(|c| if matches!(c, '-' | ' ' | '.') { '_' } else { c })
        .collect()
}

/// The name of a call whose JSON does not parse, read loosely so the model is told which
/// call was wrong.
fn written_name(raw: &str) -> Option<String> {
    let after = &raw[raw.find("\"name\"")? + "\"name\"".len()..];
    let after = after.trim_start().strip_prefix(':')?.trim_start();
    let after = after.strip_prefix('"')?;
    let name = &after[..after.find('"')?];
    (!name.is_empty() && name.len() <= 128).then(|| name.to_owned())
}

/// The first JSON value of `text`, which may only be followed by whitespace.
fn first_value(text: &str) -> Result<Value, String> {
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let value = match stream.next() {
        Some(Ok(v)) => v,
        Some(Err(e)) => return Err(e.to_string()),
        None => return Err("nothing was written".into()),
    };
    let rest = &text[stream.byte_offset()..];
    if rest.trim().is_empty() {
        Ok(value)
    } else {
        Err(format!(
            "unexpected text after the JSON object: {:?}",
            rest.trim().chars().take(40).collect::<String>()
        ))
    }
}

/// A fence around a tag's JSON (```` ```json … ``` ````), set aside.
fn strip_fence(json: &str) -> &str {
    let Some(rest) = json.strip_prefix("```") else {
        return json;
    };
    let body = rest.split_once('\n').map_or("", |(_, b)| b);
    body.trim_end().strip_suffix("```").unwrap_or(body).trim()
}

/// `text` without `ranges` (sorted; several calls read from one piece of text share
/// its range).
fn cut(text: &str, ranges: &[(usize, usize)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for &(s, e) in ranges {
        if s < at {
            continue;
        }
        out.push_str(&text[at..s]);
        at = e;
    }
    out.push_str(&text[at..]);
    out
}

/// `text` without `ranges`, the blank runs they leave closed.
fn without(text: &str, ranges: &[(usize, usize)]) -> String {
    if ranges.is_empty() {
        return text.to_owned();
    }
    let out = cut(text, ranges);
    let mut tidy = String::with_capacity(out.len());
    for line in out.trim().lines() {
        if line.trim().is_empty() && tidy.ends_with("\n\n") {
            continue;
        }
        tidy.push_str(line.trim_end());
        tidy.push('\n');
    }
    tidy.trim_end().to_owned()
}

#[cfg(test)]
#[path = "textcalls_tests.rs"]
mod tests;
