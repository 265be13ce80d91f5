# -*- coding: utf-8 -*-
"""Constructs whose names and line ranges must match CPython's."""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, overload

if TYPE_CHECKING:
    from shop.payments.card import Card

    def only_for_checkers() -> None: ...


class Catalog:
    """Items by name."""

    currency = "EUR"  # a class attribute

    def __init__(self):
        self.items = {}

    @property
    def size(self):
        return len(self.items)

    @size.setter
    def size(self, value):
        raise AttributeError("read-only")

    @overload
    def get(self, name: str) -> int: ...
    @overload
    def get(self, name: bytes) -> int: ...
    def get(self, name):
        return self.items[name]

    class Entry:
        def __repr__(self):
            return "Entry()"

    async def refresh(self):
        async def fetch(url):
            return url
        return await fetch("x")

    key = lambda self, item: item.name  # noqa: E731

    @staticmethod
    @functools.lru_cache(maxsize=None)
    def slugify(text):
        return text.lower()


def build(names):
    class Local:
        def method(self):
            def innermost():
                return 1
            return innermost()

    def helper(x):
        return x * 2

    global exported

    def exported():
        return "global"

    return [helper(Local().method()) for _ in names]


if True:
    def conditional():
        return 1
else:
    def conditional():
        return 2

try:
    import ujson as json_impl
except ImportError:  # pragma: no cover
    import json as json_impl

    def dumps(value):
        return json_impl.dumps(value)


def préparer(données):
    return données


def trailing_comment():
    x = 1
    # a comment that ast does not count

    # nor this one


def one_liner(): return 1; 


scale: callable = lambda value: value * 2
