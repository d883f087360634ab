"""`run_http`'s options. Authentication, as the Rust server's `serve --http`: a static bearer token
and JWT verification against a JWKS. A request without a valid token gets 401 with
`WWW-Authenticate`; a JWT without a required scope gets 403. Servers run in this process, on
a port the OS picks on 127.0.0.1, and stop when the test ends. And `rate_limit_rate=0`
turns off the per-client HTTP limit too."""

import asyncio
import json
import threading
import time
import urllib.error
import urllib.request

import pytest

from codomyrmex_mcp import MCPServer, MCPServerConfig

PING = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()


class Running:
    """`server.run_http(**options)` on a thread of its own, stopped by cancelling its task."""

    def __init__(self, config=None, **options):
        self.server = MCPServer(config or MCPServerConfig(name="auth-test"))

        @self.server.tool()
        def add(a: int, b: int) -> int:
            return a + b

        self.ready = threading.Event()
        self.port = None
        self.error = None
        self.loop = asyncio.new_event_loop()
        self.task = None

        def on_ready(port):
            self.port = port
            self.ready.set()

        async def main():
            self.task = asyncio.current_task()
            await self.server.run_http("127.0.0.1", 0, on_ready=on_ready, **options)

        def run():
            try:
                self.loop.run_until_complete(main())
            except asyncio.CancelledError:
                pass
            except BaseException as e:  # reported to the test
                self.error = e
                self.ready.set()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        assert self.ready.wait(60), "the server never listened"
        if self.error is not None:
            raise self.error
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def post(self, token=None, body=PING):
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        request = urllib.request.Request(self.url, data=body, method="POST", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, response.headers, response.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()

    def stop(self):
        self.loop.call_soon_threadsafe(self.task.cancel)
        self.thread.join(60)
        assert not self.thread.is_alive(), "the server did not stop"


def test_a_bearer_token_is_required_and_its_absence_gets_401_with_www_authenticate():
    running = Running(auth_token="s3cret-token")
    try:
        status, headers, body = running.post()
        assert status == 401
        assert headers.get("WWW-Authenticate", "").startswith("Bearer")
        assert json.loads(body)["error"]["message"]
        status, headers, _ = running.post(token="wrong")
        assert status == 401 and 'error="invalid_token"' in headers.get("WWW-Authenticate", "")
        status, _, body = running.post(token="s3cret-token")
        assert status == 200 and json.loads(body) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    finally:
        running.stop()


def jwt_fixture():
    jwt = pytest.importorskip("jwt")
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    public.update({"kid": "k1", "use": "sig", "alg": "RS256"})

    def token(scope="mcp:use", audience=None, issuer="https://issuer.example"):
        now = int(time.time())
        claims = {"iss": issuer, "aud": audience, "sub": "ada", "iat": now, "exp": now + 600, "scope": scope}
        return jwt.encode(claims, key, algorithm="RS256", headers={"kid": "k1"})

    return {"keys": [public]}, token


def test_jwt_access_tokens_are_verified_against_a_jwks(tmp_path):
    jwks, token = jwt_fixture()
    audience = "https://mcp.example.com/mcp"
    # The JWKS as a dict here; as a file's path below.
    running = Running(jwks=jwks, issuer="https://issuer.example", audience=audience, required_scopes=["mcp:use"])
    try:
        status, headers, _ = running.post()
        assert status == 401
        challenge = headers.get("WWW-Authenticate", "")
        assert challenge.startswith("Bearer") and "resource_metadata=" in challenge
        assert running.post(token=token(audience=audience))[0] == 200
        assert running.post(token=token(audience="https://other.example/mcp"))[0] == 401
        assert running.post(token=token(audience=audience, issuer="https://evil.example"))[0] == 401
        status, headers, _ = running.post(token=token(audience=audience, scope="other"))
        assert status == 403 and "insufficient_scope" in headers.get("WWW-Authenticate", "")
    finally:
        running.stop()
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(jwks))
    running = Running(jwks=path, issuer="https://issuer.example", audience=audience)
    try:
        assert running.post()[0] == 401
        assert running.post(token=token(audience=audience))[0] == 200
    finally:
        running.stop()


@pytest.mark.parametrize(
    "options, message",
    [
        ({"jwks": {"keys": []}, "issuer": "https://i.example"}, "together"),
        ({"issuer": "https://i.example", "audience": "https://a.example/mcp"}, "together"),
        ({"required_scopes": ["x"]}, "together"),
        ({"jwks": "/no/such/jwks.json", "issuer": "https://i.example", "audience": "https://a.example/mcp"}, "JWKS"),
        ({"jwks": {"keys": []}, "issuer": "https://i.example", "audience": "https://a.example/mcp"}, "JWKS"),
        ({"auth_token": ""}, "empty"),
    ],
)
def test_bad_authentication_options_are_refused_before_listening(options, message):
    server = MCPServer()
    with pytest.raises(ValueError, match=message):
        asyncio.run(server.run_http("127.0.0.1", 0, **options))


def test_run_passes_http_options_and_refuses_them_for_stdio():
    with pytest.raises(ValueError, match="HTTP transport"):
        MCPServer().run(auth_token="x")


def test_rate_limit_rate_0_turns_off_the_per_client_http_limit_too():
    # The default per-client limit (100 requests/s, burst 200) would answer some of these 429.
    running = Running(MCPServerConfig(name="unlimited", rate_limit_rate=0))
    try:
        statuses = [running.post()[0] for _ in range(400)]
    finally:
        running.stop()
    assert set(statuses) == {200}, {s: statuses.count(s) for s in set(statuses)}
