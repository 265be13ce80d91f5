"""FastCI's Python side: the runtime-evidence sampler (`fastci.trace`) and the
CI driver (`fastci.cli`, the `fastci` command) over `fastci-opt`.

Stdlib only at run time, CPython >= 3.9.
"""
