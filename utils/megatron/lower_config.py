#!/usr/bin/env python3
"""Writes the lowered Megatron-LM configurations and goldens of a FastCI plan.

Megatron-LM's functional-test harness reads a test's workload from its
model_config.yaml (run_ci_test.sh's TRAINING_PARAMS_PATH) and compares every
step of its golden-values file (common.py's pipeline), so a test FastCI
lowered runs as: its configuration with the plan's `overrides` written into
MODEL_ARGS, and its golden files cut to the plan's `golden_steps` steps of
its `golden_metrics`. This script writes both, for every lowered imported
test of a plan, to <out>/<test>/, leaving everything else in the
configuration as it was (the edit is textual: comments, anchors and the
order of keys stay).

Usage: lower_config.py --plan plan.json --ir module.json --out DIR
Then: run_ci_test.sh TRAINING_PARAMS_PATH=DIR/<test>/model_config.yaml
      GOLDEN_VALUES_PATH=DIR/<test>/golden_values_<env>_<platform>.json ...
Standard library only.
"""
import argparse
import json
import os
import re
import sys


def lower_text(text, overrides):
    """text with each flag of overrides set in its MODEL_ARGS block
    (the last occurrence, which is the one YAML keeps), or added to it."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if re.match(r"MODEL_ARGS\s*:", line)), None)
    if start is None:
        raise ValueError("no MODEL_ARGS block")
    end = start + 1
    indent = "  "
    while end < len(lines) and (not lines[end].strip() or lines[end][:1] in " \t#"):
        if lines[end].strip() and not lines[end].lstrip().startswith("#"):
            indent = lines[end][:len(lines[end]) - len(lines[end].lstrip())]
        end += 1
    for flag, value in overrides.items():
        pattern = re.compile(rf"^(\s+){re.escape(flag)}\s*:(\s*)([^#]*?)(\s*#.*)?$")
        hits = [i for i in range(start + 1, end) if pattern.match(lines[i])]
        if hits:
            i = hits[-1]
            m = pattern.match(lines[i])
            lines[i] = f"{m.group(1)}{flag}: {value}{m.group(4) or ''}"
        else:
            lines.insert(end, f"{indent}{flag}: {value}")
            end += 1
    return "\n".join(lines) + "\n"


def cut_goldens(data, steps, metrics):
    """The golden values of metrics over their first steps steps."""
    cut = {}
    for metric, body in data.items():
        if metrics and metric not in metrics:
            continue
        values = {k: v for k, v in body.get("values", {}).items() if int(k) <= steps}
        if not values:
            continue
        cut[metric] = dict(body, values=values,
                           start_step=min(int(k) for k in values),
                           end_step=max(int(k) for k in values))
    return cut


def write_lowered(plan, ir, out):
    """Writes every lowered imported test of plan; returns their names."""
    configs = {t["name"]: t.get("attributes", {}).get("config") for t in ir["tests"]}
    written = []
    for entry in plan["tests"]:
        config = configs.get(entry["name"])
        if not config or not entry.get("overrides"):
            continue
        target = os.path.join(out, entry["name"])
        os.makedirs(target, exist_ok=True)
        with open(config) as f:
            text = lower_text(f.read(), entry["overrides"])
        with open(os.path.join(target, "model_config.yaml"), "w") as f:
            f.write(text)
        source = os.path.dirname(config)
        for name in sorted(os.listdir(source)):
            if not (name.startswith("golden_values") and name.endswith(".json")):
                continue
            with open(os.path.join(source, name)) as f:
                data = json.load(f)
            if entry.get("golden_steps"):
                data = cut_goldens(data, entry["golden_steps"], entry.get("golden_metrics"))
            with open(os.path.join(target, name), "w") as f:
                json.dump(data, f, indent=4)
        written.append(entry["name"])
    return written


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plan", required=True)
    parser.add_argument("--ir", required=True, help="the module as JSON (fastci-opt --emit=json)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    with open(args.plan) as f, open(args.ir) as g:
        written = write_lowered(json.load(f), json.load(g), args.out)
    print(f"wrote {len(written)} lowered configurations to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
