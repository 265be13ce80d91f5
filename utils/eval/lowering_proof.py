#!/usr/bin/env python3
"""Do lowered e2e tests still catch what the full-size tests catch? Run them.

    cd utils && /usr/bin/python3 -m eval.lowering_proof [--opt BIN]
        [--workload DIR] [--mr ID ...] [--work DIR] [--json-out FILE]
        [--pipeline-extra OPTS]

For every regression MR of the workload's history/index.json whose
`caught_by` names e2e tests, and only for those tests:

1. the manifest of the base tree (the workload as committed, before mr01) is
   lowered with `fastci-opt` (load-manifest, lower-workload);
2. each test runs on the base tree at full size (its original wall time,
   checked against its goldens) and lowered (its lowered wall time);
3. the history is replayed as history/verify_history.py does (merged MRs stay
   applied, rejected ones are reverted), and on each such MR the lowered
   test runs again and must fail.

How a lowered run is judged is how CI would judge it: a test whose lowering
keeps its goldens valid (only steps shrank, `golden_invalidated` unset) is
compared with its goldens truncated to `golden_steps`, and must pass on the
base tree; a test whose model shrank has no goldens, so its reference is the
same lowered workload run on the base tree (as utils/eval does). A test that
was not lowered runs at full size against its goldens.

Prints one table of wall times (full, lowered, ratio, total) and one of
regressions (caught at full size per index.json, still caught lowered), and
the machine's load average, which the wall times depend on. Exit code 1 when
a lowered test misses a regression or fails on the base tree.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from eval import suite  # noqa: E402
from eval.fastci import FastCIOpt, attr, number  # noqa: E402
from eval.workspace import apply_patch, copy_workload  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_WORKLOAD = os.path.join(ROOT, "test", "workloads", "minitron")
DEFAULT_OPT = os.path.join(ROOT, "build", "bin", "fastci-opt")


def log(message):
    print(message, file=sys.stderr, flush=True)


def regression_targets(index, e2e_ids, only=None):
    """[(MR id, [e2e ids it was caught by])] for regressions caught by e2e tests."""
    targets = []
    for entry in index:
        if not entry.get("regression") or (only and entry["id"] not in only):
            continue
        caught = [t for t in entry.get("caught_by", []) if t in e2e_ids]
        if caught:
            targets.append((entry["id"], caught))
    return targets


def lowered_info(opt, tree, extra=""):
    """e2e id -> what lower-workload decided for it on `tree`'s manifest."""
    pipeline = "load-manifest{file=%s},lower-workload%s" % (
        os.path.join(tree, "ci", "tests.yaml"), "{%s}" % extra if extra else "")
    module = opt.run(pipeline)
    info = {}
    for test in module["tests"]:
        args = attr(test, "override_args", []) or []
        info[test["name"]] = {
            "lowered": bool(attr(test, "lowered", False)),
            "overrides": list(zip(args[0::2], args[1::2])),
            "golden_steps": attr(test, "golden_steps"),
            "golden_invalidated": bool(attr(test, "golden_invalidated", False)),
            "floors": attr(test, "floors", {}) or {},
            "reason": attr(test, "lowering_reason"),
            "declared_seconds": number(attr(test, "original_seconds",
                                            test["cost"]["seconds"])),
            "predicted_seconds": number(test["cost"]["seconds"])}
    return info


def run_lowered(tree, test_id, entry, work, record=None, reference=None):
    """One lowered run of `test_id` in `tree`, judged as described above."""
    if not entry["lowered"]:
        return suite.run_e2e(tree, test_id, work)
    if not entry["golden_invalidated"]:
        return suite.run_e2e(tree, test_id, work, overrides=entry["overrides"],
                             steps=entry["golden_steps"])
    return suite.run_e2e(tree, test_id, work, overrides=entry["overrides"],
                         record=record, reference=reference)


def prove(opts):
    workload = os.path.abspath(opts.workload)
    with open(os.path.join(workload, "history", "index.json")) as f:
        index = json.load(f)
    work = opts.work or tempfile.mkdtemp(prefix="lowering_proof_")
    os.makedirs(work, exist_ok=True)
    load_before = os.getloadavg()
    base = copy_workload(workload, os.path.join(work, "base"))
    e2e_ids = suite.e2e_ids(base)
    targets = regression_targets(index, set(e2e_ids), opts.mr)
    involved = [t for t in e2e_ids if any(t in caught for _, caught in targets)]
    info = lowered_info(FastCIOpt(opts.opt), base, opts.pipeline_extra)

    tests = {}
    for test_id in involved:
        entry = dict(info[test_id])
        full = suite.run_e2e(base, test_id, work)
        reference = os.path.join(work, "reference-%s.json" % test_id)
        low = run_lowered(base, test_id, entry, work, record=reference)
        entry.update(full_wall_s=round(full["wall_s"], 2), full_passed=full["passed"],
                     lowered_wall_s=round(low["wall_s"], 2), base_passed=low["passed"],
                     base_problems=low["problems"][:3], reference=reference)
        tests[test_id] = entry
        log("%s: full %.1fs (%s), lowered %.1fs (%s)" % (
            test_id, full["wall_s"], "pass" if full["passed"] else "FAIL",
            low["wall_s"], "pass" if low["passed"] else "FAIL"))

    caught = {}
    wanted = {mr: ids for mr, ids in targets}
    tree = copy_workload(workload, os.path.join(work, "replay"))
    for entry in index:
        patch = os.path.join(workload, "history", entry["patch"])
        apply_patch(tree, patch)
        if entry["id"] in wanted:
            caught[entry["id"]] = {}
            for test_id in wanted[entry["id"]]:
                t = tests[test_id]
                run = run_lowered(tree, test_id, t, work, reference=t["reference"])
                caught[entry["id"]][test_id] = {
                    "caught": not run["passed"], "wall_s": round(run["wall_s"], 2),
                    "problems": run["problems"][:2]}
            log("%s: %s" % (entry["id"], {k: v["caught"] for k, v in caught[entry["id"]].items()}))
        if not entry["merged"]:
            apply_patch(tree, patch, reverse=True)
    if not opts.work:
        shutil.rmtree(work, ignore_errors=True)
    return {"tests": tests, "caught": caught, "load_before": load_before,
            "load_after": os.getloadavg(), "pipeline_extra": opts.pipeline_extra}


def render(result):
    lines = ["| e2e test | lowered to | floors | full (s) | lowered (s) | lowered/full |",
             "|---|---|---|---|---|---|"]
    full_total = low_total = 0.0
    for test_id, t in result["tests"].items():
        over = " ".join("%s %s" % p for p in t["overrides"]) or "(not lowered: %s)" % t["reason"]
        floors = ", ".join(sorted({r.split(":")[0] for v in t["floors"].values()
                                   for r in v.split("; ")})) or "-"
        lines.append("| %s | %s | %s | %.1f | %.1f | %.2f |" % (
            test_id, over, floors, t["full_wall_s"], t["lowered_wall_s"],
            t["lowered_wall_s"] / t["full_wall_s"]))
        full_total += t["full_wall_s"]
        low_total += t["lowered_wall_s"]
    if full_total:
        lines.append("| total | | | %.1f | %.1f | %.2f |" % (
            full_total, low_total, low_total / full_total))
    lines += ["", "| MR | e2e test | caught at full size | caught lowered |", "|---|---|---|---|"]
    for mr, tests in result["caught"].items():
        for test_id, c in tests.items():
            lines.append("| %s | %s | yes (index.json) | %s |" % (
                mr, test_id, "yes" if c["caught"] else "NO"))
    broken = [t for t, v in result["tests"].items() if not v["base_passed"]]
    missed = ["%s/%s" % (mr, t) for mr, ts in result["caught"].items()
              for t, c in ts.items() if not c["caught"]]
    lines += ["", "Load average (1/5/15 min) before: %.1f %.1f %.1f, after: %.1f %.1f %.1f." % (
        *result["load_before"], *result["load_after"])]
    lines.append("Lowered tests failing on the base tree: %s." % (", ".join(broken) or "none"))
    lines.append("Regressions missed when lowered: %s." % (", ".join(missed) or "none"))
    return "\n".join(lines), not broken and not missed


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--opt", default=os.environ.get("FASTCI_OPT", DEFAULT_OPT),
                        help="fastci-opt binary (default: $FASTCI_OPT or build/bin)")
    parser.add_argument("--workload", default=DEFAULT_WORKLOAD)
    parser.add_argument("--mr", action="append", default=None, help="only these MRs")
    parser.add_argument("--work", default=None, help="keep scratch trees here")
    parser.add_argument("--json-out", default=None)
    parser.add_argument("--pipeline-extra", default="",
                        help="lower-workload options, e.g. 'floors=false'")
    opts = parser.parse_args(argv)
    start = time.time()
    result = prove(opts)
    result["wall_s"] = round(time.time() - start, 1)
    text, ok = render(result)
    print(text)
    print("Proof wall time: %.0f s." % result["wall_s"])
    if opts.json_out:
        with open(opts.json_out, "w") as f:
            json.dump(result, f, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
