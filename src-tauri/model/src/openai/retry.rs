//! When to send a request again, and how long to wait first. Pure functions: the caller
//! passes the randomness in, so tests need neither a clock nor luck.
use std::time::Duration;

use reqwest::header::HeaderMap;

use crate::provider::ProviderError;

/// A `Retry-After` longer than this is not waited for: the error goes to the caller
/// (with the wait in it) instead of freezing the turn.
pub(crate) const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);

/// Backoff ceiling for a single wait.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Whether a failed request is sent again by the provider itself. Cut streams are
/// restarted elsewhere (they need a `Reset`); timeouts are final because the turn's
/// clock is already spent.
pub(crate) fn retry_request(error: &ProviderError) -> bool {
    matches!(
        error,
        ProviderError::RateLimited { .. }
            | ProviderError::Server { .. }
            | ProviderError::Connect(_)
    )
}

/// How long to wait before retry number `attempt + 1` (attempt counts from 0).
/// `unit` is a random number in `[0, 1)`: the wait is drawn from the upper half of the
/// exponential delay ("equal jitter"), so clients that failed together spread out.
pub(crate) fn backoff_delay(base: Duration, attempt: u32, unit: f64) -> Duration {
    let exp = base
        .checked_mul(1u32.checked_shl(attempt.min(20)).unwrap_or(u32::MAX))
        .unwrap_or(MAX_BACKOFF)
        .min(MAX_BACKOFF);
    let unit = unit.clamp(0.0, 1.0);
    exp.mul_f64(0.5 + unit / 2.0)
}

/// The wait the server asked for: `retry-after-ms` (OpenAI, llmock) wins over
/// `Retry-After` in seconds. An HTTP-date is not understood and yields `None`.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| -> Option<f64> {
        let value = headers
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()?;
        (value.is_finite() && value >= 0.0).then_some(value)
    };
    if let Some(ms) = number("retry-after-ms") {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    number("retry-after").map(Duration::from_secs_f64)
}

/// The wait before the next retry, or `None` if the error is not to be retried now.
pub(crate) fn wait_before_retry(
    error: &ProviderError,
    attempt: u32,
    max_retries: u32,
    base: Duration,
    unit: f64,
) -> Option<Duration> {
    if attempt >= max_retries || !retry_request(error) {
        return None;
    }
    let wait = match error {
        ProviderError::RateLimited {
            retry_after: Some(wait),
            ..
        } => *wait,
        _ => backoff_delay(base, attempt, unit),
    };
    (wait <= MAX_RETRY_WAIT).then_some(wait)
}

#[cfg(test)]
#[path = "retry_tests.rs"]
mod tests;
