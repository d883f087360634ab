"""Cluster checks of SSE streams and server-to-client requests across instances (issue #16
items 2 and 8), imported by cluster.py. Each check talks to the instances directly, not
through nginx, so it chooses which instance gets which request:

- `check_resume_elsewhere`: a 2025-11-25 `tools/call` of `demo.elicit` streams on instance A;
  the client reads the elicitation request and cuts the connection; it answers on B, and
  resumes with `Last-Event-ID` on C: it gets the response and nothing it had already seen;
  resuming from the stream's first id on B replays the whole stream once, in order.
- `check_answer_elsewhere`: the same call's stream stays open on A while the answer to its
  elicitation is POSTed to B: the result arrives on A's stream with B's answer in it.
- `start_long_call` and `check_writer_gone`: the same call streams on an instance that
  cluster.py then kills with SIGKILL, its elicitation unanswered; the client resumes with
  `Last-Event-ID` on another instance and gets a JSON-RPC error for its call saying the
  instance handling it stopped, then the end of the stream: it does not wait forever.

The instances must run with `--demo-tools` (`CODOMYRMEX_MCP_DEMO_TOOLS=1`) and a shared
`--store`.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2 as httpx

LEGACY = "2025-11-25"


class StreamMismatch(Exception):
    pass


def _check(condition: bool, what: str) -> None:
    if not condition:
        raise StreamMismatch(what)


def _headers(token: str, session: str | None = None, **extra: str) -> dict[str, str]:
    h = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    if session is not None:
        h["Mcp-Session-Id"] = session
        h["MCP-Protocol-Version"] = LEGACY
    h.update(extra)
    return h


async def _session(hc: httpx.AsyncClient, url: str, token: str) -> str:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": LEGACY,
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "cluster-streams", "version": "1"},
        },
    }
    r = await hc.post(url, json=init, headers=_headers(token))
    _check(r.status_code == 200, f"initialize on {url}: {r.status_code} {r.text[:200]!r}")
    sid = r.headers["mcp-session-id"]
    r = await hc.post(
        url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=_headers(token, sid)
    )
    _check(r.status_code == 202, f"notifications/initialized on {url}: {r.status_code}")
    return sid


def _call(call_id: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": call_id,
        "method": "tools/call",
        "params": {"name": "demo.elicit", "arguments": {"message": "Which instance?"}},
    }


async def _events(response: httpx.Response):
    """The SSE events of a streaming response, as (id, data) pairs; the priming event (no
    data) comes with data None."""
    event_id: str | None = None
    data: list[str] = []
    async for line in response.aiter_lines():
        if line == "":
            if event_id is not None or data:
                payload = "\n".join(data)
                yield event_id, (json.loads(payload) if payload.strip() else None)
            event_id, data = None, []
        elif line.startswith("id:"):
            event_id = line[3:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())


async def _answer(hc: httpx.AsyncClient, url: str, token: str, sid: str, request_id: Any, text: str) -> None:
    reply = {"jsonrpc": "2.0", "id": request_id, "result": {"action": "accept", "content": {"answer": text}}}
    r = await hc.post(url, json=reply, headers=_headers(token, sid))
    _check(r.status_code == 202, f"the answer posted to {url}: {r.status_code} {r.text[:200]!r}")


def _answer_of(result: dict[str, Any]) -> Any:
    return result.get("result", {}).get("structuredContent", {}).get("response", {}).get("content", {}).get("answer")


async def _read_to_end(hc: httpx.AsyncClient, url: str, headers: dict[str, str]) -> list[tuple[str | None, Any]]:
    async with hc.stream("GET", url, headers=headers) as r:
        _check(r.status_code == 200, f"GET with Last-Event-ID on {url}: {r.status_code}")
        return [e async for e in _events(r)]


async def check_resume_elsewhere(urls: list[str], token: str) -> None:
    a, b, c = urls[0], urls[1], urls[2]
    async with httpx.AsyncClient(timeout=30) as hc:
        sid = await _session(hc, a, token)
        seen: list[tuple[str | None, Any]] = []
        async with hc.stream("POST", a, json=_call(11), headers=_headers(token, sid)) as r:
            _check(r.status_code == 200, f"the streamed call on A: {r.status_code}")
            _check(r.headers.get("content-type", "").startswith("text/event-stream"), "the call is not an SSE stream")
            async for event in _events(r):
                seen.append(event)
                if event[1] is not None and event[1].get("method") == "elicitation/create":
                    break
        # The connection to A is cut here, after the elicitation request.
        first_id = seen[0][0]
        request = seen[-1]
        _check(first_id is not None and request[0] is not None, f"events without ids: {seen!r}")
        await _answer(hc, b, token, sid, request[1]["id"], "resumed")
        rest = await _read_to_end(hc, c, _headers(token, sid, **{"Last-Event-ID": request[0]}))
        data = [d for _, d in rest if d is not None]
        _check(len(data) == 1 and data[0].get("id") == 11, f"resumed on C after the request: {rest!r}")
        _check(_answer_of(data[0]) == "resumed", f"the result on C lacks B's answer: {data[0]!r}")
        ids = [i for i, _ in seen] + [i for i, _ in rest]
        _check(len(ids) == len(set(ids)), f"an event came twice: {ids!r}")
        # The whole stream again, from its first id, on B: each event once, in order.
        again = await _read_to_end(hc, b, _headers(token, sid, **{"Last-Event-ID": first_id}))
        again_data = [d for _, d in again if d is not None]
        _check(
            [d.get("method") or d.get("id") for d in again_data] == ["elicitation/create", 11],
            f"the replay on B: {again!r}",
        )
        _check([i for i, _ in again] == [request[0], rest[-1][0]], f"the replayed ids: {again!r} vs {seen!r} {rest!r}")
    print("ok: a 2025-11-25 stream cut on one instance resumed on another with Last-Event-ID, nothing lost or repeated")


async def check_answer_elsewhere(urls: list[str], token: str) -> None:
    a, b = urls[0], urls[1]
    async with httpx.AsyncClient(timeout=30) as hc:
        sid = await _session(hc, a, token)
        result = None
        async with hc.stream("POST", a, json=_call(12), headers=_headers(token, sid)) as r:
            _check(r.status_code == 200, f"the streamed call on A: {r.status_code}")
            async for _, data in _events(r):
                if data is None:
                    continue
                if data.get("method") == "elicitation/create":
                    await _answer(hc, b, token, sid, data["id"], "from B")
                elif data.get("id") == 12:
                    result = data
                    break
        _check(result is not None, "the call's stream ended without its result")
        _check(_answer_of(result) == "from B", f"the result on A: {result!r}")
    print("ok: an elicitation of a call on one instance, answered on another, reached the call")


async def start_long_call(url: str, token: str) -> tuple[str, str]:
    """Starts `demo.elicit` as a streamed call on `url` and leaves it waiting for the answer
    to its elicitation; returns the session and the id of the last event read."""
    async with httpx.AsyncClient(timeout=30) as hc:
        sid = await _session(hc, url, token)
        async with hc.stream("POST", url, json=_call(13), headers=_headers(token, sid)) as r:
            _check(r.status_code == 200, f"the streamed call on {url}: {r.status_code}")
            async for event_id, data in _events(r):
                if data is not None and data.get("method") == "elicitation/create":
                    _check(event_id is not None, "the elicitation request has no event id")
                    return sid, event_id
    raise StreamMismatch("the call's stream ended before its elicitation request")


async def check_writer_gone(url: str, token: str, pending: tuple[str, str]) -> None:
    """After the instance of `start_long_call` got SIGKILL: resuming its stream on `url` ends
    with an error for the call."""
    sid, last = pending
    async with httpx.AsyncClient(timeout=60) as hc:
        rest = await _read_to_end(hc, url, _headers(token, sid, **{"Last-Event-ID": last}))
    data = [d for _, d in rest if d is not None]
    _check(len(data) == 1 and data[0].get("id") == 13, f"resumed after the instance died: {rest!r}")
    message = data[0].get("error", {}).get("message", "")
    _check("stopped" in message, f"not an error saying the instance stopped: {data[0]!r}")
    print("ok: a stream whose instance got SIGKILL, resumed on another, ended with an error for its call")


async def run(urls: list[str], token: str) -> None:
    """Both checks, over the instances' own URLs (at least three)."""
    if len(urls) < 3:
        raise StreamMismatch("the stream checks need three instances")
    await check_resume_elsewhere(urls, token)
    await check_answer_elsewhere(urls, token)
