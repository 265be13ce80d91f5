"""A small shop package: the checked-in sample tree of the oracle test."""
from .catalog import Catalog as Catalog

__all__ = ["Catalog"]
