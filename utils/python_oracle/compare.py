#!/usr/bin/env python3
"""Compare parse-python's classes and functions with CPython's (the oracle).

Runs (or reads the output of) `fastci-opt --parse-python=root=ROOT
--emit=json`, then runs ast_entities.py on every file fastci imported, with
the module name fastci gave it, and compares the two entity sets by symbol:
kind, lineno and end_lineno must agree (with --columns, col_offset and
end_col_offset too). Files that CPython itself rejects are listed as skipped.

Usage:
  compare.py --root DIR (--opt BIN | --fastci-json FILE) [--columns]
             [--jobs N] [--max-report N]
Exit status: 0 when every entity matches, 1 otherwise.
"""
import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ast_entities  # noqa: E402


def load_fastci(args):
    if args.fastci_json:
        with open(args.fastci_json) as f:
            return json.load(f)
    output = subprocess.run(
        [args.opt, f"--parse-python=root={args.root}", "--emit=json",
         "-"], input=b"", stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        check=True).stdout
    return json.loads(output)


def fastci_entities(module):
    """Files with their module names, and class/function entities."""
    entities = module.get("entities", [])
    kinds = {e["symbol"]: e["kind"] for e in entities}
    files = {}
    by_symbol = {}
    for e in entities:
        if e["kind"] == "module" and kinds.get(e.get("parent")) == "file":
            files[e["parent"]] = e["symbol"]
        elif e["kind"] in ("class", "function"):
            by_symbol[e["symbol"]] = e
    return files, by_symbol


def dump(job):
    root, path, module = job
    return path, ast_entities.dump_file(os.path.join(root, path), module)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", required=True)
    parser.add_argument("--opt")
    parser.add_argument("--fastci-json")
    parser.add_argument("--columns", action="store_true")
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--max-report", type=int, default=50)
    args = parser.parse_args()
    if not args.opt and not args.fastci_json:
        parser.error("give --opt or --fastci-json")

    files, ours = fastci_entities(load_fastci(args))
    jobs = [(args.root, path, module) for path, module in sorted(files.items())]
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(dump, jobs, chunksize=16))

    fields = ["kind", "lineno", "end_lineno"]
    if args.columns:
        fields += ["col_offset", "end_col_offset"]
    skipped, problems, compared = [], [], 0
    skipped_files = set()
    theirs = {}
    for path, (entities, error) in results:
        if error is not None:
            skipped.append((path, error))
            skipped_files.add(path)
            continue
        for entity in entities:
            theirs[entity["symbol"]] = (path, entity)
    # Entities of files CPython rejects are not compared.
    skipped_modules = {files[p] for p in skipped_files}
    for symbol, (path, expected) in sorted(theirs.items()):
        compared += 1
        got = ours.get(symbol)
        if got is None:
            problems.append(f"missing: {symbol} ({path}:{expected['lineno']})")
            continue
        start_line, start_col, end_line, end_col = got.get("range", [0] * 4)
        actual = {"kind": got["kind"], "lineno": start_line,
                  "end_lineno": end_line, "col_offset": start_col,
                  "end_col_offset": end_col}
        diffs = [f"{k}: fastci {actual[k]} vs ast {expected[k]}"
                 for k in fields if actual[k] != expected[k]]
        if diffs:
            problems.append(f"differs: {symbol} ({path}): " + "; ".join(diffs))
    for symbol, entity in sorted(ours.items()):
        if symbol in theirs:
            continue
        owner = symbol
        if any(symbol.startswith(m + ".") for m in skipped_modules):
            continue
        problems.append(f"extra: {owner} (line {entity.get('range', [0])[0]})")

    print(f"files: {len(files)} compared, {len(skipped)} skipped "
          f"(rejected by CPython); entities: {compared} from ast, "
          f"{len(ours)} from fastci; mismatches: {len(problems)}")
    for path, error in skipped:
        print(f"skipped: {path}: {error}")
    for problem in problems[:args.max_report]:
        print(problem)
    if len(problems) > args.max_report:
        print(f"... {len(problems) - args.max_report} more")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
