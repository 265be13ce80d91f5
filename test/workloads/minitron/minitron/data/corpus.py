"""A deterministic synthetic English-like corpus.

Sentences are drawn from a small probabilistic grammar (determiner, adjective,
noun, verb, prepositional phrase), so the text has real structure a tiny
model can learn within tens of steps -- losses fall visibly -- while needing
no download.  The same seed always yields the same documents.
"""

import random

DETERMINERS = ["the", "a", "every", "some", "no", "this", "that"]
ADJECTIVES = ["small", "large", "quiet", "bright", "ancient", "rapid", "green",
              "curious", "heavy", "sparse", "gentle", "distant"]
NOUNS = ["model", "kernel", "tensor", "gradient", "router", "expert", "layer",
         "cluster", "node", "token", "scheduler", "pipeline", "optimizer", "batch"]
VERBS = ["computes", "sends", "receives", "shards", "reduces", "gathers",
         "updates", "routes", "scales", "checks", "saves", "loads"]
PREPOSITIONS = ["on", "with", "across", "under", "near", "before", "after"]
CONNECTIVES = ["and", "but", "while", "because", "so"]


def _noun_phrase(rng):
    words = [rng.choice(DETERMINERS)]
    if rng.random() < 0.6:
        words.append(rng.choice(ADJECTIVES))
    words.append(rng.choice(NOUNS))
    return " ".join(words)


def _clause(rng):
    clause = f"{_noun_phrase(rng)} {rng.choice(VERBS)} {_noun_phrase(rng)}"
    if rng.random() < 0.4:
        clause += f" {rng.choice(PREPOSITIONS)} {_noun_phrase(rng)}"
    return clause


def generate_sentence(rng):
    sentence = _clause(rng)
    if rng.random() < 0.3:
        sentence += f" {rng.choice(CONNECTIVES)} {_clause(rng)}"
    return sentence[0].upper() + sentence[1:] + "."


def generate_corpus(num_documents, seed=1234, min_sentences=2, max_sentences=6):
    """Return ``num_documents`` documents (strings) generated from ``seed``."""
    rng = random.Random(seed)
    documents = []
    for _ in range(num_documents):
        count = rng.randint(min_sentences, max_sentences)
        documents.append(" ".join(generate_sentence(rng) for _ in range(count)))
    return documents
