"""Cluster checks of tasks across instances (issue #16), imported by cluster.py.

The instances run with the test tools on (`CODOMYRMEX_MCP_TEST_TOOLS=1`, see ENV): `test.sleep`
is work that can run as a task. Requests go straight to one instance or another (not through
nginx), so the test knows which instance owns a task and which one is asked about it:

- `check_task_polled_everywhere`: a 2025-11-25 task created on one instance, polled with
  `tasks/get` and fetched with `tasks/result` from every instance, in a session every
  instance serves; and a 2026-07-28 task (the tasks extension) polled from every instance
  until it completes, its result inlined.
- `check_listen_sees_other_instance`: a `subscriptions/listen` stream open on one instance
  hears the changes made through another (`test.announce`: a resource update, and a tool
  registered at run time), carried by the change bus (Redis pub/sub).
- `check_owner_killed`: the owner of a working 2026-07-28 task dies of SIGKILL; another
  instance then reports the task `failed` ("the instance running this task stopped") within
  the lease (10 s, renewed every second), and `tasks/get` keeps saying so.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
from typing import Any

from mcp.shared._httpx_utils import create_mcp_http_client

ENV = {"CODOMYRMEX_MCP_TEST_TOOLS": "1"}
CHANGED_URI = "test://cluster/changed"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
LEASE_SECONDS = 10.0
MODERN = "2026-07-28"
LEGACY = "2025-11-25"


class TaskMismatch(Exception):
    pass


def check(condition: bool, what: str) -> None:
    if not condition:
        raise TaskMismatch(what)


def _message(r: Any, want_id: Any) -> dict[str, Any]:
    """The JSON-RPC message answering `want_id`, from a JSON or an SSE response."""
    check(r.status_code == 200, f"HTTP {r.status_code}: {r.text[:300]!r}")
    if r.headers.get("content-type", "").startswith("text/event-stream"):
        for line in r.text.splitlines():
            if line.startswith("data:"):
                data = line[5:].strip()
                if not data:
                    continue
                msg = json.loads(data)
                if msg.get("id") == want_id:
                    return msg
        raise TaskMismatch(f"no answer to {want_id!r} in the stream: {r.text[:300]!r}")
    return r.json()


class Direct:
    """Raw JSON-RPC over Streamable HTTP to one instance."""

    def __init__(self, hc: Any, url: str, token: str) -> None:
        self.hc, self.url, self.token, self.next_id = hc, url, token, 100

    def headers(self, extra: dict[str, str]) -> dict[str, str]:
        return {
            "Authorization": f"Bearer {self.token}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            **extra,
        }

    async def legacy(self, session: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        r = await self.hc.post(
            self.url,
            json=body,
            headers=self.headers({"Mcp-Session-Id": session, "MCP-Protocol-Version": LEGACY}),
            timeout=60,
        )
        return _message(r, self.next_id)

    async def modern(self, method: str, params: dict[str, Any], name: str | None) -> dict[str, Any]:
        self.next_id += 1
        params = dict(params)
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS_EXTENSION: {}}},
        }
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        extra = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
        if name is not None:
            extra["Mcp-Name"] = name
        r = await self.hc.post(self.url, json=body, headers=self.headers(extra), timeout=60)
        return _message(r, self.next_id)

    async def open_session(self) -> str:
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": LEGACY,
                "capabilities": {},
                "clientInfo": {"name": "cluster-tasks", "version": "1"},
            },
        }
        r = await self.hc.post(self.url, json=init, headers=self.headers({}), timeout=30)
        _message(r, 1)
        session = r.headers.get("mcp-session-id")
        check(bool(session), f"initialize gave no Mcp-Session-Id: {r.headers!r}")
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        r = await self.hc.post(
            self.url,
            json=note,
            headers=self.headers({"Mcp-Session-Id": session, "MCP-Protocol-Version": LEGACY}),
            timeout=30,
        )
        check(r.status_code == 202, f"notifications/initialized: HTTP {r.status_code}")
        return session


def _result(msg: dict[str, Any], what: str) -> dict[str, Any]:
    check("result" in msg, f"{what}: {msg!r}")
    return msg["result"]


async def check_task_polled_everywhere(instance_urls: list[str], token: str) -> None:
    async with create_mcp_http_client() as hc:
        inst = [Direct(hc, u, token) for u in instance_urls]

        # 2025-11-25: created on the first instance, seen and fetched from each.
        session = await inst[0].open_session()
        created = _result(
            await inst[0].legacy(
                session, "tools/call", {"name": "test.sleep", "arguments": {"seconds": 2}, "task": {"ttl": 120000}}
            ),
            "2025-11-25 tools/call as a task",
        )
        task_id = created["task"]["taskId"]
        for n, i in enumerate(inst):
            got = _result(await i.legacy(session, "tasks/get", {"taskId": task_id}), f"tasks/get on instance {n}")
            check(got["taskId"] == task_id, f"tasks/get on instance {n}: {got!r}")
            check(got["status"] in ("working", "completed"), f"tasks/get on instance {n}: {got!r}")
        for n, i in enumerate(inst):
            result = _result(
                await i.legacy(session, "tasks/result", {"taskId": task_id}), f"tasks/result on instance {n}"
            )
            text = result["content"][0]["text"]
            check(text == "slept 2 s", f"tasks/result on instance {n}: {result!r}")
            related = result.get("_meta", {}).get("io.modelcontextprotocol/related-task", {})
            check(related.get("taskId") == task_id, f"tasks/result on instance {n}: {result!r}")
        listed = _result(await inst[-1].legacy(session, "tasks/list", {}), "tasks/list")
        check(task_id in {t["taskId"] for t in listed["tasks"]}, f"tasks/list on another instance: {listed!r}")
        print(f"ok: a 2025-11-25 task made on one instance, polled and fetched from all {len(inst)}")

        # 2026-07-28: the call becomes a task; every instance polls it until it completes.
        created = _result(
            await inst[0].modern("tools/call", {"name": "test.sleep", "arguments": {"seconds": 2}}, "test.sleep"),
            "2026-07-28 tools/call",
        )
        check(created.get("resultType") == "task", f"2026-07-28 tools/call did not become a task: {created!r}")
        task_id = created["taskId"]
        done: set[int] = set()
        deadline = time.monotonic() + 60
        while len(done) < len(inst):
            check(time.monotonic() < deadline, f"the 2026-07-28 task did not complete everywhere: {done}")
            for n, i in enumerate(inst):
                got = _result(await i.modern("tasks/get", {"taskId": task_id}, task_id), f"tasks/get on {n}")
                check(got["status"] in ("working", "completed"), f"tasks/get on instance {n}: {got!r}")
                if got["status"] == "completed":
                    check(got["result"]["content"][0]["text"] == "slept 2 s", f"inlined result on {n}: {got!r}")
                    done.add(n)
            await asyncio.sleep(0.2)
    print(f"ok: a 2026-07-28 task made on one instance, polled to its result from all {len(inst)}")


async def check_owner_killed(instance_urls: list[str], owner: subprocess.Popen[bytes], owner_index: int,
                             token: str) -> None:
    async with create_mcp_http_client() as hc:
        inst = [Direct(hc, u, token) for u in instance_urls]
        other = inst[(owner_index + 1) % len(inst)]
        created = _result(
            await inst[owner_index].modern(
                "tools/call", {"name": "test.sleep", "arguments": {"seconds": 600}}, "test.sleep"
            ),
            "a long task",
        )
        check(created.get("resultType") == "task", f"not a task: {created!r}")
        task_id = created["taskId"]
        got = _result(await other.modern("tasks/get", {"taskId": task_id}, task_id), "tasks/get before the kill")
        check(got["status"] == "working", f"before the kill: {got!r}")
        owner.send_signal(signal.SIGKILL)
        check(owner.wait(timeout=10) == -signal.SIGKILL, "the owner did not die of SIGKILL")
        killed = time.monotonic()
        # Generous: the lease, one renewal interval, and slack for a loaded machine.
        deadline = killed + LEASE_SECONDS + 1 + 20
        while True:
            got = _result(await other.modern("tasks/get", {"taskId": task_id}, task_id), "tasks/get after the kill")
            if got["status"] != "working":
                break
            check(time.monotonic() < deadline, f"still working {time.monotonic() - killed:.1f} s after the kill")
            await asyncio.sleep(0.2)
        after = time.monotonic() - killed
        check(got["status"] == "failed", f"after the kill: {got!r}")
        check("stopped" in got.get("statusMessage", ""), f"no reason given: {got!r}")
        again = _result(await other.modern("tasks/get", {"taskId": task_id}, task_id), "tasks/get again")
        check(again["status"] == "failed", f"it came back: {again!r}")
    print(f"ok: the owner of a working task got SIGKILL; {after:.1f} s later another instance "
          f"reports it failed: {got['statusMessage']!r}")


async def check_listen_sees_other_instance(instance_urls: list[str], token: str) -> None:
    async with create_mcp_http_client() as hc:
        listener, announcer = Direct(hc, instance_urls[0], token), Direct(hc, instance_urls[1], token)
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "subscriptions/listen",
            "params": {
                "notifications": {"toolsListChanged": True, "resourceSubscriptions": [CHANGED_URI]},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": MODERN,
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        }
        headers = listener.headers({"MCP-Protocol-Version": MODERN, "Mcp-Method": "subscriptions/listen"})
        heard: set[str] = set()
        async with hc.stream("POST", listener.url, json=body, headers=headers, timeout=60) as r:
            check(r.status_code == 200, f"subscriptions/listen: HTTP {r.status_code}")
            lines = r.aiter_lines()

            async def next_notification() -> dict[str, Any]:
                async for line in lines:
                    if line.startswith("data:") and line[5:].strip():
                        return json.loads(line[5:])
                raise TaskMismatch("the listen stream ended")

            ack = await asyncio.wait_for(next_notification(), timeout=30)
            check(ack.get("method") == "notifications/subscriptions/acknowledged", f"first on the stream: {ack!r}")
            made = _result(
                await announcer.modern(
                    "tools/call", {"name": "test.announce", "arguments": {"uri": CHANGED_URI, "toggle_tool": True}},
                    "test.announce",
                ),
                "test.announce on another instance",
            )
            check(not made.get("isError"), f"test.announce: {made!r}")
            deadline = time.monotonic() + 30
            while heard != {"notifications/resources/updated", "notifications/tools/list_changed"}:
                left = deadline - time.monotonic()
                check(left > 0, f"the listener heard only {sorted(heard)} of another instance's changes")
                try:
                    note = await asyncio.wait_for(next_notification(), timeout=left)
                except asyncio.TimeoutError:
                    raise TaskMismatch(
                        f"the listener heard only {sorted(heard)} of another instance's changes in 30 s"
                    ) from None
                method = note.get("method", "")
                if method == "notifications/resources/updated":
                    check(note["params"]["uri"] == CHANGED_URI, f"another resource: {note!r}")
                heard.add(method)
        # Put the tool list back as it was.
        await announcer.modern("tools/call", {"name": "test.announce", "arguments": {"toggle_tool": True}},
                               "test.announce")
    print("ok: subscriptions/listen on one instance heard a resource update and a tools list change "
          "made through another")
