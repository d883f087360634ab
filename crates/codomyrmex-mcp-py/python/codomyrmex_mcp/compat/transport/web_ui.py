"""``codomyrmex.model_context_protocol.transport.web_ui``: the page the HTTP app serves at
``/``: the server's tools (from ``GET /tools``) and a form that calls one
(``POST /tools/{name}/call``). Static: it holds no server data and loads nothing from
elsewhere."""

from __future__ import annotations

__all__ = ["get_web_ui_html"]

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Codomyrmex MCP Server</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2rem; max-width: 60rem; }
li { margin: .3rem 0; } textarea { width: 100%; height: 6rem; } pre { background: #f4f4f4; padding: 1rem; }
</style>
</head>
<body>
<h1>Codomyrmex MCP Server</h1>
<p>JSON-RPC at <code>POST /mcp</code>; health at <code>GET /health</code>.</p>
<h2>Tools</h2>
<ul id="tools"></ul>
<h2>Call</h2>
<p><select id="name"></select></p>
<p><textarea id="args">{}</textarea></p>
<p><button id="call">Call</button></p>
<pre id="out"></pre>
<script>
async function load() {
  const response = await fetch("/tools");
  const listing = await response.json();
  const list = document.getElementById("tools");
  const select = document.getElementById("name");
  for (const tool of listing.tools || []) {
    const item = document.createElement("li");
    item.textContent = tool.name + (tool.description ? ": " + tool.description : "");
    list.appendChild(item);
    const option = document.createElement("option");
    option.value = option.textContent = tool.name;
    select.appendChild(option);
  }
}
document.getElementById("call").onclick = async () => {
  const name = document.getElementById("name").value;
  const out = document.getElementById("out");
  try {
    const body = JSON.parse(document.getElementById("args").value || "{}");
    const response = await fetch("/tools/" + encodeURIComponent(name) + "/call", {
      method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
    out.textContent = JSON.stringify(await response.json(), null, 2);
  } catch (e) {
    out.textContent = String(e);
  }
};
load();
</script>
</body>
</html>
"""


def get_web_ui_html() -> str:
    """The page's HTML."""
    return _PAGE
