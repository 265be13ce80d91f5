"""Runs TOOL on proper prefixes of FILE (every one up to 64 bytes, where the
header and the first tables lie, then 64 spread over the rest) and checks
that each is rejected with exit code 1 and a diagnostic naming the file: a
reader must never take a truncated file for a whole one, nor crash on it.

  check_prefixes.py TOOL FILE
"""

import os
import subprocess
import sys
import tempfile


def main(tool, path):
    data = open(path, "rb").read()
    lengths = list(range(1, min(len(data), 64)))
    lengths += range(64, len(data), max(1, (len(data) - 64) // 64))
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "prefix.bc")
        for length in lengths:
            with open(prefix, "wb") as f:
                f.write(data[:length])
            run = subprocess.run([tool, prefix], capture_output=True, text=True,
                                 errors="replace")
            if run.returncode != 1 or not run.stderr.startswith(prefix):
                sys.exit(f"prefix of {length} bytes: exit {run.returncode}, "
                         f"stderr {run.stderr[:200]!r}")
    print("every proper prefix rejected with a located error")


if __name__ == "__main__":
    main(*sys.argv[1:])
