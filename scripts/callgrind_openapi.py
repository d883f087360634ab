#!/usr/bin/env python3
"""Instructions per call of the `gateway` process on an OpenAPI tool (issue #31 item 6),
counted by callgrind (independent of the machine's load): a 2025-11-25 client on its stdio
calls `pets.showPetById` one call at a time; the gateway sends `GET /v1/pets/7` with a bearer
token to a REST server started here (Python's http.server, HTTP/1.1 keep-alive, not counted)
and answers with the checked `structuredContent`. Two fresh gateways with A and B calls; the
figure is (total(B) - total(A)) / (B - A), so start-up and shutdown cancel out. The gateway's
input spin is off (CODOMYRMEX_MCP_STDIO_SPIN_US=0): spinning is instructions spent waiting.

  scripts/callgrind_openapi.py target/release/codomyrmex-mcp 100 600
  KEEP=1 ...   keeps the callgrind files (for callgrind_annotate) and prints where they are
"""
import http.server, json, os, re, subprocess, sys, tempfile, threading, time

gw, a, b = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

SPEC = """openapi: 3.0.3
info: {title: Pets, version: "1"}
paths:
  /pets/{petId}:
    parameters:
      - {name: petId, in: path, required: true, schema: {type: string}}
    get:
      operationId: showPetById
      parameters:
        - {name: X-Trace, in: header, schema: {type: string}}
      responses:
        200:
          description: the pet
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Pet"}
components:
  schemas:
    Pet:
      type: object
      required: [id, name]
      properties:
        id: {type: string}
        name: {type: string}
        tag: {type: string, nullable: true}
        trace: {type: string, nullable: true}
"""


class Pets(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # the head and the body are two writes

    def do_GET(self):
        pet = self.path.rsplit("/", 1)[-1]
        ok = self.headers.get("authorization") == "Bearer s3cret"
        body = json.dumps({"id": pet, "name": "Rex", "tag": None, "trace": None} if ok
                          else {"error": "unauthorized"}).encode()
        self.send_response(200 if ok else 401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Pets)
threading.Thread(target=server.serve_forever, daemon=True).start()
base = f"http://127.0.0.1:{server.server_address[1]}/v1"

work = tempfile.mkdtemp()
open(os.path.join(work, "pets.yaml"), "w").write(SPEC)
cfg = os.path.join(work, "gateway.toml")
open(cfg, "w").write(f'[[upstream]]\nname = "pets"\nopenapi = "pets.yaml"\nbase_url = "{base}"\n'
                     'auth = { type = "bearer", token = "s3cret" }\n')


def total(n):
    out = os.path.join(work, f"callgrind.openapi.{n}")
    env = dict(os.environ, CODOMYRMEX_MCP_STDIO_SPIN_US="0")
    p = subprocess.Popen(["valgrind", "--tool=callgrind", "--dump-instr=no", f"--callgrind-out-file={out}",
                          gw, "gateway", "--no-rate-limit", "--config", cfg],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)

    def send(m):
        p.stdin.write((json.dumps(m) + "\n").encode()); p.stdin.flush()

    def recv():
        while True:
            m = json.loads(p.stdout.readline())
            if "id" in m:
                return m

    send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "m", "version": "1"}}})
    recv(); send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    for _ in range(600):  # until the API is mounted
        send({"jsonrpc": "2.0", "id": -1, "method": "tools/list"}); r = recv()
        if "pets.showPetById" in json.dumps(r):
            break
        time.sleep(0.05)
    for i in range(1, n + 1):
        send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "pets.showPetById", "arguments": {"petId": "7"}}})
        r = recv()
        assert r.get("result", {}).get("structuredContent", {}).get("id") == "7", r
    p.stdin.close(); p.wait(timeout=600)
    return int(re.search(r"^totals: (\d+)", open(out).read(), re.M).group(1))


ta, tb = total(a), total(b)
print(f"openapi instructions/call={(tb - ta) / (b - a):.0f}")
if os.environ.get("KEEP"):
    print(f"callgrind files: {work}/callgrind.openapi.{a} and .{b}")
