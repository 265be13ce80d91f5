#!/usr/bin/python3
"""Random-input check of the extension's arming transforms (native/arming.c).

    PYTHONMALLOC=debug utils/fuzz/fuzz_arming.py [--seconds S] [--seed N]

Feeds splice_locations() random, corrupted and cut location tables with
random points and unit counts, and armed_code() code objects of the standard
library whose location and exception tables were corrupted or cut. Both
must return or raise ValueError, never crash; under PYTHONMALLOC=debug the
buffers they allocate are checked for overruns as well. Prints the number of
cases; exit status 0 when nothing crashed (a crash ends the process).
"""
import argparse
import os
import random
import sys
import time
import types

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

from fastci.trace import recorder  # noqa: E402


def code_objects(path):
    with open(path, encoding="utf-8") as f:
        stack = [compile(f.read(), path, "exec")]
    found = []
    while stack:
        code = stack.pop()
        found.append(code)
        stack.extend(c for c in code.co_consts if type(c) is types.CodeType)
    return found


def corrupted(rng, table):
    table = bytearray(table)
    for _ in range(rng.randrange(0, 4)):
        if table:
            table[rng.randrange(len(table))] = rng.randrange(256)
    return bytes(table[:rng.randrange(len(table) + 1)])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    native = recorder.extension()
    if native is None or not hasattr(native, "armed_code"):
        raise SystemExit("fuzz_arming: error: no _recorder extension with arming "
                         "(build it: utils/setup.sh; CPython 3.11 only)")
    rng = random.Random(args.seed)
    codes = code_objects(argparse.__file__)  # a module with every location form
    cases = 0
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        if rng.random() < 0.4:
            table = bytes(rng.randrange(256) for _ in range(rng.randrange(40)))
        else:
            table = corrupted(rng, rng.choice(codes).co_linetable)
        points = sorted(rng.randrange(200) for _ in range(rng.randrange(6)))
        try:
            native.splice_locations(table, points, rng.randrange(20))
        except ValueError:
            pass
        code = rng.choice(codes)
        try:
            bad = code.replace(co_linetable=corrupted(rng, code.co_linetable),
                               co_exceptiontable=corrupted(rng, code.co_exceptiontable))
            native.armed_code(bad, bad.co_consts + (None, None),
                              bytes(2 * rng.randrange(12)))
        except ValueError:
            pass
        cases += 1
    print("fuzz_arming: %d cases in %.0f s, no crash" % (cases, args.seconds))


if __name__ == "__main__":
    main()
