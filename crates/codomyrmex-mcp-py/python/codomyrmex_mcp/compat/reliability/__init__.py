"""``codomyrmex.model_context_protocol.reliability`` in compatibility mode: the circuit
breaker, the token-bucket rate limiter and the tool-call counters."""

from .circuit_breaker import (
    CircuitBreaker,
    CircuitBreakerConfig,
    CircuitOpenError,
    CircuitState,
    get_all_circuit_metrics,
    get_circuit_breaker,
    reset_all_circuits,
)
from .observability import MCPObservabilityHooks, ToolMetrics, get_mcp_observability_hooks
from .rate_limiter import RateLimiter, RateLimiterConfig

__all__ = [
    "CircuitBreaker",
    "CircuitBreakerConfig",
    "CircuitOpenError",
    "CircuitState",
    "MCPObservabilityHooks",
    "RateLimiter",
    "RateLimiterConfig",
    "ToolMetrics",
    "get_all_circuit_metrics",
    "get_circuit_breaker",
    "get_mcp_observability_hooks",
    "reset_all_circuits",
]
