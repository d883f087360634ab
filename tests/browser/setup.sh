# Sourced by tests/interop/apps_browser.sh and .ci/prefetch.sh: installs (idempotent, pinned)
# what the browser test of the Apps example needs, and sets `root`, `browser_cache`,
# `browser_python` (the virtualenv's python, with Selenium), `esbuild`, `chromium` and
# `chromedriver`:
#
# - from npm, into .ci/cache/browser: the official host side of MCP Apps
#   (`@modelcontextprotocol/ext-apps`), the official TypeScript client it is built on
#   (`@modelcontextprotocol/client`, `/core`, with `zod`), and esbuild to bundle the test host;
# - from PyPI, into the virtualenv .ci/cache/browser/venv: Selenium;
# - from the distribution's packages: Chromium and its WebDriver (`chromium`,
#   `chromium-driver`).
#
# Nothing else is downloaded: Selenium is handed the distribution's chromedriver, so its
# driver manager never runs. Expects `set -euo pipefail` in the caller.

EXT_APPS_VERSION="2.0.4"
MCP_CLIENT_VERSION="2.4.0"
ZOD_VERSION="4.6.7"
ESBUILD_VERSION="0.28.2"
SELENIUM_VERSION="4.51.0"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
browser_cache="$root/.ci/cache/browser"
esbuild="$browser_cache/node_modules/.bin/esbuild"
chromium="$(command -v chromium || echo /usr/bin/chromium)"
chromedriver="$(command -v chromedriver || echo /usr/bin/chromedriver)"

# shellcheck source=tests/interop/npm_version.sh
source "$root/tests/interop/npm_version.sh"

if [ "$(npm_installed_version "$browser_cache" @modelcontextprotocol/ext-apps || true)" != "$EXT_APPS_VERSION" ] \
    || [ "$(npm_installed_version "$browser_cache" @modelcontextprotocol/client || true)" != "$MCP_CLIENT_VERSION" ] \
    || [ "$(npm_installed_version "$browser_cache" esbuild || true)" != "$ESBUILD_VERSION" ] \
    || [ ! -x "$esbuild" ]; then
    if ! command -v npm >/dev/null 2>&1; then
        echo "apps-browser: npm is needed to install ext-apps, the client and esbuild" >&2
        exit 2
    fi
    echo "apps-browser: installing @modelcontextprotocol/ext-apps@$EXT_APPS_VERSION, @modelcontextprotocol/client@$MCP_CLIENT_VERSION, esbuild@$ESBUILD_VERSION"
    mkdir -p "$browser_cache"
    npm install --prefix "$browser_cache" --save-exact --no-audit --no-fund --loglevel=error \
        "@modelcontextprotocol/ext-apps@$EXT_APPS_VERSION" \
        "@modelcontextprotocol/client@$MCP_CLIENT_VERSION" \
        "@modelcontextprotocol/core@$MCP_CLIENT_VERSION" \
        "zod@$ZOD_VERSION" "esbuild@$ESBUILD_VERSION" >&2
fi

browser_venv="$browser_cache/venv"
browser_python="$browser_venv/bin/python"
if [ ! -x "$browser_python" ]; then
    echo "apps-browser: creating $browser_venv"
    "${PYTHON:-python3}" -m venv "$browser_venv"
fi
if [ "$("$browser_python" -c 'import importlib.metadata as m; print(m.version("selenium"))' 2>/dev/null || true)" != "$SELENIUM_VERSION" ]; then
    echo "apps-browser: installing selenium==$SELENIUM_VERSION"
    "$browser_python" -m pip install --quiet --disable-pip-version-check "selenium==$SELENIUM_VERSION"
fi

if [ ! -x "$chromium" ] || [ ! -x "$chromedriver" ]; then
    echo "apps-browser: installing chromium and chromium-driver (the distribution's packages)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
    chromium="$(command -v chromium)"
    chromedriver="$(command -v chromedriver)"
fi
