"""Compatibility mode: Codomyrmex's ``codomyrmex.model_context_protocol`` API on codomyrmex_mcp.

The package tree mirrors the original module's (``errors``, ``schemas``, ``transport``,
``discovery``, ``quality``, ``reliability``, ...). Being filled in (issue #28).
"""
