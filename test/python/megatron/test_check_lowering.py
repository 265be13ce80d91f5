"""utils/megatron/check_lowering.py: its YAML reader, that it catches each
harness and argument rule a lowering can break, and that FastCI's lowering
of Megatron-LM's gpt/bert/t5 functional tests breaks none of them."""

import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "utils", "megatron"))

import check_lowering  # noqa: E402
import lower_config  # noqa: E402

BUILD = os.environ.get("FASTCI_BUILD_DIR", os.path.join(ROOT, "build"))
OPT = os.path.join(BUILD, "bin", "fastci-opt")
DATA = os.environ.get("FASTCI_SHARED_DATA",
                      os.path.join(ROOT, "..", "shared", "data"))
CORPUS = os.path.join(DATA, "megatron-lm-functional-tests")


def test_yaml_reader_reads_megatron_configs():
    text = """\
BASE: &BASE
  --num-layers: 12
  --lr: 1e-4        # YAML 1.1: a string, as PyYAML reads it
MODEL_ARGS:
  <<: *BASE
  --micro-batch-size: 2
  --micro-batch-size: 4
  --moe-layer-freq: ([0]*3+[1]*9)
  --data-path: "$DATA_PATH/x"
  --bf16: true
  --weight-decay: 0.1
METRICS: ["iteration-time", "lm loss"]
AFTER_SCRIPT: |
  check_log -F "x # y"
TEST_TYPE: regular # Usually ckpt-resume
"""
    config = check_lowering.load_yaml(text)
    assert config["MODEL_ARGS"] == {
        "--num-layers": 12, "--lr": "1e-4", "--micro-batch-size": 4,
        "--moe-layer-freq": "([0]*3+[1]*9)", "--data-path": "$DATA_PATH/x",
        "--bf16": True, "--weight-decay": 0.1}
    assert config["METRICS"] == ["iteration-time", "lm loss"]
    assert config["AFTER_SCRIPT"] == 'check_log -F "x # y"'
    assert config["TEST_TYPE"] == "regular"
    assert check_lowering.list_length("([0]*3+[1]*9)") == 12
    assert check_lowering.list_length("[1,0,1]") == 3
    assert check_lowering.list_length("2") is None


RESUME = {"MODEL_ARGS": {"--num-layers": 12, "--hidden-size": 512, "--num-attention-heads": 8,
                         "--micro-batch-size": 4, "--global-batch-size": 32,
                         "--train-iters": 100, "--lr-decay-iters": 320000,
                         "--save-interval": 50},
          "TEST_TYPE": "ckpt-resume"}


def violations(config, entry, tmp_path, goldens=None, name="gpt3_resume"):
    (tmp_path / "golden_values_dev_dgx_h100.json").write_text(json.dumps(goldens)) if goldens else None
    entry = dict({"gpus": 8, "dir": str(tmp_path)}, **entry)
    found = []
    check_lowering.check_test(name, config, entry, {}, found)
    return found


def test_a_valid_resume_lowering_passes(tmp_path):
    entry = {"overrides": {"--train-iters": "5", "--save-interval": "2"},
             "golden_steps": 5, "golden_metrics": ["lm loss", "num-zeros"]}
    assert violations(RESUME, entry, tmp_path) == []


def test_resume_point_without_checkpoint_is_caught(tmp_path):
    # The lowering: 53 steps, saves at 50, the harness resumes at 26.
    entry = {"overrides": {"--train-iters": "53"}, "golden_steps": 53,
             "golden_metrics": ["lm loss", "num-zeros"]}
    found = violations(RESUME, entry, tmp_path)
    assert any("resume point 53//2 = 26 is not a saved iteration" in v for v in found)


def test_shape_change_against_goldens_and_lost_metrics_are_caught(tmp_path):
    config = dict(RESUME, TEST_TYPE="regular")
    entry = {"overrides": {"--train-iters": "4", "--hidden-size": "64"}, "golden_steps": 4,
             "golden_metrics": ["lm loss"]}
    found = violations(config, entry, tmp_path)
    assert any("--hidden-size changed on a test compared with goldens" in v for v in found)
    assert any("compared metric num-zeros missing from golden_metrics" in v for v in found)


def test_timing_window_is_caught(tmp_path):
    config = dict(RESUME, TEST_TYPE="regular", METRICS=["iteration-time", "lm loss"])
    config["MODEL_ARGS"] = dict(config["MODEL_ARGS"], **{"--train-iters": 25})
    steps = {str(s): 1.0 for s in range(1, 26)}
    goldens = {m: {"start_step": 1, "end_step": 25, "step_interval": 1, "values": steps}
               for m in ("iteration-time", "lm loss")}
    entry = {"overrides": {"--train-iters": "4"}, "golden_steps": 4,
             "golden_metrics": ["iteration-time", "lm loss"]}
    found = violations(config, entry, tmp_path, goldens)
    assert any("iteration-time window ends at step 20" in v for v in found)


def test_stored_checkpoints_world_size_and_arguments_are_caught(tmp_path):
    config = dict(RESUME, TEST_TYPE="frozen-start")
    entry = {"overrides": {"--train-iters": "4", "--global-batch-size": "6"}, "gpus": 4}
    found = violations(config, entry, tmp_path)
    assert any("runs from stored checkpoints" in v for v in found)
    assert any("world size 8, plan reserves 4" in v for v in found)
    assert any("global batch 6 not divisible by micro 4 x dp 8" in v for v in found)


def test_layer_lists_names_and_top_k_are_caught(tmp_path):
    config = {"MODEL_ARGS": {"--num-layers": 4, "--num-experts": 8, "--moe-router-topk": 2,
                             "--moe-layer-freq": "([0]*1+[1]*3)", "--train-iters": 50},
              "TEST_TYPE": "regular"}
    entry = {"overrides": {"--num-layers": "2", "--moe-router-topk": "1", "--train-iters": "4",
                           "--lr-decay-iters": "50"},
             "golden_steps": 4, "golden_metrics": ["lm loss", "num-zeros"]}
    found = violations(config, entry, tmp_path, name="gpt3_8experts_top2router")
    assert any("--moe-layer-freq lists 4 layers, --num-layers is 2" in v for v in found)
    assert any("top-k 1 needs --moe-router-pre-softmax" in v for v in found)
    assert any("names the router top-k" in v for v in found)


def test_lowered_configs_change_only_the_overridden_flags():
    text = """\
ENV_VARS:
  NCCL_ALGO: Ring
MODEL_ARGS:
  --train-iters: 100 # steps
  --save-interval: 10
  --save-interval: 50
  # a comment
  --log-interval: 1
TEST_TYPE: ckpt-resume
"""
    lowered = lower_config.lower_text(text, {"--train-iters": "5", "--save-interval": "2",
                                             "--lr-decay-iters": "100"})
    assert lowered == """\
ENV_VARS:
  NCCL_ALGO: Ring
MODEL_ARGS:
  --train-iters: 5 # steps
  --save-interval: 10
  --save-interval: 2
  # a comment
  --log-interval: 1
  --lr-decay-iters: 100
TEST_TYPE: ckpt-resume
"""
    goldens = {"lm loss": {"start_step": 1, "end_step": 3, "step_interval": 1,
                           "values": {"1": 1.0, "2": 2.0, "3": 3.0}},
               "iteration-time": {"start_step": 1, "end_step": 3, "step_interval": 1,
                                  "values": {"1": 1.0, "2": 2.0, "3": 3.0}}}
    assert lower_config.cut_goldens(goldens, 2, ["lm loss"]) == {
        "lm loss": {"start_step": 1, "end_step": 2, "step_interval": 1,
                    "values": {"1": 1.0, "2": 2.0}}}


@pytest.mark.skipif(not os.path.exists(OPT), reason="fastci-opt is not built")
def test_excerpts_lower_without_violations(tmp_path):
    data = tmp_path / "data" / "gpt" / "gpt3_tp1_pp2_resume_torch_dist"
    data.mkdir(parents=True)
    (data / "model_config.yaml").write_text(
        "MODEL_ARGS:\n" + "".join(f"  {k}: {v}\n" for k, v in RESUME["MODEL_ARGS"].items())
        + "  --pipeline-model-parallel-size: 2\nTEST_TYPE: ckpt-resume\n")
    plan, ir = check_lowering.run_pipeline(OPT, str(tmp_path / "data"), None, str(tmp_path))
    found, rows = check_lowering.evaluate(plan, ir, {})
    assert found == []
    assert rows == [("gpt3_tp1_pp2_resume_torch_dist", True, "", pytest.approx(0.05))]


@pytest.mark.skipif(not os.path.exists(OPT), reason="fastci-opt is not built")
@pytest.mark.skipif(not os.path.isdir(CORPUS),
                    reason="../shared/data/megatron-lm-functional-tests is absent (set FASTCI_SHARED_DATA)")
def test_the_gpt_bert_t5_corpus_lowers_without_violations(tmp_path):
    # Only the gpt, bert and t5 families: the others are reserved for
    # independent evaluation.
    plan, ir = check_lowering.run_pipeline(
        OPT, CORPUS, os.path.join(ROOT, "utils", "megatron", "recipes.yaml"), str(tmp_path))
    recipes = check_lowering.read_recipes(os.path.join(ROOT, "utils", "megatron", "recipes.yaml"))
    written = tmp_path / "lowered"
    lower_config.write_lowered(plan, ir, str(written))
    found, rows = check_lowering.evaluate(plan, ir, recipes, str(written))
    assert len(rows) == 229
    assert found == []
    assert sum(1 for r in rows if r[1]) > 150
