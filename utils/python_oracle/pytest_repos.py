#!/usr/bin/env python3
"""Runs compare_pytest.py on public repositories pinned to a commit.

Each repository is cloned (from GitHub, or from a local mirror with
--mirror DIR holding `owner+name/repo` bare clones), checked out at its
pinned commit (only the paths collection needs, so a mirror missing some
large blobs still works), and compared: FastCI's test items against
`pytest --collect-only -q` run in the checkout. Nothing of theirs is
committed here; --work holds the checkouts.

  pytest_repos.py --opt build/bin/fastci-opt --work /tmp/oracle-repos
                  [--mirror /work/.mirror] [--python /usr/bin/python3]
                  [--only NAME ...]

Prints each repository's summary line (items, exact, within enclosing,
differences, agreement) and exits 1 if any repository differs.
"""

import argparse
import os
import subprocess
import sys

# name, GitHub repository, commit (tag), paths to check out, PYTHONPATH
REPOSITORIES = [
    ("accelerate", "huggingface/accelerate",
     "36beea9a1be9251a3ad07f7c10fd425c96954f46",  # v0.16.0
     ["src", "tests", "setup.cfg", "setup.py"], ["src"]),
    ("ignite", "pytorch/ignite",
     "50051eab5070b86811b184a5a943cb0fb8cea969",  # v0.4.13
     ["ignite", "tests", "setup.cfg"], []),
    ("click", "pallets/click",
     "874ca2bc1c30d93a4ac6e36a15ed685eafe89097",  # 8.1.7
     ["src", "tests", "pyproject.toml", "setup.cfg", "tox.ini"], ["src"]),
]


def run(command, **kwargs):
    return subprocess.run(command, check=True, **kwargs)


def checkout(args, name, repository, commit, paths):
    target = os.path.join(args.work, name)
    if not os.path.isdir(os.path.join(target, ".git")):
        if args.mirror:
            source = os.path.join(args.mirror, repository.replace("/", "+"),
                                  "repo")
        else:
            source = f"https://github.com/{repository}.git"
        run(["git", "clone", "-q", "--no-checkout", source, target])
    # Only what collection reads, so that blobs a mirror lacks elsewhere
    # (example data) do not stop the checkout.
    existing = subprocess.run(
        ["git", "-C", target, "ls-tree", "--name-only", commit],
        check=True, stdout=subprocess.PIPE, text=True).stdout.split()
    wanted = [p for p in paths if p in existing]
    run(["git", "-C", target, "checkout", "-q", commit, "--"] + wanted)
    return target


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--opt", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--mirror", default="")
    parser.add_argument("--python", default="/usr/bin/python3")
    parser.add_argument("--only", action="append", default=[])
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    compare = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           "compare_pytest.py")
    failed = False
    for name, repository, commit, paths, pythonpath in REPOSITORIES:
        if args.only and name not in args.only:
            continue
        root = checkout(args, name, repository, commit, paths)
        command = [args.python, compare, "--root", root, "--opt", args.opt,
                   "--python", args.python, "--name", name]
        for path in pythonpath:
            command += ["--pythonpath", path]
        result = subprocess.run(command, stdout=subprocess.PIPE, text=True)
        lines = result.stdout.splitlines()
        for line in lines:
            if not line.startswith(f"{name}: "):
                print(f"  {line}")
        print(lines[-1] if lines else f"{name}: no output")
        failed |= result.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
