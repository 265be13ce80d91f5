#!/usr/bin/env python3
"""Regenerate golden loss files by running e2e tests uninterrupted.

    update_goldens.py [ID ...]        # default: every test in the manifest

Resume tests get the losses of an uninterrupted run, which is precisely what
their resumed runs must reproduce.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from manifest import load_manifest  # noqa: E402
from run_e2e import run_test  # noqa: E402


def main(argv):
    ids = argv or [t["id"] for t in load_manifest()["tests"]]
    failed = []
    for test_id in ids:
        result = run_test(test_id, update=True)
        status = "UPDATED" if result["passed"] else "FAILED"
        print(f"{status} {test_id} wall_time={result['wall_s']:.2f}s", flush=True)
        if not result["passed"]:
            failed.append(test_id)
            print("\n".join("  " + p for p in result["problems"]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
