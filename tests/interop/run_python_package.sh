#!/usr/bin/env bash
# The Python package (crates/codomyrmex-mcp-py) as its users get it: a prebuilt wheel.
#
# 1. maturin (from PyPI, in .ci/cache/venv-maturin) builds the abi3 manylinux wheel once, with
#    the release profile into the workspace's target directory (CARGO_TARGET_DIR if set), so it
#    shares the release build's compiled dependencies; the wheel lands in TARGET/wheels.
# 2. The wheel, with its `test` extra (pytest, mypy, the pinned official SDK `mcp` as the
#    client), is installed into a fresh virtualenv (.ci/cache/venv-wheel, made anew each run)
#    by a pip that runs on a PATH with no `cargo` or `rustc`: nothing can be built from source.
# 3. The package's pytest suite (crates/codomyrmex-mcp-py/tests) runs against the installed
#    wheel, on that PATH too.
#
# Exits non-zero on any failure.
#
#   bash tests/interop/run_python_package.sh [PYTEST_ARGS...]
#   PYTHON_OLDEST=/path/to/python3.9 bash tests/interop/run_python_package.sh   # also on 3.9
set -euo pipefail

# shellcheck source=tests/interop/maturin_venv.sh
source "$(dirname "${BASH_SOURCE[0]}")/maturin_venv.sh"
crate="$root/crates/codomyrmex-mcp-py"

# --- 1. the wheel -------------------------------------------------------------------------
target_dir="${CARGO_TARGET_DIR:-$(cargo metadata --format-version 1 --no-deps | "$build_venv/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')}"
wheels="$target_dir/wheels"
rm -f "$wheels"/codomyrmex_mcp-*.whl
echo "python package: maturin build --release (target dir $target_dir)"
start=$(date +%s)
# The crates it compiles are named: after CI's release build of the binary, the py crate's
# dependencies resolve to the binary's features (crates/codomyrmex-mcp-py/Cargo.toml), so
# only PyO3 and the bindings should be, and anything more is CI's time spent twice.
mkdir -p "$wheels"
maturin_log="$wheels/maturin.log"
if ! CARGO_TARGET_DIR="$target_dir" "$build_venv/bin/maturin" build --release \
    --manifest-path "$crate/Cargo.toml" --out "$wheels" >"$maturin_log" 2>&1; then
    cat "$maturin_log" >&2
    echo "python package: maturin build failed" >&2
    exit 1
fi
compiled="$(sed -n 's/^ *Compiling \([^ ]*\) .*/\1/p' "$maturin_log" | sort | tr '\n' ' ')"
echo "python package: the wheel's build compiled $(wc -w <<<"$compiled") crates: ${compiled:-none}"
shopt -s nullglob
built=("$wheels"/codomyrmex_mcp-*.whl)
shopt -u nullglob
if [ "${#built[@]}" -ne 1 ]; then
    echo "python package: expected one wheel in $wheels, found ${#built[@]}" >&2
    exit 1
fi
wheel="${built[0]}"
echo "python package: built $(basename "$wheel") in $(( $(date +%s) - start )) s"
case "$(basename "$wheel")" in
    *-cp39-abi3-manylinux*.whl) ;;
    *) echo "python package: $(basename "$wheel") is not a cp39-abi3 manylinux wheel" >&2; exit 1 ;;
esac

# --- 2. a PATH without Rust -----------------------------------------------------------------
no_rust_path=""
IFS=: read -r -a path_dirs <<< "$PATH"
for dir in "${path_dirs[@]}"; do
    [ -n "$dir" ] || continue
    if [ -e "$dir/cargo" ] || [ -e "$dir/rustc" ]; then
        continue
    fi
    no_rust_path="${no_rust_path:+$no_rust_path:}$dir"
done
without_rust() { env -u CARGO_TARGET_DIR -u CARGO_HOME -u RUSTUP_HOME PATH="$no_rust_path" "$@"; }
if without_rust sh -c 'command -v cargo || command -v rustc' >/dev/null; then
    echo "python package: cargo or rustc is still on the PATH without Rust" >&2
    exit 1
fi

# Installs the wheel with its test extra into a fresh virtualenv made by PYTHON ($1) at $2.
install_wheel() {
    rm -rf "$2"
    "$1" -m venv "$2"
    echo "python package: $("$2/bin/python" --version) in $2, no cargo or rustc on the PATH"
    without_rust "$2/bin/python" -m pip --disable-pip-version-check --quiet install \
        --only-binary codomyrmex-mcp "$wheel[test]"
    without_rust "$2/bin/python" -c 'import codomyrmex_mcp; print("python package: installed", codomyrmex_mcp.__file__)'
}

# --- 3. the suite against the wheel ---------------------------------------------------------
venv="$root/.ci/cache/venv-wheel"
install_wheel "$python" "$venv"
echo "python package: pytest"
(cd "$crate" && without_rust "$venv/bin/python" -m pytest -q "$@")

# The oldest CPython the abi3 wheel supports (3.9), when PYTHON_OLDEST names one: the same
# wheel and suite without the SDK (which needs 3.10), whose tests are skipped there.
if [ -n "${PYTHON_OLDEST:-}" ]; then
    oldest="$root/.ci/cache/venv-wheel-oldest"
    install_wheel "$PYTHON_OLDEST" "$oldest"
    (cd "$crate" && without_rust "$oldest/bin/python" -m pytest -q "$@")
fi
