#!/usr/bin/env python3
"""Compares parse-python's pytest items with what pytest itself collects.

Runs `fastci-opt --parse-python=root=DIR --emit=json` and `python3 -m pytest
--collect-only -q` on the same tree and matches the node ids. pytest runs
from DIR without path arguments, as CI runs it, so the tree's pytest.ini /
pyproject.toml / tox.ini / setup.cfg (testpaths, python_files, ...) apply;
a tree without one gets an empty configuration (`-c /dev/null`), so that
nothing above DIR is read. A FastCI item with `enclosing = true` (a file
`path.py`, a class `path.py::Cls`, a parametrized function whose ids are not
static) stands for every item pytest prints below it. Everything else must
match exactly, in the same order within each file.

  compare_pytest.py --root DIR --opt fastci-opt [--python /usr/bin/python3]
                    [--name NAME] [--ignore PATH ...] [--pythonpath DIR ...]

Prints one line per difference and a summary (`NAME: ...` with --name);
exits 1 on a difference. Files pytest fails to import here (a third-party
package Debian does not have) or skips whole (a module-level
`pytest.skip`) are left out of both sides and counted;
--ignore passes paths to both sides; --pythonpath adds a directory of the
tree (a src layout) to pytest's PYTHONPATH.
"""

import argparse
import json
import os
import subprocess
import sys

CONFIG_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini",
                "setup.cfg")


def fastci_items(args):
    spec = f"root={args.root}"
    if args.ignore:
        spec += ",exclude=" + ",".join(args.ignore)
    output = subprocess.run(
        [args.opt, f"--parse-python={spec}", "--emit=json", "-"],
        input=b"", stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        check=True).stdout
    items = []
    for test in json.loads(output).get("tests", []):
        attrs = test.get("attributes", {})
        enclosing = bool(attrs.get("enclosing") or attrs.get("parametrized")
                         or attrs.get("inherited-unknown"))
        items.append((test["name"], enclosing))
    return items


def has_pytest_config(root):
    for name in CONFIG_FILES:
        path = os.path.join(root, name)
        if not os.path.isfile(path):
            continue
        if name in ("pytest.ini", ".pytest.ini"):
            return True
        text = open(path, encoding="utf-8", errors="replace").read()
        section = {"pyproject.toml": "[tool.pytest.ini_options]",
                   "tox.ini": "[pytest]", "setup.cfg": "[tool:pytest]"}[name]
        if section in text:
            return True
    return False


def pytest_items(args):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    command = [args.python, "-m", "pytest", "--collect-only", "-q",
               "-rs", "-p", "no:cacheprovider", "--color=no",
               "--rootdir", args.root]
    if not has_pytest_config(args.root):
        command += ["-c", os.devnull]
    for path in args.ignore:
        command += ["--ignore", os.path.join(args.root, path)]
    if args.pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(
            [os.path.join(args.root, p) for p in args.pythonpath] +
            ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    command.append("--continue-on-collection-errors")
    result = subprocess.run(command, cwd=args.root, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, text=True)
    ids = []
    failed = set()
    for line in result.stdout.splitlines():
        # `____ ERROR collecting tests/test_x.py ____`: pytest could not
        # import the file here (a package Debian does not have).
        if "ERROR collecting " in line:
            failed.add(line.split("ERROR collecting ", 1)[1].strip(" _"))
        # `SKIPPED [1] tests/test_x.py:7: ...`: a module-level
        # pytest.skip (an optional package missing here).
        elif line.startswith("SKIPPED [") and "] " in line:
            location = line.split("] ", 1)[1].split(":", 1)[0]
            if location.endswith(".py"):
                failed.add(location)
        elif "::" in line and not line.startswith((" ", "=", "_")):
            ids.append(line.strip())
    if result.returncode not in (0, 1, 5) and not ids:
        sys.exit("pytest failed:\n" + result.stdout + result.stderr)
    return ids, failed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True)
    parser.add_argument("--opt", required=True)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--name", default="")
    parser.add_argument("--ignore", action="append", default=[])
    parser.add_argument("--pythonpath", action="append", default=[],
                        help="directory (relative to DIR) for PYTHONPATH")
    args = parser.parse_args()
    args.root = os.path.abspath(args.root)

    theirs, failed = pytest_items(args)
    # Files pytest cannot import here are left out on both sides.
    ours = [(name, enclosing) for name, enclosing in fastci_items(args)
            if name.split("::", 1)[0] not in failed]
    exact = {name for name, enclosing in ours if not enclosing}
    enclosing = [name for name, enclosing in ours if enclosing]

    def encloser(node_id):
        # The innermost item that encloses it: a class item inside a file
        # item must enclose something itself.
        owners = [item for item in enclosing
                  if node_id == item or node_id.startswith(item + "::") or
                  node_id.startswith(item + "[")]
        return max(owners, key=len) if owners else None

    differences = 0
    matched = by_enclosing = 0
    covered = set()
    for node_id in theirs:
        if node_id in exact:
            matched += 1
            covered.add(node_id)
            continue
        owner = encloser(node_id)
        if owner:
            by_enclosing += 1
            covered.add(owner)
            continue
        differences += 1
        print(f"only pytest: {node_id}")
    for name, is_enclosing in ours:
        # An enclosing item may enclose nothing pytest lists (a class whose
        # unknown base holds no tests): pytest still accepts its id.
        if name not in covered and not is_enclosing:
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
        n for n, e in ours if not e and n in covered)
    for path in sorted(set(theirs_exact) | set(ours_exact)):
        if theirs_exact.get(path) != ours_exact.get(path):
            differences += 1
            print(f"order differs: {path}")

    prefix = f"{args.name}: " if args.name else ""
    agreement = (matched + by_enclosing) / len(theirs) * 100 if theirs else 100
    print(f"{prefix}pytest: {len(theirs)} items; fastci: {len(ours)} items; "
          f"exact: {matched}, within enclosing: {by_enclosing}; "
          f"differences: {differences}; agreement: {agreement:.1f}%; "
          f"files pytest cannot import or skips here: {len(failed)}")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
