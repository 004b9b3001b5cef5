//! Server-sent events over a response body, with an idle timer.
//!
//! `eventsource-stream` does the SSE framing (LF/CRLF/CR line ends, comments and
//! keep-alives, multi-line `data:`, a UTF-8 character split across reads). What it yields
//! here is the payload of each event, or `Done` for `data: [DONE]`. Silence longer than
//! the idle limit (no bytes at all, comments included) ends the stream with an error:
//! the caller treats it like a cut connection. One event growing past a cap (bytes since
//! the last blank line: `eventsource-stream` buffers them) ends the stream with
//! [`ProviderError::StreamLimit`], so an endless line cannot exhaust memory.
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use eventsource_stream::{EventStream, EventStreamError};
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use tokio::time::{Instant, Sleep};

use crate::provider::{ProviderError, StreamLimit};

#[derive(Debug, PartialEq)]
pub(crate) enum SseItem {
    Data(String),
    Done,
}

/// Why the bytes stopped.
#[derive(Debug)]
pub(crate) enum ByteError {
    Transport(String),
    Idle(Duration),
    EventTooLarge(usize),
}

impl fmt::Display for ByteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ByteError::Transport(e) => write!(f, "the connection broke: {e}"),
            ByteError::Idle(d) => write!(f, "no data for {:.1}s", d.as_secs_f64()),
            ByteError::EventTooLarge(cap) => write!(f, "one event is larger than {cap} bytes"),
        }
    }
}

/// A byte stream that fails once nothing has arrived for `limit`.
pub(crate) struct IdleTimed {
    inner: BoxStream<'static, Result<Bytes, ByteError>>,
    sleep: Pin<Box<Sleep>>,
    limit: Duration,
    expired: bool,
}

impl IdleTimed {
    pub(crate) fn new(
        inner: BoxStream<'static, Result<Bytes, ByteError>>,
        limit: Duration,
    ) -> Self {
        Self {
            inner,
            sleep: Box::pin(tokio::time::sleep(limit)),
            limit,
            expired: false,
        }
    }
}

impl Stream for IdleTimed {
    type Item = Result<Bytes, ByteError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.expired {
            return Poll::Ready(None);
        }
        match this.inner.poll_next_unpin(cx) {
            Poll::Ready(Some(Ok(bytes))) => {
                let next = Instant::now() + this.limit;
                this.sleep.as_mut().reset(next);
                Poll::Ready(Some(Ok(bytes)))
            }
            Poll::Ready(other) => Poll::Ready(other),
            Poll::Pending => match this.sleep.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    this.expired = true;
                    Poll::Ready(Some(Err(ByteError::Idle(this.limit))))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

/// A byte stream that fails once one SSE event (the bytes between blank lines, line ends
/// not counted) grows past `cap`.
pub(crate) struct EventBounded {
    inner: BoxStream<'static, Result<Bytes, ByteError>>,
    cap: usize,
    event: usize,
    at_line_start: bool,
    after_cr: bool,
    failed: bool,
}

impl EventBounded {
    pub(crate) fn new(inner: BoxStream<'static, Result<Bytes, ByteError>>, cap: usize) -> Self {
        Self {
            inner,
            cap,
            event: 0,
            at_line_start: true,
            after_cr: false,
            failed: false,
        }
    }

    /// Counts `bytes`; `false` once the event in progress is over the cap.
    fn count(&mut self, bytes: &[u8]) -> bool {
        for &b in bytes {
            match b {
                // The `\n` of a `\r\n` line end.
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    if self.at_line_start {
                        self.event = 0;
                    }
                    self.at_line_start = true;
                    self.after_cr = b == b'\r';
                }
                _ => {
                    self.after_cr = false;
                    self.at_line_start = false;
                    self.event += 1;
                    if self.event > self.cap {
                        return false;
                    }
                }
            }
        }
        true
    }
}

impl Stream for EventBounded {
    type Item = Result<Bytes, ByteError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.failed {
            return Poll::Ready(None);
        }
        match this.inner.poll_next_unpin(cx) {
            Poll::Ready(Some(Ok(bytes))) if !this.count(&bytes) => {
                this.failed = true;
                Poll::Ready(Some(Err(ByteError::EventTooLarge(this.cap))))
            }
            other => other,
        }
    }
}

/// The events of one streamed response.
pub(crate) struct SseStream {
    events: EventStream<IdleTimed>,
}

impl SseStream {
    pub(crate) fn new(
        body: BoxStream<'static, Result<Bytes, ByteError>>,
        idle: Duration,
        max_event_bytes: usize,
    ) -> Self {
        let bounded = EventBounded::new(body, max_event_bytes).boxed();
        Self {
            events: EventStream::new(IdleTimed::new(bounded, idle)),
        }
    }

    /// The body of a reqwest response as SSE.
    pub(crate) fn from_response(
        response: reqwest::Response,
        idle: Duration,
        max_event_bytes: usize,
    ) -> Self {
        let body = response
            .bytes_stream()
            .map(|r| r.map_err(|e| ByteError::Transport(super::http::error_chain(&e))))
            .boxed();
        Self::new(body, idle, max_event_bytes)
    }

    /// The next event; `Ok(None)` when the body ended (cleanly or not: the caller decides
    /// from what it saw whether the answer was complete).
    pub(crate) async fn next(&mut self) -> Result<Option<SseItem>, ProviderError> {
        loop {
            let Some(event) = self.events.next().await else {
                return Ok(None);
            };
            let event = event.map_err(|e| match e {
                EventStreamError::Transport(ByteError::Idle(d)) => ProviderError::Stream(format!(
                    "the stream went silent (no data for {:.1}s)",
                    d.as_secs_f64()
                )),
                EventStreamError::Transport(ByteError::EventTooLarge(cap)) => {
                    ProviderError::StreamLimit {
                        limit: StreamLimit::EventBytes,
                        cap,
                    }
                }
                EventStreamError::Transport(t) => ProviderError::Stream(t.to_string()),
                EventStreamError::Utf8(e) => {
                    ProviderError::Stream(format!("the stream is not UTF-8: {e}"))
                }
                EventStreamError::Parser(e) => {
                    ProviderError::Stream(format!("the stream is not valid SSE: {e}"))
                }
            })?;
            let data = event.data;
            if data.trim() == "[DONE]" {
                return Ok(Some(SseItem::Done));
            }
            if data.trim().is_empty() {
                continue;
            }
            return Ok(Some(SseItem::Data(data)));
        }
    }
}

#[cfg(test)]
#[path = "sse_tests.rs"]
mod tests;
