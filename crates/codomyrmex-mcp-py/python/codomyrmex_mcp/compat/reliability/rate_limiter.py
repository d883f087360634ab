"""``codomyrmex.model_context_protocol.reliability.rate_limiter`` in compatibility mode.

A token-bucket limiter for tool calls: a global bucket of ``burst`` tokens refilled at
``rate`` per second, and optional per-tool buckets. Each allowed call takes one token from
the tool's bucket (if it has one) and one from the global bucket.

This is Codomyrmex's in-process helper, for code that calls it itself. A server's own
admission limits are the Rust engine's (``MCPServerConfig``), not this class.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

__all__ = ["RateLimiter", "RateLimiterConfig"]

logger = logging.getLogger(__name__)


@dataclass
class RateLimiterConfig:
    """Tokens per second and bucket size, globally and per tool."""

    rate: float = 50.0
    burst: int = 100
    per_tool_rate: Dict[str, float] = field(default_factory=dict)
    per_tool_burst: Dict[str, int] = field(default_factory=dict)


class _TokenBucket:
    """``burst`` tokens at most, refilled continuously at ``rate`` per second."""

    __slots__ = ("_last_refill", "_tokens", "burst", "rate")

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = burst
        self._tokens = float(burst)
        self._last_refill = time.monotonic()

    def _refill(self) -> None:
        now = time.monotonic()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last_refill) * self.rate)
        self._last_refill = now

    def consume(self, n: int = 1) -> bool:
        """Takes ``n`` tokens if there are that many; whether it did."""
        self._refill()
        if self._tokens >= n:
            self._tokens -= n
            return True
        return False

    @property
    def tokens(self) -> float:
        """Tokens available now."""
        self._refill()
        return self._tokens

    @property
    def metrics(self) -> Dict[str, Any]:
        """Tokens (rounded to 2 places), rate and burst."""
        return {"tokens": round(self.tokens, 2), "rate": self.rate, "burst": self.burst}


class RateLimiter:
    """The limiter: a global bucket and lazily created per-tool buckets."""

    def __init__(self, config: Optional[RateLimiterConfig] = None) -> None:
        self.config = config or RateLimiterConfig()
        self._lock = threading.Lock()
        self._global = _TokenBucket(self.config.rate, self.config.burst)
        self._per_tool: Dict[str, _TokenBucket] = {}

    def _get_tool_bucket(self, tool_name: str) -> Optional[_TokenBucket]:
        bucket = self._per_tool.get(tool_name)
        if bucket is not None:
            return bucket
        rate = self.config.per_tool_rate.get(tool_name)
        burst = self.config.per_tool_burst.get(tool_name)
        if rate is None and burst is None:
            return None
        bucket = _TokenBucket(rate or self.config.rate, burst or self.config.burst)
        self._per_tool[tool_name] = bucket
        return bucket

    def allow(self, tool_name: str = "") -> bool:
        """Whether a call of ``tool_name`` may go ahead now; takes its tokens if so.

        The tool's bucket is checked first, so a call refused there costs no global token.
        """
        with self._lock:
            bucket = self._get_tool_bucket(tool_name) if tool_name else None
            if bucket is not None and not bucket.consume():
                logger.warning("rate limit reached for tool %s", tool_name)
                return False
            if not self._global.consume():
                logger.warning("global rate limit reached (tool %s)", tool_name)
                return False
            return True

    @property
    def metrics(self) -> Dict[str, Any]:
        """``global`` bucket metrics, and ``per_tool`` when any tool bucket exists."""
        with self._lock:
            out: Dict[str, Any] = {"global": self._global.metrics}
            if self._per_tool:
                out["per_tool"] = {name: b.metrics for name, b in self._per_tool.items()}
            return out

    def reset(self) -> None:
        """Refills every bucket (per-tool buckets are created again on next use)."""
        with self._lock:
            self._global = _TokenBucket(self.config.rate, self.config.burst)
            self._per_tool.clear()
