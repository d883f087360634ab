//! Token-bucket rate limiting for handler calls (see `policy.rs`). Buckets refill from the
//! `now` each check is given: the limiter never reads a clock.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::config::RateLimit;

struct Bucket {
    limit: RateLimit,
    tokens: f64,
    last: Option<Instant>,
}

impl Bucket {
    /// A full bucket. `last` starts unset: the first take refills nothing.
    fn new(limit: RateLimit) -> Self {
        Self {
            limit,
            tokens: f64::from(limit.burst),
            last: None,
        }
    }

    /// Takes a token, or says how long until one is available.
    fn take(&mut self, now: Instant) -> Result<(), Duration> {
        let elapsed = self.last.map_or(0.0, |last| {
            now.saturating_duration_since(last).as_secs_f64()
        });
        self.last = Some(now);
        self.tokens =
            (self.tokens + elapsed * self.limit.per_second).min(f64::from(self.limit.burst));
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else if self.limit.per_second > 0.0 {
            Err(Duration::from_secs_f64(
                ((1.0 - self.tokens) / self.limit.per_second).min(3600.0),
            ))
        } else {
            Err(Duration::from_secs(3600))
        }
    }
}

/// A global bucket plus one bucket per limited tool.
pub(crate) struct RateLimiter {
    global: Option<Mutex<Bucket>>,
    per_tool: HashMap<String, Mutex<Bucket>>,
}

impl RateLimiter {
    pub(crate) fn new(global: Option<RateLimit>, per_tool: HashMap<String, RateLimit>) -> Self {
        Self {
            global: global.map(|l| Mutex::new(Bucket::new(l))),
            per_tool: per_tool
                .into_iter()
                .map(|(k, l)| (k, Mutex::new(Bucket::new(l))))
                .collect(),
        }
    }

    /// Admits a call to `tool`, or says how long to wait.
    pub(crate) fn check(&self, tool: &str, now: Instant) -> Result<(), Duration> {
        if let Some(b) = self.per_tool.get(tool) {
            b.lock().unwrap_or_else(PoisonError::into_inner).take(now)?;
        }
        if let Some(b) = &self.global {
            b.lock().unwrap_or_else(PoisonError::into_inner).take(now)?;
        }
        Ok(())
    }

    /// Admits a call that only the global limit applies to (resources, prompts, completers).
    pub(crate) fn check_global(&self, now: Instant) -> Result<(), Duration> {
        if let Some(b) = &self.global {
            b.lock().unwrap_or_else(PoisonError::into_inner).take(now)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_refuse_then_refill() {
        let mut b = Bucket::new(RateLimit {
            per_second: 10.0,
            burst: 3,
        });
        let t0 = crate::platform::test_origin();
        assert!(b.take(t0).is_ok());
        assert!(b.take(t0).is_ok());
        assert!(b.take(t0).is_ok());
        let wait = b.take(t0).unwrap_err();
        assert!(
            wait <= Duration::from_millis(100) && wait > Duration::ZERO,
            "{wait:?}"
        );
        assert!(b.take(t0 + Duration::from_millis(100)).is_ok());
        assert!(b.take(t0 + Duration::from_millis(100)).is_err());
    }

    #[test]
    fn per_tool_limits_are_separate() {
        let l = RateLimiter::new(
            None,
            HashMap::from([(
                "slow".to_owned(),
                RateLimit {
                    per_second: 0.0,
                    burst: 1,
                },
            )]),
        );
        let t0 = crate::platform::test_origin();
        assert!(l.check("slow", t0).is_ok());
        assert!(l.check("slow", t0 + Duration::from_secs(3600)).is_err());
        assert!(l.check("fast", t0).is_ok());
    }
}
