//! The execution policy: the one set of rules every handler invocation runs under.
//!
//! Tools, resource reads (static and templated), resource listers, prompts, completers and
//! task work are all invoked through `ExecutionPolicy`, and so are the direct calls of
//! `McpToolRegistry::execute` (the Python package's way in): the module sits below the
//! registries so that both the engine and the registry admit through it.
//!
//! 1. **Admission** (`ExecutionPolicy::admit`), synchronously, while the engine handles the
//!    message: a slot in the session's [`Gate`] (at most `max_concurrent_requests` running plus
//!    `max_queued_requests` waiting; past that the request is refused at once with
//!    `Refusal::Overloaded`) and a rate-limit token (`Refusal::RateLimited`). Because the
//!    slot is taken before any future exists, a transport never holds more pending work than
//!    the gate admits, however fast requests arrive.
//! 2. **Execution**, by the driver (`crate::driver`, on a host's runtime): the admitted call
//!    leaves the engine as an [`Invocation`](crate::invocation::Invocation) (kind, name,
//!    deadline, cancellation token, admission, the handler's own future), and the driver waits
//!    for a permit, runs the future
//!    under the deadline and an unwind guard, and reports a panic as [`Failure::Panicked`], an
//!    overrun as [`Failure::TimedOut`]; either costs only that request.
//!
//! This module is the one place that makes a [`Gate`] for handler admission (`gate`,
//! `bounded`) and the one place that takes a slot in one (`ExecutionPolicy::admit`); the
//! driver is the one place that takes a permit and catches a panic. The layering test
//! `only_the_policy_admits_and_only_the_driver_catches_panics` holds both.
//!
//! Calls a handler makes on to another server (a gateway's upstreams) run under the same
//! mechanisms, with limits of their own per upstream: [`UpstreamPolicy`] (`upstream.rs`).
//!
//! The engine decides *what* to invoke, the driver *how*. This module is not where errors are
//! worded: each handler kind maps `Refusal` and [`Failure`] onto its own wire shape (a tool
//! failure result, or a JSON-RPC error).

use std::time::Duration;

pub(crate) mod limits;
mod upstream;

use crate::config::McpServerConfig;
pub(crate) use crate::invocation::{Failure, Gate, HandlerKind};
use limits::RateLimiter;
pub use upstream::{UpstreamLimits, UpstreamPolicy, UpstreamRefusal, UpstreamTurn};

/// The admission gate `config` bounds handler calls with: `max_concurrent_requests` running,
/// `max_queued_requests` waiting (one per session, one shared by stateless requests, and one
/// for a registry's direct calls).
pub(crate) fn gate(config: &McpServerConfig) -> Gate {
    bounded(config.max_concurrent_requests, config.max_queued_requests)
}

/// An admission gate of `running` calls at once and `waiting` more.
pub(crate) fn bounded(running: usize, waiting: usize) -> Gate {
    Gate::new(running, waiting)
}

/// An admitted invocation: holds its slot in the [`Gate`] until dropped.
pub(crate) type Ticket = crate::invocation::Admission;

/// Why an invocation was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Every running and waiting slot is taken.
    Overloaded,
    /// The rate limit is exhausted; a token is available after this long.
    RateLimited(Duration),
}

/// The rules every handler invocation runs under. One per engine. It reads no clock: rate
/// limits refill to the `now` the request is handled at.
pub(crate) struct ExecutionPolicy {
    limiter: RateLimiter,
}

impl ExecutionPolicy {
    pub(crate) fn new(limiter: RateLimiter) -> Self {
        Self { limiter }
    }

    /// A policy with no rate limit: a registry's direct calls, which no server configuration
    /// governs (the Python reference's `execute` limits nothing either).
    pub(crate) fn unlimited() -> Self {
        Self::new(RateLimiter::new(None, std::collections::HashMap::new()))
    }

    /// The policy of `config`'s rate limits (global and per tool).
    pub(crate) fn from_config(config: &McpServerConfig) -> Self {
        Self::new(RateLimiter::new(
            config.rate_limit,
            config.tool_rate_limits.clone(),
        ))
    }

    /// Admits an invocation of `name` (a tool name, URI, prompt name, ...) into `gate` at
    /// `now`, or refuses it at once. Per-tool rate limits apply to tools and their tasks; the
    /// global limit to every kind.
    pub(crate) fn admit(
        &self,
        gate: &Gate,
        kind: HandlerKind,
        name: &str,
        now: std::time::Instant,
    ) -> Result<Ticket, Refusal> {
        let admission = gate.try_admit().ok_or(Refusal::Overloaded)?;
        let checked = match kind {
            HandlerKind::Tool | HandlerKind::Task => self.limiter.check(name, now),
            HandlerKind::Resource
            | HandlerKind::ResourceList
            | HandlerKind::Prompt
            | HandlerKind::Completer => self.limiter.check_global(now),
        };
        checked.map_err(Refusal::RateLimited)?;
        Ok(admission)
    }

    /// Admits a call a handler makes on to another server (a gateway's upstream) into
    /// `gate` at `now`, under the global rate limit only, or refuses it at once.
    pub(crate) fn admit_call(
        &self,
        gate: &Gate,
        now: std::time::Instant,
    ) -> Result<Ticket, Refusal> {
        let admission = gate.try_admit().ok_or(Refusal::Overloaded)?;
        self.limiter
            .check_global(now)
            .map_err(Refusal::RateLimited)?;
        Ok(admission)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::config::RateLimit;

    fn policy(global: Option<RateLimit>) -> ExecutionPolicy {
        ExecutionPolicy::new(RateLimiter::new(global, HashMap::new()))
    }

    fn now() -> std::time::Instant {
        crate::platform::test_origin()
    }

    #[test]
    fn past_the_waiting_bound_admission_is_refused_at_once() {
        let p = policy(None);
        let gate = Gate::new(1, 1);
        let running = p.admit(&gate, HandlerKind::Tool, "t", now()).unwrap();
        let waiting = p.admit(&gate, HandlerKind::Resource, "r", now()).unwrap();
        assert_eq!(
            p.admit(&gate, HandlerKind::Prompt, "p", now()).unwrap_err(),
            Refusal::Overloaded
        );
        // One permit: the running one holds it, the waiting one gets none until it is back.
        let permit = running.try_permit().unwrap();
        assert!(waiting.try_permit().is_none());
        drop(permit);
        assert!(waiting.try_permit().is_some());
        drop(running);
        assert!(p.admit(&gate, HandlerKind::Prompt, "p", now()).is_ok());
    }

    #[test]
    fn the_global_rate_limit_covers_every_kind() {
        let p = policy(Some(RateLimit {
            per_second: 0.0,
            burst: 2,
        }));
        let gate = Gate::new(8, 8);
        assert!(p.admit(&gate, HandlerKind::Completer, "c", now()).is_ok());
        assert!(p.admit(&gate, HandlerKind::Resource, "r", now()).is_ok());
        assert!(matches!(
            p.admit(&gate, HandlerKind::Prompt, "p", now()),
            Err(Refusal::RateLimited(_))
        ));
    }
}
