"""codomyrmex.model_context_protocol.reliability, in compatibility mode (being filled in)."""
