"""The e2e manifest and runner helpers (no training is started here)."""

import os
import sys

import pytest

CI_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "ci")
sys.path.insert(0, os.path.abspath(CI_DIR))

from manifest import apply_overrides, load_manifest, parse_override, render_args  # noqa: E402
from run_e2e import compare  # noqa: E402


@pytest.fixture(scope="module")
def manifest():
    return load_manifest()


def test_manifest_has_required_fields(manifest):
    assert manifest["dialect"] == "megatron"
    for test in manifest["tests"]:
        assert {"id", "nproc", "gpus", "minutes", "scope", "golden", "model_args"} <= set(test)


def test_manifest_goldens_exist(manifest):
    for test in manifest["tests"]:
        assert os.path.exists(os.path.join(CI_DIR, test["golden"])), test["id"]


def test_manifest_world_sizes_are_valid(manifest):
    from minitron.config import parse_args
    for test in manifest["tests"]:
        argv = render_args(test["model_args"], {"CHECKPOINT_SAVE_PATH": "/tmp/x",
                                                "CHECKPOINT_LOAD_PATH": "/tmp/x"})
        parse_args(argv, world_size=test["nproc"])


def test_render_bare_flags_and_placeholders():
    argv = render_args({"--bf16": True, "--fp16": False, "--save": "${CHECKPOINT_SAVE_PATH}",
                        "--lr": 0.5}, {"CHECKPOINT_SAVE_PATH": "/ck"})
    assert argv == ["--bf16", "--save", "/ck", "--lr", "0.5"]


def test_overrides_replace_and_remove():
    args = apply_overrides({"--train-iters": 50, "--bf16": True},
                           [parse_override("--train-iters=5"), parse_override("--bf16=false")])
    assert args == {"--train-iters": 5}


def test_compare_tolerance_and_truncation():
    golden = {"lm loss": {"values": {"1": 5.0, "2": 4.0, "3": 3.0}}}
    assert compare({"1": 5.001, "2": 4.0, "3": 9.0}, golden, 1e-3, steps=2) == []
    assert len(compare({"1": 5.1, "2": 4.0}, golden, 1e-3)) == 2
