"""Metrics over the replay, the terminal table, the Markdown report and plots.

Every figure printed or written here is computed from the run's results;
the report says how each was obtained (including the ground-truth shortcut).
"""

import json
import os

from . import metrics, svg


def _caught(plan, result, lowered):
    """Whether a plan catches the MR's regression (lowered plans: as lowered)."""
    return bool(set(plan.tests) & set(result["failing"]) - _undetected(plan, result, lowered))


def _undetected(plan, result, lowered):
    if not (plan.lowered and lowered):
        return set()
    return {t for t, c in lowered["caught"].get(result["id"], {}).items() if not c}


def build(results, lowered, opts, phases, nightlies):
    """Per-MR and overall metrics of every strategy, as a JSON-ready summary."""
    names = [p.strategy for p in results[0]["plans"]] if results else []
    per_mr, by_strategy = [], {n: {"latency": []} for n in names}
    arrivals = [i * opts.arrival_minutes * 60 for i in range(len(results))]
    for name_index, name in enumerate(names):
        plans = [r["plans"][name_index] for r in results]
        by_strategy[name]["latency"] = metrics.simulate_latency(
            arrivals, plans, opts.runners, opts.gpus_per_runner)
    for i, result in enumerate(results):
        failing, affected = set(result["failing"]), set(result["affected"])
        row = {"id": result["id"], "title": result["title"], "kind": result["kind"],
               "regression": result["regression"], "failing": sorted(failing),
               "affected": len(affected), "affected_tests": sorted(affected),
               "changed_lines": result["changed_lines"],
               "truth": result["truth"], "strategies": {}}
        for plan in result["plans"]:
            costs = {n: plan.gpu_seconds(n) for n in plan.tests}
            caught = _caught(plan, result, lowered) if failing else None
            first = metrics.gpu_seconds_to_first_failure(plan, failing) if caught else None
            row["strategies"][plan.strategy] = {
                "tests": len(plan.tests), "selected": plan.tests,
                "gpu_hours": metrics.gpu_hours(plan),
                "recall": metrics.recall(plan, affected),
                "line_retention": metrics.line_retention(
                    plan, result["changed_line_set"], result["coverage"]),
                "caught": caught,
                "gpu_hours_to_first_failure": first / 3600.0 if first is not None else None,
                "apfdc": metrics.apfdc(plan.tests, costs, failing,
                                       _undetected(plan, result, lowered)),
                "latency_min": by_strategy[plan.strategy]["latency"][i] / 60.0,
                "notes": plan.notes}
        per_mr.append(row)

    all_tests = set(results[0]["plans"][0].tests) if results else set()
    overall = {}
    regressions = [r for r in per_mr if r["failing"]]
    for name in names:
        rows = [r["strategies"][name] for r in per_mr]
        hit = sum(len(set(s["selected"]) & set(r_aff)) for s, r_aff in zip(
            rows, [res["affected"] for res in results]))
        total_affected = sum(len(res["affected"]) for res in results)
        latencies = [s["latency_min"] for s in rows]
        retention = [s["line_retention"] for s in rows if s["line_retention"] is not None]
        firsts = [r["strategies"][name]["gpu_hours_to_first_failure"] for r in regressions
                  if r["strategies"][name]["gpu_hours_to_first_failure"] is not None]
        apfd = [r["strategies"][name]["apfdc"] for r in regressions
                if r["strategies"][name]["apfdc"] is not None]
        overall[name] = {
            "gpu_hours": sum(s["gpu_hours"] for s in rows),
            "recall": hit / total_affected if total_affected else None,
            "line_retention": sum(retention) / len(retention) if retention else None,
            "caught": sum(1 for r in regressions if r["strategies"][name]["caught"]),
            "regressions": len(regressions),
            "gpu_hours_to_first_failure": sum(firsts) / len(firsts) if firsts else None,
            "apfdc": sum(apfd) / len(apfd) if apfd else None,
            "latency_mean_min": sum(latencies) / len(latencies) if latencies else None,
            "latency_p90_min": metrics.percentile(latencies, 0.9),
            "subset_ok": all(set(s["selected"]) <= all_tests for s in rows),
        }
    return {"strategies": names, "per_mr": per_mr, "overall": overall,
            "lowered": lowered, "phases": phases,
            "settings": {"mrs": len(results), "runners": opts.runners,
                         "gpus_per_runner": opts.gpus_per_runner,
                         "arrival_minutes": opts.arrival_minutes,
                         "ground_truth": opts.ground_truth,
                         "refresh_every": opts.refresh_every,
                         "nightly_runs": len(nightlies),
                         "nightly_unit_wall_s": nightlies[0].unit_wall,
                         "nightly_e2e_wall_s": nightlies[0].e2e_wall,
                         "e2e_evidenced": sorted(nightlies[0].e2e)}}


def _f(value, digits=2, percent=False):
    if value is None:
        return "—"
    return "%.*f%%" % (max(digits - 2, 0), 100 * value) if percent else "%.*f" % (digits, value)


COLUMNS = [("strategy", None), ("GPU-h", "gpu_hours"), ("recall", "recall"),
           ("lines kept", "line_retention"), ("caught", None), ("GPU-h→1st fail", "gpu_hours_to_first_failure"),
           ("APFDc", "apfdc"), ("latency mean (min)", "latency_mean_min"),
           ("latency p90 (min)", "latency_p90_min")]


def _rows(summary):
    rows = []
    for name in summary["strategies"]:
        o = summary["overall"][name]
        rows.append([name, _f(o["gpu_hours"], 1), _f(o["recall"], 3, True),
                     _f(o["line_retention"], 3, True), "%d/%d" % (o["caught"], o["regressions"]),
                     _f(o["gpu_hours_to_first_failure"], 2), _f(o["apfdc"], 3),
                     _f(o["latency_mean_min"], 0), _f(o["latency_p90_min"], 0)])
    return rows


def terminal_table(summary):
    """The overall table, aligned for a terminal."""
    header = [c for c, _ in COLUMNS]
    rows = _rows(summary)
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = lambda cells: "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                                   for i, (c, w) in enumerate(zip(cells, widths)))
    s = summary["settings"]
    out = ["FastCI evaluation: %d MRs, %d regressions caught by the full suite; pool %d x %d GPUs, "
           "an MR every %g min" % (s["mrs"], next(iter(summary["overall"].values()))["regressions"]
                                   if summary["overall"] else 0, s["runners"],
                                   s["gpus_per_runner"], s["arrival_minutes"]),
           line(header), line(["-" * w for w in widths])]
    out += [line(r) for r in rows]
    return "\n".join(out)


def write(summary, out_dir, phases):
    """Writes report.md, results.json and the SVG plots; returns their paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = {"report": os.path.join(out_dir, "report.md"),
             "json": os.path.join(out_dir, "results.json")}
    for name, chart in (("latency_cdf", _latency_cdf), ("gpu_hours", _gpu_hours),
                        ("recall_vs_cost", _recall_vs_cost)):
        paths[name] = os.path.join(out_dir, name + ".svg")
        with open(paths[name], "w") as f:
            f.write(chart(summary))
    with open(paths["json"], "w") as f:
        json.dump(summary, f, indent=1, default=sorted)
    with open(paths["report"], "w") as f:
        f.write(_markdown(summary, phases))
    return paths


def _latency_cdf(summary):
    series = {n: sorted(r["strategies"][n]["latency_min"] for r in summary["per_mr"])
              for n in summary["strategies"]}
    xmax = max((max(v) for v in series.values() if v), default=1.0)
    chart = svg.Chart("CI latency per MR (CDF)", "latency (minutes, simulated pool)",
                      "share of MRs", xmax, 1.0)
    for i, (name, values) in enumerate(series.items()):
        points = [(v, (k + 1) / len(values)) for k, v in enumerate(values)]
        chart.step_line(points, svg.PALETTE[i % len(svg.PALETTE)], name)
    return chart.render()


def _gpu_hours(summary):
    names = summary["strategies"]
    values = [summary["overall"][n]["gpu_hours"] for n in names]
    chart = svg.Chart("GPU-hours over the replay", "strategy", "GPU-hours",
                      1.0, max(values, default=1.0))
    for i, (name, value) in enumerate(zip(names, values)):
        chart.bar(i, len(names), value, svg.PALETTE[i % len(svg.PALETTE)], name)
    return chart.render()


def _recall_vs_cost(summary):
    names = summary["strategies"]
    chart = svg.Chart("Affected-test recall vs cost", "GPU-hours over the replay",
                      "recall", max((summary["overall"][n]["gpu_hours"] for n in names),
                                    default=1.0), 1.0)
    for i, name in enumerate(names):
        o = summary["overall"][name]
        if o["recall"] is not None:
            chart.point(o["gpu_hours"], o["recall"], svg.PALETTE[i % len(svg.PALETTE)], name)
    return chart.render()


def _markdown(summary, phases):
    s = summary["settings"]
    lines = ["# FastCI evaluation report", "",
             "Generated by `utils/demo.py` / `python -m eval` (docs/Evaluation.md). "
             "Every figure below was computed in this run.", "",
             "## Settings", "",
             "- MRs replayed: %d; nightly evidence runs: %d (%s)" % (
                 s["mrs"], s["nightly_runs"], "refreshed every %d MRs" % s["refresh_every"]
                 if s["refresh_every"] else "recorded once, before the first MR"),
             "- Simulated pool: %d runners x %d GPUs; one MR every %g minutes, FIFO" % (
                 s["runners"], s["gpus_per_runner"], s["arrival_minutes"]),
             "- Fleet costs: declared `gpus` x `minutes` of ci/tests.yaml for e2e jobs; "
             "1 GPU-minute per unit test",
             "- Ground truth: `%s` (see the per-MR table's last column)" % s["ground_truth"],
             "- e2e jobs with nightly evidence: %d (%s)" % (len(s["e2e_evidenced"]),
                                                           ", ".join(s["e2e_evidenced"])),
             "- Wall time: " + ", ".join("%s %.0f s" % (k, v) for k, v in phases.items()),
             "", "## Overall", "",
             "| " + " | ".join(c for c, _ in COLUMNS) + " |",
             "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(r) + " |" for r in _rows(summary)]
    lines += ["", "- recall: affected tests run / affected tests, summed over MRs; a test "
              "is affected when its full line-trace coverage (unit suite, sys.settrace) "
              "touches a modified line",
              "- lines kept: modified lines the plan's tests cover / modified lines any test "
              "covers (mean over MRs where defined)",
              "- caught: regression MRs where the plan runs a failing test (lowered plans: a "
              "failing e2e test still fails when lowered) / MRs the full suite catches",
              "- GPU-h→1st fail: mean GPU-hours spent, running the plan in order, until the "
              "first failing test ends (caught regressions only)", "",
              "![latency](latency_cdf.svg) ![gpu-hours](gpu_hours.svg) "
              "![recall](recall_vs_cost.svg)", "", "## Per MR", "",
              "| MR | kind | regression | changed lines | affected | failing | " +
              " | ".join(summary["strategies"]) + " | ground truth |",
              "|" + "---|" * (7 + len(summary["strategies"]))]
    for r in summary["per_mr"]:
        cells = ["%d t / %.1f h%s" % (
            v["tests"], v["gpu_hours"],
            "" if v["caught"] is None else (" ✓" if v["caught"] else " ✗"))
            for v in (r["strategies"][n] for n in summary["strategies"])]
        lines.append("| %s | %s | %s | %d | %d | %s | %s | %s |" % (
            r["id"], r["kind"], "yes" if r["regression"] else "no", r["changed_lines"],
            r["affected"], ", ".join(r["failing"]) or "—", " | ".join(cells), r["truth"]))
    lowered = summary["lowered"]
    if lowered:
        lines += ["", "## Lowered workloads (run for real on the base tree)", "",
                  "| e2e test | overrides | wall full (s) | wall lowered (s) | predicted fleet min |",
                  "|---|---|---|---|---|"]
        for test_id, t in lowered["tests"].items():
            lines.append("| %s | %s | %.1f | %.1f | %.1f → %.1f |" % (
                test_id, " ".join(t["override_args"]) or "(not lowered)", t["original_wall_s"],
                t["lowered_wall_s"], t["declared_seconds"] / 60, t["predicted_seconds"] / 60))
        full = sum(t["original_wall_s"] for t in lowered["tests"].values())
        low = sum(t["lowered_wall_s"] for t in lowered["tests"].values())
        lines += ["", "Total measured wall time: %.1f s full, %.1f s lowered (%.0f%%)." % (
            full, low, 100 * low / full if full else 0), ""]
        for mr, tests in lowered["caught"].items():
            lines.append("- %s: e2e tests failing at full size, still failing lowered: %s" % (
                mr, ", ".join("%s %s" % (t, "yes" if c else "NO") for t, c in tests.items())))
    return "\n".join(lines) + "\n"
