"""plugins/ has no __init__.py: a namespace package inside shop."""
import importlib


def load(name):
    return importlib.import_module(name)
