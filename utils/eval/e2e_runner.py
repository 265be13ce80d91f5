#!/usr/bin/env python3
"""Runs one e2e test of the tree in the current directory (its ci/ runner).

    e2e_runner.py --list
    e2e_runner.py ID --json-out F [--override FLAG=VALUE ...] [--steps N]
                  [--reference LOSSES.json] [--record LOSSES.json]

Uses the tree's own ci/manifest.py and ci/run_e2e.py, so an MR that changes
the runner is evaluated with its change. Without --reference the losses are
compared with the test's goldens; with it, with losses an earlier run
recorded (a lowered workload has no goldens of its own: its reference is the
same lowered workload run on the base tree). Writes {"passed", "problems"}.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.getcwd(), "ci"))
import manifest  # noqa: E402
import run_e2e  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("test_id", nargs="?")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--json-out")
    parser.add_argument("--override", action="append", default=[])
    parser.add_argument("--steps", type=int)
    parser.add_argument("--reference")
    parser.add_argument("--record")
    opts = parser.parse_args()
    tests = manifest.load_manifest()["tests"]
    if opts.list:
        print("\n".join(t["id"] for t in tests))
        return 0
    test = manifest.find_test(manifest.load_manifest(), opts.test_id)
    args = manifest.apply_overrides(test["model_args"],
                                    [manifest.parse_override(o) for o in opts.override])
    workdir = tempfile.mkdtemp(prefix="eval_e2e_")
    result = {"passed": False, "problems": []}
    try:
        values = run_e2e.collect_losses(test, args, workdir)
        if opts.record:
            with open(opts.record, "w") as f:
                json.dump(values, f)
        if opts.record and not opts.reference:
            result["passed"] = True  # a reference run: nothing to compare with yet
            golden = None
        elif opts.reference:
            with open(opts.reference) as f:
                golden = {"lm loss": {"values": json.load(f)}}
        else:
            with open(run_e2e.golden_path(test)) as f:
                golden = json.load(f)
        if golden is not None:
            result["problems"] = run_e2e.compare(
                values, golden, test.get("rtol", run_e2e.DEFAULT_RTOL), opts.steps)
            result["passed"] = not result["problems"]
    except Exception as exc:  # a crashed training run is a failed test
        result["problems"] = ["error: %s: %s" % (type(exc).__name__, exc)]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    with open(opts.json_out, "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
