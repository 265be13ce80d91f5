"""LR schedule, AdamW math, clipping, loss scaling and shard ranges."""

import math

import pytest
import torch

from minitron.optimizer import adam
from minitron.optimizer.buckets import build_buckets
from minitron.optimizer.clip_grads import clip_coefficient
from minitron.optimizer.distributed import shard_range
from minitron.optimizer.grad_scaler import DynamicGradScaler
from minitron.optimizer.lr_scheduler import LRScheduler
from minitron.optimizer.optimizer import FP32Optimizer


def lr_after(scheduler, steps):
    scheduler.num_steps = steps
    return scheduler.get_lr()


class TestLRSchedule:
    def test_warmup_is_linear(self):
        sched = LRScheduler(1.0, 0.0, warmup_steps=4, decay_steps=10, decay_style="cosine")
        assert [lr_after(sched, s) for s in range(4)] == [0.25, 0.5, 0.75, 1.0]

    def test_cosine_midpoint(self):
        sched = LRScheduler(1.0, 0.0, warmup_steps=0, decay_steps=10, decay_style="cosine")
        assert lr_after(sched, 5) == pytest.approx(0.5)

    def test_linear_decay(self):
        sched = LRScheduler(1.0, 0.2, warmup_steps=0, decay_steps=10, decay_style="linear")
        assert lr_after(sched, 5) == pytest.approx(0.6)

    @pytest.mark.parametrize("style", ["linear", "cosine"])
    def test_reaches_min_lr(self, style):
        sched = LRScheduler(1.0, 0.1, warmup_steps=2, decay_steps=10, decay_style=style)
        assert lr_after(sched, 10) == pytest.approx(0.1)
        assert lr_after(sched, 50) == pytest.approx(0.1)

    def test_constant(self):
        sched = LRScheduler(0.3, 0.0, warmup_steps=0, decay_steps=10, decay_style="constant")
        assert lr_after(sched, 7) == 0.3

    def test_state_roundtrip(self):
        sched = LRScheduler(1.0, 0.0, 2, 10, "cosine")
        sched.step(3)
        other = LRScheduler(1.0, 0.0, 2, 10, "cosine")
        other.load_state_dict(sched.state_dict())
        assert other.get_lr() == sched.get_lr()


class TestAdam:
    def test_matches_torch_adamw(self):
        torch.manual_seed(0)
        ref = torch.nn.Parameter(torch.randn(10))
        opt = torch.optim.AdamW([ref], lr=0.01, weight_decay=0.1, eps=1e-8)
        mine = ref.detach().clone()
        st = adam.new_state(10)
        hp = adam.AdamHyperParams(weight_decay=0.1)
        for step in range(1, 4):
            grad = torch.randn(10)
            ref.grad = grad.clone()
            opt.step()
            adam.adam_step(mine, grad, st["exp_avg"], st["exp_avg_sq"], step, 0.01, hp,
                           torch.ones(10))
        assert torch.allclose(mine, ref.detach(), atol=1e-6)

    def test_decay_mask_exempts_elements(self):
        param = torch.ones(2)
        st = adam.new_state(2)
        adam.adam_step(param, torch.zeros(2), st["exp_avg"], st["exp_avg_sq"], 1, 0.1,
                       adam.AdamHyperParams(weight_decay=0.5), torch.tensor([1.0, 0.0]))
        assert param.tolist() == pytest.approx([0.95, 1.0])


class TestClipping:
    def test_no_clip_below_threshold(self):
        assert clip_coefficient(0.5, 1.0) == 1.0

    def test_clip_scales_to_max_norm(self):
        assert clip_coefficient(4.0, 1.0) * 4.0 == pytest.approx(1.0, rel=1e-5)

    def test_optimizer_clips_global_norm(self, model_parallel_state):
        model = torch.nn.Linear(4, 1, bias=False)
        model.weight.data.zero_()
        opt = FP32Optimizer([model], build_buckets([model]), adam.AdamHyperParams(), 1.0)
        model.weight.grad = torch.full((1, 4), 3.0)
        applied, norm = opt.step(lr=0.1)
        assert applied and norm == pytest.approx(6.0)


class TestGradScaler:
    def test_backoff_on_inf(self):
        scaler = DynamicGradScaler(initial_scale=1024.0)
        assert scaler.found_inf(torch.tensor([1.0, float("inf")]))
        scaler.update(True)
        assert scaler.scale == 512.0

    def test_growth_after_window(self):
        scaler = DynamicGradScaler(initial_scale=8.0, growth_interval=2)
        scaler.update(False)
        scaler.update(False)
        assert scaler.scale == 16.0


@pytest.mark.parametrize("numel, world", [(10, 2), (10, 3), (7, 4), (1, 2)])
def test_shard_ranges_tile_the_buffer(numel, world):
    covered = []
    for rank in range(world):
        start, end, _ = shard_range(numel, world, rank)
        covered.extend(range(start, end))
    assert covered == list(range(numel))


def test_bias_and_norm_params_skip_weight_decay(model_parallel_state):
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.LayerNorm(2))
    bucket = build_buckets([model])[0]
    assert bucket.decay_mask.tolist() == [1.0] * 6 + [0.0] * 6
    assert math.isclose(bucket.owned_mask.sum().item(), 12)
