#!/usr/bin/env python3
"""Adds up the JUnit XML reports of lit, ctest and pytest into one line.

Each runner prints its own summary, but CI wants a single verdict over all of
them: `N passed, M failed` (with skips), and a non-zero exit when a suite
failed or ran no test at all.
"""
import sys
import xml.etree.ElementTree as ET


def count(path):
    """Returns (passed, failed, skipped) for one JUnit XML file."""
    passed = failed = skipped = 0
    for case in ET.parse(path).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def main(paths):
    totals = [0, 0, 0]
    ok = True
    for path in paths:
        try:
            passed, failed, skipped = count(path)
        except (OSError, ET.ParseError) as err:
            print(f"{path}: error: cannot read test report: {err}", file=sys.stderr)
            ok = False
            continue
        if passed + failed == 0:
            print(f"{path}: error: the suite ran no test", file=sys.stderr)
            ok = False
        totals = [t + n for t, n in zip(totals, (passed, failed, skipped))]
    passed, failed, skipped = totals
    print(f"fastci: {passed} passed, {failed} failed, {skipped} skipped")
    return 0 if ok and failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
