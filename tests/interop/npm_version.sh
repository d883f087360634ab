# Sourced by every script that installs a pinned npm package into .ci/cache
# (node_servers.sh, inspector_setup.sh, tests/browser/setup.sh, .ci/conformance-lib.sh): the one
# way they read what is installed.

# npm_installed_version PREFIX PACKAGE: the version of PACKAGE installed under the npm prefix
# PREFIX (as `npm install --prefix PREFIX` put it), or nothing (status 1) when it is absent.
npm_installed_version() {
    local pj="$1/node_modules/$2/package.json"
    [ -f "$pj" ] && sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$pj" | head -1
}
