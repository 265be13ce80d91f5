"""What a fork child inherits and must not free.

A fork child shares its parent's memory until it writes a page, and then
the kernel copies that page (4-5 µs each on the VMs measured, more under
load). Freeing an inherited container writes to every object in it (each
reference count drops), so a child that merely replaces the parent's
caches copies one page per object they held: 700 pages for the import
records of one accelerate test collection, in each of 60 DataLoader
workers. What the child replaces is therefore handed to keep() instead and
lives, untouched, until the process exits.
"""

_KEPT = []


def keep(*objects):
    """Keep `objects` alive and unvisited for the life of the process."""
    _KEPT.append(objects)
