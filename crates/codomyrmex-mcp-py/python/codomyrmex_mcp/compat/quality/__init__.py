"""codomyrmex.model_context_protocol.quality, in compatibility mode (being filled in)."""
