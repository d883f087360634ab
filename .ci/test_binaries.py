#!/usr/bin/env python3
"""Builds test executables with one `cargo test` selection and runs some of them.

    python3 .ci/test_binaries.py [--package NAME]... [--test PACKAGE:TARGET]... -- CARGO-TEST-ARGS...

Cargo resolves features per selection of packages: `cargo test -p codomyrmex-mcp-redis` builds
tokio, serde and every crate above them with other features than the workspace's `cargo test`,
so it compiles them all again. This script lets `.ci/run` select packages as `cargo test` did
(its feature resolution, so what is already compiled is reused) and still run only the tests it
names: every test executable of each `--package`, and each `--test PACKAGE:TARGET`.

It runs `cargo test --no-run --message-format json-render-diagnostics CARGO-TEST-ARGS` (the build's
own output goes to stderr as usual), then each chosen executable from its package's directory
with the environment `cargo test` gives it (CARGO_MANIFEST_DIR, CARGO_PKG_NAME, CARGO), stopping
at the first that fails, with its status. A `--package` without a test executable or a `--test`
that was not built is an error, not a silent pass.
"""

import argparse
import json
import os
import subprocess
import sys


def main() -> int:
    argv = sys.argv[1:]
    if "--" not in argv:
        print("test_binaries: usage: ... -- CARGO-TEST-ARGS...", file=sys.stderr)
        return 2
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="test_binaries")
    parser.add_argument("--package", action="append", default=[])
    parser.add_argument("--test", action="append", default=[])
    args = parser.parse_args(argv[:split])
    cargo_args = argv[split + 1 :]
    wanted_tests = set()
    for spec in args.test:
        package, sep, target = spec.partition(":")
        if not sep or not package or not target:
            print(f"test_binaries: --test {spec!r} is not PACKAGE:TARGET", file=sys.stderr)
            return 2
        wanted_tests.add((package, target))

    cargo = os.environ.get("CARGO", "cargo")
    metadata = json.loads(
        subprocess.run(
            [cargo, "metadata", "--format-version", "1", "--no-deps"],
            check=True,
            stdout=subprocess.PIPE,
        ).stdout
    )
    names = {p["manifest_path"]: p["name"] for p in metadata["packages"]}

    build = subprocess.run(
        [cargo, "test", "--no-run", "--message-format", "json-render-diagnostics", *cargo_args],
        stdout=subprocess.PIPE,
        text=True,
    )
    if build.returncode != 0:
        return build.returncode

    chosen = []
    found_packages = set()
    found_tests = set()
    for line in build.stdout.splitlines():
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        if message.get("reason") != "compiler-artifact" or not message.get("executable"):
            continue
        if not message.get("profile", {}).get("test"):
            continue
        package = names.get(message.get("manifest_path"))
        target = message["target"]["name"]
        if package in args.package or (package, target) in wanted_tests:
            found_packages.add(package)
            found_tests.add((package, target))
            chosen.append((package, target, message["manifest_path"], message["executable"]))

    missing = [p for p in args.package if p not in found_packages]
    missing += [f"{p}:{t}" for (p, t) in sorted(wanted_tests - found_tests)]
    if missing:
        print(f"test_binaries: no test executable built for {', '.join(missing)}", file=sys.stderr)
        return 1

    for package, target, manifest, executable in chosen:
        directory = os.path.dirname(manifest)
        env = dict(os.environ, CARGO_MANIFEST_DIR=directory, CARGO_PKG_NAME=package, CARGO=cargo)
        print(f"     Running {package}:{target} ({executable})", flush=True)
        status = subprocess.run([executable], cwd=directory, env=env).returncode
        if status != 0:
            print(f"test_binaries: {package}:{target} failed (exit {status})", file=sys.stderr)
            return status
    return 0


if __name__ == "__main__":
    sys.exit(main())
