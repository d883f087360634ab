"""The guide's Python samples (docs/*.md), run against the installed package (issue #29 item 2).

Every ```python block of the guide is either an `{{#include}}` of a file another test runs,
or is known here and run by a test below; a new block that no test runs fails
`test_every_python_sample_is_run`. The configurations of other programs are read by those
programs: every ```nginx block by `nginx -t` (when nginx is installed; CI installs it) and
every ```yaml block by a YAML parser. The Rust samples are compiled from the examples and the
TOML, JSON and command-line samples are read by the binary's own loaders (the CLI's
`guide_samples_tests`)."""

import ast
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO

DOCS = REPO / "docs"
FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```\s*$", re.S | re.M)


def blocks(lang):
    """(page, first line of the body, text) of every block in `lang`."""
    out = []
    for page in sorted(DOCS.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            if m.group(1) == lang:
                line = text.count("\n", 0, m.start(2)) + 1
                out.append((page.name, line, m.group(2)))
    return out


def sample(page, starts_with):
    """The one python block of `page` that starts with `starts_with`."""
    (text,) = [t for p, _, t in blocks("python") if p == page and t.startswith(starts_with)]
    return text


# The file an include names, and the test that runs it.
INCLUDED = {"../examples/python/server.py": "test_example.py"}

# Each block not included, by page and first line, and the test below that runs it.
KNOWN = {
    ("migrating-from-codomyrmex.md", "import codomyrmex_mcp.compat; codomyrmex_mcp.compat.install()"): "test_compat_install",
    ("migrating-from-codomyrmex.md", "from codomyrmex.model_context_protocol.transport.client import MCPClient, MCPClientConfig"): "test_compat_client_sample",
    ("skills-and-apps.md", "from codomyrmex_mcp import MCPServer, MCPServerConfig"): "test_skills_sample",
    ("skills-and-apps.md", 'server = MCPServer(MCPServerConfig(name="dashboard"))'): "test_apps_sample",
}


def test_every_python_sample_is_run():
    found = blocks("python")
    assert len(found) >= 5
    for page, line, text in found:
        include = re.fullmatch(r"\{\{#include ([^}:]+)\}\}\s*", text)
        if include:
            name = include.group(1)
            assert name in INCLUDED, f"docs/{page}:{line} includes {name}, which no test runs"
            assert (DOCS / name).exists()
            assert (REPO / "crates" / "codomyrmex-mcp-py" / "tests" / INCLUDED[name]).exists()
            continue
        first = text.splitlines()[0]
        assert (page, first) in KNOWN, f"docs/{page}:{line}: a Python sample no test runs: {first}"
        assert KNOWN[(page, first)] in globals()


def run_python(code, cwd):
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def checkout(tmp_path):
    """A Codomyrmex checkout as the chapter describes it: `codomyrmex` importable, and its
    `model_context_protocol/__init__.py` made the sample's one line."""
    package = tmp_path / "codomyrmex" / "model_context_protocol"
    package.mkdir(parents=True)
    (tmp_path / "codomyrmex" / "__init__.py").write_text("", encoding="utf-8")
    line = sample("migrating-from-codomyrmex.md", "import codomyrmex_mcp.compat")
    (package / "__init__.py").write_text(line, encoding="utf-8")
    (package / "stale.py").write_text("raise ImportError('the checkout was imported')", encoding="utf-8")


def test_compat_install(tmp_path):
    # The one line makes Codomyrmex's imports resolve to this package's compat tree.
    checkout(tmp_path)
    out = run_python(
        "import codomyrmex.model_context_protocol.transport.server as m, codomyrmex_mcp.compat.transport.server as c\n"
        "print(m is c)\n",
        tmp_path,
    )
    assert out.strip() == "True"


def test_compat_client_sample(tmp_path):
    # A fragment of an async program: it parses as one (top-level `async with` allowed), its
    # import resolves after `install()`, and every method it calls exists on the client.
    code = sample("migrating-from-codomyrmex.md", "from codomyrmex.model_context_protocol.transport.client")
    tree = compile(code, "sample", "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    called = sorted(
        {n.func.attr for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
    )
    assert called == ["call_tool", "connect_http", "connect_stdio", "list_tools"]
    imports = code.splitlines()[0]
    checkout(tmp_path)
    out = run_python(
        imports
        + "\nprint(all(hasattr(MCPClient, n) for n in %r))\n" % (called,),
        tmp_path,
    )
    assert out.strip() == "True"


def skill_md():
    """The SKILL.md the same chapter shows (its ```markdown block)."""
    (text,) = [t for p, _, t in blocks("markdown") if p == "skills-and-apps.md" and "name: pdf-processing" in t]
    return text


def test_skills_sample(tmp_path):
    # Run as written, in a directory with the chapter's own skill under ./skills, with `run`
    # (which would serve stdio until the end of input) replaced by a record of the result.
    skill = tmp_path / "skills" / "pdf-processing"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(skill_md(), encoding="utf-8")
    code = sample("skills-and-apps.md", "from codomyrmex_mcp import MCPServer, MCPServerConfig")
    harness = textwrap.dedent(
        """
        import json
        import codomyrmex_mcp
        codomyrmex_mcp.MCPServer.run = lambda self, *a, **k: print(json.dumps(added))
        """
    )
    out = run_python(harness + code, tmp_path)
    added = __import__("json").loads(out)
    assert added["skills"] == ["skill://pdf-processing/SKILL.md"]
    assert added["refused"] == []


def test_apps_sample(tmp_path):
    # The chapter's Apps sample, in a directory with a dashboard.html: both tools are
    # registered with their UI resource, and the resource is served.
    (tmp_path / "dashboard.html").write_text("<!doctype html><p>dashboard</p>", encoding="utf-8")
    code = sample("skills-and-apps.md", 'server = MCPServer(MCPServerConfig(name="dashboard"))')
    out = run_python(
        "from codomyrmex_mcp import MCPServer, MCPServerConfig\n"
        + code
        + "\nprint(sorted(server.registry.list_tools()))\n",
        tmp_path,
    )
    assert out.strip() == "['dashboard.refresh', 'dashboard.show']"


@pytest.mark.parametrize("bad", ["print(", "server.no_such_method()"])
def test_a_broken_sample_fails(tmp_path, bad):
    with pytest.raises(AssertionError):
        run_python("from codomyrmex_mcp import MCPServer, MCPServerConfig\nserver = MCPServer(MCPServerConfig(name='x'))\n" + bad, tmp_path)


def nginx_conf(sample, prefix):
    """A whole nginx configuration around a guide's sample: its `upstream` blocks in `http`,
    the rest (`location` blocks) in a `server`; logs and temporary files under `prefix`."""
    upstreams, rest, chunk, depth = [], [], [], 0
    for line in sample.splitlines():
        chunk.append(line)
        depth += line.split("#")[0].count("{") - line.split("#")[0].count("}")
        if depth == 0 and line.strip():
            text = "\n".join(chunk)
            (upstreams if text.lstrip().startswith("upstream ") else rest).append(text)
            chunk = []
    assert depth == 0 and not "".join(chunk).strip(), "unbalanced braces"
    temp = "\n".join(
        f"    {kind}_temp_path {prefix}/{kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return (
        f"pid {prefix}/nginx.pid;\nerror_log {prefix}/error.log;\nevents {{}}\nhttp {{\n"
        f"    access_log off;\n{temp}\n"
        + "\n".join(upstreams)
        + "\n    server {\n        listen 127.0.0.1:8080;\n"
        + "\n".join(rest)
        + "\n    }\n}\n"
    )


def nginx():
    """The nginx binary, if installed (.ci/prefetch.sh installs it for CI; it lives in
    /usr/sbin, which may not be on the PATH)."""
    return shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None)


def nginx_test(sample, tmp_path):
    conf = tmp_path / "nginx.conf"
    conf.write_text(nginx_conf(sample, tmp_path), encoding="utf-8")
    return subprocess.run(
        [nginx(), "-t", "-q", "-e", str(tmp_path / "error.log"), "-p", str(tmp_path), "-c", str(conf)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_every_nginx_sample_passes_nginx_t(tmp_path):
    found = blocks("nginx")
    assert len(found) >= 2
    if nginx() is None:
        pytest.skip("nginx is not installed (CI installs it: .ci/prefetch.sh)")
    for i, (page, line, text) in enumerate(found):
        where = tmp_path / str(i)
        where.mkdir()
        done = nginx_test(text, where)
        assert done.returncode == 0, f"docs/{page}:{line}: nginx -t refuses the sample:\n{done.stderr}"


def test_a_wrong_nginx_sample_is_caught(tmp_path):
    if nginx() is None:
        pytest.skip("nginx is not installed (CI installs it: .ci/prefetch.sh)")
    done = nginx_test("location /mcp {\n    proxy_pass http://127.0.0.1:8080;\n    proxy_bufering off;\n}", tmp_path)
    assert done.returncode != 0 and "proxy_bufering" in done.stderr


def test_every_yaml_sample_parses():
    import yaml  # the package's `test` extra (PyYAML)

    found = blocks("yaml")
    assert len(found) >= 2
    for page, line, text in found:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
        assert documents, f"docs/{page}:{line}: no YAML document"
        for document in documents:
            assert isinstance(document, dict), f"docs/{page}:{line}: a document that is not a mapping"
        # A Kubernetes manifest names its kind and API version; a Prometheus configuration
        # its scrape jobs.
        for document in documents:
            assert ("kind" in document and "apiVersion" in document) or "scrape_configs" in document, (
                f"docs/{page}:{line}: neither a Kubernetes object nor a Prometheus configuration"
            )
