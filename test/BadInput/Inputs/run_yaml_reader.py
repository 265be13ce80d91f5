"""Runs TOOL (fastci-opt)'s reader of one YAML format on FILE over MODULE,
so that a test can feed one input to every YAML reader in a loop.

  run_yaml_reader.py TOOL manifest|schema|policy FILE MODULE
"""

import subprocess
import sys

PIPELINES = {
    "manifest": "load-manifest{{file={}}}",
    "schema": "lower-workload{{schema={}}}",
    "policy": "mark-changed{{diff={},policy={}}}",
}

tool, reader, path, module = sys.argv[1:]
# The policy reader runs only with a diff to classify: an empty one.
pipeline = PIPELINES[reader].format(*([module, path] if reader == "policy" else [path]))
sys.exit(subprocess.run([tool, module, "--pass-pipeline=" + pipeline,
                         "-o", "/dev/null"]).returncode)
