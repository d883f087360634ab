//! Every request the server turns away for want of room or by a limit is counted by reason
//! (`mcp_http_refusals_total{reason}` on `GET /metrics`) and logged at WARN, at most once a
//! second, with the number of refusals not logged since (`suppressed`), so that an operator
//! can tell why clients are turned away without a flood of refusals flooding the log.
//!
//! One mechanism: whatever refuses (a policy layer, the endpoint) marks its response with
//! [`refused`]; the outermost [`MetricsLayer`](super::metrics::MetricsLayer) reads the mark
//! and reports it here ([`RefusalLog`]). A stack built without that layer
//! ([`mcp_router`](super::mcp_router)) neither counts nor logs them.
//!
//! | reason | status | what |
//! |---|---|---|
//! | `sessions_busy` | `503` | `initialize` with the session table full and every session busy |
//! | `sessions_contended` | `503` | `initialize` whose idle candidates other admissions took, round after round |
//! | `session_store` | `503` | the session store failed |
//! | `in_flight` | `503` | load shedding past `max_concurrent_requests` |
//! | `rate_limited` | `429` | the per-client rate limit |
//! | `auth_rate_limited` | `429` | the per-client budget of refused authentications |
//! | `headers_too_large` | `431` | a request head over `max_header_bytes` |
//! | `body_too_large` | `413` | a body over `max_body_bytes` |
//! | `body_timeout` | `408` | a body slower than `request_timeout` |
//! | `host_origin` | `403` | a foreign `Host` or `Origin` (DNS-rebinding protection) |

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use axum::body::Body;
use axum::http::Response;

/// Why a request was refused: the `reason` label of `mcp_http_refusals_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Reason {
    /// The session table is full and every session is busy.
    SessionsBusy,
    /// The idle sessions found were taken by other admissions, round after round.
    SessionsContended,
    /// The session store failed.
    SessionStore,
    /// Too many requests in flight.
    InFlight,
    /// The per-client rate limit.
    RateLimited,
    /// The per-client budget of refused authentications.
    AuthRateLimited,
    /// The request head is too large.
    HeadersTooLarge,
    /// The body is too large.
    BodyTooLarge,
    /// The body came too slowly.
    BodyTimeout,
    /// A foreign `Host` or `Origin`.
    HostOrigin,
}

impl Reason {
    /// The label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::SessionsBusy => "sessions_busy",
            Self::SessionsContended => "sessions_contended",
            Self::SessionStore => "session_store",
            Self::InFlight => "in_flight",
            Self::RateLimited => "rate_limited",
            Self::AuthRateLimited => "auth_rate_limited",
            Self::HeadersTooLarge => "headers_too_large",
            Self::BodyTooLarge => "body_too_large",
            Self::BodyTimeout => "body_timeout",
            Self::HostOrigin => "host_origin",
        }
    }

    /// What the log says.
    fn describe(self) -> &'static str {
        match self {
            Self::SessionsBusy => "the session table is full and every session is busy",
            Self::SessionsContended => {
                "the session table is full and the idle sessions found were taken by other admissions"
            }
            Self::SessionStore => "the session store failed",
            Self::InFlight => "too many requests in flight",
            Self::RateLimited => "a client exceeded its rate limit",
            Self::AuthRateLimited => "a client exceeded its budget of refused authentications",
            Self::HeadersTooLarge => "request headers over the limit",
            Self::BodyTooLarge => "a request body over the limit",
            Self::BodyTimeout => "a request body slower than the request timeout",
            Self::HostOrigin => "a foreign Host or Origin",
        }
    }
}

/// The mark of a refused response: its reason and, when there is one, a detail for the log
/// (a store's error, the policy's reason).
#[derive(Debug, Clone)]
pub(crate) struct Refused {
    pub(crate) reason: Reason,
    pub(crate) detail: Option<String>,
}

/// Marks `response` as a refusal for `reason`.
pub(crate) fn refused(
    mut response: Response<Body>,
    reason: Reason,
    detail: Option<String>,
) -> Response<Body> {
    response.extensions_mut().insert(Refused { reason, detail });
    response
}

/// When a WARN was last written, and how many refusals were not logged since.
#[derive(Debug)]
pub(crate) struct RefusalLog {
    started: Instant,
    /// Milliseconds after `started` of the last WARN plus one (0: none yet).
    last: AtomicU64,
    suppressed: AtomicU64,
}

/// At most one WARN per this many milliseconds.
const EVERY_MS: u64 = 1000;

impl RefusalLog {
    pub(crate) fn new() -> Self {
        Self {
            started: Instant::now(),
            last: AtomicU64::new(0),
            suppressed: AtomicU64::new(0),
        }
    }

    /// Logs `refused` at WARN unless another refusal was logged less than a second ago (then
    /// it is counted as suppressed, and reported with the next WARN).
    pub(crate) fn note(&self, refused: &Refused) {
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        if let Some(suppressed) = self.due(now) {
            tracing::warn!(
                reason = refused.reason.as_str(),
                detail = refused.detail.as_deref().unwrap_or(""),
                suppressed,
                "refused a request: {} ({suppressed} more refusals not logged since the last)",
                refused.reason.describe(),
            );
        }
    }

    /// Whether a refusal at `now` (milliseconds) is logged: `Some(refusals suppressed since
    /// the last WARN)`, or `None` when it is suppressed.
    fn due(&self, now: u64) -> Option<u64> {
        let stamp = now.saturating_add(1);
        let last = self.last.load(Ordering::Acquire);
        if (last != 0 && stamp.saturating_sub(last) < EVERY_MS)
            || self
                .last
                .compare_exchange(last, stamp, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
        {
            self.suppressed.fetch_add(1, Ordering::AcqRel);
            return None;
        }
        Some(self.suppressed.swap(0, Ordering::AcqRel))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_one_warn_a_second_with_the_count_suppressed() {
        let log = RefusalLog::new();
        assert_eq!(log.due(0), Some(0), "the first is logged");
        for t in [1, 10, 500, 998] {
            assert_eq!(log.due(t), None, "within the second: suppressed");
        }
        assert_eq!(log.due(1000), Some(4), "a second later, with the count");
        assert_eq!(log.due(1500), None);
        assert_eq!(log.due(5000), Some(1));
        assert_eq!(log.due(5001), None);
    }

    #[test]
    fn every_reason_has_its_own_label() {
        let all = [
            Reason::SessionsBusy,
            Reason::SessionsContended,
            Reason::SessionStore,
            Reason::InFlight,
            Reason::RateLimited,
            Reason::AuthRateLimited,
            Reason::HeadersTooLarge,
            Reason::BodyTooLarge,
            Reason::BodyTimeout,
            Reason::HostOrigin,
        ];
        let labels: std::collections::HashSet<_> = all.iter().map(|r| r.as_str()).collect();
        assert_eq!(labels.len(), all.len());
        assert!(all.iter().all(|r| !r.describe().is_empty()));
    }
}
