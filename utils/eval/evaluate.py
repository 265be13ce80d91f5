"""The evaluation: replay the MR history and score every strategy.

    python -m eval --fastci-opt BIN [--mrs N] [--quick] [--jobs J] [--out DIR]

Phases, each timed in the report:
1. nightly: the unit suite (sampler + line tracer) and the e2e jobs (sampler)
   on main; refreshed every --refresh-every MRs as a nightly job would be;
2. per MR, in history order on a scratch git repository: the strategies'
   plans, the modified lines, the reference-affected tests and the ground
   truth (failing tests);
3. lowered workloads run for real: every e2e job lowered on the base tree
   (time, and its reference losses), then each e2e test that caught a
   regression at full size, lowered, on that MR;
4. metrics, the simulated runner pool, the report and plots.
"""

import argparse
import json
import os
import subprocess
import sys
import time

from . import report, strategies, suite, workspace
from .fastci import FastCIOpt, attr, number, tests_by_name
from fastci.cli import pass_spec
from fastci.replay.linetrace import IMPORT_TEST_ID, read_line_traces

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_WORKLOAD = os.path.join(REPO_ROOT, "test", "workloads", "minitron")
PATH_FILTERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "path_filters.json")
STRATEGIES = ["run-all", "path-filters", "static-rts", "fastci-select", "fastci-prune",
              "fastci-prune-config", "fastci-risk", "fastci-lower"]


def log(message):
    print("[eval %s] %s" % (time.strftime("%H:%M:%S"), message), file=sys.stderr, flush=True)


class Nightly:
    """Evidence and reference coverage recorded at one revision of main."""

    def __init__(self, repo, work, index, e2e_ids, unit_paths):
        self.revision = repo.head()
        self.evidence = os.path.join(work, "evidence-%d" % index)
        trace_dir = os.path.join(work, "linetrace-%d" % index)
        start = time.time()
        self.unit = suite.run_unit_suite(repo.path, work, self.evidence, trace_dir, unit_paths)
        self.unit_wall = time.time() - start
        self.e2e = {}
        for test_id in e2e_ids:
            self.e2e[test_id] = suite.run_e2e(repo.path, test_id, work, self.evidence)
        self.e2e_wall = time.time() - start - self.unit_wall
        self.coverage = _expand_imports(read_line_traces(trace_dir))
        failing = [n for n, (o, _) in self.unit.items() if o in ("fail", "error")]
        failing += [t for t, r in self.e2e.items() if not r["passed"]]
        if failing:
            log("warning: nightly failures on main: %s" % failing[:5])


def _expand_imports(traces):
    """test -> {(path, line)}, each test also owning the import-time lines of its files.

    A module's top level runs once, at import (collection), outside every test;
    a test that executes code of a file depends on that top level too."""
    at_import = traces.pop(IMPORT_TEST_ID, {})
    coverage = {}
    for test, files in traces.items():
        lines = set()
        for path, hit in files.items():
            lines.update((path, n) for n in hit)
            lines.update((path, n) for n in at_import.get(path, ()))
        coverage[test] = lines
    return coverage


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="eval", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fastci-opt", required=True, help="the fastci-opt binary")
    parser.add_argument("--workload", default=DEFAULT_WORKLOAD)
    # With every regression's failing tests recorded in index.json, the whole
    # history and one nightly refresh fit the 15-minute budget on two cores.
    parser.add_argument("--mrs", type=int, default=None,
                        help="evaluate the first N MRs (default: the whole history)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke: 3 MRs, 2 e2e jobs, no nightly refresh")
    parser.add_argument("--jobs", type=int, default=1, help="parser threads of fastci-opt")
    parser.add_argument("--out", default=os.path.join(REPO_ROOT, "build", "eval"))
    parser.add_argument("--e2e", action="append", default=None,
                        help="restrict e2e jobs to these ids (others still counted, unevidenced)")
    parser.add_argument("--unit", action="append", default=None,
                        help="restrict the nightly unit run to these paths (smoke tests; "
                             "the others get no evidence and are selected fail-safe)")
    # MRs arrive every 30 minutes by default: 24 MRs are twelve hours, so the
    # evidence of a 33-MR replay is refreshed once, as a nightly job would.
    parser.add_argument("--refresh-every", type=int, default=24,
                        help="re-run the nightly evidence job every N MRs (default 24; 0: never)")
    parser.add_argument("--ground-truth", choices=["index", "run"], default="index",
                        help="index: regression MRs' failures from index.json when recorded "
                             "(verify_history.py --write), non-regressions all-pass; "
                             "run: run the full suite on every MR")
    parser.add_argument("--runners", type=int, default=4)
    parser.add_argument("--gpus-per-runner", type=int, default=16,
                        help="GPUs per runner (two 8-GPU nodes: the widest jobs need 16)")
    parser.add_argument("--arrival-minutes", type=float, default=30.0,
                        help="minutes between MR arrivals in the latency simulation")
    parser.add_argument("--no-lowered-runs", action="store_true",
                        help="skip running lowered workloads for real")
    opts = parser.parse_args(argv)
    for name in ("mrs", "jobs", "runners", "gpus_per_runner"):
        if getattr(opts, name) is not None and getattr(opts, name) < 1:
            parser.error("--%s must be at least 1" % name.replace("_", "-"))
    if opts.refresh_every < 0 or opts.arrival_minutes < 0:
        parser.error("--refresh-every and --arrival-minutes must not be negative")
    if opts.quick:
        opts.mrs = min(opts.mrs or 3, 3)
        opts.refresh_every = 0
        opts.e2e = opts.e2e or ["gpt_tp1_pp1", "gpt_tp2_pp1"]
    return opts


def fastci_plans(opt, repo, nightly, base, head, history_file, opts, costs):
    """FastCI's ablations, each one stage of `fastci-default` more than the last
    (see STRATEGIES), every one expanded from the pipeline `fastci plan` runs."""
    tree = repo.path
    # Parse, merge, diff and select once; every ablation continues from that
    # module with the stages after select-affected.
    selected_bc = os.path.join(os.path.dirname(history_file), "selected.bc")
    opt.run(pass_spec("fastci-default", root=tree, jobs=opts.jobs,
                      manifest=[os.path.join(tree, "ci", "tests.yaml")],
                      evidence=nightly.evidence, base=base, head=head,
                      stop_after="select-affected"),
            output=selected_bc, emit="bc")

    def after_selection(**options):
        return opt.run(pass_spec("fastci-default", start_after="select-affected", **options),
                       input_path=selected_bc)

    prune_only = {"stop_after": "prune-context-equiv"}
    # History is loaded after pruning, so that fastci-risk prunes exactly as
    # fastci-prune-config does and only adds the ranking.
    ranked = {"prune_by_history": "false", "results": [history_file],
              "runners": opts.runners, "gpus_per_runner": opts.gpus_per_runner,
              "schedule_policy": "risk-first"}
    selected = opt.run("", input_path=selected_bc)
    pruned = after_selection(config_aware="false", **prune_only)
    config = after_selection(config_aware="true", **prune_only)
    risk = after_selection(lower="false", **ranked)
    lowered = after_selection(**ranked)
    return [strategies.fastci_plan("fastci-select", selected, costs),
            strategies.fastci_plan("fastci-prune", pruned, costs),
            strategies.fastci_plan("fastci-prune-config", config, costs),
            strategies.fastci_plan("fastci-risk", risk, costs),
            strategies.fastci_plan("fastci-lower", lowered, costs, lowered=True)]


def ground_truth(entry, repo, work, e2e_ids, opts):
    """(failing tests, how it was obtained) for the MR checked out in `repo`."""
    # Re-read: verify_history.py --write may have recorded it since we started.
    fresh = {e["id"]: e for e in workspace.load_history(opts.workload)}.get(entry["id"], entry)
    recorded = set(fresh.get("caught_by", []))
    if opts.ground_truth == "index":
        if not entry["regression"]:
            return set(), "index: non-regression, full suite assumed to pass"
        if recorded:
            return recorded, "index: caught_by recorded by verify_history.py"
    unit = suite.run_unit_suite(repo.path, work)
    failing = {n for n, (o, _) in unit.items() if o in ("fail", "error")}
    failing |= {t for t in e2e_ids if not suite.run_e2e(repo.path, t, work)["passed"]}
    return failing, "run: full suite on this MR"


def lowered_workloads(opt, tree):
    """e2e id -> lower-workload's result for it, on the tree checked out.

    Not a plan: lower-workload alone asked about every job of the manifest,
    selected or not, so no stage of fastci-default but these two runs."""
    module = opt.run("load-manifest{file=%s},lower-workload" % os.path.join(tree, "ci", "tests.yaml"))
    return {t["name"]: {"lowered": bool(attr(t, "lowered", False)),
                        "override_args": attr(t, "override_args", []) or [],
                        "golden_steps": attr(t, "golden_steps"),
                        "declared_seconds": attr(t, "original_seconds", number(t["cost"]["seconds"])),
                        "predicted_seconds": number(t["cost"]["seconds"])}
            for t in module["tests"]}


def _pairs(args):
    return list(zip(args[0::2], args[1::2]))


def run_lowered(opt, repo, work, nightly, results, e2e_ids):
    """Runs lowered e2e workloads for real: time on the base tree, regressions on MRs.

    A lowered model has no goldens; its reference is the same lowered workload
    on the base tree (recorded here). Non-regression MRs pass the full-size
    goldens, so they leave the reference valid for later MRs."""
    repo.checkout("base")
    info = lowered_workloads(opt, repo.path)
    tests = {}
    for test_id in e2e_ids:
        entry = dict(info[test_id], original_wall_s=nightly.e2e[test_id]["wall_s"])
        entry["reference"] = os.path.join(work, "lowered-ref-%s.json" % test_id)
        run = suite.run_e2e(repo.path, test_id, work, overrides=_pairs(entry["override_args"]),
                            record=entry["reference"])
        entry["lowered_wall_s"], entry["base_passed"] = run["wall_s"], run["passed"]
        tests[test_id] = entry
        log("lowered %s: %.1fs -> %.1fs (%s)" % (test_id, entry["original_wall_s"],
                                                run["wall_s"], " ".join(entry["override_args"])))
    caught = {}
    for result in results:
        failing_e2e = [t for t in result["failing"] if t in tests]
        if not failing_e2e:
            continue
        repo.checkout(result["id"])
        caught[result["id"]] = {}
        for test_id in failing_e2e:
            entry = tests[test_id]
            if not entry["lowered"]:
                caught[result["id"]][test_id] = True  # it runs at full size
                continue
            run = suite.run_e2e(repo.path, test_id, work, overrides=_pairs(entry["override_args"]),
                                reference=entry["reference"])
            caught[result["id"]][test_id] = not run["passed"]
        log("lowered on %s: %s" % (result["id"], caught[result["id"]]))
    repo.checkout("main")
    return {"tests": tests, "caught": caught}


def write_history(path, records):
    with open(path, "w") as f:
        json.dump({"results": records}, f)


def nightly_records(nightly, clock):
    """History records of a nightly run (unit tests at their fleet cost)."""
    records = [{"test": name, "outcome": outcome, "timestamp": clock,
                "duration": strategies.UNIT_SECONDS, "gpus": strategies.UNIT_GPUS}
               for name, (outcome, _) in nightly.unit.items()]
    records += [{"test": test_id, "outcome": "pass" if r["passed"] else "fail",
                 "timestamp": clock} for test_id, r in nightly.e2e.items()]
    return records


class Replay:
    """State carried from one MR to the next: the repository, nightlies, history."""

    def __init__(self, opts, opt, repo, work, e2e_ids, all_e2e):
        self.opts, self.opt, self.repo, self.work = opts, opt, repo, work
        self.e2e_ids, self.all_e2e = e2e_ids, all_e2e
        self.workflows = strategies.load_path_filters(PATH_FILTERS)
        self.history_file = os.path.join(work, "history.json")
        self.nightlies, self.records, self.clock = [], [], 0

    def nightly(self):
        log("nightly run on main (unit suite + %d e2e jobs)" % len(self.e2e_ids))
        run = Nightly(self.repo, self.work, len(self.nightlies), self.e2e_ids, self.opts.unit)
        # As `fastci collect` does: the parsed tree of the night's revision
        # beside its evidence, so later MRs map its frames by that
        # revision's lines and see which code changed since (docs/Evidence.md).
        self.opt.run("parse-python{root=%s,jobs=%d}" % (self.repo.path, self.opts.jobs),
                     output=os.path.join(run.evidence, "snapshot-%s.fir" % run.revision),
                     emit="fir")
        self.nightlies.append(run)
        self.records += nightly_records(run, self.clock)

    def modified_lines(self, base, head):
        """{(path, line)} the MR modifies, as lines of the nightly's revision."""
        revision, lines = self.nightlies[-1].revision, set()
        for path, changed in self.repo.changed_lines(base, head).items():
            back = self.repo.line_map(revision, base, path)
            lines.update((path, m) for m in map(back, changed) if m is not None)
        return lines

    def evaluate(self, entry):
        repo, opts, nightly = self.repo, self.opts, self.nightlies[-1]
        start = time.time()
        base = repo.head()
        head = repo.apply_mr(entry)
        repo.git("tag", entry["id"], head)
        changed_files = repo.changed_files(base, head)
        changed_lines = self.modified_lines(base, head)
        affected = {t for t, cov in nightly.coverage.items() if cov & changed_lines}
        write_history(self.history_file, self.records)
        # The baselines' module: fastci-default's import of the code and the jobs.
        module = self.opt.run(pass_spec(
            "fastci-default", root=repo.path, jobs=opts.jobs,
            manifest=[os.path.join(repo.path, "ci", "tests.yaml")], stop_after="load-manifest"))
        plans = [strategies.run_all(module),
                 strategies.path_based(module, changed_files, self.workflows),
                 strategies.static_rts(module, changed_files)] + fastci_plans(
            self.opt, repo, nightly, base, head, self.history_file, opts,
            strategies.declared_costs(module))
        plan_seconds = time.time() - start
        failing, truth = ground_truth(entry, repo, self.work, self.all_e2e, opts)
        unknown = failing - set(tests_by_name(module))
        if unknown:
            log("warning: %s: failing ids not in the module: %s" % (entry["id"], sorted(unknown)))
        log("%s: %d files, %d lines, %d affected, %d failing (%s); plans %s" % (
            entry["id"], len(changed_files), len(changed_lines), len(affected), len(failing),
            truth.split(":")[0], ", ".join("%s=%d" % (p.strategy, len(p.tests)) for p in plans)))
        # What later MRs' risk scores see: the tests FastCI ran here and how they went.
        self.clock += 1800
        self.records += [{"test": name, "outcome": "fail" if name in failing else "pass",
                          "timestamp": self.clock, "revision": head}
                         for name in plans[STRATEGIES.index("fastci-risk")].tests]
        repo.finish_mr(entry)
        return {"id": entry["id"], "title": entry["title"], "kind": entry["kind"],
                "regression": entry["regression"], "merged": entry["merged"],
                "changed_files": changed_files, "changed_lines": len(changed_lines),
                "affected": sorted(affected), "failing": sorted(failing), "truth": truth,
                "plans": plans, "plan_seconds": plan_seconds,
                "coverage": nightly.coverage, "changed_line_set": changed_lines}


def main(argv=None):
    opts = parse_args(argv)
    started = time.time()
    try:
        opt = FastCIOpt(opts.fastci_opt)
        history = workspace.load_history(opts.workload)[: opts.mrs]
        repo = workspace.ScratchRepo(opts.workload)
    except (OSError, ValueError, RuntimeError) as exc:
        print("eval: error: %s" % exc, file=sys.stderr)
        return 1
    phases = {}
    try:
        repo.git("tag", "base")
        work = os.path.join(repo.tmp, "work")
        os.makedirs(work)
        all_e2e = suite.e2e_ids(repo.path)
        unknown = sorted(set(opts.e2e or ()) - set(all_e2e))
        if unknown:
            raise RuntimeError("--e2e names no test of ci/tests.yaml: %s" % ", ".join(unknown))
        replay = Replay(opts, opt, repo, work,
                        [t for t in all_e2e if opts.e2e is None or t in opts.e2e], all_e2e)
        replay.nightly()
        phases["nightly"] = time.time() - started
        results = []
        for index, entry in enumerate(history):
            if opts.refresh_every and index and index % opts.refresh_every == 0:
                t0 = time.time()
                replay.nightly()
                phases["nightly"] += time.time() - t0
            results.append(replay.evaluate(entry))
        phases["mrs"] = time.time() - started - phases["nightly"]
        t0 = time.time()
        lowered = {} if opts.no_lowered_runs else run_lowered(
            opt, repo, work, replay.nightlies[0], results, replay.e2e_ids)
        phases["lowered"] = time.time() - t0
        summary = report.build(results, lowered, opts, phases, replay.nightlies)
        phases["total"] = time.time() - started
        paths = report.write(summary, opts.out, phases)
        print(report.terminal_table(summary))
        print("\nreport: %s" % paths["report"])
        return 0
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        print("eval: error: %s" % exc, file=sys.stderr)
        return 1
    finally:
        repo.cleanup()
