"""codomyrmex.model_context_protocol.versioning, in compatibility mode (being filled in)."""
