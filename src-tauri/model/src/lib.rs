//! The model boundary.
//!
//! Layout:
//! - `chat`: the messages, tool calls and responses every provider speaks.
//! - `provider`: the `Provider` trait and its error type.
//! - `spec`: which model a run talks to (`ProviderSpec`), parsed once from its text.
//! - `scripted`: deterministic turns from a file — the only fake in the product, used by
//!   tests, evals and benchmarks, and honest about it (its name says so in every event).
//! - `openai`: the OpenAI-compatible HTTP provider.
//! - `keychain`: API keys in the OS keychain, `POCKETPILOT_API_KEY` over them.
//! - `textcalls`: tool calls a model wrote as text in its answer, made proper calls.
#![deny(clippy::print_stdout, clippy::print_stderr)]
pub mod chat;
pub mod keychain;
pub mod openai;
pub mod provider;
pub mod scripted;
pub mod spec;
pub mod textcalls;

pub use chat::{Message, ModelResponse, Role, ToolCall, ToolKind, ToolSpec, Usage};
pub use keychain::{resolve_api_key, KeychainError};
pub use openai::{
    discover_context_window, ContextWindow, Discovery, OpenAiConfig, OpenAiProvider, StreamCaps,
    WindowSource, ASSUMED_CONTEXT_WINDOW,
};
pub use provider::{Provider, ProviderError, StreamEvent, StreamLimit, TurnStream};
pub use scripted::ScriptedProvider;
pub use spec::{ProviderSpec, UnknownProvider};
pub use textcalls::{
    extract_text_calls, repair_response, BrokenCall, Problem, RepairedCall, TemplateFamily,
    TextCalls,
};
