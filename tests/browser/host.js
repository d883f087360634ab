// The test host's script (host.html says what it shows). It does what an app-rendering host
// does, with the official pieces: the TypeScript SDK's client connects to our server over
// Streamable HTTP, lists the tools, reads the `ui://` resource the tool links in
// `_meta.ui.resourceUri`, renders it in a sandboxed iframe (opaque origin, scripts only,
// under the content security policy its `_meta.ui.csp` asks for), and connects ext-apps'
// AppBridge to it. The bridge answers the app's `ui/initialize`, and relays the app's own
// `tools/call` to the server through the client. Once the app says it is initialized, the
// host calls the tool and passes its arguments and result in, as a host does after a model's
// call.
//
// Bundled at test time by esbuild (pinned in tests/browser/setup.sh); nothing here is
// committed from npm.

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import {
  AppBridge,
  PostMessageTransport,
  RESOURCE_MIME_TYPE,
  buildAllowAttribute,
  getToolUiResourceUri,
  isToolVisibilityAppOnly,
} from "@modelcontextprotocol/ext-apps/app-bridge";

const HOST_INFO = { name: "codomyrmex-browser-host", version: "1.0.0" };

// What the test reads: every message between the app and the bridge, and every error.
const hostLog = [];
const hostErrors = [];
window.hostLog = hostLog;
window.hostErrors = hostErrors;

function step(state, text) {
  if (state) document.body.dataset.state = state;
  const line = document.createElement("div");
  line.textContent = text;
  document.getElementById("log").appendChild(line);
}

function fail(what, error) {
  const text = `${what}: ${error && error.message ? error.message : String(error)}`;
  hostErrors.push(text);
  step("error", text);
}

// The PostMessageTransport, with each message recorded for the test.
class RecordingTransport {
  constructor(inner) {
    this.inner = inner;
    inner.onmessage = (message, extra) => {
      hostLog.push({ from: "app", message });
      if (this.onmessage) this.onmessage(message, extra);
    };
    inner.onerror = (error) => {
      fail("the postMessage transport", error);
      if (this.onerror) this.onerror(error);
    };
    inner.onclose = () => {
      if (this.onclose) this.onclose();
    };
  }
  start() {
    return this.inner.start();
  }
  send(message, options) {
    hostLog.push({ from: "host", message });
    return this.inner.send(message, options);
  }
  close() {
    return this.inner.close();
  }
}

// The content security policy a host applies to the app: nothing from the network unless
// `_meta.ui.csp` lists it (the extension's default), inline scripts and styles allowed.
function contentSecurityPolicy(csp) {
  const list = (domains) => (Array.isArray(domains) ? domains.join(" ") : "");
  const resources = list(csp && csp.resourceDomains);
  const connect = list(csp && csp.connectDomains);
  const frames = list(csp && csp.frameDomains);
  const bases = list(csp && csp.baseUriDomains);
  return [
    "default-src 'none'",
    `script-src 'unsafe-inline' ${resources}`.trim(),
    `style-src 'unsafe-inline' ${resources}`.trim(),
    `img-src data: ${resources}`.trim(),
    `font-src data: ${resources}`.trim(),
    `connect-src ${connect || "'none'"}`,
    `frame-src ${frames || "'none'"}`,
    `base-uri ${bases || "'none'"}`,
  ].join("; ");
}

function withPolicy(html, policy) {
  const meta = `<meta http-equiv="Content-Security-Policy" content="${policy.replace(/"/g, "&quot;")}">`;
  const head = /<head[^>]*>/i.exec(html);
  if (head) return html.slice(0, head.index + head[0].length) + meta + html.slice(head.index + head[0].length);
  return meta + html;
}

async function listAllTools(client) {
  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  return tools;
}

async function main() {
  const params = new URLSearchParams(location.search);
  const endpoint = params.get("mcp");
  const toolName = params.get("tool");
  const toolArguments = JSON.parse(params.get("arguments") || "{}");
  if (!endpoint || !toolName) throw new Error("host.html needs ?mcp=URL&tool=NAME");

  const client = new Client(HOST_INFO, {
    capabilities: { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: [RESOURCE_MIME_TYPE] } } },
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(endpoint)));
  const server = client.getServerVersion();
  step(null, `connected to ${server ? server.name : "?"} at ${endpoint} (protocol ${client.getNegotiatedProtocolVersion ? client.getNegotiatedProtocolVersion() : "?"})`);

  const tools = await listAllTools(client);
  const tool = tools.find((t) => t.name === toolName);
  if (!tool) throw new Error(`tools/list has no ${toolName}: ${tools.map((t) => t.name).join(", ")}`);
  if (isToolVisibilityAppOnly(tool)) throw new Error(`${toolName} is for the app only; a host calls it for no model`);
  const uri = getToolUiResourceUri(tool);
  if (!uri) throw new Error(`${toolName} links no UI resource (_meta.ui.resourceUri)`);
  const appOnly = tools.filter((t) => isToolVisibilityAppOnly(t)).map((t) => t.name);
  step(null, `${toolName} links ${uri}; tools for the app only: ${appOnly.join(", ") || "none"}`);

  const read = await client.readResource({ uri });
  const content = read.contents.find((c) => c.uri === uri) || read.contents[0];
  if (!content || typeof content.text !== "string") throw new Error(`resources/read ${uri} returned no text`);
  if (content.mimeType !== RESOURCE_MIME_TYPE) {
    throw new Error(`resources/read ${uri}: mimeType ${content.mimeType}, not ${RESOURCE_MIME_TYPE}`);
  }
  const ui = (content._meta && content._meta.ui) || {};
  const policy = contentSecurityPolicy(ui.csp);
  step(null, `read ${uri} (${content.text.length} characters); CSP: ${policy}`);

  // The frame: an opaque origin (no allow-same-origin), scripts only.
  const iframe = document.createElement("iframe");
  iframe.setAttribute("sandbox", "allow-scripts");
  iframe.setAttribute("allow", buildAllowAttribute(ui.permissions));
  iframe.title = tool.title || toolName;
  document.getElementById("frame").appendChild(iframe);
  if (ui.prefersBorder === false) document.getElementById("frame").style.border = "0";

  const bridge = new AppBridge(
    client,
    HOST_INFO,
    { openLinks: {}, serverTools: {}, serverResources: {}, logging: {} },
    {
      hostContext: {
        theme: "light",
        platform: "web",
        displayMode: "inline",
        availableDisplayModes: ["inline"],
        containerDimensions: { width: 640, maxHeight: 600 },
      },
    },
  );
  bridge.onerror = (error) => fail("the bridge", error);
  bridge.onsizechange = ({ height }) => {
    if (typeof height === "number" && height > 0) iframe.style.height = `${Math.min(height, 600)}px`;
  };
  bridge.oninitialized = () => {
    const app = bridge.getAppVersion();
    step("initialized", `the app ${app ? `${app.name} ${app.version}` : "?"} is initialized`);
    (async () => {
      await bridge.sendToolInput({ arguments: toolArguments });
      const result = await client.callTool({ name: toolName, arguments: toolArguments });
      await bridge.sendToolResult(result);
      step("result-sent", `${toolName} answered; its result went to the app`);
    })().catch((e) => fail(`calling ${toolName}`, e));
  };
  await bridge.connect(new RecordingTransport(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow)));
  iframe.srcdoc = withPolicy(content.text, policy);
  step("app-loaded", `rendering ${uri} in a sandboxed iframe`);
}

main().catch((e) => fail("the host", e));
