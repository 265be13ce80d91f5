"""Packed GPT dataset with train/valid/test splits and per-epoch shuffling.

Documents are concatenated (EOD-separated) and cut into windows of
``seq_length + 1`` tokens with stride ``seq_length`` -- sequence packing as in
Megatron's GPTDataset -- so no padding is ever needed and inputs/labels are the
window shifted by one.
"""

import numpy as np
import torch

from minitron.data.corpus import generate_corpus
from minitron.data.tokenizer import ByteTokenizer


def split_documents(documents, split):
    """Partition documents by the comma-separated weights in ``split``."""
    weights = [float(w) for w in split.split(",")]
    while len(weights) < 3:
        weights.append(0.0)
    total = sum(weights)
    bounds = [0]
    for w in weights[:3]:
        bounds.append(bounds[-1] + int(round(w / total * len(documents))))
    bounds[-1] = len(documents)
    return [documents[bounds[i]:bounds[i + 1]] for i in range(3)]


class GPTDataset:
    def __init__(self, tokens, seq_length, seed):
        self.tokens = np.asarray(tokens, dtype=np.int64)
        self.seq_length = seq_length
        self.seed = seed
        self.num_packed = max((len(self.tokens) - 1) // seq_length, 0)
        if self.num_packed == 0:
            raise ValueError("corpus split is shorter than one sequence")
        self._epoch_orders = {}

    def __len__(self):
        return self.num_packed

    def _order(self, epoch):
        # Reshuffle every epoch, reproducibly, without materialising all epochs.
        if epoch not in self._epoch_orders:
            rng = np.random.RandomState((self.seed + epoch) % (2 ** 32))
            self._epoch_orders[epoch] = rng.permutation(self.num_packed)
        return self._epoch_orders[epoch]

    def __getitem__(self, index):
        """Sample ``index`` of an infinite, epoch-wise shuffled stream."""
        epoch, offset = divmod(int(index), self.num_packed)
        start = int(self._order(epoch)[offset]) * self.seq_length
        window = self.tokens[start:start + self.seq_length + 1]
        return {"tokens": window[:-1], "labels": window[1:]}


def build_datasets(args):
    """Generate the corpus and return (train, valid) datasets."""
    tokenizer = ByteTokenizer(args.vocab_size)
    documents = generate_corpus(args.num_documents, seed=args.seed)
    train_docs, valid_docs, _ = split_documents(documents, args.split)
    train = GPTDataset(tokenizer.tokenize_documents(train_docs), args.seq_length, args.seed)
    valid = GPTDataset(tokenizer.tokenize_documents(valid_docs), args.seq_length, args.seed + 1)
    return train, valid


def collate(samples):
    return {
        "tokens": torch.from_numpy(np.stack([s["tokens"] for s in samples])),
        "labels": torch.from_numpy(np.stack([s["labels"] for s in samples])),
    }
