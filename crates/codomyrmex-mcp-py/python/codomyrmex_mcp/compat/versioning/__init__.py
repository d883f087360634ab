"""``codomyrmex.model_context_protocol.versioning`` in compatibility mode: tool versions,
deprecation, compatibility and the version registry."""

from .version_registry import MigrationStep, VersionRegistry
from .versioning import (
    APIVersion,
    CompatibilityMatrix,
    DeprecationInfo,
    VersionedTool,
    deprecated,
    versioned,
)

__all__ = [
    "APIVersion",
    "CompatibilityMatrix",
    "DeprecationInfo",
    "MigrationStep",
    "VersionRegistry",
    "VersionedTool",
    "deprecated",
    "versioned",
]
