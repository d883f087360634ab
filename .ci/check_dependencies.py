#!/usr/bin/env python3
"""Licences, bans and sources of the dependency tree, offline (issue #29, item 4).

    python3 .ci/check_dependencies.py [POLICY]   (default: .ci/dependency-policy.toml)

What `cargo deny check licenses bans sources` checks, from `cargo metadata --locked` (the lock
file and the manifests of the crates cargo has fetched for the build: no advisory database or
other service, nothing to install; cargo fetches a crate's manifest only if the build has not
already, as after CI's clippy): walks the
normal and build dependencies of the workspace's published crates and of the Python
bindings (every feature, Linux x86_64), and fails, naming each offender, when a crate's
licence expression cannot be satisfied with the policy's allowed licences (or it has none),
when a denied crate is in the tree, or when a crate comes from a source the policy does not
allow (git, another registry). Prints one summary line when all is well.
"""

import json
import os
import re
import subprocess
import sys
import tomllib

TARGET = "x86_64-unknown-linux-gnu"


def parse_spdx(expression):
    """A licence expression as nested ('OR'|'AND', [...]) tuples and 'ID[ WITH EXC]' leaves."""
    # Old crates write `MIT/Apache-2.0` for `MIT OR Apache-2.0`.
    tokens = re.findall(r"\(|\)|[^\s()]+", expression.replace("/", " OR "))
    position = 0

    def peek():
        return tokens[position] if position < len(tokens) else None

    def take():
        nonlocal position
        if position >= len(tokens):
            raise ValueError(f"licence expression {expression!r} ends too early")
        position += 1
        return tokens[position - 1]

    def primary():
        if peek() == "(":
            take()
            node = either()
            if take() != ")":
                raise ValueError(f"unbalanced parentheses in {expression!r}")
            return node
        token = take()
        if token in ("AND", "OR", "WITH", ")"):
            raise ValueError(f"malformed licence expression {expression!r}")
        if peek() == "WITH":
            take()
            token = f"{token} WITH {take()}"
        return token

    def both():
        parts = [primary()]
        while peek() == "AND":
            take()
            parts.append(primary())
        return parts[0] if len(parts) == 1 else ("AND", parts)

    def either():
        parts = [both()]
        while peek() == "OR":
            take()
            parts.append(both())
        return parts[0] if len(parts) == 1 else ("OR", parts)

    node = either()
    if peek() is not None:
        raise ValueError(f"trailing {peek()!r} in licence expression {expression!r}")
    return node


def satisfied(node, allowed):
    if isinstance(node, str):
        return node.removesuffix("+") in allowed
    op, parts = node
    results = [satisfied(p, allowed) for p in parts]
    return any(results) if op == "OR" else all(results)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    policy_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, ".ci", "dependency-policy.toml")
    with open(policy_path, "rb") as f:
        policy = tomllib.load(f)
    allowed = set(policy["licenses"]["allow"])
    denied = set(policy["bans"]["deny"])
    registries = set(policy["sources"]["allow-registries"])

    metadata = json.loads(
        subprocess.run(
            [os.environ.get("CARGO", "cargo"), "metadata", "--format-version", "1", "--locked",
             "--all-features", "--filter-platform", TARGET],
            cwd=root, check=True, stdout=subprocess.PIPE,
        ).stdout
    )
    packages = {p["id"]: p for p in metadata["packages"]}
    members = set(metadata["workspace_members"])
    # The roots: every member that is published, and the Python bindings (their wheel ships).
    roots = [i for i in members
             if packages[i]["publish"] != [] or packages[i]["name"] == "codomyrmex-mcp-py"]
    nodes = {n["id"]: n for n in metadata["resolve"]["nodes"]}

    shipped = set()
    todo = list(roots)
    while todo:
        current = todo.pop()
        if current in shipped:
            continue
        shipped.add(current)
        for dep in nodes[current]["deps"]:
            if any(k["kind"] in (None, "build") for k in dep["dep_kinds"]):
                todo.append(dep["pkg"])

    problems = []
    for pid in sorted(shipped, key=lambda i: (packages[i]["name"], packages[i]["version"])):
        p = packages[pid]
        name = f"{p['name']} {p['version']}"
        if pid in members:
            if p["source"] is not None:
                problems.append(f"sources: {name} is a member with source {p['source']}")
        else:
            source = p["source"] or "a path outside the workspace"
            registry = source.removeprefix("registry+")
            if not source.startswith("registry+") or registry not in registries:
                problems.append(f"sources: {name} comes from {source}")
        if p["name"] in denied:
            problems.append(f"bans: {name} is denied by the policy")
        expression = p.get("license")
        if not expression:
            problems.append(f"licenses: {name} declares no SPDX licence (license-file: {p.get('license_file')})")
            continue
        try:
            ok = satisfied(parse_spdx(expression), allowed)
        except ValueError as e:
            problems.append(f"licenses: {name}: {e}")
            continue
        if not ok:
            problems.append(f"licenses: {name} is {expression!r}, not satisfiable with the allowed licences")

    if problems:
        for line in problems:
            print(line, file=sys.stderr)
        print(f"check_dependencies: {len(problems)} problem(s) in {len(shipped)} crates", file=sys.stderr)
        return 1
    print(f"check_dependencies: {len(shipped)} crates shipped by {len(roots)} roots: "
          "licences allowed, none banned, sources crates.io or the workspace")
    return 0


if __name__ == "__main__":
    sys.exit(main())
