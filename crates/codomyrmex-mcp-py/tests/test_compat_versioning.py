"""Compatibility mode's `versioning`: semantic versions, deprecation decorators, the
compatibility matrix and the version registry (issue #28, item 2)."""

import warnings

import pytest

from codomyrmex_mcp.compat.versioning import (
    APIVersion,
    CompatibilityMatrix,
    DeprecationInfo,
    VersionRegistry,
    deprecated,
    versioned,
)


def test_parse_and_order():
    assert APIVersion.parse("v1.2.3") == APIVersion(1, 2, 3)
    assert APIVersion.parse("2") == APIVersion(2, 0, 0)
    assert APIVersion.parse("1.4") == APIVersion(1, 4, 0)
    assert str(APIVersion(1, 2, 3)) == "v1.2.3"
    assert APIVersion(1, 10) > APIVersion(1, 9, 9)
    with pytest.raises(ValueError):
        APIVersion.parse("one")
    assert APIVersion(1, 2).is_compatible(APIVersion(1, 3))
    assert not APIVersion(1, 3).is_compatible(APIVersion(1, 2))
    assert not APIVersion(1).is_compatible(APIVersion(2))


def test_versioned_and_deprecated():
    @deprecated(since="1.5", removal="2.0", replacement="new_f")
    @versioned("1.2.0", introduced="1.0")
    def f(x):
        return x * 2

    assert f._api_version == APIVersion(1, 2, 0) and f._api_deprecated is True
    assert f._deprecation_info == DeprecationInfo("1.5", "2.0", "new_f", "f is deprecated since 1.5")
    with pytest.warns(DeprecationWarning, match=r"^f is deprecated since 1.5. Use new_f instead. Will be removed in 2.0$"):
        assert f(2) == 4

    @versioned()
    def g():
        return 1

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert g() == 1
    assert g._api_introduced == APIVersion() and g._api_deprecated is False


def test_matrix():
    m = CompatibilityMatrix()
    assert m.is_compatible("t", "1.0", "1.9")
    assert not m.is_compatible("t", "1.0", "2.0")
    m.add_compatible("t", "v1.0", "v2.0")
    assert m.is_compatible("t", "2.0", "1.0")
    assert not m.is_compatible("other", "1.0", "2.0")


def test_registry():
    r = VersionRegistry()
    r.register("search", "1.0.0")
    r.register("search", "1.1.0", introduced="1.0.0")
    r.register("old", "0.9")
    assert r.tool_count == 2
    assert r.list_versions("search") == [APIVersion(1, 0, 0), APIVersion(1, 1, 0)]
    assert r.get_tool("search").introduced == APIVersion(1, 0, 0)
    assert r.deprecate("old", since="1.0", removal="2.0", replacement="search")
    assert not r.deprecate("ghost")
    assert r.is_deprecated("old") and not r.is_deprecated("search") and not r.is_deprecated("ghost")
    assert r.list_deprecated() == ["old"] and len(r.list_all()) == 2
    r.add_migration("old", "1.0", "2.0", "rename", "use search")
    r.add_migration("x", "1.0", "1.1", "update_params")
    assert len(r.migration_guide()) == 2
    assert [s.tool_name for s in r.migration_guide(from_ver="1.0", to_ver="2.0")] == ["old"]
    assert r.migration_guide(to_ver="9") == []
    md = r.to_markdown().splitlines()
    assert md[0] == "# API Version Registry"
    assert md[2].startswith("- **old** v0.9.0") and "DEPRECATED" in md[2]
    assert md[3] == "  - Use `search` instead" and md[4] == "  - Removal planned: 2.0"
    assert md[5].startswith("- **search** v1.1.0")
