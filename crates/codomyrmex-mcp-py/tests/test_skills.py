"""`MCPServer.add_skills(path)`: a skills directory published through the one confinement,
listed and read in process and with the official SDK client over stdio, every file checked
against the digest and size `skills/list` published."""

import asyncio
import base64
import hashlib
import os
import sys

import pytest

from codomyrmex_mcp import MCPServer, MCPServerConfig
from conftest import MODERN_META, SERVERS

SKILL_MD = "---\nname: pdf-processing\ndescription: Extract PDFs\n---\n# PDF\n\nSee references/FORMS.md.\n"
FORMS = "Supporting content.\n"
SKILL = "skill://pdf-processing/SKILL.md"


def skills_dir(tmp_path):
    """A skills directory with one valid skill, one refused (its name is not its
    directory's), a symlink out of the directory and a hidden file."""
    root = tmp_path / "skills"
    (root / "pdf-processing" / "references").mkdir(parents=True)
    (root / "pdf-processing" / "SKILL.md").write_text(SKILL_MD)
    (root / "pdf-processing" / "references" / "FORMS.md").write_text(FORMS)
    (root / "pdf-processing" / ".env").write_text("SECRET=1\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("outside the skills directory\n")
    os.symlink(secret, root / "pdf-processing" / "leak.md")
    (root / "misnamed").mkdir()
    (root / "misnamed" / "SKILL.md").write_text("---\nname: other\ndescription: D\n---\n")
    return root


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


async def request(server, request_id, method, params=None):
    reply = await server.handle_request(
        {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**(params or {}), "_meta": MODERN_META}}
    )
    assert "result" in reply, reply
    return reply["result"]


def test_add_skills_publishes_a_directory_through_the_confinement(tmp_path):
    server = MCPServer(MCPServerConfig(name="py-skills"))
    added = server.add_skills(skills_dir(tmp_path))
    assert added["skills"] == [SKILL]
    assert [path for path, _ in added["refused"]] == ["misnamed"], added

    async def run():
        discovered = await request(server, 1, "server/discover")
        assert "io.modelcontextprotocol/skills" in discovered["capabilities"]["extensions"]
        listed = await request(server, 2, "skills/list")
        (entry,) = listed["skills"]
        assert entry["uri"] == SKILL
        assert entry["frontmatter"] == {"name": "pdf-processing", "description": "Extract PDFs"}
        files = {f["uri"]: f for f in entry["resources"]}
        # The link out of the directory and the hidden file are not served.
        assert sorted(files) == [SKILL, "skill://pdf-processing/references/FORMS.md"], files
        for uri, listed_file in files.items():
            read = await request(server, 3, "resources/read", {"uri": uri})
            (content,) = read["contents"]
            data = content["text"].encode() if "text" in content else base64.b64decode(content["blob"])
            assert (digest(data), len(data)) == (listed_file["digest"], listed_file["size"]), uri
        directory = await request(server, 4, "resources/directory/read", {"uri": "skill://pdf-processing"})
        assert sorted(c["name"] for c in directory["resources"]) == ["SKILL.md", "references"]
        leak = await server.handle_request(
            {"jsonrpc": "2.0", "id": 5, "method": "resources/read",
             "params": {"uri": "skill://pdf-processing/leak.md", "_meta": MODERN_META}}
        )
        assert "error" in leak, leak
        return files

    asyncio.run(asyncio.wait_for(run(), 60))


def test_add_skills_refuses_a_missing_directory_and_a_second_publication(tmp_path):
    server = MCPServer(MCPServerConfig(name="py-skills"))
    with pytest.raises(OSError, match="unusable"):
        server.add_skills(tmp_path / "nowhere")
    root = skills_dir(tmp_path)
    server.add_skills(root)
    with pytest.raises(ValueError, match="already registered"):
        server.add_skills(root)


async def sdk_reads(root):
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=[str(SERVERS / "skills_server.py"), str(root)])
    async with Client(params, mode="legacy", read_timeout_seconds=30) as client:
        resources = await client.list_resources()
        by_uri = {r.uri: r for r in resources.resources}
        assert SKILL in {str(u) for u in by_uri}, by_uri
        md = next(r for u, r in by_uri.items() if str(u) == SKILL)
        assert (md.name, md.description, md.mime_type) == ("pdf-processing", "Extract PDFs", "text/markdown")
        read = await client.read_resource(SKILL)
        forms = await client.read_resource("skill://pdf-processing/references/FORMS.md")
        return read.contents[0].text, forms.contents[0].text


def test_the_official_sdk_client_lists_and_reads_a_published_skill(tmp_path):
    pytest.importorskip("mcp")
    root = skills_dir(tmp_path)
    skill_md, forms = asyncio.run(asyncio.wait_for(sdk_reads(root), 120))
    # What the SDK read is what skills/list's manifest describes.
    server = MCPServer(MCPServerConfig(name="py-skills"))
    server.add_skills(root)
    listed = asyncio.run(request(server, 1, "skills/list"))
    files = {f["uri"]: f for f in listed["skills"][0]["resources"]}
    for uri, text in [(SKILL, skill_md), ("skill://pdf-processing/references/FORMS.md", forms)]:
        data = text.encode()
        assert (digest(data), len(data)) == (files[uri]["digest"], files[uri]["size"]), uri
