"""codomyrmex.model_context_protocol.discovery, in compatibility mode (being filled in)."""
