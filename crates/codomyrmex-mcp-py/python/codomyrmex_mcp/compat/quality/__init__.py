"""``codomyrmex.model_context_protocol.quality`` in compatibility mode: argument validation
(on the Rust core's JSON Schema validator), the tool taxonomy and the testing helpers."""

from .taxonomy import (
    TaxonomyReport,
    ToolCategory,
    categorize_all_tools,
    categorize_tool,
    generate_taxonomy_report,
)
from .testing import (
    IntegrationTester,
    ServerTester,
    TestMCPClient,
    TestResult,
    TestSuite,
    ToolTester,
    run_quick_test,
)
from .validation import ValidationResult, validate_tool_arguments

__all__ = [
    "IntegrationTester",
    "ServerTester",
    "TaxonomyReport",
    "TestMCPClient",
    "TestResult",
    "TestSuite",
    "ToolCategory",
    "ToolTester",
    "ValidationResult",
    "categorize_all_tools",
    "categorize_tool",
    "generate_taxonomy_report",
    "run_quick_test",
    "validate_tool_arguments",
]
