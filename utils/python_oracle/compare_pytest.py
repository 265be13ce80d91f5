#!/usr/bin/env python3
"""Compares parse-python's pytest items with what pytest itself collects.

Runs `fastci-opt --parse-python=root=DIR --emit=json` and
`python3 -m pytest --collect-only -q` on the same tree and matches the node
ids. A FastCI item with `parametrized = true` stands for every `ID[...]`
pytest prints; one with `inherited-unknown = true` (node id `path::Class`)
for every item below that class. Everything else must match exactly, in the
same order within each file.

  compare_pytest.py --root DIR --opt fastci-opt [--python /usr/bin/python3]

Prints one line per difference and a summary; exits 1 on a difference.
"""

import argparse
import json
import os
import subprocess
import sys


def fastci_items(args):
    output = subprocess.run(
        [args.opt, f"--parse-python=root={args.root}", "--emit=json", "-"],
        input=b"", stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        check=True).stdout
    items = []
    for test in json.loads(output).get("tests", []):
        attrs = test.get("attributes", {})
        items.append((test["name"], bool(attrs.get("parametrized")),
                      bool(attrs.get("inherited-unknown"))))
    return items


def pytest_items(args):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    result = subprocess.run(
        [args.python, "-m", "pytest", "--collect-only", "-q",
         "-p", "no:cacheprovider", "--rootdir", args.root, args.root],
        cwd=args.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=env, text=True)
    ids = []
    for line in result.stdout.splitlines():
        if "::" in line and not line.startswith((" ", "=")):
            ids.append(line.strip())
    if result.returncode not in (0, 5) and not ids:
        sys.exit("pytest failed:\n" + result.stdout + result.stderr)
    return ids


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True)
    parser.add_argument("--opt", required=True)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    args.root = os.path.abspath(args.root)

    ours = fastci_items(args)
    theirs = pytest_items(args)
    exact = {name for name, param, unknown in ours if not param and not unknown}
    parametrized = [name for name, param, _ in ours if param]
    unknown = [name for name, _, unknown in ours if unknown]

    differences = 0
    matched = by_parametrized = by_unknown = 0
    covered = set()
    for node_id in theirs:
        if node_id in exact:
            matched += 1
            covered.add(node_id)
            continue
        base = node_id.split("[", 1)[0]
        if base in parametrized:
            by_parametrized += 1
            covered.add(base)
            continue
        owner = next((c for c in unknown if node_id.startswith(c + "::")), None)
        if owner:
            by_unknown += 1
            covered.add(owner)
            continue
        differences += 1
        print(f"only pytest: {node_id}")
    for name, _, _ in ours:
        if name not in covered and name not in unknown:
            differences += 1
            print(f"only fastci: {name}")

    # The order of exactly matched items, file by file (pytest visits a
    # directory's files before its subdirectories; the order of the files
    # themselves is not compared).
    def by_file(names):
        files = {}
        for name in names:
            files.setdefault(name.split("::", 1)[0], []).append(name)
        return files
    theirs_exact = by_file(n for n in theirs if n in exact)
    ours_exact = by_file(
        n for n, p, u in ours if not p and not u and n in covered)
    for path in sorted(set(theirs_exact) | set(ours_exact)):
        if theirs_exact.get(path) != ours_exact.get(path):
            differences += 1
            print(f"order differs: {path}")

    print(f"pytest: {len(theirs)} items; fastci: {len(ours)} items; "
          f"exact: {matched}, within parametrized: {by_parametrized}, "
          f"within inherited-unknown: {by_unknown}; differences: {differences}")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
