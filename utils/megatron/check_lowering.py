#!/usr/bin/env python3
"""Checks lowered Megatron-LM functional tests against Megatron's own rules.

FastCI's lower-workload shrinks the workload of each test imported from
Megatron-LM's functional tests (tests/functional_tests/test_cases/<family>/
<test>/model_config.yaml). This checker re-derives, independently of the
lowering code and of FastCI's schema, what Megatron-LM and its functional-test
harness require of a lowered configuration, and reports every violation:

* argument rules (megatron/training/arguments.py and transformer_config.py:
  layers per pipeline stage and virtual stage, heads and query groups per
  tensor-parallel rank, sequence per context-parallel rank, global batch per
  data-parallel micro batches, experts per expert-parallel rank, top-k 1 with
  pre-softmax, per-layer lists, iteration- against samples-based schedules);
* harness rules (tests/functional_tests/shell_test_utils/run_ci_test.sh and
  python_test_utils/: the resume point train_iters // 2 must be a saved
  iteration with a compared step after it, the compared golden steps and
  metrics, the iteration-time window, tests that load stored checkpoints or
  are release, inference or RL runs keep their workload, the world size from
  the recipes, the learning-rate schedule, layer-count flags, validated
  dimensions named in the test id).

Source locations cite NVIDIA/Megatron-LM at commit 93ebf8d72f11 (see
docs/Workloads.md). Standard library only: it reads Megatron's YAML with the
small reader below, which covers what those configurations use.

Usage:
  check_lowering.py --opt build/bin/fastci-opt --data <dir with gpt/ bert/ t5/>
                    [--recipes utils/megatron/recipes.yaml] [--table]
  check_lowering.py --plan plan.json --ir ir.json [--recipes ...] [--table]
Exits 1 if there is a violation.
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

FAMILIES = ("gpt", "bert", "t5")

# --------------------------------------------------------------------------
# A YAML reader for Megatron's model_config.yaml files: block mappings and
# sequences, flow sequences, plain and quoted scalars, comments, block
# scalars (| and >), anchors, aliases and `<<` merge keys. Repeated keys keep
# the last value, as PyYAML (which the harness uses through yq) does.


class YAMLError(ValueError):
    pass


def _scalar(text):
    text = text.strip()
    if not text or text in ("~", "null", "Null", "NULL"):
        return None
    if text[0] in "\"'":
        quote = text[0]
        end = text.rfind(quote)
        body = text[1:end]
        if quote == '"':
            return bytes(body, "utf-8").decode("unicode_escape")
        return body.replace("''", "'")
    if text in ("true", "True", "TRUE"):
        return True
    if text in ("false", "False", "FALSE"):
        return False
    if re.fullmatch(r"[-+]?[0-9]+", text):
        return int(text)
    # YAML 1.1 floats, as PyYAML reads them: `1e-2` (no dot) stays a string.
    if re.fullmatch(r"[-+]?([0-9]+\.[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?", text):
        return float(text)
    return text


def _strip_comment(line):
    out, quote = [], None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in "\"'" and (i == 0 or line[i - 1] in " [,:"):
            quote = c
        elif c == "#" and (i == 0 or line[i - 1] in " \t"):
            break
        out.append(c)
    return "".join(out).rstrip()


def _split_flow(text):
    items, depth, current, quote = [], 0, "", None
    for c in text:
        if quote:
            current += c
            if c == quote:
                quote = None
            continue
        if c in "\"'":
            quote = c
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
        elif c == "," and depth == 0:
            items.append(current)
            current = ""
            continue
        current += c
    if current.strip():
        items.append(current)
    return items


def _flow(text):
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        return [_flow(item) for item in _split_flow(text[1:-1])]
    if text.startswith("{") and text.endswith("}"):
        result = {}
        for item in _split_flow(text[1:-1]):
            key, _, value = item.partition(":")
            result[_scalar(key)] = _flow(value)
        return result
    return _scalar(text)


def load_yaml(text):
    """Parses text (see above) into dicts, lists and scalars."""
    raw = text.splitlines()
    anchors = {}
    pos = [0]

    def indent(line):
        return len(line) - len(line.lstrip(" "))

    def next_content():
        while pos[0] < len(raw):
            line = _strip_comment(raw[pos[0]])
            if line.strip() and line.strip() != "---":
                return line
            pos[0] += 1
        return None

    def value_of(rest, parent_indent):
        anchor = None
        rest = rest.strip()
        if rest.startswith("&"):
            anchor, _, rest = rest[1:].partition(" ")
            rest = rest.strip()
        if rest.startswith("*"):
            value = anchors[rest[1:].strip()]
        elif rest in ("|", ">", "|-", ">-", "|+", ">+"):
            lines = []
            while pos[0] < len(raw):
                line = raw[pos[0]]
                if line.strip() and indent(line) <= parent_indent:
                    break
                lines.append(line.strip())
                pos[0] += 1
            value = "\n".join(lines)
        elif rest:
            value = _flow(rest)
        else:
            line = next_content()
            if line is None or indent(line) <= parent_indent and not line.lstrip().startswith("- "):
                value = None
            else:
                value = block(indent(line))
        if anchor:
            anchors[anchor] = value
        return value

    def block(level):
        line = next_content()
        if line.lstrip().startswith("- ") or line.strip() == "-":
            items = []
            while True:
                line = next_content()
                if line is None or indent(line) != level or not line.lstrip().startswith("-"):
                    return items
                pos[0] += 1
                items.append(value_of(line.lstrip()[1:], level))
        mapping = {}
        while True:
            line = next_content()
            if line is None or indent(line) < level:
                return mapping
            if indent(line) > level:
                raise YAMLError(f"unexpected indentation at line {pos[0] + 1}")
            match = re.match(r"\s*(\"[^\"]*\"|'[^']*'|[^:]+?)\s*:(\s|$)(.*)", line)
            if not match:
                raise YAMLError(f"expected 'key: value' at line {pos[0] + 1}")
            pos[0] += 1
            key = _scalar(match.group(1))
            value = value_of(match.group(3), level)
            if key == "<<" and isinstance(value, dict):
                for k, v in value.items():
                    mapping.setdefault(k, v)
                continue
            mapping.pop(key, None)
            mapping[key] = value

    if next_content() is None:
        return None
    return block(indent(next_content()))


# --------------------------------------------------------------------------
# What the harness does with a configuration.

# test_pretraining_regular_pipeline.py:39-42.
DEFAULT_METRICS = ["lm loss", "num-zeros"]
# run_ci_test.sh:264-272, 347-362; inference and RL modes (run_ci:476-501).
STORED_CHECKPOINT_TYPES = {"frozen-start", "frozen-resume", "checkpoint-consistency", "release"}
KEPT_MODES = {"inference", "rl"}
# Flags whose change alters the model the goldens were recorded with.
SHAPE_FLAGS = [
    "--num-layers", "--encoder-num-layers", "--decoder-num-layers",
    "--hidden-size", "--ffn-hidden-size", "--num-attention-heads",
    "--num-query-groups", "--kv-channels", "--num-experts", "--moe-router-topk",
    "--moe-ffn-hidden-size", "--moe-shared-expert-intermediate-size",
    "--num-layers-per-virtual-pipeline-stage", "--seq-length",
    "--encoder-seq-length", "--decoder-seq-length", "--max-position-embeddings",
    "--micro-batch-size", "--global-batch-size",
]
PARALLEL_FLAGS = [
    "--tensor-model-parallel-size", "--pipeline-model-parallel-size",
    "--context-parallel-size", "--expert-model-parallel-size",
    "--expert-tensor-parallel-size", "--sequence-parallel",
    "--use-distributed-optimizer", "--num-virtual-stages-per-pipeline-rank",
    "--bf16", "--fp16", "--fp8-format",
]
# Flags that fix the layer count (arguments.py:777-790, 923-934, 943-948,
# 967; pipeline_parallel_layer_layout.py:107).
LAYER_FIXING_FLAGS = [
    "--hybrid-layer-pattern", "--pipeline-model-parallel-layout",
    "--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers",
    "--account-for-embedding-in-pipeline-split",
    "--account-for-loss-in-pipeline-split", "--first-last-layers-bf16",
]
PER_LAYER_LIST_FLAGS = ["--moe-layer-freq", "--linear-attention-freq", "--cp-comm-type"]


def list_length(value):
    """Entries of a per-layer list value (a YAML list or Megatron's Python
    list expression such as ([0]*3+[1]*9)); None if it is no list."""
    if isinstance(value, list):
        return len(value)
    if not isinstance(value, str) or "[" not in value:
        return None
    try:
        # Megatron evaluates these with eval (arguments.py); only lists of
        # integers, + and * reach this point.
        if not re.fullmatch(r"[\s\[\]\(\)0-9,+*]+", value):
            return None
        return len(eval(value, {"__builtins__": {}}))  # noqa: S307
    except Exception:  # a malformed expression is no list
        return None


def golden_files(config_dir):
    return sorted(os.path.join(config_dir, f) for f in os.listdir(config_dir)
                  if f.startswith("golden_values") and f.endswith(".json"))


def read_goldens(config_dir):
    """metric -> sorted steps, merged over every golden file."""
    steps = {}
    for path in golden_files(config_dir):
        with open(path) as f:
            data = json.load(f)
        for metric, body in data.items():
            values = body.get("values", {}) if isinstance(body, dict) else {}
            steps.setdefault(metric, set()).update(int(k) for k in values)
    return {metric: sorted(s) for metric, s in steps.items()}


def as_int(value):
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value):
        return int(value)
    return None


def lowered_args(original, overrides):
    args = dict(original)
    for flag, value in overrides.items():
        args[flag] = as_int(value) if as_int(value) is not None else value
    return args


def check_arguments(args, world, violations):
    """Megatron-LM's argument checks that involve lowered dimensions."""
    def get(flag, default=None):
        value = args.get(flag, default)
        return as_int(value) if as_int(value) is not None else value

    tp = get("--tensor-model-parallel-size", 1)
    pp = get("--pipeline-model-parallel-size", 1)
    cp = get("--context-parallel-size", 1)
    ep = get("--expert-model-parallel-size", 1)
    layers = get("--num-layers")
    extra = int(bool(args.get("--account-for-embedding-in-pipeline-split"))) + \
        int(bool(args.get("--account-for-loss-in-pipeline-split")))
    hybrid = args.get("--hybrid-layer-pattern") is not None
    uneven = args.get("--decoder-first-pipeline-num-layers") is not None or \
        args.get("--decoder-last-pipeline-num-layers") is not None
    if isinstance(layers, int) and not hybrid and not uneven:
        if (layers + extra) % pp:
            violations.append(f"arguments.py:967-979: layers {layers}+{extra} not divisible by pp {pp}")
        vp = get("--num-layers-per-virtual-pipeline-stage")
        if isinstance(vp, int) and ((layers + extra) // pp) % vp:
            violations.append(f"arguments.py:954: layers per stage not divisible by {vp} per virtual stage")
        stages = get("--num-virtual-stages-per-pipeline-rank")
        if isinstance(stages, int) and (layers + extra) % (pp * stages):
            violations.append("layers not divisible by pp x virtual stages per rank")
    heads = get("--num-attention-heads")
    groups = get("--num-query-groups")
    hidden = get("--hidden-size")
    if isinstance(heads, int):
        if heads % tp:
            violations.append(f"transformer_config.py: heads {heads} not divisible by tp {tp}")
        if isinstance(hidden, int) and args.get("--kv-channels") is None and hidden % heads:
            violations.append(f"arguments.py:1313-1315: hidden {hidden} not divisible by heads {heads}")
        if isinstance(groups, int) and args.get("--group-query-attention"):
            if groups % tp:
                violations.append(f"transformer_config.py:1430: query groups {groups} not divisible by tp {tp}")
            if heads % groups:
                violations.append(f"heads {heads} not divisible by query groups {groups}")
    seq = get("--seq-length")
    if isinstance(seq, int):
        if cp > 1 and seq % (2 * cp):
            violations.append(f"arguments.py:1317-1320: seq {seq} not divisible by 2 x cp {cp}")
        if args.get("--sequence-parallel") and seq % tp:
            violations.append(f"seq {seq} not divisible by tp {tp} with sequence parallel")
        pos = get("--max-position-embeddings")
        if isinstance(pos, int) and args.get("--position-embedding-type", "learned_absolute") == "learned_absolute" and pos < seq:
            violations.append(f"arguments.py:1336: max position embeddings {pos} < seq {seq}")
    gbs, mbs = get("--global-batch-size"), get("--micro-batch-size", 1)
    if isinstance(gbs, int) and isinstance(mbs, int) and world:
        dp = world // (tp * pp * cp) if world % (tp * pp * cp) == 0 else None
        if dp is None:
            violations.append(f"world {world} not divisible by tp x pp x cp")
        elif gbs % (mbs * dp):
            violations.append(f"num_microbatches_calculator: global batch {gbs} not divisible by micro {mbs} x dp {dp}")
    experts = get("--num-experts")
    topk = get("--moe-router-topk")
    if isinstance(experts, int):
        if experts % ep:
            violations.append(f"arguments.py:1624: experts {experts} not divisible by ep {ep}")
        if isinstance(topk, int) and topk > experts:
            violations.append(f"top-k {topk} above experts {experts}")
    if topk == 1 and not args.get("--moe-router-pre-softmax") and \
            args.get("--moe-router-score-function", "softmax") == "softmax" and \
            args.get("--moe-router-load-balancing-type") != "sinkhorn":
        violations.append("transformer_config.py:2609-2617: top-k 1 needs --moe-router-pre-softmax")
    for flag in PER_LAYER_LIST_FLAGS:
        length = list_length(args.get(flag))
        if length is not None and isinstance(layers, int) and length != layers:
            violations.append(f"gpt_layer_specs.py:651-657: {flag} lists {length} layers, --num-layers is {layers}")
    if args.get("--train-iters") is not None and args.get("--train-samples") is not None:
        violations.append("arguments.py:1261: --train-iters and --train-samples together")


def timing_window_end(golden_steps, original_iters):
    """The last golden step of iteration-time the harness compares
    (common.py:263-282); None if it compares none."""
    steps = golden_steps or list(range(1, (original_iters or 0) + 1))
    if not steps:
        return None
    window = range(5, 21) if max(steps) <= 25 else range(30, 46)
    inside = [s for s in steps if s in window]
    return max(inside) if inside else None


def check_test(name, config, entry, recipes, violations):
    """Checks one imported test; entry is its plan entry (overrides,
    golden_steps, golden_metrics, gpus)."""
    original = config.get("MODEL_ARGS") or {}
    overrides = entry.get("overrides") or {}
    args = lowered_args(original, overrides)
    lowered = bool(overrides)
    test_type = str(config.get("TEST_TYPE", "regular"))
    mode = config.get("MODE", "pretraining")
    config_dir = entry["dir"]
    v = []

    # World size: recipes (nodes x GPUs per node), else the harness's one
    # node of 8 (_run_training.sh:201-202).
    recipe = recipes.get(name)
    if recipe:
        nodes, per_node = recipe["nodes"], recipe["gpus-per-node"]
    else:
        # No recipe runs it: the fewest 8-GPU nodes holding one replica
        # (the world is a multiple of tp x pp x cp, parallel_state.py).
        replica = 1
        for flag in ("--tensor-model-parallel-size", "--pipeline-model-parallel-size",
                     "--context-parallel-size"):
            replica *= as_int(original.get(flag)) or 1
        nodes, per_node = max(1, -(-replica // 8)), 8
    reserved = nodes * per_node
    if entry.get("gpus") != reserved:
        v.append(f"recipes: world size {reserved}, plan reserves {entry.get('gpus')}")
    # run_ci_test.sh:297-304: MODEL_ARGS' run may use its own GPUs per node.
    own = ((config.get("MODEL_ENV_VARS") or {}).get("MODEL_ARGS") or {}).get("GPUS_PER_NODE")
    world = nodes * own if isinstance(own, int) and own > 0 else reserved

    # Parallel layout never changes.
    for flag in PARALLEL_FLAGS:
        if flag in overrides:
            v.append(f"parallel flag {flag} changed")

    check_arguments(args, world, v)

    if not lowered:
        violations.extend(f"{name}: {x}" for x in v)
        return

    # Tests that start from stored checkpoints or are no pretraining runs
    # keep their workload (run_ci:264-272, 347-362, 476-501).
    if test_type in STORED_CHECKPOINT_TYPES or mode in KEPT_MODES:
        v.append(f"test type {test_type} / mode {mode} runs from stored checkpoints, but its workload changed")
    for flag in ("--pretrained-checkpoint", "--export-kd-teacher-load"):
        if flag in original:
            for shape in SHAPE_FLAGS:
                if shape in overrides:
                    v.append(f"{flag} loads a stored checkpoint, but {shape} changed")
    if "--train-samples" in original:
        v.append("samples-based run lowered (run_ci:127-129 reads --train-iters)")
    if any(k.startswith("MODEL_ARGS_") for k in config):
        v.append("config with MODEL_ARGS_<n> lowered (_run_training.sh:121-126)")

    n0, n = as_int(original.get("--train-iters")), as_int(args.get("--train-iters"))
    goldens = read_goldens(config_dir)
    compared = config.get("METRICS") if "METRICS" in config else DEFAULT_METRICS
    compared = compared or []
    # Every test type but checkpoint-consistency is compared with goldens
    # (run_ci:444-457); the goldens hold for the model they were recorded on.
    for shape in SHAPE_FLAGS:
        if shape in overrides and as_int(overrides[shape]) != as_int(original.get(shape)):
            v.append(f"golden values: {shape} changed on a test compared with goldens")
    golden_steps = entry.get("golden_steps")
    if n is not None and n0 is not None and n != n0:
        if golden_steps != n:
            v.append(f"golden_steps {golden_steps} is not the lowered --train-iters {n}")
        for metric, steps in goldens.items():
            if metric in compared and golden_steps and steps and max(steps) < golden_steps:
                v.append(f"golden file has {metric} up to step {max(steps)} < golden_steps {golden_steps}")
    gm = entry.get("golden_metrics") or []
    for metric in gm:
        if metric not in compared:
            v.append(f"golden_metrics names {metric}, which the harness does not compare")
    for metric in compared:
        if (not goldens or metric in goldens) and metric not in gm:
            v.append(f"compared metric {metric} missing from golden_metrics")
    if n is not None and n0 is not None and n > n0:
        v.append(f"--train-iters grew {n0} -> {n}")

    # Timing window (common.py:263-282).
    if "iteration-time" in compared and n is not None:
        end = timing_window_end(goldens.get("iteration-time"), n0)
        if end is not None and n < end:
            v.append(f"iteration-time window ends at step {end}, lowered run stops at {n}")

    # Resume tests (run_ci:334-345; training.py:4033;
    # test_pretraining_resume_checkpoint_pipeline.py:62-75).
    if test_type == "ckpt-resume":
        save = as_int(args.get("--save-interval"))
        if save is None:
            v.append("ckpt-resume test without --save-interval lowered")
        elif n is not None:
            resume = n // 2
            if resume < 1 or resume % save:
                v.append(f"resume point {n}//2 = {resume} is not a saved iteration (save interval {save})")
            if n - resume < 1:
                v.append("no compared step after the resume point")
    # TensorBoard and logs are written at multiples of these intervals
    # (training.py:3363, 3498).
    for flag in ("--log-interval", "--tensorboard-log-interval",
                 "--check-weight-hash-across-dp-replicas-interval"):
        interval = as_int(args.get(flag))
        if interval and n is not None and n0 is not None and n < min(interval, n0):
            v.append(f"{flag} {interval}: the lowered run of {n} steps never reaches it")
    # The learning-rate schedule follows --train-iters unless
    # --lr-decay-iters says otherwise (arguments.py, optimizer_param_scheduler).
    if n is not None and n0 is not None and n != n0 and \
            as_int(args.get("--lr-decay-iters", n)) != as_int(original.get("--lr-decay-iters", n0)):
        v.append("the learning-rate decay horizon changed with --train-iters")
    # Flags that fix the layer count.
    for flag in LAYER_FIXING_FLAGS:
        if flag in original and "--num-layers" in overrides:
            v.append(f"{flag} fixes the layer count, but --num-layers changed")
    # Dimensions a test id names are what it validates.
    tokens = re.split(r"[^a-z0-9]+", name.lower())
    if any(re.fullmatch(r"[0-9]+experts?", t) for t in tokens) and "--num-experts" in overrides:
        v.append("the test id names the expert count, but --num-experts changed")
    if any(re.fullmatch(r"top[0-9]+(router)?", t) for t in tokens) and "--moe-router-topk" in overrides:
        v.append("the test id names the router top-k, but --moe-router-topk changed")
    violations.extend(f"{name}: {x}" for x in v)


def cost(args):
    """steps x layers x tokens x width^2 of one run."""
    def num(flag, default=1):
        value = as_int(args.get(flag))
        return value if value else default
    layers = num("--num-layers", 0) or (num("--encoder-num-layers", 0) + num("--decoder-num-layers", 0)) or 1
    tokens = num("--seq-length", 0) or num("--encoder-seq-length", 1)
    return num("--train-iters") * layers * tokens * num("--global-batch-size") * num("--hidden-size") ** 2


def read_recipes(path):
    """The recipes table utils/megatron/extract_recipes.py writes."""
    with open(path) as f:
        table = load_yaml(f.read()) or {}
    return table.get("tests") or {}


def run_pipeline(opt, data, recipes_path, workdir, families=FAMILIES, extra=()):
    """Lowers every config under data's families with fastci-opt;
    returns (plan, ir)."""
    dirs = [os.path.join(data, fam) for fam in families if os.path.isdir(os.path.join(data, fam))]
    manifest = os.path.join(workdir, "megatron.yaml")
    with open(manifest, "w") as f:
        f.write("version: 1\ndialect: megatron\n")
        if recipes_path:
            f.write(f"megatron-recipes: {json.dumps(os.path.abspath(recipes_path))}\n")
        f.write("defaults:\n  command: \"bash tests/functional_tests/shell_test_utils/"
                "run_ci_test.sh TRAINING_PARAMS_PATH={config}\"\n")
        f.write("import-megatron:\n")
        for d in dirs:
            f.write(f"  - {json.dumps(os.path.abspath(d))}\n")
    empty = os.path.join(workdir, "empty.fir")
    open(empty, "w").close()
    plan_path = os.path.join(workdir, "plan.json")
    ir_path = os.path.join(workdir, "ir.json")
    pipeline = f"load-manifest{{file={manifest}}},lower-workload,emit-plan{{out={plan_path}}}"
    subprocess.run([opt, empty, f"--pass-pipeline={pipeline}", "--emit=json", "-o", ir_path, *extra],
                   check=True, stderr=subprocess.DEVNULL)
    with open(plan_path) as f, open(ir_path) as g:
        return json.load(f), json.load(g)


def check_written(name, config, entry, written, violations):
    """The lowered configuration and goldens lower_config.py wrote for a
    test: MODEL_ARGS with the plan's overrides, everything else unchanged,
    each golden metric cut to golden_steps steps."""
    target = os.path.join(written, name)
    with open(os.path.join(target, "model_config.yaml")) as f:
        lowered = load_yaml(f.read()) or {}
    want = lowered_args(config.get("MODEL_ARGS") or {}, entry.get("overrides") or {})
    got = lowered.get("MODEL_ARGS") or {}
    if {k: as_int(v) if as_int(v) is not None else v for k, v in got.items()} != want:
        violations.append(f"{name}: the written MODEL_ARGS differ from the plan's")
    if {k: v for k, v in lowered.items() if k != "MODEL_ARGS"} != \
            {k: v for k, v in config.items() if k != "MODEL_ARGS"}:
        violations.append(f"{name}: the written configuration changed more than MODEL_ARGS")
    steps = entry.get("golden_steps")
    for path in golden_files(target):
        with open(path) as f:
            data = json.load(f)
        for metric, body in data.items():
            recorded = [int(k) for k in body.get("values", {})]
            if steps and recorded and max(recorded) > steps:
                violations.append(f"{name}: {os.path.basename(path)} keeps {metric} past step {steps}")


def evaluate(plan, ir, recipes, written=None):
    """(violations, rows): rows are (name, lowered, reason, cost ratio).
    With written, also checks what lower_config.py wrote there."""
    attrs = {t["name"]: t.get("attributes", {}) for t in ir["tests"]}
    violations, rows = [], []
    for entry in plan["tests"]:
        name = entry["name"]
        config_path = attrs.get(name, {}).get("config")
        if not config_path:
            continue
        with open(config_path) as f:
            config = load_yaml(f.read()) or {}
        entry = dict(entry, dir=os.path.dirname(config_path))
        check_test(name, config, entry, recipes, violations)
        if written and entry.get("overrides"):
            check_written(name, config, entry, written, violations)
        original = config.get("MODEL_ARGS") or {}
        ratio = cost(lowered_args(original, entry.get("overrides") or {})) / cost(original)
        a = attrs[name]
        reason = a.get("lowering_reason") or ("no MODEL_ARGS" if not original else "")
        rows.append((name, bool(entry.get("overrides")), reason, ratio))
    return violations, rows


def print_table(rows, out):
    lowered = [r for r in rows if r[1]]
    kept = [r for r in rows if not r[1]]
    out.write(f"tests: {len(rows)}, lowered: {len(lowered)}, kept: {len(kept)}\n")
    reasons = {}
    for r in kept:
        reasons[r[2]] = reasons.get(r[2], 0) + 1
    for reason, count in sorted(reasons.items(), key=lambda x: -x[1]):
        out.write(f"  kept {count:3d}: {reason}\n")
    if lowered:
        ratios = [r[3] for r in lowered]
        out.write("cost ratio lowered/original (steps x layers x tokens x width^2), "
                  f"lowered tests: median {statistics.median(ratios):.4f}, "
                  f"mean {statistics.mean(ratios):.4f}, min {min(ratios):.4f}, max {max(ratios):.4f}\n")
    every = [r[3] for r in rows]
    out.write(f"over all tests: median {statistics.median(every):.4f}, mean {statistics.mean(every):.4f}, "
              f"total cost ratio {sum(every) / len(every):.4f} (unweighted)\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--opt", help="fastci-opt, to lower the configs under --data")
    parser.add_argument("--data", help="directory holding gpt/, bert/, t5/")
    parser.add_argument("--plan", help="an emit-plan JSON plan (with --ir)")
    parser.add_argument("--ir", help="the module as JSON (fastci-opt --emit=json)")
    parser.add_argument("--recipes", default=os.path.join(os.path.dirname(__file__), "recipes.yaml"))
    parser.add_argument("--table", action="store_true", help="print lowered/kept counts and cost ratios")
    parser.add_argument("--verbose", action="store_true", help="list every violation")
    parser.add_argument("--write", metavar="DIR",
                        help="write the lowered configurations and goldens there "
                             "(lower_config.py) and check them too")
    args = parser.parse_args(argv)
    recipes = read_recipes(args.recipes) if args.recipes else {}
    if args.plan and args.ir:
        with open(args.plan) as f, open(args.ir) as g:
            plan, ir = json.load(f), json.load(g)
    elif args.opt and args.data:
        with tempfile.TemporaryDirectory() as work:
            plan, ir = run_pipeline(args.opt, args.data, args.recipes, work)
    else:
        parser.error("give --opt and --data, or --plan and --ir")
    if args.write:
        import lower_config  # beside this file
        lower_config.write_lowered(plan, ir, args.write)
    violations, rows = evaluate(plan, ir, recipes, args.write)
    print(f"checked {len(rows)} imported tests: {len(violations)} violations")
    for v in violations if args.verbose or len(violations) <= 50 else violations[:50]:
        print(f"  violation: {v}")
    if args.table:
        print_table(rows, sys.stdout)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
