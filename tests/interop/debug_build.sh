# Sourced by every script that runs the debug binary or a debug example (setup.sh,
# client_everything.sh, inspector_cli.sh, client_interop.sh, apps_browser.sh, .ci/conformance.sh
# and .ci/conformance-client.sh): builds all of them in one invocation and sets `target_dir`.
#
# The invocation selects what the workspace's `cargo test` selects (the default members, with
# their dev-dependencies, which an example target brings in), so that after CI's `cargo test`
# it compiles nothing. A `-p` selection resolves features differently (`-p codomyrmex-mcp-cli
# --bin` builds tokio without the tests' `test-util`, `-p codomyrmex-mcp --example` builds
# tracing-subscriber with fewer features) and rebuilt those crates and every crate above them,
# once per script. Expects `set -euo pipefail` in the caller.

debug_build_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cargo build --quiet --manifest-path "$debug_build_root/Cargo.toml" --bin codomyrmex-mcp \
    --example everything --example conformance_client --example input_roundtrips \
    --example skills_server --example apps_server
target_dir="$(cargo metadata --manifest-path "$debug_build_root/Cargo.toml" --format-version 1 --no-deps \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
