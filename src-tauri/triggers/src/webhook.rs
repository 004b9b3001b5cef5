//! Webhooks: `POST /hooks/{name}` on 127.0.0.1 creates an ordinary task, or speaks to a
//! named session through its inbox.
//!
//! Request: header `X-PocketPilot-Token: TOKEN` or `Authorization: Bearer TOKEN`,
//! `Content-Type: application/json`, body
//! `{"text": "...", "session": 3?, "follow_up_of": 9?, "when_busy": "followUp"?}`
//! (`text` ≤ 4000 characters; unknown fields are refused). Answer: `202 {"task_id": N}`.
//!
//! Naming a `session` (without `follow_up_of`) speaks to that conversation as a person in
//! the window does, through its durable inbox: idle, the text starts a run
//! (`202 {"task_id", "submission_id"}`); busy, it waits for the agent like any follow-up
//! (`202 {"task_id": null, "submission_id", "queued": true}`), or joins the run as a steer
//! with `"when_busy": "steer"` — unless the run is a person's: then the steer waits for
//! that run's answer and starts a run of its own (trigger `webhook`), because a trigger's
//! words must never act under grants the person gave (`core/src/inbox.rs`);
//! `"when_busy": "reject"` answers 409 instead.
//! Errors are `{"error": {"kind", "message"}}`, checked in this order:
//! 401 `unauthorized` for an unknown or paused hook and a missing or bad token alike (the
//! same body, the digest compared in every case: the answer does not tell which names
//! exist) → 429 over the hook's rate →
//! 415 not JSON → 413 body over [`MAX_BODY_BYTES`] → 400 malformed or invalid body.
//! 503 while all triggers are paused; 409 when the named session is busy and the request
//! said `"when_busy": "reject"`, or names a task to follow up while the session is busy,
//! or the hook's workspace is gone.
//!
//! A `session` or `follow_up_of` must belong to the hook's own workspace: a hook's token
//! grants nothing outside the folder it was created for.
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Path as UrlPath, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use futures::StreamExt;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio_util::sync::CancellationToken;

use pocketpilot_core::ops;
use pocketpilot_protocol::{ErrorKind, RunSource};

use super::{canonical_workspace, Fire, Result, TriggerError, TriggerSettings};
use pocketpilot_core::api::service::{Runtime, RuntimeError};
use pocketpilot_core::engine::inbox::{InboxError, Say, Submit, WhenBusy};
use pocketpilot_store::triggers;

/// The most a request body may hold. A 4000-character text fully `\u`-escaped (surrogate
/// pairs: 12 bytes per character) is 48 000 bytes, so the bound sits above that.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// The most characters (Unicode scalar values) a hook's `text` may hold.
pub const MAX_TEXT_CHARS: usize = 4000;

// ------------------------------------------------------------------------- definitions

#[derive(Debug, Clone, Serialize)]
pub struct CreatedHook {
    pub hook: triggers::Webhook,
    /// Shown once: only its SHA-256 digest is stored.
    pub token: String,
}

/// Creates a hook for a workspace and returns its token, which is never shown again.
pub fn create(
    rt: &Arc<Runtime>,
    name: &str,
    workspace: &Path,
    provider: Option<&str>,
) -> Result<CreatedHook> {
    let valid = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !valid {
        return Err(TriggerError::InvalidName(name.to_owned()));
    }
    let workspace = canonical_workspace(workspace)?;
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let token = hex::encode(bytes);
    let hook = rt.call(ops::CreateWebhook {
        name: name.to_owned(),
        workspace,
        token_sha256: digest(&token),
        provider: provider.map(str::to_owned),
    })?;
    let hook = hook.ok_or_else(|| TriggerError::Duplicate(name.to_owned()))?;
    tracing::info!(hook = name, workspace = %hook.workspace, "webhook created");
    Ok(CreatedHook { hook, token })
}

pub fn list(rt: &Arc<Runtime>) -> Result<Vec<triggers::Webhook>> {
    Ok(rt.call(ops::ListWebhooks {})?)
}

pub fn set_paused(rt: &Arc<Runtime>, name: &str, paused: bool) -> Result<()> {
    Ok(rt.call(ops::SetWebhookPaused {
        name: name.to_owned(),
        paused,
    })?)
}

pub fn delete(rt: &Arc<Runtime>, name: &str) -> Result<()> {
    Ok(rt.call(ops::DeleteWebhook {
        name: name.to_owned(),
    })?)
}

fn digest(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Constant-time: the digests always have the same length, and `ct_eq` does not stop at
/// the first differing byte.
fn token_matches(presented: &str, stored_sha256: &str) -> bool {
    digest(presented)
        .as_bytes()
        .ct_eq(stored_sha256.as_bytes())
        .into()
}

/// Compared against when no active hook has the requested name: not hex, so no token's
/// digest equals it, and as long as a real one, so the comparison costs the same.
const NO_HOOK_DIGEST: &str = "----------------------------------------------------------------";

/// The hook, when it exists, is active and `presented` is its token. Every refusal is the
/// same [`HookError::unauthorized`], and the digest is computed and compared whether or
/// not the hook exists, so neither the answer nor its timing tells which names exist.
fn authenticate(
    hook: Option<triggers::Webhook>,
    presented: Option<&str>,
) -> Result<triggers::Webhook, HookError> {
    let stored = hook
        .as_ref()
        .map_or(NO_HOOK_DIGEST, |h| h.token_sha256.as_str());
    let matches = token_matches(presented.unwrap_or_default(), stored);
    match hook {
        Some(hook) if matches && presented.is_some() => Ok(hook),
        _ => Err(HookError::unauthorized()),
    }
}

// ---------------------------------------------------------------------------- listener

/// Per-hook token bucket.
struct RateLimiter {
    per_second: f64,
    burst: f64,
    buckets: Mutex<HashMap<i64, (f64, Instant)>>,
}

impl RateLimiter {
    fn new(settings: &TriggerSettings) -> Self {
        Self {
            per_second: f64::from(settings.webhook_rate_per_minute.max(1)) / 60.0,
            burst: f64::from(settings.webhook_burst.max(1)),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// `Ok` and one token taken, or the seconds until one is free.
    fn take(&self, hook_id: i64) -> std::result::Result<(), u64> {
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let (tokens, at) = buckets.entry(hook_id).or_insert((self.burst, now));
        let refill = now.duration_since(*at).as_secs_f64() * self.per_second;
        *tokens = (*tokens + refill).min(self.burst);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else {
            Err(((1.0 - *tokens) / self.per_second).ceil().max(1.0) as u64)
        }
    }
}

#[derive(Clone)]
struct AppState {
    rt: Arc<Runtime>,
    limiter: Arc<RateLimiter>,
}

/// The router: `POST /hooks/{name}`; anything else is a JSON 404/405.
pub fn router(rt: Arc<Runtime>, settings: &TriggerSettings) -> Router {
    let state = AppState {
        rt,
        limiter: Arc::new(RateLimiter::new(settings)),
    };
    Router::new()
        .route(
            "/hooks/{name}",
            post(receive).fallback(|| async {
                HookError::new(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "method_not_allowed",
                    "use POST",
                )
            }),
        )
        .fallback(|| async {
            HookError::new(
                StatusCode::NOT_FOUND,
                "not_found",
                "nothing here: hooks are at POST /hooks/NAME",
            )
        })
        .with_state(state)
}

/// Binds 127.0.0.1:`port` (0: any free port). Loopback only, whatever the settings say.
pub async fn bind(port: u16) -> Result<tokio::net::TcpListener> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| TriggerError::Listen {
            addr: addr.to_string(),
            source,
        })
}

/// Serves until `shutdown` is cancelled, then lets requests in flight finish.
pub async fn serve(
    listener: tokio::net::TcpListener,
    rt: Arc<Runtime>,
    settings: &TriggerSettings,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let app = router(rt, settings);
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
}

/// A hook's body must be a JSON object: serde's derived struct parsing would also take an
/// array by position, which no client means.
fn parse_body(bytes: &[u8]) -> Result<HookBody, HookError> {
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
        HookError::bad("malformed_json", format!("the body is not valid JSON: {e}"))
    })?;
    if !value.is_object() {
        return Err(HookError::bad(
            "invalid_body",
            "the body must be a JSON object {text, session?, follow_up_of?, when_busy?}",
        ));
    }
    serde_json::from_value(value).map_err(|e| {
        HookError::bad(
            "invalid_body",
            format!("the body does not fit {{text, session?, follow_up_of?, when_busy?}}: {e}"),
        )
    })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HookBody {
    text: Option<String>,
    #[serde(default)]
    session: Option<i64>,
    #[serde(default)]
    follow_up_of: Option<i64>,
    #[serde(default)]
    when_busy: Option<WhenBusy>,
}

/// What an accepted request did.
#[derive(Debug, Serialize)]
struct Accepted {
    /// The run it started; `None` while it waits in a busy session's inbox.
    task_id: Option<i64>,
    /// Its place in the session's inbox, when it named a session.
    #[serde(skip_serializing_if = "Option::is_none")]
    submission_id: Option<i64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    queued: bool,
}

impl From<TriggerError> for HookError {
    fn from(e: TriggerError) -> Self {
        HookError::internal(e)
    }
}

#[derive(Debug)]
struct HookError {
    status: StatusCode,
    kind: &'static str,
    message: String,
    retry_after: Option<u64>,
}

impl HookError {
    fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            kind,
            message: message.into(),
            retry_after: None,
        }
    }
    /// Unknown, paused, no token, wrong token: one answer for all.
    fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "no active hook with this name accepts this token; send the hook's token in \
             X-PocketPilot-Token or Authorization: Bearer",
        )
    }

    fn bad(kind: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, kind, message)
    }
    fn internal(e: impl std::fmt::Display) -> Self {
        tracing::error!(error = %e, "webhook failed");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the task could not be created; see the log",
        )
    }
}

impl IntoResponse for HookError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": { "kind": self.kind, "message": self.message } });
        let mut resp = (self.status, axum::Json(body)).into_response();
        if let Some(secs) = self.retry_after {
            if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
                resp.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        resp
    }
}

async fn receive(
    State(state): State<AppState>,
    UrlPath(name): UrlPath<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    match accept(&state, &name, &headers, body).await {
        Ok(accepted) => (StatusCode::ACCEPTED, axum::Json(accepted)).into_response(),
        Err(e) => {
            tracing::info!(hook = %name, status = e.status.as_u16(), kind = e.kind, "webhook refused");
            e.into_response()
        }
    }
}

/// A request to a hook: who may send it, what it says, then the text spoken to a session
/// or a new task fired.
async fn accept(
    state: &AppState,
    name: &str,
    headers: &HeaderMap,
    body: Body,
) -> Result<Accepted, HookError> {
    let rt = &state.rt;
    let hook = admit(state, name, headers)?;
    let bytes = read_bounded(headers, body).await?;
    let body = parse_body(&bytes)?;
    let text = checked_text(&body)?.to_owned();
    check_scope(rt, &hook.workspace, body.session, body.follow_up_of)?;
    let rt = rt.clone();
    if let (Some(session), None) = (body.session, body.follow_up_of) {
        let when_busy = body.when_busy.unwrap_or_default();
        return super::blocking(move || say_to_session(&rt, &hook, session, &text, when_busy))
            .await;
    }
    fire_task(rt, hook, text, body.session, body.follow_up_of).await
}

/// The hook `name` when triggers run, it is active, the request carries its token, its
/// rate allows one more, and the body is said to be JSON.
fn admit(
    state: &AppState,
    name: &str,
    headers: &HeaderMap,
) -> Result<triggers::Webhook, HookError> {
    let rt = &state.rt;
    let paused = TriggerSettings::load(rt)
        .map_err(HookError::internal)?
        .paused;
    if paused {
        return Err(HookError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "paused",
            "all triggers are paused; resume them in PocketPilot",
        ));
    }
    let hook = rt
        .call(ops::GetWebhook {
            name: name.to_owned(),
        })
        .map_err(HookError::internal)?
        .filter(|h| !h.paused);
    let hook = authenticate(hook, presented_token(headers))?;
    if let Err(secs) = state.limiter.take(hook.id) {
        let mut e = HookError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            format!("too many requests for hook `{name}`; retry in {secs} s"),
        );
        e.retry_after = Some(secs);
        return Err(e);
    }
    if !is_json(headers) {
        return Err(HookError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "send Content-Type: application/json",
        ));
    }
    Ok(hook)
}

/// The body's text, trimmed: present, not too long, and `when_busy` only where it applies.
fn checked_text(body: &HookBody) -> Result<&str, HookError> {
    let text = body.text.as_deref().map(str::trim).unwrap_or_default();
    if text.is_empty() {
        return Err(HookError::bad(
            "missing_text",
            "`text` is required and must not be empty",
        ));
    }
    let chars = text.chars().count();
    if chars > MAX_TEXT_CHARS {
        return Err(HookError::bad(
            "text_too_long",
            format!("`text` has {chars} characters; the most is {MAX_TEXT_CHARS}"),
        ));
    }
    if body.when_busy.is_some() && (body.session.is_none() || body.follow_up_of.is_some()) {
        return Err(HookError::bad(
            "invalid_body",
            "`when_busy` applies only to a request that names a `session` (without `follow_up_of`)",
        ));
    }
    Ok(text)
}

/// A new task for the hook's text (in a new session, or following up a task).
async fn fire_task(
    rt: Arc<Runtime>,
    hook: triggers::Webhook,
    text: String,
    session_id: Option<i64>,
    follow_up_of: Option<i64>,
) -> Result<Accepted, HookError> {
    let (task_id, hook) = super::blocking(move || {
        let fire = Fire {
            kind: RunSource::Webhook,
            trigger_id: hook.id,
            workspace: &hook.workspace,
            goal: &text,
            provider: hook.provider.as_deref(),
            session_id,
            follow_up_of,
            scheduled_for: None,
            reason: None,
        };
        let fired = super::fire(&rt, &fire);
        if fired.is_ok() {
            note_fired(&rt, &hook);
        }
        Ok::<_, TriggerError>((fired, hook))
    })
    .await
    .map_err(HookError::internal)?;
    let task_id = task_id.map_err(|e| not_fired(e, &hook))?;
    Ok(Accepted {
        task_id: Some(task_id),
        submission_id: None,
        queued: false,
    })
}

/// Why a task was not fired, as the sender should read it.
fn not_fired(e: TriggerError, hook: &triggers::Webhook) -> HookError {
    match e.kind() {
        ErrorKind::ConversationBusy => HookError::new(
            StatusCode::CONFLICT,
            "conversation_busy",
            "the session is busy: the agent is still working on it; send again when it is done, or leave out `follow_up_of` to queue the text",
        ),
        ErrorKind::InboxFull => {
            HookError::new(StatusCode::TOO_MANY_REQUESTS, "inbox_full", e.to_string())
        }
        ErrorKind::Workspace => HookError::new(
            StatusCode::CONFLICT,
            "workspace",
            format!("the hook's workspace {} is gone: {e}", hook.workspace),
        ),
        _ => HookError::internal(e),
    }
}

/// Speaks to a session through its inbox, as the window's composer does.
fn say_to_session(
    rt: &Arc<Runtime>,
    hook: &triggers::Webhook,
    session: i64,
    text: &str,
    when_busy: WhenBusy,
) -> Result<Accepted, HookError> {
    let submit = Submit {
        session_id: session,
        say: Say::Input {
            text: text.to_owned(),
            when_busy,
            reject_if_idle: false,
        },
        request_id: None,
        // The hook's own model if it names one, else the conversation's.
        provider: hook.provider.clone(),
        trigger: Some(RunSource::Webhook),
        grants: Vec::new(),
        mcp: None,
    };
    let admitted = rt.call(ops::Say { submit }).map_err(|e| match e {
        RuntimeError::Inbox(InboxError::ConversationBusy(_)) => HookError::new(
            StatusCode::CONFLICT,
            "conversation_busy",
            "the session is busy and the request said \"when_busy\": \"reject\"",
        ),
        // Nothing was queued: the sender may try again once the agent has taken some.
        RuntimeError::Inbox(e @ InboxError::InboxFull { .. }) => {
            HookError::new(StatusCode::TOO_MANY_REQUESTS, "inbox_full", e.to_string())
        }
        e => HookError::internal(e),
    })?;
    let submission_id = admitted.submission.id;
    // Queued, the fire has no task yet: the reason says where the text waits.
    let queued = admitted
        .started
        .is_none()
        .then(|| format!("queued in session {session}'s inbox (submission {submission_id})"));
    let run = ops::RecordTriggerRun {
        kind: RunSource::Webhook,
        trigger_id: hook.id,
        outcome: ops::TriggerOutcome::Fired,
        task_id: admitted.started,
        reason: queued,
        scheduled_for: None,
    };
    if let Err(e) = rt.call(run) {
        tracing::warn!(submission_id, error = %e, "could not record the hook's run");
    }
    note_fired(rt, hook);
    tracing::info!(
        session_id = session,
        submission_id,
        task_id = admitted.started,
        "webhook spoke to a session"
    );
    Ok(Accepted {
        task_id: admitted.started,
        submission_id: Some(submission_id),
        queued: admitted.started.is_none(),
    })
}

fn note_fired(rt: &Arc<Runtime>, hook: &triggers::Webhook) {
    let at = super::stamp(chrono::Utc::now());
    if let Err(e) = rt.call(ops::NoteWebhookFired { id: hook.id, at }) {
        tracing::warn!(hook = %hook.name, error = %e, "could not note the hook's last fire");
    }
}

fn presented_token(headers: &HeaderMap) -> Option<&str> {
    if let Some(v) = headers
        .get("x-pocketpilot-token")
        .and_then(|v| v.to_str().ok())
    {
        return Some(v.trim());
    }
    let auth = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = auth.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
}

fn too_large() -> HookError {
    HookError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "body_too_large",
        format!("the body is over {MAX_BODY_BYTES} bytes"),
    )
}

/// Reads the body, refusing it as soon as it passes the bound (a lying or missing
/// Content-Length does not matter).
async fn read_bounded(headers: &HeaderMap, body: Body) -> Result<Vec<u8>, HookError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(too_large());
    }
    let mut stream = body.into_data_stream();
    let mut buf = Vec::with_capacity(declared.unwrap_or(0).min(MAX_BODY_BYTES as u64) as usize);
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            HookError::bad(
                "unreadable_body",
                format!("the body could not be read: {e}"),
            )
        })?;
        if buf.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(too_large());
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf)
}

/// A hook may continue a session or follow up a task only in its own workspace.
fn check_scope(
    rt: &Arc<Runtime>,
    workspace: &str,
    session: Option<i64>,
    follow_up_of: Option<i64>,
) -> Result<(), HookError> {
    let in_scope = |session_id: i64| -> Result<bool, HookError> {
        match rt.call(ops::GetSession { session_id }) {
            Ok(s) => Ok(s.workspace == workspace),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
            Err(e) => Err(HookError::internal(e)),
        }
    };
    if let Some(id) = session {
        if !in_scope(id)? {
            return Err(HookError::bad(
                "unknown_session",
                format!("no session {id} in this hook's workspace"),
            ));
        }
    }
    if let Some(id) = follow_up_of {
        let task = match rt.call(ops::GetTask { id }) {
            Ok(t) => Some(t),
            Err(e) if e.kind() == ErrorKind::NotFound => None,
            Err(e) => return Err(HookError::internal(e)),
        };
        let ok = match task {
            Some(t) => in_scope(t.session_id)? && session.is_none_or(|s| s == t.session_id),
            None => false,
        };
        if !ok {
            return Err(HookError::bad(
                "unknown_task",
                format!("no task {id} in this hook's workspace (and session)"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_by_digest() {
        let stored = digest("secret");
        assert!(token_matches("secret", &stored));
        assert!(!token_matches("secreT", &stored));
        assert!(!token_matches("", &stored));
    }

    #[test]
    fn bearer_and_header_tokens_are_read() {
        let mut h = HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer abc"),
        );
        assert_eq!(presented_token(&h), Some("abc"));
        h.insert("x-pocketpilot-token", HeaderValue::from_static("xyz"));
        assert_eq!(presented_token(&h), Some("xyz"));
        let mut basic = HeaderMap::new();
        basic.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic abc"));
        assert_eq!(presented_token(&basic), None);
    }

    #[test]
    fn the_rate_limiter_refills_over_time() {
        let l = RateLimiter::new(&TriggerSettings {
            webhook_rate_per_minute: 60,
            webhook_burst: 2,
            ..TriggerSettings::default()
        });
        assert!(l.take(1).is_ok());
        assert!(l.take(1).is_ok());
        assert_eq!(l.take(1), Err(1));
        // Another hook has its own bucket.
        assert!(l.take(2).is_ok());
    }
}
