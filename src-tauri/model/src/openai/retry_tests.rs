use super::*;
use reqwest::header::HeaderValue;

#[test]
fn backoff_doubles_with_jitter_in_the_upper_half_and_is_capped() {
    let base = Duration::from_millis(100);
    assert_eq!(backoff_delay(base, 0, 0.0), Duration::from_millis(50));
    assert_eq!(backoff_delay(base, 0, 1.0), Duration::from_millis(100));
    assert_eq!(backoff_delay(base, 3, 0.0), Duration::from_millis(400));
    assert_eq!(backoff_delay(base, 60, 1.0), MAX_BACKOFF);
}

#[test]
fn retry_after_ms_wins_over_seconds() {
    let mut h = HeaderMap::new();
    assert_eq!(retry_after(&h), None);
    h.insert("retry-after", HeaderValue::from_static("2"));
    assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
    h.insert("retry-after-ms", HeaderValue::from_static("250"));
    assert_eq!(retry_after(&h), Some(Duration::from_millis(250)));
    let mut h = HeaderMap::new();
    h.insert(
        "retry-after",
        HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
    );
    assert_eq!(retry_after(&h), None);
}

#[test]
fn only_rate_limits_server_errors_and_connect_errors_are_retried_and_boundedly() {
    let base = Duration::from_millis(10);
    let limited = ProviderError::RateLimited {
        message: "slow down".into(),
        retry_after: Some(Duration::from_secs(1)),
    };
    assert_eq!(
        wait_before_retry(&limited, 0, 3, base, 0.5),
        Some(Duration::from_secs(1))
    );
    assert_eq!(wait_before_retry(&limited, 3, 3, base, 0.5), None);
    let too_long = ProviderError::RateLimited {
        message: "tomorrow".into(),
        retry_after: Some(Duration::from_secs(3600)),
    };
    assert_eq!(wait_before_retry(&too_long, 0, 3, base, 0.5), None);
    let server = ProviderError::Server {
        status: 503,
        message: "busy".into(),
    };
    assert!(wait_before_retry(&server, 1, 3, base, 0.5).is_some());
    assert!(
        wait_before_retry(&ProviderError::Connect("refused".into()), 0, 1, base, 0.0).is_some()
    );
    for final_error in [
        ProviderError::Auth {
            status: 401,
            message: "no".into(),
        },
        ProviderError::Request {
            status: 400,
            message: "bad".into(),
        },
        ProviderError::Timeout("slow".into()),
    ] {
        assert_eq!(wait_before_retry(&final_error, 0, 3, base, 0.5), None);
    }
}
