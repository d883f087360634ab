"""codomyrmex.model_context_protocol.adapters, in compatibility mode (being filled in)."""
