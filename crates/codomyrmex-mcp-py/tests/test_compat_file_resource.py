"""Compatibility mode's ``MCPServer.register_file_resource`` reads through the library's one
confinement (issue #26): the file's directory is the root, opened at registration, and each
``resources/read`` reads the file by name from it, checked on the opened descriptor and
capped. What the original did otherwise (URI, name, MIME type, the text read at each read)
is pinned in test_compat_server.py."""

import asyncio
import os

import pytest

from codomyrmex_mcp.compat.transport import server as compat_server
from codomyrmex_mcp.compat.transport.server import MCPServer


def read(server, uri):
    """The JSON-RPC answer to ``resources/read`` of ``uri``, in process."""
    return asyncio.run(server.handle_request({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri}}))


def registered(tmp_path, text="inside"):
    served = tmp_path / "served"
    served.mkdir()
    note = served / "note.txt"
    note.write_text(text)
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text("TOP-SECRET")
    server = MCPServer()
    server.register_file_resource(str(note))
    return server, f"file://{note.absolute()}", note, secret


def refused(answer, tmp_path):
    """The error of a refused read: no text was served, no absolute path is in it."""
    assert "result" not in answer, answer
    message = str(answer["error"])
    assert "TOP-SECRET" not in message
    assert str(tmp_path) not in message, message
    return message


def test_reads_the_file_through_the_confinement(tmp_path):
    server, uri, note, _ = registered(tmp_path)
    assert read(server, uri)["result"]["contents"][0]["text"] == "inside"
    # An in-directory link is followed, as the original's read_text did.
    (note.parent / "real.txt").write_text("linked")
    note.unlink()
    note.symlink_to("real.txt")
    assert read(server, uri)["result"]["contents"][0]["text"] == "linked"


def test_a_symlink_out_swapped_in_after_registration_is_refused(tmp_path):
    server, uri, note, secret = registered(tmp_path)
    note.unlink()
    note.symlink_to(secret)
    message = refused(read(server, uri), tmp_path)
    assert "note.txt" in message and "outside the root" in message, message


def test_the_directory_swapped_for_a_link_out_is_not_followed(tmp_path):
    # The directory was opened at registration: a link put at its path later leads nowhere.
    server, uri, note, secret = registered(tmp_path)
    os.rename(note.parent, tmp_path / "moved")
    (secret.parent / "note.txt").write_text("TOP-SECRET")
    note.parent.symlink_to(secret.parent)
    answer = read(server, uri)
    assert answer["result"]["contents"][0]["text"] == "inside", answer


def test_a_file_grown_past_the_cap_is_refused(tmp_path, monkeypatch):
    server, uri, note, _ = registered(tmp_path)
    assert compat_server.FILE_RESOURCE_CAP == 16 * 1024 * 1024
    monkeypatch.setattr(compat_server, "FILE_RESOURCE_CAP", 64)
    note.write_text("x" * 64)
    assert read(server, uri)["result"]["contents"][0]["text"] == "x" * 64
    note.write_text("x" * 65)
    message = refused(read(server, uri), tmp_path)
    assert "larger than the limit of 64 bytes" in message, message


def test_a_file_past_the_real_cap_is_refused(tmp_path):
    server, uri, note, _ = registered(tmp_path)
    with open(note, "wb") as f:
        f.truncate(compat_server.FILE_RESOURCE_CAP + 1)
    message = refused(read(server, uri), tmp_path)
    assert "larger than the limit" in message, message


def test_a_directory_a_missing_file_and_a_fifo_are_refused(tmp_path):
    server, uri, note, _ = registered(tmp_path)
    note.unlink()
    message = refused(read(server, uri), tmp_path)
    assert "note.txt" in message and "no such file" in message, message
    note.mkdir()
    message = refused(read(server, uri), tmp_path)
    assert "is a directory" in message, message
    note.rmdir()
    os.mkfifo(note)
    message = refused(read(server, uri), tmp_path)
    assert "not a regular file" in message, message


def test_a_missing_directory_and_text_that_is_not_utf8(tmp_path):
    server = MCPServer()
    absent = tmp_path / "later" / "note.txt"
    server.register_file_resource(str(absent))
    uri = f"file://{absent.absolute()}"
    message = refused(read(server, uri), tmp_path)
    assert "note.txt" in message, message
    # The directory made after registration is opened at the first read that finds it.
    absent.parent.mkdir()
    absent.write_bytes(b"\xff\xfe")
    message = refused(read(server, uri), tmp_path)
    assert "not UTF-8" in message, message
    absent.write_text("late")
    assert read(server, uri)["result"]["contents"][0]["text"] == "late"


@pytest.mark.parametrize("suffix", ["", "/.."])
def test_a_path_that_names_a_directory_is_refused(tmp_path, suffix):
    (tmp_path / "d").mkdir()
    server = MCPServer()
    server.register_file_resource(str(tmp_path / "d") + suffix)
    resources = asyncio.run(server._list_resources({}))["resources"]
    message = refused(read(server, resources[0]["uri"]), tmp_path)
    assert "directory" in message, message
