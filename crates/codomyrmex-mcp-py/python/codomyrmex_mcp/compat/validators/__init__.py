"""codomyrmex.model_context_protocol.validators, in compatibility mode (being filled in)."""
