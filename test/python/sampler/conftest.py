"""Shared helpers for the fastci.trace tests: isolated environments, inner runs, evidence lookup.

Every test drives real processes (inner pytest sessions, the `run` wrapper,
their children) in a scrubbed environment so the outer session's own
settings never leak in, then reads what they wrote with the package's
reader.
"""

import glob
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parents[3] / "python"
sys.path.insert(0, str(PACKAGE_ROOT))

from fastci.trace.evidence import read_evidence, read_evidence_file  # noqa: E402

PYTHON = sys.executable


def clean_env(**extra):
    """os.environ without FASTCI_TRACE_*/RANK settings, with the package importable."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("FASTCI_TRACE_") and k not in ("RANK", "LOCAL_RANK")}
    env["PYTHONPATH"] = str(PACKAGE_ROOT)
    env.update(extra)
    return env


def write(path, source):
    """Write dedented `source` to `path` and return the path."""
    path.write_text(textwrap.dedent(source))
    return path


def run_inner_pytest(directory, *args, env=None, timeout=120):
    """Run pytest with the plugin in `directory`; returns the CompletedProcess."""
    cmd = [PYTHON, "-m", "pytest", "-p", "fastci.trace.pytest_plugin", "-v",
           "-p", "no:cacheprovider", "-p", "no:hypothesispytest", *args]
    return subprocess.run(cmd, cwd=str(directory), env=env or clean_env(), timeout=timeout,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True)


def load_out(out, mode="samples"):
    """Evidence files under `out` as a list of (path, header, stacks).

    `mode` selects by the `mode` header: "samples" (the sampler's files),
    "calls" (call-burst files), or None for all.
    """
    files = [(p,) + read_evidence(p) for p in sorted(Path(out).rglob("*.stacks"))]
    # pytest's collection (import-time functions outside every test) has a
    # file of its own, which belongs to no test.
    files = [f for f in files if f[1].get("scope") != "collection"]
    return [f for f in files if mode is None or f[1].get("mode", "samples") == mode]


def load_calls(out):
    """The call-burst files under `out` as a list of (path, header, stacks)."""
    return load_out(out, mode="calls")


def functions_in(evidences):
    """{test-id: set of qualnames on any recorded stack} over `evidences`."""
    found = {}
    for _, header, stacks in evidences:
        names = found.setdefault(header["test-id"], set())
        for frames in stacks:
            names.update(f.qualname for f in frames)
    return found


def samples_of(stacks, qualname):
    """Samples whose innermost frame (or any frame) is `qualname`."""
    return sum(count for frames, count in stacks.items()
               if any(f.qualname == qualname for f in frames))


def by_function(evidences, qualname):
    """{test-id: samples containing `qualname`} over all files."""
    totals = {}
    for _, header, stacks in evidences:
        n = samples_of(stacks, qualname)
        if n:
            totals[header["test-id"]] = totals.get(header["test-id"], 0) + n
    return totals


@pytest.fixture
def spin_module(tmp_path):
    """A helper module with a distinctively named busy loop, importable from tmp_path."""
    return write(tmp_path / "spinlib.py", """
        import time

        def spin(seconds):
            end = time.monotonic() + seconds
            x = 0
            while time.monotonic() < end:
                x += 1
            return x
    """)


def recorded(out):
    """{test-id: Evidence fields unioned} of the exact recorder over the files under `out`.

    Returns {test-id: {"functions": qualnames, "import_functions": qualnames,
    "imports": paths, "reads": paths, "coverage": set of header values}}.
    """
    found = {}
    for path in sorted(Path(out).rglob("*.stacks")):
        evidence = read_evidence_file(path)
        entry = found.setdefault(evidence.header["test-id"], {
            "functions": set(), "import_functions": set(), "imports": set(), "reads": set(),
            "coverage": set()})
        entry["functions"].update(f.qualname for f in evidence.functions)
        entry["import_functions"].update(f.qualname for _, f in evidence.import_functions)
        entry["imports"].update(evidence.imports)
        entry["reads"].update(evidence.reads)
        entry["coverage"].add(evidence.header.get("coverage", "sampled"))
    return found


def other_pythons():
    """Other CPython >= 3.9 interpreters on this machine (pyenv), newest first."""
    found = {}
    for path in glob.glob("/root/.pyenv/versions/3.*/bin/python3.*"):
        suffix = os.path.basename(path)[len("python"):]
        parts = suffix.split(".")
        if len(parts) == 2 and all(p.isdigit() for p in parts):
            version = tuple(map(int, parts))
            if version >= (3, 9) and version != sys.version_info[:2]:
                found[version] = path
    return [found[v] for v in sorted(found, reverse=True)]


def parked(depth, started, release):
    """Recurse `depth` frames deep, set `started`, wait for `release`: a thread with a known stack."""
    if depth:
        return parked(depth - 1, started, release)
    started.set()
    release.wait(30)
    return depth
