"""Synthetic corpus, byte tokenizer, packed GPT dataset and dp-aware sampling."""
