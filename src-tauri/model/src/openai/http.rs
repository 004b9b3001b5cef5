//! One POST to `/chat/completions`, sent again on 429, 5xx and connect errors.
//!
//! Errors are classified here from the status and body. The API key is only ever in a
//! sensitive header; every message built from server text is scrubbed of it anyway (a
//! server may echo what it was sent).
use std::error::Error as StdError;
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use reqwest::{Response, StatusCode};
use tokio::time::{timeout, timeout_at, Instant};

use crate::provider::ProviderError;

use super::config::OpenAiConfig;
use super::overflow::context_overflow;
use super::retry::{retry_after, wait_before_retry};
use super::wire::error_message;

/// Error bodies are read up to this size.
const MAX_ERROR_BODY: usize = 64 * 1024;

pub(crate) struct Http {
    client: reqwest::Client,
    url: String,
    model: String,
    secret: Option<String>,
    idle_timeout: Duration,
    request_timeout: Duration,
    max_retries: u32,
    retry_base_delay: Duration,
}

impl Http {
    pub(crate) fn new(config: &OpenAiConfig) -> Result<Self, ProviderError> {
        let url = config.chat_url();
        let parsed = reqwest::Url::parse(&url)
            .map_err(|e| ProviderError::Config(format!("base URL `{}`: {e}", config.base_url)))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ProviderError::Config(format!(
                "base URL `{}` is not http(s)",
                config.base_url
            )));
        }
        let (client, secret) = client_for(config)?;
        Ok(Self {
            client,
            url,
            model: config.model.clone(),
            secret,
            idle_timeout: config.idle_timeout,
            request_timeout: config.request_timeout,
            max_retries: config.max_retries,
            retry_base_delay: config.retry_base_delay,
        })
    }

    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    pub(crate) fn idle_timeout(&self) -> Duration {
        self.idle_timeout
    }

    pub(crate) fn deadline(&self) -> Instant {
        Instant::now() + self.request_timeout
    }

    pub(crate) fn turn_timeout(&self) -> ProviderError {
        ProviderError::Timeout(format!(
            "no complete answer from {} within {:.0}s",
            self.url,
            self.request_timeout.as_secs_f64()
        ))
    }

    /// Sends the request until it gets a 2xx response head or a final error.
    pub(crate) async fn send(
        &self,
        body: &Bytes,
        stream: bool,
        deadline: Instant,
    ) -> Result<Response, ProviderError> {
        let mut attempt = 0;
        loop {
            let error = match self.send_once(body, stream, deadline).await {
                Ok(response) => return Ok(response),
                Err(e) => e,
            };
            let unit: f64 = rand::random();
            let Some(wait) = wait_before_retry(
                &error,
                attempt,
                self.max_retries,
                self.retry_base_delay,
                unit,
            ) else {
                return Err(error);
            };
            if Instant::now() + wait >= deadline {
                return Err(error);
            }
            tracing::warn!(
                url = %self.url,
                attempt = attempt + 1,
                wait_ms = wait.as_millis() as u64,
                kind = error.kind().as_str(),
                "model request failed; retrying: {error}"
            );
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    async fn send_once(
        &self,
        body: &Bytes,
        stream: bool,
        deadline: Instant,
    ) -> Result<Response, ProviderError> {
        let accept = if stream {
            "text/event-stream"
        } else {
            "application/json"
        };
        let request = self
            .client
            .post(&self.url)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, accept)
            .body(body.clone())
            .send();
        // A streamed answer starts with its head at once; a whole one may take as long
        // as the model needs, so only the turn's clock bounds it.
        let sent = if stream {
            match timeout_at(deadline, timeout(self.idle_timeout, request)).await {
                Err(_) => return Err(self.turn_timeout()),
                Ok(Err(_)) => {
                    return Err(ProviderError::Timeout(format!(
                        "{} sent no response within {:.1}s",
                        self.url,
                        self.idle_timeout.as_secs_f64()
                    )))
                }
                Ok(Ok(sent)) => sent,
            }
        } else {
            timeout_at(deadline, request)
                .await
                .map_err(|_| self.turn_timeout())?
        };
        let response = sent.map_err(|e| self.transport_error(&e))?;
        if response.status().is_success() {
            return Ok(response);
        }
        Err(self.status_error(response, deadline).await)
    }

    fn transport_error(&self, e: &reqwest::Error) -> ProviderError {
        let chain = error_chain(e);
        if e.is_builder() {
            return ProviderError::Config(chain);
        }
        if e.is_connect() && e.is_timeout() {
            return ProviderError::Connect(format!("connecting to {} timed out", self.url));
        }
        if e.is_connect() {
            return ProviderError::Connect(format!("{}: {chain}", self.url));
        }
        if e.is_timeout() {
            return ProviderError::Timeout(format!("{}: {chain}", self.url));
        }
        // Closed or reset before a response head: the request can be sent again.
        ProviderError::Connect(format!("{}: {chain}", self.url))
    }

    /// The error for a non-2xx response, with the server's own message.
    async fn status_error(&self, mut response: Response, deadline: Instant) -> ProviderError {
        let status = response.status();
        let wait = retry_after(response.headers());
        let mut body = Vec::new();
        let read = async {
            while let Ok(Some(chunk)) = response.chunk().await {
                body.extend_from_slice(&chunk);
                if body.len() >= MAX_ERROR_BODY {
                    break;
                }
            }
        };
        let _ = timeout_at(deadline, timeout(self.idle_timeout, read)).await;
        let text = String::from_utf8_lossy(&body);
        let mut message = error_message(&text);
        if message.is_empty() {
            message = status.canonical_reason().unwrap_or("no message").to_owned();
        }
        let message = self.scrub(message);
        // Checked before the status: llama.cpp says it with 400, older builds with 500
        // (which would otherwise be retried, in vain).
        if !matches!(status.as_u16(), 401 | 403 | 404 | 429) {
            if let Some(overflow) = context_overflow(&text, &message) {
                return overflow;
            }
        }
        classify_status(status, message, wait, &self.url, &self.model)
    }

    /// Removes the API key from a text that came from elsewhere.
    pub(crate) fn scrub(&self, text: String) -> String {
        match &self.secret {
            Some(key) if key.len() >= 4 && text.contains(key.trim()) => {
                text.replace(key.trim(), "[redacted]")
            }
            _ => text,
        }
    }

    /// The same error with the API key scrubbed from its message.
    pub(crate) fn scrub_error(&self, error: ProviderError) -> ProviderError {
        use ProviderError as E;
        match error {
            E::Auth { status, message } => E::Auth {
                status,
                message: self.scrub(message),
            },
            E::NotFound {
                url,
                model,
                message,
            } => E::NotFound {
                url: self.scrub(url),
                model,
                message: self.scrub(message),
            },
            E::RateLimited {
                message,
                retry_after,
            } => E::RateLimited {
                message: self.scrub(message),
                retry_after,
            },
            E::Server { status, message } => E::Server {
                status,
                message: self.scrub(message),
            },
            E::Request { status, message } => E::Request {
                status,
                message: self.scrub(message),
            },
            E::Connect(m) => E::Connect(self.scrub(m)),
            E::Timeout(m) => E::Timeout(self.scrub(m)),
            E::Stream(m) => E::Stream(self.scrub(m)),
            E::InvalidResponse(m) => E::InvalidResponse(self.scrub(m)),
            E::Scripted(m) => E::Scripted(self.scrub(m)),
            E::Config(m) => E::Config(self.scrub(m)),
            E::ContextOverflow {
                requested,
                window,
                message,
            } => E::ContextOverflow {
                requested,
                window,
                message: self.scrub(message),
            },
            // No server text in it.
            E::StreamLimit { limit, cap } => E::StreamLimit { limit, cap },
        }
    }
}

/// The HTTP client for one endpoint: the API key (a sensitive `Authorization` header) and
/// the extra headers on every request. Also returns the trimmed key, to scrub it from
/// server text.
pub(crate) fn client_for(
    config: &OpenAiConfig,
) -> Result<(reqwest::Client, Option<String>), ProviderError> {
    let mut headers = HeaderMap::new();
    let secret = config.api_key.clone().filter(|k| !k.trim().is_empty());
    if let Some(key) = &secret {
        let mut value = HeaderValue::from_str(&format!("Bearer {}", key.trim())).map_err(|_| {
            ProviderError::Config("the API key contains characters not allowed in a header".into())
        })?;
        value.set_sensitive(true);
        headers.insert(AUTHORIZATION, value);
    }
    for (name, value) in &config.extra_headers {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| ProviderError::Config(format!("header name `{name}` is not valid")))?;
        let mut value = HeaderValue::from_str(value).map_err(|_| {
            ProviderError::Config(format!("the value of header `{name}` is not valid"))
        })?;
        value.set_sensitive(true);
        headers.insert(header, value);
    }
    let client = reqwest::Client::builder()
        .default_headers(headers)
        .connect_timeout(config.connect_timeout)
        .tcp_nodelay(true)
        .build()
        .map_err(|e| ProviderError::Config(format!("HTTP client: {}", error_chain(&e))))?;
    Ok((client, secret))
}

pub(crate) fn classify_status(
    status: StatusCode,
    message: String,
    retry_after: Option<Duration>,
    url: &str,
    model: &str,
) -> ProviderError {
    let code = status.as_u16();
    match code {
        401 | 403 => ProviderError::Auth {
            status: code,
            message,
        },
        404 => ProviderError::NotFound {
            url: url.to_owned(),
            model: model.to_owned(),
            message,
        },
        429 => ProviderError::RateLimited {
            message,
            retry_after,
        },
        500..=599 => ProviderError::Server {
            status: code,
            message,
        },
        _ => ProviderError::Request {
            status: code,
            message,
        },
    }
}

/// An error and its causes on one line (reqwest's own message alone is often just
/// "error sending request").
pub(crate) fn error_chain(e: &(dyn StdError + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
