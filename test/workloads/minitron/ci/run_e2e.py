#!/usr/bin/env python3
"""Run one end-to-end training test from ci/tests.yaml and check its goldens.

    run_e2e.py ID [--override FLAG=VALUE ...] [--steps-to-compare N]
                  [--update-goldens] [--json-out FILE]

The test's MODEL_ARGS are rendered into Megatron flags, training is started
with the manifest command (normally ``minitron.launch``), and the per-step
``lm loss`` is compared with ``goldens/<id>.json`` at a relative tolerance.
``ckpt-resume`` tests train to ``--save-interval``, stop, resume from the
checkpoint, and must reproduce the uninterrupted run's losses.  Exit code 0
means pass; the wall time is always printed.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from manifest import (CI_DIR, WORKLOAD_ROOT, apply_overrides, find_test,  # noqa: E402
                      load_manifest, parse_override, render_args, render_command)

DEFAULT_RTOL = 1e-3


def _run_training(test, model_args, workdir, log_name, extra=()):
    log_file = os.path.join(workdir, log_name)
    subs = {"CHECKPOINT_SAVE_PATH": os.path.join(workdir, "ckpt"),
            "CHECKPOINT_LOAD_PATH": os.path.join(workdir, "ckpt"),
            "OUTPUT_PATH": workdir}
    argv = render_args(model_args, subs) + ["--log-file", log_file] + list(extra)
    cmd = render_command(test, argv, sys.executable)
    env = dict(os.environ)
    env.update({k: str(v) for k, v in (test.get("env") or {}).items()})
    env["PYTHONPATH"] = WORKLOAD_ROOT + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(cmd, cwd=WORKLOAD_ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True,
                          timeout=test.get("timeout", 600))
    if proc.returncode != 0 or not os.path.exists(log_file):
        sys.stdout.write(proc.stdout[-4000:])
        raise RuntimeError(f"training exited with code {proc.returncode}")
    with open(log_file) as f:
        return json.load(f)["lm loss"]["values"]


def collect_losses(test, model_args, workdir, uninterrupted=False):
    """Per-step losses ({"1": x, ...}) of the test, resuming if it is a resume test."""
    if test.get("test_type", "regular") != "ckpt-resume" or uninterrupted:
        return _run_training(test, model_args, workdir, "losses.json")
    stop = int(model_args["--save-interval"])
    first = _run_training(test, model_args, workdir, "losses_part1.json",
                          ["--exit-interval", str(stop)])
    second = _run_training(test, model_args, workdir, "losses_part2.json")
    merged = dict(first)
    merged.update(second)
    return merged


def compare(values, golden, rtol, steps=None):
    """List of human-readable mismatches (empty when the run matches)."""
    expected = golden["lm loss"]["values"]
    keys = sorted(expected, key=int)
    if steps is not None:
        keys = keys[:steps]
    problems = []
    for key in keys:
        if key not in values:
            problems.append(f"step {key}: missing (golden {expected[key]})")
            continue
        got, want = values[key], expected[key]
        if got != got or abs(got - want) > rtol * abs(want):
            problems.append(f"step {key}: got {got:.6f}, golden {want:.6f}")
    return problems


def golden_path(test):
    return os.path.join(CI_DIR, test["golden"])


def write_golden(test, values):
    steps = sorted(values, key=int)
    data = {"lm loss": {"start_step": int(steps[0]), "end_step": int(steps[-1]),
                        "step_interval": 1, "values": {k: values[k] for k in steps}}}
    with open(golden_path(test), "w") as f:
        json.dump(data, f, indent=2)
        f.write("\n")


def run_test(test_id, overrides=(), steps=None, update=False, keep=False):
    """Run one manifest test; returns a result dict (``passed``, ``wall_s``, ...)."""
    test = find_test(load_manifest(), test_id)
    model_args = apply_overrides(test["model_args"], overrides)
    workdir = tempfile.mkdtemp(prefix=f"minitron_{test_id}_")
    start = time.time()
    result = {"id": test_id, "passed": False, "problems": []}
    try:
        values = collect_losses(test, model_args, workdir, uninterrupted=update)
        if update:
            write_golden(test, values)
            result["passed"] = True
        else:
            with open(golden_path(test)) as f:
                golden = json.load(f)
            result["problems"] = compare(values, golden, test.get("rtol", DEFAULT_RTOL), steps)
            result["passed"] = not result["problems"]
    except (RuntimeError, subprocess.TimeoutExpired, OSError) as exc:
        result["problems"] = [f"error: {exc}"]
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
    result["wall_s"] = round(time.time() - start, 2)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("test_id")
    parser.add_argument("--override", action="append", default=[], metavar="FLAG=VALUE")
    parser.add_argument("--steps-to-compare", type=int, default=None)
    parser.add_argument("--update-goldens", action="store_true")
    parser.add_argument("--keep-workdir", action="store_true")
    parser.add_argument("--json-out", default=None)
    opts = parser.parse_args(argv)
    result = run_test(opts.test_id, [parse_override(o) for o in opts.override],
                      opts.steps_to_compare, opts.update_goldens, opts.keep_workdir)
    for problem in result["problems"][:10]:
        print(f"  {problem}")
    verdict = "UPDATED" if opts.update_goldens and result["passed"] else (
        "PASS" if result["passed"] else "FAIL")
    print(f"{verdict} {opts.test_id} wall_time={result['wall_s']:.2f}s")
    if opts.json_out:
        with open(opts.json_out, "w") as f:
            json.dump(result, f, indent=2)
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
