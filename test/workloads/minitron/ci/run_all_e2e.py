#!/usr/bin/env python3
"""Run every (or the named) e2e test of the manifest; print a summary table.

    run_all_e2e.py [ID ...] [--json-out FILE]
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from manifest import load_manifest  # noqa: E402
from run_e2e import run_test  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("ids", nargs="*")
    parser.add_argument("--json-out", default=None)
    opts = parser.parse_args(argv)
    ids = opts.ids or [t["id"] for t in load_manifest()["tests"]]
    start = time.time()
    results = []
    for test_id in ids:
        result = run_test(test_id)
        results.append(result)
        print(f"{'PASS' if result['passed'] else 'FAIL'} {test_id:32s} {result['wall_s']:7.2f}s",
              flush=True)
        for problem in result["problems"][:3]:
            print(f"    {problem}")
    total = time.time() - start
    failed = [r["id"] for r in results if not r["passed"]]
    print(f"{len(results) - len(failed)}/{len(results)} passed in {total:.1f}s")
    if opts.json_out:
        with open(opts.json_out, "w") as f:
            json.dump({"results": results, "wall_s": round(total, 2)}, f, indent=2)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
