"""Loading the e2e test manifest (ci/tests.yaml) and rendering commands.

The manifest follows Megatron-LM functional tests: each test carries its
``MODEL_ARGS`` as a flag -> value map (``true`` = bare flag, ``${VAR}``
placeholders for paths the runner provides) plus declared production cost
(gpus, minutes) and the parallelism features (``scope``) it validates.
"""

import os
import shlex

import yaml

CI_DIR = os.path.dirname(os.path.abspath(__file__))
WORKLOAD_ROOT = os.path.dirname(CI_DIR)
MANIFEST = os.path.join(CI_DIR, "tests.yaml")


def load_manifest(path=MANIFEST):
    with open(path) as f:
        manifest = yaml.safe_load(f)
    if manifest.get("version") != 1:
        raise ValueError(f"unsupported manifest version {manifest.get('version')!r}")
    return manifest


def find_test(manifest, test_id):
    for test in manifest["tests"]:
        if test["id"] == test_id:
            return test
    known = ", ".join(t["id"] for t in manifest["tests"])
    raise KeyError(f"no e2e test {test_id!r} (known: {known})")


def parse_override(text):
    """``--hidden-size=32`` -> ("--hidden-size", 32); ``--bf16=false`` removes a flag."""
    flag, _, raw = text.partition("=")
    if not flag.startswith("--"):
        flag = "--" + flag
    value = yaml.safe_load(raw) if raw else True
    return flag, value


def apply_overrides(model_args, overrides):
    args = dict(model_args)
    for flag, value in overrides:
        if value is False or value is None:
            args.pop(flag, None)
        else:
            args[flag] = value
    return args


def render_args(model_args, substitutions):
    """Flag map -> argv list, expanding ``${NAME}`` from ``substitutions``."""
    argv = []
    for flag, value in model_args.items():
        if value is True:
            argv.append(flag)
            continue
        if value is False or value is None:
            continue
        text = str(value)
        for name, sub in substitutions.items():
            text = text.replace("${" + name + "}", sub)
        argv.extend([flag, text])
    return argv


def render_command(test, argv, python):
    template = test.get("command", "{python} -m minitron.launch --nproc {nproc} -- {args}")
    return shlex.split(template.format(python=shlex.quote(python), nproc=test["nproc"],
                                       args=" ".join(shlex.quote(a) for a in argv)))
