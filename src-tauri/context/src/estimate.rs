//! Token accounting: how many tokens a request will take, before it is sent.
//!
//! Three sources, best first:
//! 1. The server's own count of a prefix already sent: `usage.prompt_tokens` of the
//!    previous turn counted exactly the messages of that request. An [`Anchor`] keeps it
//!    with a fingerprint of those messages, so the next request (the same messages plus
//!    the new ones) is that count plus an estimate of the new messages only.
//! 2. A real tokenizer where the model's is known and shipped in the binary: OpenAI's
//!    BPE files (`tiktoken-rs` embeds them; nothing is downloaded) for OpenAI model names.
//! 3. Otherwise OpenAI's cl100k as a proxy for the unknown tokenizer, calibrated per
//!    model from the server's counts by [`Estimator::calibrate`] (a learnt ratio and a
//!    learnt fixed part per request).
//!
//! Whatever the source, the planner works against a budget with a safety margin
//! ([`Estimator::margin_fraction`]): wider while the estimate is uncalibrated.
use std::collections::HashMap;
use std::sync::Mutex;

use pocketpilot_model::{Message, Role, ToolSpec};
use serde::{Deserialize, Serialize};
use tiktoken_rs::CoreBPE;

/// How text is turned into a token count.
#[derive(Clone, Copy)]
enum Counter {
    /// One of OpenAI's encodings (embedded in the binary). `exact`: it is the model's
    /// own tokenizer; otherwise cl100k stands in for an unknown tokenizer (BPE
    /// vocabularies agree on what a piece of text costs far better than characters do:
    /// against SmolLM2's tokenizer its ratio varies 13% across prose, code, JSON, logs and
    /// German, bytes-per-token 33%), and calibration learns the ratio.
    Bpe { bpe: &'static CoreBPE, exact: bool },
    /// The shape-based estimate ([`shape_count`]), should no encoding load.
    Shape,
}

impl std::fmt::Debug for Counter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Counter::Bpe { exact: true, .. } => f.write_str("Bpe"),
            Counter::Bpe { exact: false, .. } => f.write_str("Cl100kProxy"),
            Counter::Shape => f.write_str("Shape"),
        }
    }
}

/// Structural tokens around each message (role markers, separators). ChatML spends 5
/// (`<|im_start|>`, role, `\n`, `<|im_end|>`, `\n`); OpenAI documents 3 (+1 for a name).
const PER_MESSAGE: u32 = 5;
/// Around each tool call in an assistant message (the call's wrapper, name and id keys:
/// `<tool_call>\n{"name": …, "arguments": …}\n</tool_call>` in ChatML templates).
const PER_TOOL_CALL: u32 = 16;
/// Around a tool's answer beyond a message's own (`<tool_response>` wrappers, the call id).
const PER_TOOL_RESULT: u32 = 6;
/// Around each offered tool (the wrapper the chat template puts around its JSON).
const PER_TOOL: u32 = 8;
/// The reply priming (`<|im_start|>assistant\n`) and the template's preamble, before any
/// calibration says better.
const PER_REQUEST: f64 = 3.0;
/// How much evidence the prior ratio is worth, in estimated content tokens.
const PRIOR_WEIGHT: f64 = 150.0;
/// The preamble chat templates put before the tool list ("You may call one or more
/// functions…", ~100 tokens in Qwen's and Hermes' templates), before calibration.
const TOOLS_PREAMBLE: u32 = 100;
/// Server tokens per cl100k token assumed for an unknown tokenizer before calibration:
/// open models' vocabularies are mostly smaller than cl100k (SmolLM2 ~1.2, Mistral
/// ~1.2, Qwen and Llama 3 ~1.0), and overestimating is the safe side.
const PROXY_PRIOR: f64 = 1.15;

/// What calibration has learnt so far, kept so a runtime may store it per model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Server tokens per estimated content token.
    pub ratio: f64,
    /// Tokens of every request that no message accounts for (a template's default system
    /// prompt, the tool preamble's difference from the guess): the residual of the last
    /// observations, smoothed.
    pub fixed: f64,
    /// Evidence behind `ratio`, in estimated content tokens (observed sum, estimated sum).
    pub observed_content: f64,
    pub estimated_content: f64,
    /// How many observations were taken.
    pub samples: u32,
}

impl Default for Calibration {
    fn default() -> Self {
        Self {
            ratio: 1.0,
            fixed: PER_REQUEST,
            observed_content: 0.0,
            estimated_content: 0.0,
            samples: 0,
        }
    }
}

/// The server's exact count of a request already sent, and what it covered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Anchor {
    /// How many messages (from the start) that request had.
    pub messages: usize,
    /// Fingerprint of those messages and the tools offered with them.
    pub fingerprint: u64,
    /// The server's `usage.prompt_tokens` for it.
    pub prompt_tokens: u32,
}

impl Anchor {
    /// Keeps the server's count of the request it answered: `messages` and `tools` exactly
    /// as sent, `prompt_tokens` from that answer's usage.
    pub fn new(messages: &[Message], tools: &[ToolSpec], prompt_tokens: u64) -> Self {
        Self {
            messages: messages.len(),
            fingerprint: fingerprint(messages, tools),
            prompt_tokens: u32::try_from(prompt_tokens).unwrap_or(u32::MAX),
        }
    }

    /// Whether `messages` starts with exactly the messages this anchor counted, offered
    /// with the same tools.
    pub fn covers(&self, messages: &[Message], tools: &[ToolSpec]) -> bool {
        messages.len() >= self.messages
            && fingerprint(&messages[..self.messages], tools) == self.fingerprint
    }
}

/// An estimate of one request, with what calibration needs to learn from it.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Estimate {
    /// The estimated prompt tokens of the request (no safety margin added).
    pub tokens: u32,
    /// Uncalibrated content count of the whole request.
    pub raw_content: f64,
    /// Structural tokens of the whole request (per message, per call, per tool).
    pub structure: f64,
    /// Set when a prefix was counted by the server: its count, and the raw content and
    /// structure of the messages after it.
    pub anchored: Option<u32>,
    pub raw_delta: f64,
    pub structure_delta: f64,
}

/// Counts requests for one model.
#[derive(Debug)]
pub struct Estimator {
    model: String,
    counter: Counter,
    calibration: Calibration,
    /// The ratio before any evidence, and what little evidence is weighed against.
    prior: f64,
    /// Uncalibrated counts of long texts by hash (see `raw_text`).
    cache: Mutex<HashMap<u64, f64>>,
}

/// Messages shorter than this are counted each time (hashing costs about as much).
const CACHE_FROM_BYTES: usize = 256;
/// The cache is emptied when it holds this many counts (a few MB at most).
const CACHE_ENTRIES: usize = 50_000;

impl Clone for Estimator {
    fn clone(&self) -> Self {
        Self {
            model: self.model.clone(),
            counter: self.counter,
            calibration: self.calibration,
            prior: self.prior,
            cache: Mutex::new(HashMap::new()),
        }
    }
}

impl Estimator {
    /// The estimator for a model name: OpenAI's tokenizer for OpenAI model names
    /// (`gpt-4o-mini`, `openai/gpt-4.1`, `o3-mini`, …); for any other model, cl100k as a
    /// proxy, calibrated from the server's counts.
    pub fn for_model(model: &str) -> Self {
        // Gateways prefix the vendor: `openai/gpt-4o-mini`.
        let bare = model.strip_prefix("openai/").unwrap_or(model);
        let own = tiktoken_rs::tokenizer::get_tokenizer(bare)
            .and_then(|t| tiktoken_rs::bpe_for_tokenizer(t).ok());
        let (counter, prior) = match own {
            Some(bpe) => (Counter::Bpe { bpe, exact: true }, 1.0),
            None => {
                match tiktoken_rs::bpe_for_tokenizer(tiktoken_rs::tokenizer::Tokenizer::Cl100kBase)
                {
                    Ok(bpe) => (Counter::Bpe { bpe, exact: false }, PROXY_PRIOR),
                    Err(_) => (Counter::Shape, 1.0),
                }
            }
        };
        Self {
            model: model.to_owned(),
            counter,
            calibration: Calibration {
                ratio: prior,
                ..Calibration::default()
            },
            prior,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The shape-based estimate whatever the model: no tokenizer tables to load (tests,
    /// and a fallback).
    pub fn shape_based(model: &str) -> Self {
        Self {
            model: model.to_owned(),
            counter: Counter::Shape,
            calibration: Calibration::default(),
            prior: 1.0,
            cache: Mutex::new(HashMap::new()),
        }
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    /// Whether the model's own tokenizer counts the text (as opposed to an estimate).
    pub fn has_tokenizer(&self) -> bool {
        matches!(self.counter, Counter::Bpe { exact: true, .. })
    }

    pub fn calibration(&self) -> Calibration {
        self.calibration
    }

    /// Starts from what an earlier run learnt about this model.
    pub fn with_calibration(mut self, calibration: Calibration) -> Self {
        if calibration.ratio.is_finite() && calibration.ratio > 0.0 && calibration.fixed.is_finite()
        {
            self.calibration = calibration;
        }
        self
    }

    /// The share of the window kept free for the estimate's error: wide until the
    /// server's counts have calibrated it, narrow with a real tokenizer.
    pub fn margin_fraction(&self) -> f64 {
        match (self.counter, self.calibration.samples) {
            (Counter::Bpe { exact: true, .. }, 0) => 0.05,
            (Counter::Bpe { exact: true, .. }, _) => 0.03,
            (_, 0) => 0.2,
            (_, 1) => 0.1,
            (_, _) => 0.05,
        }
    }

    /// Estimated tokens of a text, calibrated (no structure, no margin).
    pub fn text(&self, text: &str) -> u32 {
        to_tokens(self.raw_text(text) * self.calibration.ratio)
    }

    /// Estimated tokens of one message as part of a request.
    pub fn message(&self, message: &Message) -> u32 {
        let (raw, structure) = self.raw_message(message);
        to_tokens(raw * self.calibration.ratio + structure)
    }

    /// Estimated tokens the offered tools add to a request.
    pub fn tools(&self, tools: &[ToolSpec]) -> u32 {
        let (raw, structure) = self.raw_tools(tools);
        to_tokens(raw * self.calibration.ratio + structure)
    }

    /// Estimated tokens a request adds beyond its messages and tools (reply priming, a
    /// template's own preamble), as calibrated.
    pub fn fixed(&self) -> u32 {
        to_tokens(self.calibration.fixed.max(0.0))
    }

    /// Estimates a whole request. With an anchor that covers a prefix of `messages`, that
    /// prefix counts as the server counted it and only the rest is estimated.
    pub fn request(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
        anchor: Option<&Anchor>,
    ) -> Estimate {
        let (tool_raw, tool_structure) = self.raw_tools(tools);
        let mut raw_content = tool_raw;
        let mut structure = tool_structure;
        let anchor = anchor.filter(|a| a.covers(messages, tools));
        let split = anchor.map_or(0, |a| a.messages);
        let mut raw_delta = 0.0;
        let mut structure_delta = 0.0;
        for (i, m) in messages.iter().enumerate() {
            let (raw, s) = self.raw_message(m);
            raw_content += raw;
            structure += s;
            if i >= split {
                raw_delta += raw;
                structure_delta += s;
            }
        }
        let ratio = self.calibration.ratio;
        let tokens = match anchor {
            Some(a) => f64::from(a.prompt_tokens) + raw_delta * ratio + structure_delta,
            None => raw_content * ratio + structure + self.calibration.fixed.max(0.0),
        };
        Estimate {
            tokens: to_tokens(tokens),
            raw_content,
            structure,
            anchored: anchor.map(|a| a.prompt_tokens),
            raw_delta,
            structure_delta,
        }
    }

    /// Learns from the server's count of a request this estimator estimated.
    ///
    /// The content ratio is learnt from what only content explains: with an anchor, the
    /// tokens the new messages added (the template's fixed parts cancel out); without
    /// one, the whole request, on the first observation only. Then the fixed part is
    /// whatever the ratio and the structure leave unexplained.
    pub fn calibrate(&mut self, observed_prompt_tokens: u64, estimated: &Estimate) {
        let observed = observed_prompt_tokens as f64;
        if observed <= 0.0 || estimated.raw_content <= 0.0 {
            return;
        }
        let c = &mut self.calibration;
        // Too little new content says more about rounding than about the ratio.
        const MIN_EVIDENCE: f64 = 24.0;
        match estimated.anchored {
            Some(prefix) if estimated.raw_delta >= MIN_EVIDENCE => {
                let content = observed - f64::from(prefix) - estimated.structure_delta;
                if content > 0.0 {
                    c.observed_content += content;
                    c.estimated_content += estimated.raw_delta;
                }
            }
            Some(_) => {}
            None if c.samples == 0 => {
                let content = observed - estimated.structure - PER_REQUEST;
                if content > 0.0 {
                    c.observed_content += content;
                    c.estimated_content += estimated.raw_content;
                }
            }
            None => {}
        }
        if c.estimated_content > 0.0 {
            // The evidence is weighed against the prior ratio as if the prior had
            // been seen on PRIOR_WEIGHT tokens: a small first request, where a
            // template's hidden preamble dominates, cannot swing the ratio far.
            c.ratio = ((c.observed_content + PRIOR_WEIGHT * self.prior)
                / (c.estimated_content + PRIOR_WEIGHT))
                .clamp(0.3, 3.0);
        }
        let residual = observed - estimated.raw_content * c.ratio - estimated.structure;
        let residual = residual.clamp(-observed / 4.0, observed / 2.0);
        c.fixed = if c.samples == 0 {
            residual
        } else {
            0.5 * c.fixed + 0.5 * residual
        };
        c.samples += 1;
    }

    /// The uncalibrated count of a text. Long texts are remembered by a hash of their
    /// bytes: a session's requests repeat the same messages turn after turn, and
    /// counting a long tool output again each turn is most of the cost of planning.
    fn raw_text(&self, text: &str) -> f64 {
        if text.len() < CACHE_FROM_BYTES {
            return self.count_text(text);
        }
        let key = fnv(text.as_bytes());
        if let Some(hit) = self.cache.lock().ok().and_then(|c| c.get(&key).copied()) {
            return hit;
        }
        let counted = self.count_text(text);
        if let Ok(mut cache) = self.cache.lock() {
            if cache.len() >= CACHE_ENTRIES {
                cache.clear();
            }
            cache.insert(key, counted);
        }
        counted
    }

    fn count_text(&self, text: &str) -> f64 {
        match self.counter {
            Counter::Bpe { bpe, exact: true } => bpe.count_ordinary(text) as f64,
            // cl100k makes one token of up to three digits; most open tokenizers (Llama 2,
            // Mistral, Qwen, Gemma, SmolLM2) one of each digit.
            Counter::Bpe { bpe, exact: false } => {
                bpe.count_ordinary(text) as f64 + single_digit_extra(text)
            }
            Counter::Shape => shape_count(text),
        }
    }

    /// (content, structure) of one message.
    /// (content, structure) of one message.
    fn raw_message(&self, m: &Message) -> (f64, f64) {
        let mut raw = m.content.as_deref().map_or(0.0, |t| self.raw_text(t));
        raw += self.raw_text(role_name(m.role));
        let mut structure = f64::from(PER_MESSAGE);
        if m.role == Role::Tool {
            structure += f64::from(PER_TOOL_RESULT);
        }
        for call in &m.tool_calls {
            raw += self.raw_text(&call.name) + self.raw_text(&call.arguments);
            structure += f64::from(PER_TOOL_CALL);
        }
        (raw, structure)
    }

    fn raw_tools(&self, tools: &[ToolSpec]) -> (f64, f64) {
        if tools.is_empty() {
            return (0.0, 0.0);
        }
        let mut raw = 0.0;
        let mut structure = f64::from(TOOLS_PREAMBLE);
        for t in tools {
            // Templates render each tool as its JSON schema.
            let json = serde_json::json!({
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.parameters}
            });
            raw += self.raw_text(&json.to_string());
            structure += f64::from(PER_TOOL);
        }
        (raw, structure)
    }
}

/// Tokens a single-digit tokenizer spends on the numbers of `text` beyond cl100k's
/// (which groups up to three digits).
fn single_digit_extra(text: &str) -> f64 {
    let mut extra = 0usize;
    let mut run = 0usize;
    for b in text.bytes().chain(std::iter::once(b' ')) {
        if b.is_ascii_digit() {
            run += 1;
        } else if run > 0 {
            extra += run - run.div_ceil(3);
            run = 0;
        }
    }
    extra as f64
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

fn to_tokens(x: f64) -> u32 {
    if !x.is_finite() || x <= 0.0 {
        return 0;
    }
    let x = x.ceil();
    if x >= f64::from(u32::MAX) {
        u32::MAX
    } else {
        x as u32
    }
}

/// The shape-based count: BPE tokenizers split text into pre-tokens (words with their
/// leading space, numbers, punctuation runs, whitespace runs) and most short, common
/// pre-tokens are one token, longer ones a few. Each run gets a cost by its class and
/// length; the constants were fitted against OpenAI's cl100k and SmolLM2's tokenizer on
/// prose, code, JSON and logs, and the per-model ratio from calibration absorbs the
/// rest.
pub fn shape_count(text: &str) -> f64 {
    #[derive(PartialEq, Clone, Copy)]
    enum Class {
        Letter,
        Digit,
        Punct,
        Space,
        Newline,
        Wide,
        Other,
    }
    fn class(c: char) -> Class {
        match c {
            'a'..='z' | 'A'..='Z' => Class::Letter,
            '0'..='9' => Class::Digit,
            '\n' | '\r' => Class::Newline,
            ' ' | '\t' => Class::Space,
            c if c.is_ascii_punctuation() => Class::Punct,
            c if c.is_ascii() => Class::Other,
            // CJK, kana, hangul: about a token per character (often more).
            c if ('\u{2E80}'..='\u{D7FF}').contains(&c)
                || ('\u{F900}'..='\u{FAFF}').contains(&c) =>
            {
                Class::Wide
            }
            c if c.is_alphabetic() => Class::Letter,
            _ => Class::Other,
        }
    }
    let mut total = 0.0;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let k = class(c);
        let mut len = 1usize;
        let mut bytes = c.len_utf8();
        // Letters of one word, digits of one number, one run of spaces or punctuation.
        while let Some(&next) = chars.peek() {
            let nk = class(next);
            let same = nk == k && !matches!(k, Class::Wide | Class::Other);
            // An upper-case letter after lower-case ones starts a new piece (camelCase).
            let camel = k == Class::Letter && next.is_uppercase() && len > 1 && !c.is_uppercase();
            if !same || camel {
                break;
            }
            len += 1;
            bytes += next.len_utf8();
            chars.next();
        }
        total += match k {
            Class::Letter => {
                if bytes > len {
                    // Non-ASCII letters (accents, Cyrillic, Greek): byte-hungry.
                    (bytes as f64 / 2.5).max(1.0)
                } else if len <= 7 {
                    1.0
                } else {
                    1.0 + (len as f64 - 7.0) / 4.0
                }
            }
            // Tokenizers group digits in ones to threes.
            Class::Digit => (len as f64 / 2.0).ceil(),
            Class::Punct => (len as f64 / 1.6).ceil(),
            // A single space joins the word after it; longer runs (indentation) are
            // tokens of their own.
            Class::Space => {
                if len == 1 {
                    0.0
                } else {
                    (len as f64 / 4.0).ceil()
                }
            }
            Class::Newline => (len as f64 / 2.0).ceil(),
            Class::Wide => 1.25 * len as f64,
            Class::Other => bytes as f64 / 2.0,
        };
    }
    total
}

/// FNV-1a of some bytes.
fn fnv(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// FNV-1a over the messages and tools, with separators: a fingerprint that is the same
/// in every process and build (it may be stored with the anchor).
pub fn fingerprint(messages: &[Message], tools: &[ToolSpec]) -> u64 {
    struct Fnv(u64);
    impl Fnv {
        fn eat(&mut self, bytes: &[u8]) {
            for b in bytes {
                self.0 ^= u64::from(*b);
                self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
            }
            // A separator that cannot occur in UTF-8 text.
            self.0 ^= 0xff;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    for t in tools {
        h.eat(t.name.as_bytes());
        h.eat(t.description.as_bytes());
        h.eat(t.parameters.to_string().as_bytes());
    }
    h.eat(b"messages");
    for m in messages {
        h.eat(role_name(m.role).as_bytes());
        h.eat(m.content.as_deref().unwrap_or("\u{0}").as_bytes());
        for c in &m.tool_calls {
            h.eat(c.id.as_bytes());
            h.eat(c.name.as_bytes());
            h.eat(c.arguments.as_bytes());
        }
        h.eat(m.tool_call_id.as_deref().unwrap_or("\u{0}").as_bytes());
    }
    h.0
}

#[cfg(test)]
#[path = "estimate_tests.rs"]
mod tests;
