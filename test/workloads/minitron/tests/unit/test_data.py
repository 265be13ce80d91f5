"""Synthetic corpus, tokenizer, packed dataset, dp sampler and cp slicing."""

import numpy as np
import pytest
import torch

from minitron.data.corpus import generate_corpus, generate_sentence
from minitron.data.dataset import GPTDataset, split_documents
from minitron.data.sampler import MicroBatchSampler
from minitron.data.tokenizer import ByteTokenizer
from minitron.parallel.context_parallel import get_batch_on_this_cp_rank


@pytest.fixture(scope="module")
def dataset():
    tokens = ByteTokenizer().tokenize_documents(generate_corpus(200, seed=7))
    return GPTDataset(tokens, seq_length=16, seed=7)


class TestCorpus:
    def test_deterministic(self):
        assert generate_corpus(20, seed=3) == generate_corpus(20, seed=3)

    def test_seed_changes_text(self):
        assert generate_corpus(20, seed=3) != generate_corpus(20, seed=4)

    def test_sentences_are_capitalised_and_terminated(self):
        import random
        sentence = generate_sentence(random.Random(0))
        assert sentence[0].isupper() and sentence.endswith(".")


class TestTokenizer:
    def test_roundtrip(self):
        tok = ByteTokenizer()
        assert tok.detokenize(tok.tokenize("Every node sends a token.")) == \
            "Every node sends a token."

    def test_documents_are_eod_separated(self):
        ids = ByteTokenizer().tokenize_documents(["ab", "c"])
        assert ids.tolist() == [97, 98, 0, 99, 0]

    def test_rejects_small_vocab(self):
        with pytest.raises(ValueError):
            ByteTokenizer(vocab_size=100)


class TestDataset:
    def test_labels_are_shifted_inputs(self, dataset):
        sample = dataset[3]
        start = int(dataset._order(0)[3]) * 16
        assert np.array_equal(sample["tokens"], dataset.tokens[start:start + 16])
        assert np.array_equal(sample["labels"], dataset.tokens[start + 1:start + 17])

    def test_epoch_is_a_permutation(self, dataset):
        assert sorted(dataset._order(0).tolist()) == list(range(len(dataset)))
        assert not (dataset._order(0) == dataset._order(1)).all()

    def test_indices_wrap_into_new_epoch(self, dataset):
        assert dataset[len(dataset)]["tokens"].shape == (16,)

    def test_split_by_weights(self):
        train, valid, test = split_documents(list(range(100)), "80,15,5")
        assert (len(train), len(valid), len(test)) == (80, 15, 5)


class TestSampler:
    @pytest.mark.parametrize("dp", [1, 2, 4])
    def test_dp_ranks_partition_the_global_batch(self, dataset, dp):
        mbs, num_mb = 2, 8 // (2 * dp)
        seen = []
        for rank in range(dp):
            sampler = MicroBatchSampler(dataset, mbs, dp, rank)
            for m in range(num_mb):
                seen.extend(sampler.sample_indices(consumed_samples=16, micro_batch=m))
        assert sorted(seen) == list(range(16, 24))

    def test_microbatches_are_collated(self, dataset):
        batches = MicroBatchSampler(dataset, 3, 1, 0).micro_batches(0, 2)
        assert len(batches) == 2 and batches[0]["tokens"].shape == (3, 16)


class TestContextParallelSlicing:
    def test_zigzag_chunks(self):
        batch = {"tokens": torch.arange(16).view(1, 16), "labels": torch.arange(16).view(1, 16)}
        local = get_batch_on_this_cp_rank(batch, cp_size=2, cp_rank=0)
        assert local["position_ids"].tolist() == [0, 1, 2, 3, 12, 13, 14, 15]
        assert local["tokens"].tolist() == [[0, 1, 2, 3, 12, 13, 14, 15]]

    def test_ranks_cover_sequence(self):
        batch = {"tokens": torch.arange(16).view(1, 16)}
        seen = torch.cat([get_batch_on_this_cp_rank(batch, 4, r)["position_ids"]
                          for r in range(4)])
        assert sorted(seen.tolist()) == list(range(16))
