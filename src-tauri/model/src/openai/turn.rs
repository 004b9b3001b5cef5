//! One streamed turn, as a state machine polled by the stream the caller holds.
//!
//! ```text
//! Start ──request──▶ Streaming ──finish/[DONE]──▶ Done
//!   │                   │
//!   │                   ├─ cut after text was shown ─▶ Reset, back to Start (bounded)
//!   │                   └─ cut before any text ──────▶ whole answer (complete())
//!   └─ request failed (after retries) ──────────────▶ whole answer, or the error
//! ```
//! Nothing is spawned: the connection lives in this struct, so dropping the stream closes
//! it. Every wait is bounded by the turn's deadline.
use std::collections::VecDeque;
use std::mem;
use std::sync::Arc;

use bytes::Bytes;
use tokio::time::{timeout_at, Instant};

use crate::chat::{Message, ModelResponse, ToolSpec};
use crate::provider::{ProviderError, StreamEvent};

use super::assemble::Assembler;
use super::sse::{SseItem, SseStream};
use super::{is_json, Inner};

pub(crate) struct Turn {
    inner: Arc<Inner>,
    messages: Vec<Message>,
    tools: Vec<ToolSpec>,
    body: Option<Bytes>,
    deadline: Instant,
    phase: Phase,
    pending: VecDeque<StreamEvent>,
    restarts: u32,
}

enum Phase {
    Start,
    Streaming {
        events: Box<SseStream>,
        assembler: Assembler,
        /// Whether this attempt has yielded text the caller may be showing.
        shown: bool,
    },
    Finished,
}

/// What one read from the stream amounts to.
enum Step {
    Delta(String),
    Nothing,
    Complete,
    Broken(ProviderError),
}

impl Turn {
    pub(crate) fn new(inner: Arc<Inner>, messages: Vec<Message>, tools: Vec<ToolSpec>) -> Self {
        let deadline = inner.http.deadline();
        Self {
            inner,
            messages,
            tools,
            body: None,
            deadline,
            phase: Phase::Start,
            pending: VecDeque::new(),
            restarts: 0,
        }
    }

    /// The next event; `None` once the turn is over (after `Done` or an error).
    pub(crate) async fn next(&mut self) -> Option<Result<StreamEvent, ProviderError>> {
        match self.step().await {
            Some(Err(e)) => {
                self.phase = Phase::Finished;
                self.pending.clear();
                Some(Err(self.inner.http.scrub_error(e)))
            }
            other => other,
        }
    }

    async fn step(&mut self) -> Option<Result<StreamEvent, ProviderError>> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(Ok(event));
            }
            let step = match &mut self.phase {
                Phase::Finished => return None,
                Phase::Start => {
                    if !self.inner.config.stream {
                        return Some(self.whole().await);
                    }
                    match self.open().await {
                        Ok(()) => continue,
                        Err(e) => return Some(self.fall_back(e).await),
                    }
                }
                Phase::Streaming {
                    events,
                    assembler,
                    shown,
                } => {
                    let item = match timeout_at(self.deadline, events.next()).await {
                        Ok(item) => item,
                        Err(_) => return Some(Err(self.inner.http.turn_timeout())),
                    };
                    let step = read_step(item, assembler, &self.inner);
                    if matches!(step, Step::Delta(_)) {
                        *shown = true;
                    }
                    step
                }
            };
            match step {
                Step::Delta(text) => return Some(Ok(StreamEvent::Delta(text))),
                Step::Nothing => continue,
                Step::Complete => {
                    let Phase::Streaming { assembler, .. } =
                        mem::replace(&mut self.phase, Phase::Finished)
                    else {
                        return None;
                    };
                    return Some(Ok(StreamEvent::Done(assembler.finish())));
                }
                Step::Broken(e) => {
                    let shown = matches!(self.phase, Phase::Streaming { shown: true, .. });
                    self.phase = Phase::Finished;
                    if !shown {
                        return Some(self.fall_back(e).await);
                    }
                    if let Err(e) = self.restart(e) {
                        return Some(Err(e));
                    }
                }
            }
        }
    }

    /// After the stream broke mid-answer: the caller is told to drop what it showed and
    /// the turn asks again, a bounded number of times and only for a failure worth it;
    /// otherwise the failure is the turn's.
    fn restart(&mut self, e: ProviderError) -> Result<(), ProviderError> {
        if self.restarts >= self.inner.config.max_stream_restarts || !e.is_retryable() {
            return Err(e);
        }
        self.restarts += 1;
        tracing::warn!(
            url = self.inner.http.url(),
            restart = self.restarts,
            "the model stream broke mid-answer; asking again: {}",
            self.inner.http.scrub(e.to_string())
        );
        self.pending.push_back(StreamEvent::Reset);
        self.phase = Phase::Start;
        Ok(())
    }

    /// Sends the streaming request and enters `Streaming` (or, for a server that answers
    /// a streaming request with one JSON document, queues that answer).
    async fn open(&mut self) -> Result<(), ProviderError> {
        let body = match &self.body {
            Some(body) => body.clone(),
            None => {
                let body = self.inner.body(&self.messages, &self.tools, true)?;
                self.body = Some(body.clone());
                body
            }
        };
        let response = self.inner.http.send(&body, true, self.deadline).await?;
        if is_json(&response) {
            let answer = self.inner.read_whole(response, self.deadline).await?;
            self.phase = Phase::Finished;
            self.queue_whole(answer);
            return Ok(());
        }
        self.phase = Phase::Streaming {
            events: Box::new(SseStream::from_response(
                response,
                self.inner.http.idle_timeout(),
                self.inner.config.stream_caps.max_event_bytes,
            )),
            assembler: Assembler::new(self.inner.config.stream_caps),
            shown: false,
        };
        Ok(())
    }

    /// After a failure before any text: ask for the whole answer instead, when that has a
    /// chance (the stream itself was the trouble), else report the error.
    async fn fall_back(&mut self, error: ProviderError) -> Result<StreamEvent, ProviderError> {
        self.phase = Phase::Finished;
        let worth_it = matches!(
            error,
            ProviderError::Stream(_)
                | ProviderError::InvalidResponse(_)
                | ProviderError::Server { .. }
                | ProviderError::Request { .. }
        );
        if !worth_it {
            return Err(error);
        }
        tracing::warn!(
            url = self.inner.http.url(),
            "streaming failed before the first delta; asking for the whole answer: {}",
            self.inner.http.scrub(error.to_string())
        );
        self.whole().await
    }

    /// One non-streamed request, yielded as one delta and `Done`.
    async fn whole(&mut self) -> Result<StreamEvent, ProviderError> {
        self.phase = Phase::Finished;
        let answer = self
            .inner
            .complete(&self.messages, &self.tools, self.deadline)
            .await?;
        self.queue_whole(answer);
        self.pending
            .pop_front()
            .ok_or_else(|| ProviderError::InvalidResponse("empty answer".into()))
    }

    fn queue_whole(&mut self, answer: ModelResponse) {
        if !answer.text.is_empty() {
            self.pending
                .push_back(StreamEvent::Delta(answer.text.clone()));
        }
        self.pending.push_back(StreamEvent::Done(answer));
    }
}

/// What one read from the stream amounts to, given the answer assembled so far.
fn read_step(
    item: Result<Option<SseItem>, ProviderError>,
    assembler: &mut Assembler,
    inner: &Inner,
) -> Step {
    let step = match item {
        Ok(Some(SseItem::Data(data))) => match assembler.feed(&data) {
            Ok(Some(text)) => Step::Delta(text),
            Ok(None) => Step::Nothing,
            Err(e) => Step::Broken(e),
        },
        Ok(Some(SseItem::Done)) => Step::Complete,
        // A body that ends after the finish reason is complete even without `[DONE]`; one
        // that ends before it was cut off.
        Ok(None) if assembler.has_finish_reason() => Step::Complete,
        Ok(None) => Step::Broken(ProviderError::Stream(
            "the stream ended before the answer was complete".into(),
        )),
        Err(e) => Step::Broken(e),
    };
    // Once the finish reason is in, the answer is whole: a connection lost or a garbled
    // chunk after it only costs the usage figures.
    match step {
        Step::Broken(e) if assembler.has_finish_reason() => {
            tracing::debug!(
                "the stream broke after the finish reason: {}",
                inner.http.scrub(e.to_string())
            );
            Step::Complete
        }
        step => step,
    }
}
