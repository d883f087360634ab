"""Compatibility mode's `reliability`: the circuit breaker's states, the token-bucket rate
limiter and the tool-call counters, as Codomyrmex's callers use them (issue #28, item 2)."""

import asyncio
import json
import threading
import time

import pytest

from codomyrmex_mcp.compat.reliability import (
    CircuitBreaker,
    CircuitBreakerConfig,
    CircuitOpenError,
    CircuitState,
    MCPObservabilityHooks,
    RateLimiter,
    RateLimiterConfig,
    get_all_circuit_metrics,
    get_circuit_breaker,
    get_mcp_observability_hooks,
    reset_all_circuits,
)
from codomyrmex_mcp.compat.reliability.rate_limiter import _TokenBucket


async def fail(cb):
    with pytest.raises(ValueError):
        async with cb:
            raise ValueError("x")


def test_opens_at_the_threshold_and_refuses():
    async def go():
        cb = CircuitBreaker("c", CircuitBreakerConfig(failure_threshold=2, reset_timeout=60))
        await fail(cb)
        assert cb.state is CircuitState.CLOSED and cb.failure_count == 1
        await fail(cb)
        assert cb.state is CircuitState.OPEN
        ran = []

        async def work():
            ran.append(1)

        with pytest.raises(CircuitOpenError) as info:
            await cb.execute(work())
        assert ran == [] and info.value.name == "c" and 0 < info.value.remaining <= 60
        assert "Circuit 'c' is OPEN" in str(info.value)

    asyncio.run(go())


def test_a_success_clears_the_failure_count():
    async def go():
        cb = CircuitBreaker("c", CircuitBreakerConfig(failure_threshold=2))
        await fail(cb)
        async with cb:
            pass
        await fail(cb)
        assert cb.state is CircuitState.CLOSED

    asyncio.run(go())


def test_half_open_probes_then_closes_or_reopens():
    async def go():
        cfg = CircuitBreakerConfig(failure_threshold=1, reset_timeout=0.05, half_open_max_calls=1, success_threshold=2)
        cb = CircuitBreaker("h", cfg)
        await fail(cb)
        assert cb.state is CircuitState.OPEN
        await asyncio.sleep(0.06)
        assert cb.state is CircuitState.HALF_OPEN
        assert await cb.execute(asyncio.sleep(0, result=5)) == 5
        # one probe allowed: the next call is refused until the state is re-evaluated
        with pytest.raises(CircuitOpenError):
            cb._check_state()
        cb._half_open_calls = 0
        async with cb:
            pass
        assert cb.state is CircuitState.CLOSED
        await fail(cb)
        await asyncio.sleep(0.06)
        assert cb.state is CircuitState.HALF_OPEN
        await fail(cb)
        assert cb.state is CircuitState.OPEN
        cb.reset()
        assert cb.state is CircuitState.CLOSED and cb.metrics["failure_count"] == 0

    asyncio.run(go())


def test_named_breakers_are_shared_across_event_loops():
    a = asyncio.run(get_circuit_breaker("shared-name", CircuitBreakerConfig(failure_threshold=1)))
    b = asyncio.run(get_circuit_breaker("shared-name"))
    assert a is b and a.config.failure_threshold == 1
    a.record_failure()
    assert any(m["name"] == "shared-name" and m["state"] == "OPEN" for m in get_all_circuit_metrics())
    reset_all_circuits()
    assert a.state is CircuitState.CLOSED


def test_token_bucket_refills_up_to_burst():
    b = _TokenBucket(rate=1000, burst=3)
    assert [b.consume() for _ in range(4)] == [True, True, True, False]
    time.sleep(0.01)
    assert b.tokens == 3
    assert b.metrics == {"tokens": 3.0, "rate": 1000, "burst": 3}


def test_limiter_global_and_per_tool():
    lim = RateLimiter(RateLimiterConfig(rate=0.001, burst=3, per_tool_rate={"slow": 0.001}, per_tool_burst={"slow": 1}))
    assert lim.allow("slow") is True
    assert lim.allow("slow") is False  # tool bucket empty; no global token spent
    assert lim.metrics["global"]["tokens"] == 2.0
    assert lim.allow("other") and lim.allow()
    assert lim.allow("other") is False
    assert set(lim.metrics["per_tool"]) == {"slow"}
    lim.reset()
    assert lim.allow("other") and "per_tool" not in lim.metrics


def test_limiter_is_exact_under_threads():
    lim = RateLimiter(RateLimiterConfig(rate=0.0001, burst=500))
    granted = []

    def worker():
        granted.append(sum(lim.allow("t") for _ in range(200)))

    threads = [threading.Thread(target=worker) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(granted) == 500


def test_observability_counts():
    hooks = MCPObservabilityHooks()
    start = hooks.on_tool_call_start("a")
    assert isinstance(start, float)
    hooks.on_tool_call_end("a", duration=0.5)
    hooks.on_tool_call_end("a", duration=0.25, error="timeout")
    hooks.on_tool_call_end("b", duration=1.0, error="")
    m = hooks.get_metrics()
    assert m["mcp_tool_call_total"] == 3 and m["mcp_tool_errors_total"] == 2
    assert m["mcp_tool_duration_seconds"] == 1.75
    assert m["per_tool"]["a"] == {"calls": 2, "errors": 1, "total_duration": 0.75, "avg_duration": 0.375}
    assert hooks.get_tool_metrics("a").last_call_time is not None
    assert hooks.get_tool_metrics("zz") is None
    assert json.loads(hooks.get_metrics_json()) == m
    hooks.reset()
    assert hooks.get_metrics() == {"mcp_tool_call_total": 0, "mcp_tool_errors_total": 0, "mcp_tool_duration_seconds": 0.0, "per_tool": {}}
    assert get_mcp_observability_hooks() is get_mcp_observability_hooks()
