"""``codomyrmex.model_context_protocol.adapters``: empty in the original too."""

from typing import List

__all__: List[str] = []
