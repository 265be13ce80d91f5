"""In-process training runs: learning, determinism, logging, checkpoint resume."""

import json
from types import SimpleNamespace

import pytest
import torch

from minitron.checkpointing.checkpoint import read_tracker
from minitron.launch import parse_launcher_args, rank_env
from minitron.model import GPTModel
from minitron.training.logger import GoldenValuesLogger
from minitron.training.loop import pretrain
from minitron.training.schedules import forward_backward_no_pipelining


def losses(logger):
    return logger.to_dict()["lm loss"]["values"]


class TestLoop:
    def test_loss_decreases(self, make_args):
        values = losses(pretrain(make_args("--train-iters", "8")))
        assert values["8"] < values["1"] - 0.3

    def test_runs_are_deterministic(self, make_args):
        assert losses(pretrain(make_args())) == losses(pretrain(make_args()))

    def test_micro_batches_accumulate_like_one_big_batch(self, make_args):
        split = losses(pretrain(make_args("--micro-batch-size", "1")))
        whole = losses(pretrain(make_args("--micro-batch-size", "4")))
        assert split == pytest.approx(whole, rel=1e-4)

    def test_golden_values_file(self, make_args, tmp_path):
        path = tmp_path / "losses.json"
        pretrain(make_args("--log-file", str(path)))
        data = json.loads(path.read_text())["lm loss"]
        assert (data["start_step"], data["end_step"], data["step_interval"]) == (1, 4, 1)
        assert set(data["values"]) == {"1", "2", "3", "4"}

    def test_evaluation_is_logged(self, make_args):
        logger = pretrain(make_args("--eval-interval", "2", "--eval-iters", "1"))
        assert set(logger.to_dict()["lm loss validation"]["values"]) == {"2", "4"}


@pytest.mark.fastci(scope=["checkpoint", "resume"], workload={"--train-iters": 6})
def test_resume_reproduces_uninterrupted_run(make_args, tmp_path):
    full = losses(pretrain(make_args("--train-iters", "6")))
    ckpt = str(tmp_path / "ckpt")
    first = losses(pretrain(make_args("--train-iters", "6", "--save", ckpt,
                                      "--save-interval", "3", "--exit-interval", "3")))
    assert read_tracker(ckpt) == 3
    second = losses(pretrain(make_args("--train-iters", "6", "--save", ckpt, "--load", ckpt)))
    assert {**first, **second} == pytest.approx(full, rel=1e-6)


def test_load_without_checkpoint_starts_fresh(make_args, tmp_path):
    values = losses(pretrain(make_args("--load", str(tmp_path / "missing"))))
    assert "1" in values


def test_logger_shape():
    logger = GoldenValuesLogger()
    logger.record("lm loss", 2, 1.5)
    logger.record("lm loss", 1, 2.5)
    assert logger.to_dict() == {"lm loss": {"start_step": 1, "end_step": 2, "step_interval": 1,
                                            "values": {"1": 2.5, "2": 1.5}}}


def test_launcher_splits_arguments():
    opts, rest = parse_launcher_args(["--nproc", "4", "--", "--num-layers", "2"])
    assert opts.nproc == 4 and rest == ["--num-layers", "2"]


def test_launcher_sets_torchrun_environment():
    env = rank_env(3, 4, 29500)
    assert (env["RANK"], env["LOCAL_RANK"], env["WORLD_SIZE"]) == ("3", "3", "4")
    assert (env["MASTER_ADDR"], env["MASTER_PORT"]) == ("127.0.0.1", "29500")


def test_moe_aux_loss_accumulates_like_the_lm_loss(model_parallel_state, tiny_config):
    """k identical micro-batches give the gradient of one: the auxiliary
    load-balancing loss must be averaged over micro-batches like the LM loss."""
    tiny_config.num_experts, tiny_config.moe_router_topk = 4, 2
    tiny_config.moe_aux_loss_coeff = 0.5
    model = GPTModel(tiny_config)
    model.train()
    batch = {"tokens": torch.randint(0, 256, (2, 16)),
             "labels": torch.randint(0, 256, (2, 16))}
    args = SimpleNamespace(bf16=False)

    def gradients(num_micro_batches):
        model.zero_grad()
        forward_backward_no_pipelining([model], [batch] * num_micro_batches, args)
        return [p.grad.clone() for p in model.parameters() if p.grad is not None]

    one, four = gradients(1), gradients(4)
    assert len(one) == len(four)
    for a, b in zip(one, four):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-7)
