"""Model components on a single rank: attention, MoE, embedding, GPT loss."""

import math

import pytest
import torch

from minitron import fused
from minitron.model import GPTModel
from minitron.model.attention import (SelfAttention, causal_mask_from_positions,
                                      core_attention, repeat_kv)
from minitron.model.gpt import layers_for_chunk
from minitron.model.moe import MoELayer, TopKRouter


class TestAttention:
    def test_causal_mask_blocks_future_only(self):
        mask = causal_mask_from_positions(torch.arange(4), torch.arange(4))
        assert torch.equal(mask, torch.triu(torch.ones(4, 4, dtype=torch.bool), diagonal=1))

    def test_mask_uses_global_positions(self):
        mask = causal_mask_from_positions(torch.tensor([4, 5]), torch.arange(8))
        assert mask.sum().item() == (8 - 5) + (8 - 6)

    def test_repeat_kv_expands_groups(self):
        kv = torch.randn(3, 2, 2, 4)
        out = repeat_kv(kv, 3)
        assert out.shape == (3, 2, 6, 4) and torch.equal(out[:, :, 2], kv[:, :, 0])

    def test_core_attention_matches_reference(self):
        torch.manual_seed(0)
        q, k, v = (torch.randn(5, 2, 3, 4) for _ in range(3))
        mask = causal_mask_from_positions(torch.arange(5), torch.arange(5))
        out = core_attention(q, k, v, mask)
        ref = torch.nn.functional.scaled_dot_product_attention(
            q.permute(1, 2, 0, 3), k.permute(1, 2, 0, 3), v.permute(1, 2, 0, 3),
            is_causal=True) if hasattr(torch.nn.functional, "scaled_dot_product_attention") \
            else None
        if ref is None:
            scores = torch.einsum("sbnd,tbnd->bnst", q, k) / 2.0
            scores = scores.masked_fill(mask, float("-inf"))
            ref = torch.einsum("bnst,tbnd->bnsd", scores.softmax(-1), v)
        assert torch.allclose(out, ref.permute(2, 0, 1, 3).reshape(5, 2, 12), atol=1e-5)

    @pytest.mark.fastci(scope=["attention"], workload={"--seq-length": 16})
    def test_no_information_flows_from_the_future(self, model_parallel_state, tiny_config):
        attn = SelfAttention(tiny_config, layer_number=0)
        x = torch.randn(8, 1, tiny_config.hidden_size, requires_grad=True)
        attn(x, torch.arange(8))[3].sum().backward()
        assert x.grad[4:].abs().sum() == 0 and x.grad[:4].abs().sum() > 0

    def test_gqa_output_shape(self, model_parallel_state, tiny_config):
        attn = SelfAttention(tiny_config, layer_number=0)
        assert attn(torch.randn(6, 2, 32), torch.arange(6)).shape == (6, 2, 32)


class TestFusedSoftmax:
    def test_reference_rows_sum_to_one(self):
        mask = causal_mask_from_positions(torch.arange(4), torch.arange(4))
        probs = fused.scale_mask_softmax(torch.randn(2, 4, 4), mask, 0.5)
        assert torch.allclose(probs.sum(-1), torch.ones(2, 4))
        assert probs[0, 0, 1:].abs().sum() == 0

    def test_scale_is_applied(self):
        scores = torch.tensor([[0.0, 1.0]])
        mask = torch.zeros(1, 2, dtype=torch.bool)
        probs = fused.scale_mask_softmax(scores, mask, 2.0)
        assert probs[0, 1].item() == pytest.approx(math.exp(2) / (1 + math.exp(2)))


class TestMoE:
    def test_router_picks_topk_and_normalises(self, model_parallel_state, tiny_config):
        tiny_config.num_experts, tiny_config.moe_router_topk = 4, 2
        router = TopKRouter(tiny_config, 0)
        weights, indices, _ = router(torch.randn(10, 32))
        assert indices.shape == (10, 2)
        assert torch.allclose(weights.sum(-1), torch.ones(10))
        assert all(len(set(row)) == 2 for row in indices.tolist())

    def test_router_selects_highest_probability(self, model_parallel_state, tiny_config):
        tiny_config.num_experts, tiny_config.moe_router_topk = 4, 1
        router = TopKRouter(tiny_config, 0)
        tokens = torch.randn(6, 32)
        _, indices, _ = router(tokens)
        expected = (tokens @ router.weight.t()).argmax(-1)
        assert torch.equal(indices[:, 0], expected)

    def test_balanced_routing_has_unit_aux_loss(self, model_parallel_state, tiny_config):
        tiny_config.num_experts, tiny_config.moe_router_topk = 4, 1
        router = TopKRouter(tiny_config, 0)
        probs = torch.full((4, 4), 0.25)
        assert router.load_balancing_loss(probs, torch.arange(4).view(4, 1)).item() == \
            pytest.approx(1.0)

    @pytest.mark.fastci(scope=["moe"], workload={"--num-experts": 4})
    def test_moe_with_one_expert_equals_dense_expert(self, model_parallel_state, tiny_config):
        tiny_config.num_experts, tiny_config.moe_router_topk = 1, 1
        layer = MoELayer(tiny_config, 0)
        x = torch.randn(4, 2, 32)
        expected = layer.experts[0](x.reshape(8, 32)).view(4, 2, 32)
        assert torch.allclose(layer(x), expected, atol=1e-6)


class TestGPT:
    def test_initial_loss_is_near_uniform(self, model_parallel_state, tiny_config):
        model = GPTModel(tiny_config)
        ids = torch.randint(0, 256, (2, 16))
        loss = model(ids, torch.arange(16), torch.randint(0, 256, (2, 16)))
        assert loss.shape == (2, 16)
        assert loss.mean().item() == pytest.approx(math.log(256), rel=0.02)

    def test_initialisation_is_seed_deterministic(self, model_parallel_state, tiny_config):
        a, b = GPTModel(tiny_config), GPTModel(tiny_config)
        for pa, pb in zip(a.parameters(), b.parameters()):
            assert torch.equal(pa, pb)

    def test_logits_without_labels(self, model_parallel_state, tiny_config):
        logits = GPTModel(tiny_config)(torch.zeros(1, 16, dtype=torch.long), torch.arange(16))
        assert logits.shape == (16, 1, 256)

    @pytest.mark.parametrize("pp, vp, expected", [
        (1, None, [[0, 1, 2, 3]]),
        (2, None, [[0, 1], [2, 3]]),
        (2, 1, [[0], [1]]),
    ])
    def test_layer_assignment(self, pp, vp, expected):
        assert [layers_for_chunk(4, pp, r, vp, 0) for r in range(pp)] == expected

    def test_virtual_chunks_interleave(self):
        assert layers_for_chunk(4, 2, 0, 1, chunk=1) == [2]
        assert layers_for_chunk(4, 2, 1, 1, chunk=1) == [3]
