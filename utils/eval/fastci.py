"""Running `fastci-opt` pipelines and reading their result modules."""

import json
import os
import subprocess


class FastCIError(RuntimeError):
    """fastci-opt is missing or failed; the message carries its diagnostics."""


class FastCIOpt:
    """One `fastci-opt` binary; every call returns the module as JSON."""

    def __init__(self, binary):
        if not os.access(binary, os.X_OK):
            raise FastCIError("fastci-opt not found at %s (build first)" % binary)
        self.binary = binary

    def run(self, pipeline, input_path="/dev/null", output=None, emit="json", extra=()):
        """Runs `pipeline` on a module; returns its JSON unless `output` is a file."""
        cmd = [self.binary, input_path, "--emit=" + emit, "-o", output or "-", *extra]
        if pipeline:
            cmd.append("--pass-pipeline=" + pipeline)
        proc = subprocess.run(cmd, capture_output=True, timeout=600)
        if proc.returncode != 0:
            raise FastCIError("fastci-opt failed (exit %d): %s\n%s" % (
                proc.returncode, pipeline, proc.stderr.decode(errors="replace")[-3000:]))
        if output is None:
            return json.loads(proc.stdout)
        return None


def tests_by_name(module):
    """name -> test of a JSON module."""
    return {t["name"]: t for t in module.get("tests", [])}


def attr(test, name, default=None):
    """A test attribute, with integral floats decoded."""
    return number(test.get("attributes", {}).get(name, default))


def number(value):
    """Undoes the JSON emitter's tagging of integral floats ({"$float": "900.0"})."""
    if isinstance(value, dict) and set(value) == {"$float"}:
        return float(value["$float"])
    return value
