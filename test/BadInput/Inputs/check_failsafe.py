"""Checks FastCI's fail-safe invariant between two plans (fastci-opt
--emit=json outputs): the plan made from degraded inputs selects every test
the plan from good inputs selects, and says why for each test it adds.
Prints the added tests with their rule, one per line, for FileCheck.

  check_failsafe.py GOOD.json DEGRADED.json
"""

import json
import sys


def selected(path):
    tests = json.load(open(path)).get("tests", [])
    return {t["name"]: t.get("attributes", {}) for t in tests
            if t.get("attributes", {}).get("selected")}


def main(good_path, degraded_path):
    good, degraded = selected(good_path), selected(degraded_path)
    dropped = sorted(set(good) - set(degraded))
    if dropped:
        sys.exit(f"fail-safe violated: {degraded_path} drops {dropped}")
    for name in sorted(set(degraded) - set(good)):
        attrs = degraded[name]
        if not attrs.get("reason"):
            sys.exit(f"{name} is selected without a reason")
        print(f"added {name}: {attrs.get('rule')}: {attrs['reason']}")
    print(f"fail-safe: {len(degraded)} selected >= {len(good)}")


if __name__ == "__main__":
    main(*sys.argv[1:])
