"""The README's Python section and the guide's Python chapter: the wheel they give is what
.ci/run builds and tests, at the workspace's version, and the README's example program serves
over stdio as it says (checked with the official SDK's client)."""

import asyncio
import re
import sys

import pytest

from conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
SECTION = README[README.index("## Python\n") : README.index("## The guide\n")]
# The version every crate and the Python package share (`[workspace.package]`).
VERSION = re.search(
    r'^\[workspace\.package\]\nversion = "([^"]+)"$', (REPO / "Cargo.toml").read_text(encoding="utf-8"), re.M
).group(1)


def test_the_wheel_the_guide_gives_is_what_ci_tests():
    # The README and the guide give the wheel from target/wheels, named for the workspace's
    # version, as the way to install; the CI script builds that wheel with maturin and installs
    # it (no source build); source installs stay documented in the guide.
    guide = (REPO / "docs" / "python.md").read_text(encoding="utf-8")
    wheel = f"pip install target/wheels/codomyrmex_mcp-{VERSION}-cp39-abi3-manylinux_"
    assert wheel in guide
    assert wheel in SECTION
    assert "pip install ./crates/codomyrmex-mcp-py" in guide
    script = (REPO / "tests" / "interop" / "run_python_package.sh").read_text(encoding="utf-8")
    assert '"$build_venv/bin/maturin" build --release' in script
    assert 'wheels="$target_dir/wheels"' in script
    assert '"$wheel[test]"' in script
    assert "pip install ./crates" not in script
    assert "run_python_package.sh" in (REPO / ".ci" / "run").read_text(encoding="utf-8")


def test_the_example_program_serves(tmp_path):
    pytest.importorskip("mcp")
    from mcp import Client, StdioServerParameters

    (program,) = re.findall(r"```python\n(.*?)```", SECTION, re.S)
    path = tmp_path / "hello.py"
    path.write_text(program, encoding="utf-8")

    async def drive():
        async with Client(StdioServerParameters(command=sys.executable, args=[str(path)]), read_timeout_seconds=30) as client:
            assert client.server_info.name == "hello"
            (tool,) = (await client.list_tools()).tools
            assert (tool.name, tool.title, tool.description) == ("greet", "Greet", "Greets someone.")
            result = await client.call_tool("greet", {"name": "Ada", "excited": True})
            assert result.structured_content == {"result": "Hello, Ada!"}

    asyncio.run(asyncio.wait_for(drive(), 120))
