"""codomyrmex.model_context_protocol.schemas, in compatibility mode (being filled in)."""
