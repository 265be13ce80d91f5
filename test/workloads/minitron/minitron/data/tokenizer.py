"""Byte-level tokenizer with an end-of-document token.

Byte 0 never occurs in the generated text, so id 0 doubles as the EOD
separator used when documents are packed into fixed-length sequences.
"""

import numpy as np


class ByteTokenizer:
    eod = 0

    def __init__(self, vocab_size=256):
        if vocab_size < 256:
            raise ValueError("the byte tokenizer needs a vocabulary of at least 256")
        self.vocab_size = vocab_size

    def tokenize(self, text):
        return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.int64)

    def detokenize(self, ids):
        data = bytes(int(i) for i in ids if 0 < int(i) < 256)
        return data.decode("utf-8", errors="replace")

    def tokenize_documents(self, documents):
        """Concatenate documents into one id stream, each followed by EOD."""
        pieces = []
        for doc in documents:
            pieces.append(self.tokenize(doc))
            pieces.append(np.array([self.eod], dtype=np.int64))
        return np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)
