"""``codomyrmex.model_context_protocol.reliability.circuit_breaker`` in compatibility mode.

A circuit breaker for calls that may fail repeatedly (a transport, a tool): ``CLOSED``
counts consecutive failures and opens at ``failure_threshold``; ``OPEN`` refuses calls with
:class:`CircuitOpenError` until ``reset_timeout`` seconds have passed since the last
failure; ``HALF_OPEN`` then lets ``half_open_max_calls`` probes through, closing after
``success_threshold`` successes and opening again on any failure.

Use it as ``async with breaker:`` or ``await breaker.execute(awaitable)``. Named breakers
shared across a process come from :func:`get_circuit_breaker`.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Dict, List, Optional

__all__ = [
    "CircuitBreaker",
    "CircuitBreakerConfig",
    "CircuitOpenError",
    "CircuitState",
    "get_all_circuit_metrics",
    "get_circuit_breaker",
    "reset_all_circuits",
]

logger = logging.getLogger(__name__)


class CircuitState(enum.Enum):
    """The breaker's state."""

    CLOSED = "CLOSED"
    OPEN = "OPEN"
    HALF_OPEN = "HALF_OPEN"


@dataclass
class CircuitBreakerConfig:
    """Consecutive failures to open, seconds open before probing, probes allowed while
    half-open, and successes needed there to close."""

    failure_threshold: int = 5
    reset_timeout: float = 30.0
    half_open_max_calls: int = 1
    success_threshold: int = 2


class CircuitOpenError(Exception):
    """The circuit is open: the call was refused. ``remaining`` is the seconds until it
    may be probed."""

    def __init__(self, name: str, remaining: float) -> None:
        self.name = name
        self.remaining = remaining
        super().__init__(f"Circuit '{name}' is OPEN — retry in {remaining:.1f}s")


class CircuitBreaker:
    """One named circuit (see the module's description for the states)."""

    def __init__(self, name: str = "default", config: Optional[CircuitBreakerConfig] = None) -> None:
        self.name = name
        self.config = config or CircuitBreakerConfig()
        self._state = CircuitState.CLOSED
        self._failure_count = 0
        self._success_count = 0
        self._last_failure_time = 0.0
        self._half_open_calls = 0
        # A thread lock, held only for the bookkeeping (never across an await), so a
        # breaker is shared safely by tasks on any event loop and by threads.
        self._lock = threading.Lock()

    @property
    def state(self) -> CircuitState:
        """The state now: an open circuit whose timeout has passed is half-open."""
        if self._state is CircuitState.OPEN and self._since_failure() >= self.config.reset_timeout:
            self._state = CircuitState.HALF_OPEN
            self._half_open_calls = 0
            self._success_count = 0
            logger.info("circuit %r is half-open", self.name)
        return self._state

    @property
    def failure_count(self) -> int:
        """Failures counted since the last success or reset."""
        return self._failure_count

    @property
    def metrics(self) -> Dict[str, Any]:
        """Name, state value, failure and success counts, last failure (monotonic)."""
        return {
            "name": self.name,
            "state": self.state.value,
            "failure_count": self._failure_count,
            "success_count": self._success_count,
            "last_failure_time": self._last_failure_time,
        }

    def _since_failure(self) -> float:
        return time.monotonic() - self._last_failure_time

    def _remaining(self) -> float:
        return max(0.0, self.config.reset_timeout - self._since_failure())

    def _check_state(self) -> None:
        """Admits one call or raises :class:`CircuitOpenError`."""
        state = self.state
        if state is CircuitState.OPEN:
            raise CircuitOpenError(self.name, self._remaining())
        if state is CircuitState.HALF_OPEN:
            if self._half_open_calls >= self.config.half_open_max_calls:
                raise CircuitOpenError(self.name, self._remaining())
            self._half_open_calls += 1

    def record_success(self) -> None:
        """A call succeeded: closes a half-open circuit after enough successes, and clears
        the failure count of a closed one."""
        if self._state is CircuitState.HALF_OPEN:
            self._success_count += 1
            if self._success_count >= self.config.success_threshold:
                self._state = CircuitState.CLOSED
                self._failure_count = 0
                self._success_count = 0
                logger.info("circuit %r closed (recovered)", self.name)
        else:
            self._failure_count = 0

    def record_failure(self) -> None:
        """A call failed: opens a half-open circuit, or a closed one at the threshold."""
        self._failure_count += 1
        self._last_failure_time = time.monotonic()
        if self._state is CircuitState.HALF_OPEN:
            self._state = CircuitState.OPEN
            logger.warning("circuit %r opened (the probe failed)", self.name)
        elif self._failure_count >= self.config.failure_threshold:
            self._state = CircuitState.OPEN
            logger.warning(
                "circuit %r opened (%d failures)", self.name, self.config.failure_threshold
            )

    def reset(self) -> None:
        """Closes the circuit and clears its counts."""
        with self._lock:
            self._state = CircuitState.CLOSED
            self._failure_count = 0
            self._success_count = 0
            self._half_open_calls = 0

    async def __aenter__(self) -> "CircuitBreaker":
        with self._lock:
            self._check_state()
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        with self._lock:
            if exc_type is None:
                self.record_success()
            else:
                self.record_failure()
        return False

    async def execute(self, coro: Awaitable[Any]) -> Any:
        """Awaits ``coro`` inside the breaker; raises :class:`CircuitOpenError` when it is
        open (the awaitable is then closed, not run)."""
        try:
            async with self:
                return await coro
        except CircuitOpenError:
            close = getattr(coro, "close", None)
            if close is not None:
                close()
            raise


_breakers: Dict[str, CircuitBreaker] = {}
_breakers_lock = threading.Lock()


async def get_circuit_breaker(name: str, config: Optional[CircuitBreakerConfig] = None) -> CircuitBreaker:
    """The process's breaker called ``name``, created with ``config`` the first time."""
    with _breakers_lock:
        breaker = _breakers.get(name)
        if breaker is None:
            breaker = _breakers[name] = CircuitBreaker(name, config)
        return breaker


def get_all_circuit_metrics() -> List[Dict[str, Any]]:
    """Every named breaker's :attr:`CircuitBreaker.metrics`."""
    with _breakers_lock:
        breakers = list(_breakers.values())
    return [b.metrics for b in breakers]


def reset_all_circuits() -> None:
    """Resets every named breaker."""
    with _breakers_lock:
        breakers = list(_breakers.values())
    for breaker in breakers:
        breaker.reset()
