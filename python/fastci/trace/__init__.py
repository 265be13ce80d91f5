"""fastci_trace: runtime evidence of which Python code each test executes.

A low-overhead sampling profiler that attributes the Python stacks of every
thread of every process started under a test (pytest items, `run`-wrapped CI
jobs, their subprocess/multiprocessing/torchrun children) to that test's id,
and writes them as evidence files (docs/Evidence.md). Entry points: the
pytest plugin `fastci.trace.pytest_plugin`, `python -m fastci.trace run`,
and `fastci.trace.evidence.read_evidence` for consumers.
"""

from .sampler import SAMPLER_VERSION as __version__  # noqa: F401
