"""codomyrmex.model_context_protocol.transport, in compatibility mode (being filled in)."""
