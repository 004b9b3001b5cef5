//! `fetch_url` (net:network): an HTTP(S) GET with a size cap and a time cap; the body is
//! returned as text.
//!
//! An approval names one URL, so it covers that URL's origin only (scheme, host, port).
//! Redirects within the origin are followed; a redirect to another origin is not: the call
//! ends with a result naming the new URL and telling the model to fetch it explicitly, so
//! that fetch goes through its own decision (and approval, showing the new URL).
use std::time::Duration;

use async_trait::async_trait;
use reqwest::Url;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{looks_binary, parse_args};
use crate::tool::{Effect, Tool, ToolContext, ToolError, ToolOutput};

pub const DEFAULT_MAX_BYTES: u64 = 256 * 1024;
pub const MAX_BYTES: u64 = 2 * 1024 * 1024;
pub const DEFAULT_TIMEOUT_SECS: u64 = 30;
pub const MAX_TIMEOUT_SECS: u64 = 120;
const MAX_REDIRECTS: usize = 5;
const MAX_URL_BYTES: usize = 8192;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    url: String,
    #[serde(default)]
    max_bytes: Option<u64>,
    #[serde(default)]
    timeout_secs: Option<u64>,
}

struct Request {
    url: Url,
    max_bytes: u64,
    timeout: u64,
}

impl Request {
    fn parse(args: &Value) -> Result<Self, ToolError> {
        let args: Args = parse_args(args)?;
        if args.url.len() > MAX_URL_BYTES {
            return Err(ToolError::InvalidArguments(format!(
                "the URL is longer than {MAX_URL_BYTES} bytes"
            )));
        }
        let url = Url::parse(args.url.trim())
            .map_err(|e| ToolError::InvalidArguments(format!("bad URL: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ToolError::InvalidArguments(format!(
                "only http and https URLs can be fetched, not `{}:`",
                url.scheme()
            )));
        }
        let max_bytes = args.max_bytes.unwrap_or(DEFAULT_MAX_BYTES);
        if max_bytes == 0 || max_bytes > MAX_BYTES {
            return Err(ToolError::InvalidArguments(format!(
                "max_bytes must be between 1 and {MAX_BYTES}"
            )));
        }
        let timeout = args.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS);
        if timeout == 0 || timeout > MAX_TIMEOUT_SECS {
            return Err(ToolError::InvalidArguments(format!(
                "timeout_secs must be between 1 and {MAX_TIMEOUT_SECS}"
            )));
        }
        Ok(Self {
            url,
            max_bytes,
            timeout,
        })
    }
}

pub struct FetchUrl;

#[async_trait]
impl Tool for FetchUrl {
    fn name(&self) -> &'static str {
        "fetch_url"
    }

    fn description(&self) -> &'static str {
        "Fetch an http(s) URL with GET and return the status and the body as text (at most \
         256 KiB by default). Redirects within the same origin (scheme, host, port) are \
         followed up to 5 times; a redirect elsewhere is reported, not followed: fetch the \
         new URL explicitly if you need it."
    }

    fn brief(&self) -> &'static str {
        "Fetch an http(s) URL with GET."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "An http:// or https:// URL."},
                "max_bytes": {"type": "integer", "minimum": 1, "maximum": MAX_BYTES},
                "timeout_secs": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_SECS}
            },
            "required": ["url"],
            "additionalProperties": false
        })
    }

    fn capability(&self) -> &'static str {
        "net:network"
    }

    fn kind(&self) -> pocketpilot_model::ToolKind {
        pocketpilot_model::ToolKind::Fetch
    }

    fn replay_safe(&self) -> bool {
        false
    }

    fn effect(&self, args: &Value, _ctx: &ToolContext) -> Result<Effect, ToolError> {
        let request = Request::parse(args)?;
        Ok(Effect::Fetch {
            url: request.url.to_string(),
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let request = Request::parse(&args)?;
        let timeout = request.timeout;
        tokio::select! {
            result = tokio::time::timeout(Duration::from_secs(timeout), fetch(&request)) => {
                match result {
                    Ok(output) => output,
                    Err(_) => Err(ToolError::TimedOut(timeout)),
                }
            }
            _ = ctx.cancel.cancelled() => Err(ToolError::Cancelled),
        }
    }
}

async fn fetch(request: &Request) -> Result<ToolOutput, ToolError> {
    let origin = request.url.origin();
    let redirects = reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() >= MAX_REDIRECTS {
            attempt.error("too many redirects")
        } else if attempt.url().origin() != origin {
            // Stopping hands the 3xx response back; `cross_origin_redirect` reports it.
            attempt.stop()
        } else {
            attempt.follow()
        }
    });
    let client = reqwest::Client::builder()
        .redirect(redirects)
        .timeout(Duration::from_secs(request.timeout))
        .user_agent(concat!("PocketPilot/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| ToolError::Failed(format!("cannot build the HTTP client: {e}")))?;
    let mut response = client
        .get(request.url.clone())
        .send()
        .await
        .map_err(|e| request_error(&e, request.timeout))?;
    let status = response.status();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("unknown")
        .to_string();
    let final_url = response.url().to_string();
    if let Some(target) = cross_origin_redirect(&response) {
        return Ok(ToolOutput::text(format!(
            "HTTP {status}\nurl: {final_url}\n\nThe server redirects to another origin: \
             {target}\nThe redirect was not followed: this fetch was approved for {} only. \
             To read it, call fetch_url with that URL (it is decided and approved on its own).",
            origin_label(&request.url)
        )));
    }
    let mut body = Vec::new();
    let mut truncated = false;
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| request_error(&e, request.timeout))?
    {
        let room = (request.max_bytes as usize).saturating_sub(body.len());
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            truncated = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    let mut text = format!("HTTP {status}\nurl: {final_url}\ncontent-type: {content_type}\n\n");
    if looks_binary(&body) {
        text.push_str(&format!(
            "[binary content, {} bytes, not shown]",
            body.len()
        ));
    } else {
        text.push_str(&String::from_utf8_lossy(&body));
    }
    if truncated {
        text.push_str(&format!(
            "\n[truncated: the body is larger than {} bytes]",
            request.max_bytes
        ));
    }
    Ok(ToolOutput::text(text))
}

/// The absolute target of a redirect response that leaves the origin of the URL it answers.
fn cross_origin_redirect(response: &reqwest::Response) -> Option<Url> {
    if !response.status().is_redirection() {
        return None;
    }
    let location = response
        .headers()
        .get(reqwest::header::LOCATION)?
        .to_str()
        .ok()?;
    let target = response.url().join(location).ok()?;
    (target.origin() != response.url().origin()).then_some(target)
}

fn origin_label(url: &Url) -> String {
    url.origin().ascii_serialization()
}

fn request_error(err: &reqwest::Error, timeout: u64) -> ToolError {
    if err.is_timeout() {
        return ToolError::TimedOut(timeout);
    }
    // reqwest's Display omits the cause ("error sending request"); the source says why.
    let mut message = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        message.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    ToolError::Failed(format!("fetch failed: {message}"))
}

#[cfg(test)]
#[path = "fetch_url_tests.rs"]
mod tests;
