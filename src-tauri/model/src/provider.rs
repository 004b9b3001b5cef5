use std::time::Duration;

use async_trait::async_trait;
use futures::stream::BoxStream;

use pocketpilot_protocol::ErrorKind;

use crate::chat::{Message, ModelResponse, ToolSpec};
use crate::openai::OpenAiConfig;

/// What a streaming turn yields. `Done` comes once, last, and only when the turn is
/// complete: tools are never run from a partial response.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    Delta(String),
    /// The text streamed so far is void (the stream was cut and the turn is being
    /// re-requested): whoever shows it must clear it.
    Reset,
    Done(ModelResponse),
}

pub type TurnStream = BoxStream<'static, Result<StreamEvent, ProviderError>>;

#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum ProviderError {
    #[error("the model server rejected the API key (HTTP {status}): {message}. Set the key with `pocketpilot key set` or POCKETPILOT_API_KEY")]
    Auth { status: u16, message: String },
    #[error("the model server answered 404 for {url} (model `{model}`): {message}")]
    NotFound {
        url: String,
        model: String,
        message: String,
    },
    #[error("the model server is rate limiting (HTTP 429): {message}")]
    RateLimited {
        message: String,
        retry_after: Option<Duration>,
    },
    #[error("the model server failed (HTTP {status}): {message}")]
    Server { status: u16, message: String },
    #[error("the model server refused the request (HTTP {status}): {message}")]
    Request { status: u16, message: String },
    #[error("could not reach the model server: {0}")]
    Connect(String),
    #[error("the model server timed out: {0}")]
    Timeout(String),
    #[error("the model stream broke: {0}")]
    Stream(String),
    #[error("the model server sent something unreadable: {0}")]
    InvalidResponse(String),
    #[error("scripted provider: {0}")]
    Scripted(String),
    /// The provider settings cannot work (a malformed base URL or header value).
    #[error("the model provider settings are invalid: {0}")]
    Config(String),
    /// The request (messages, tools and the room asked for the answer) does not fit the
    /// model's context window. Sending it again as it is cannot succeed; the caller has to
    /// make it smaller (compact the history) first. The numbers are the server's own, when
    /// its message gives them.
    #[error("{}", context_overflow_text(*requested, *window, message))]
    ContextOverflow {
        requested: Option<u32>,
        window: Option<u32>,
        message: String,
    },
    /// The answer went past one of the turn's caps; the connection was closed.
    #[error("the model's answer went over the cap on {what}: more than {cap}; the connection was closed", what = limit.describe())]
    StreamLimit { limit: StreamLimit, cap: usize },
}

/// Which cap of [`crate::StreamCaps`] an answer went over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamLimit {
    TextBytes,
    ToolArgumentBytes,
    ToolCalls,
    /// One stream event (or a whole non-streamed answer) too large to hold.
    EventBytes,
}

impl StreamLimit {
    fn describe(self) -> &'static str {
        match self {
            StreamLimit::TextBytes => "text bytes per turn",
            StreamLimit::ToolArgumentBytes => "tool-argument bytes per turn",
            StreamLimit::ToolCalls => "tool calls per turn",
            StreamLimit::EventBytes => "bytes in one stream event",
        }
    }
}

fn context_overflow_text(requested: Option<u32>, window: Option<u32>, message: &str) -> String {
    let sizes = match (requested, window) {
        (Some(r), Some(w)) => format!(" ({r} tokens asked, the window holds {w})"),
        (None, Some(w)) => format!(" (the window holds {w} tokens)"),
        (Some(r), None) => format!(" ({r} tokens asked)"),
        (None, None) => String::new(),
    };
    format!("the request does not fit the model's context window{sizes}: {message}")
}

impl ProviderError {
    /// Whether the same request may succeed if sent again.
    pub fn is_retryable(&self) -> bool {
        match self {
            ProviderError::RateLimited { .. }
            | ProviderError::Server { .. }
            | ProviderError::Connect(_)
            | ProviderError::Timeout(_)
            | ProviderError::Stream(_) => true,
            ProviderError::Auth { .. }
            | ProviderError::NotFound { .. }
            | ProviderError::Request { .. }
            | ProviderError::InvalidResponse(_)
            | ProviderError::Scripted(_)
            | ProviderError::Config(_)
            | ProviderError::ContextOverflow { .. }
            | ProviderError::StreamLimit { .. } => false,
        }
    }

    /// A stable machine-readable kind for events and the UI.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ProviderError::Auth { .. } => ErrorKind::ModelAuth,
            ProviderError::NotFound { .. } => ErrorKind::ModelNotFound,
            ProviderError::RateLimited { .. } => ErrorKind::ModelRateLimited,
            ProviderError::Server { .. } => ErrorKind::ModelServer,
            ProviderError::Request { .. } => ErrorKind::ModelRequest,
            ProviderError::Connect(_) => ErrorKind::ModelConnect,
            ProviderError::Timeout(_) => ErrorKind::ModelTimeout,
            ProviderError::Stream(_) => ErrorKind::ModelStream,
            ProviderError::InvalidResponse(_) => ErrorKind::ModelInvalidResponse,
            ProviderError::Scripted(_) => ErrorKind::ModelScripted,
            ProviderError::Config(_) => ErrorKind::ModelConfig,
            ProviderError::ContextOverflow { .. } => ErrorKind::ModelContextOverflow,
            ProviderError::StreamLimit { .. } => ErrorKind::ModelStreamLimit,
        }
    }
}

/// A model behind some transport. Dropping a stream must close its connection at once:
/// that is how a cancel reaches the network.
#[async_trait]
pub trait Provider: Send + Sync {
    /// A short label for events and logs (`openai:<model>`, `scripted:<file>`).
    fn label(&self) -> String;
    /// The model's name, for the token estimator and its calibration.
    fn model(&self) -> String;
    /// The context window the model declares itself (a script's `context_window`). `None`
    /// when it declares none: a model behind a server is asked (see [`Provider::server`]);
    /// one with neither has no window, and its requests are sent as they are.
    fn window(&self) -> Option<u32> {
        None
    }
    /// The OpenAI-compatible server behind this provider, whose window and chat template
    /// the runtime asks it for, and whose token counts calibrate the estimator. `None` for
    /// a provider with no server: its usage figures are its own, not a count.
    fn server(&self) -> Option<&OpenAiConfig> {
        None
    }
    fn stream(&self, messages: Vec<Message>, tools: Vec<ToolSpec>) -> TurnStream;
    async fn complete(
        &self,
        messages: Vec<Message>,
        tools: Vec<ToolSpec>,
    ) -> Result<ModelResponse, ProviderError>;
}
