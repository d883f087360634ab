//! The execution policy of calls a handler makes on to another server: a gateway's calls to
//! its upstreams.
//!
//! A handler that forwards its request (the gateway's mounted tools, prompts and resources)
//! was admitted by the server's own policy like any other; what it sends on to an upstream is
//! bounded per upstream by the same mechanisms, never by a copy: an admission gate made here
//! (a slot among `max_concurrent` running and `max_queued` waiting, else refused at once), a
//! token of the same token-bucket rate limiter, a permit taken through the driver's one permit
//! wait ([`driver::permit`]), and the deadline of the driver's [`driver::within`]. One
//! [`UpstreamPolicy`] per upstream, made from its [`UpstreamLimits`], so one upstream's
//! saturation costs the others nothing.

use std::future::Future;
use std::time::Duration;

use super::limits::RateLimiter;
use super::{ExecutionPolicy, Refusal, bounded};
use crate::config::RateLimit;
use crate::driver::{self, Runtime};
use crate::invocation::{Admission, Failure, Gate, Permit};
use crate::sync::CancellationToken;

/// The limits of the calls to one upstream.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UpstreamLimits {
    /// The most calls in flight to it at once (at least 1).
    pub max_concurrent: usize,
    /// The most calls waiting for a turn beyond those; past that a call is refused at once.
    /// `None`: no bound here (the callers are bounded by the server's own admission).
    pub max_queued: Option<usize>,
    /// The longest a call may take, its wait for a turn included.
    pub timeout: Duration,
    /// Calls per second and burst; `None`: no rate limit.
    pub rate_limit: Option<RateLimit>,
}

impl UpstreamLimits {
    /// `max_concurrent` calls at once under `timeout`, the rest queued, no rate limit.
    pub fn new(max_concurrent: usize, timeout: Duration) -> Self {
        Self {
            max_concurrent,
            max_queued: None,
            timeout,
            rate_limit: None,
        }
    }
}

/// Why a call to an upstream was not let through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UpstreamRefusal {
    /// Every running and waiting place is taken.
    #[error("too many calls are in flight or waiting")]
    Overloaded,
    /// The rate limit is exhausted; a call may go after this long.
    #[error("its rate limit is exhausted; retry in {} ms", .0.as_millis())]
    RateLimited(Duration),
    /// The caller's cancellation token fired while the call waited for its turn.
    #[error("the call was cancelled while it waited for its turn")]
    Cancelled,
}

/// A call let through to its upstream: its place in the upstream's gate and its permit, held
/// until dropped (a call parked between a client's rounds keeps it).
#[derive(Debug)]
pub struct UpstreamTurn {
    _permit: Permit,
    _admission: Admission,
}

/// The policy of the calls to one upstream: its gate, its rate limiter and its deadline.
pub struct UpstreamPolicy {
    limits: UpstreamLimits,
    gate: Gate,
    policy: ExecutionPolicy,
}

impl std::fmt::Debug for UpstreamPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamPolicy")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl UpstreamPolicy {
    /// The policy of `limits`.
    pub fn new(limits: UpstreamLimits) -> Self {
        Self {
            gate: bounded(
                limits.max_concurrent,
                limits.max_queued.unwrap_or(usize::MAX),
            ),
            policy: ExecutionPolicy::new(RateLimiter::new(
                limits.rate_limit,
                std::collections::HashMap::new(),
            )),
            limits,
        }
    }

    /// Its limits.
    pub fn limits(&self) -> &UpstreamLimits {
        &self.limits
    }

    /// Lets a call through: a place in the gate and a rate-limit token at `rt`'s now (or a
    /// refusal at once), then the driver's permit, waited for until `cancel` fires.
    pub async fn admit(
        &self,
        rt: &'static dyn Runtime,
        cancel: &CancellationToken,
    ) -> Result<UpstreamTurn, UpstreamRefusal> {
        let admission = self
            .policy
            .admit_call(&self.gate, rt.now())
            .map_err(|r| match r {
                Refusal::Overloaded => UpstreamRefusal::Overloaded,
                Refusal::RateLimited(after) => UpstreamRefusal::RateLimited(after),
            })?;
        let permit = driver::permit(&admission, cancel)
            .await
            .ok_or(UpstreamRefusal::Cancelled)?;
        Ok(UpstreamTurn {
            _permit: permit,
            _admission: admission,
        })
    }

    /// `work`'s output, or [`Failure::TimedOut`] once the upstream's `timeout` has passed on
    /// `rt`'s clock (dropping `work`): the driver's [`driver::within`] itself (no layer of its
    /// own, which would hold one more copy of `work`). A large `work` is best lent pinned
    /// (`within(rt, pin!(work))`): each layer that takes a future by value holds a copy.
    pub fn within<T>(
        &self,
        rt: &'static dyn Runtime,
        work: impl Future<Output = T>,
    ) -> impl Future<Output = Result<T, Failure>> {
        driver::within(rt, self.limits.timeout, work)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::TestRuntime;
    use crate::test_runtime::{self, advance, advancing};

    const RT: TestRuntime = TestRuntime;

    fn policy(max_concurrent: usize, max_queued: Option<usize>) -> UpstreamPolicy {
        UpstreamPolicy::new(UpstreamLimits {
            max_queued,
            ..UpstreamLimits::new(max_concurrent, Duration::from_secs(5))
        })
    }

    #[test]
    fn past_max_concurrent_calls_wait_and_past_max_queued_they_are_refused() {
        test_runtime::run(async {
            let up = policy(1, Some(1));
            let cancel = CancellationToken::new();
            let first = up.admit(&RT, &cancel).await.unwrap();
            let second = up.admit(&RT, &cancel);
            let mut second = std::pin::pin!(second);
            assert!(
                advancing(Duration::from_secs(1), second.as_mut())
                    .await
                    .is_none(),
                "the second call waits while the first holds the permit"
            );
            assert_eq!(
                up.admit(&RT, &cancel).await.unwrap_err(),
                UpstreamRefusal::Overloaded,
                "a third is refused at once: one running, one waiting"
            );
            drop(first);
            let _second = second.await.unwrap();
        });
    }

    #[test]
    fn unbounded_queue_waits_and_a_cancelled_wait_ends() {
        test_runtime::run(async {
            let up = policy(1, None);
            let first = up.admit(&RT, &CancellationToken::new()).await.unwrap();
            let cancel = CancellationToken::new();
            let waiting: Vec<_> = (0..100).map(|_| up.admit(&RT, &cancel)).collect();
            let all = futures_util::future::join_all(waiting);
            let mut all = std::pin::pin!(all);
            assert!(
                advancing(Duration::from_secs(1), all.as_mut())
                    .await
                    .is_none()
            );
            cancel.cancel();
            let ended = all.await;
            assert!(
                ended
                    .iter()
                    .all(|r| matches!(r, Err(UpstreamRefusal::Cancelled))),
                "every waiting call ends when cancelled"
            );
            drop(first);
        });
    }

    #[test]
    fn the_rate_limit_refuses_past_its_burst_and_refills_with_time() {
        test_runtime::run(async {
            let up = UpstreamPolicy::new(UpstreamLimits {
                rate_limit: Some(RateLimit {
                    per_second: 1.0,
                    burst: 2,
                }),
                ..UpstreamLimits::new(8, Duration::from_secs(5))
            });
            let cancel = CancellationToken::new();
            let _a = up.admit(&RT, &cancel).await.unwrap();
            let _b = up.admit(&RT, &cancel).await.unwrap();
            assert!(matches!(
                up.admit(&RT, &cancel).await,
                Err(UpstreamRefusal::RateLimited(_))
            ));
            advance(Duration::from_secs(1)).await;
            assert!(up.admit(&RT, &cancel).await.is_ok(), "a token refilled");
        });
    }

    #[test]
    fn the_deadline_ends_a_slow_call_with_the_drivers_timed_out() {
        test_runtime::run(async {
            let up = policy(1, None);
            let slow = up.within(&RT, std::future::pending::<()>());
            let ended = advancing(Duration::from_secs(6), slow).await;
            assert_eq!(ended, Some(Err(Failure::TimedOut(Duration::from_secs(5)))));
            let quick = up.within(&RT, async { 7 }).await;
            assert_eq!(quick, Ok(7));
        });
    }

    #[test]
    fn two_upstreams_do_not_share_their_limits() {
        test_runtime::run(async {
            let busy = policy(1, Some(0));
            let other = policy(1, Some(0));
            let cancel = CancellationToken::new();
            let _held = busy.admit(&RT, &cancel).await.unwrap();
            assert_eq!(
                busy.admit(&RT, &cancel).await.unwrap_err(),
                UpstreamRefusal::Overloaded
            );
            assert!(other.admit(&RT, &cancel).await.is_ok());
        });
    }
}
