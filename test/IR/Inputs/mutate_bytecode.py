"""Feeds a spread of truncations and single-byte corruptions of a bytecode
file to fastci-opt (the exhaustive sweep runs in-process in the unit tests,
test/Unit/IR/BytecodeTest.cpp) and fails if any run crashes, hangs, or exits with
anything but 0 (a corruption that still decodes) or 1 with one diagnostic
naming a byte offset.

usage: mutate_bytecode.py <fastci-opt> <file.fbc> <scratch-file> <stride>
"""
import subprocess
import sys

tool, source, scratch, stride = sys.argv[1:5]
stride = int(stride)
data = open(source, "rb").read()


def run(blob, what):
    with open(scratch, "wb") as out:
        out.write(blob)
    proc = subprocess.run([tool, scratch, "-o", "/dev/null", "--emit=bc"],
                          capture_output=True, timeout=20)
    err = proc.stderr.decode("utf-8", "replace")
    if proc.returncode == 0:
        return
    if proc.returncode != 1 or "error: " not in err:
        sys.exit(f"{what}: exit {proc.returncode}\n{err}")


runs = 0
for length in range(0, len(data), stride):
    run(data[:length], f"truncated to {length} bytes")
    runs += 1
for offset in range(0, len(data), stride):
    for byte in (0x00, 0xFF, data[offset] ^ 0x01):
        run(data[:offset] + bytes([byte]) + data[offset + 1:],
            f"byte {offset} set to {byte:#x}")
        runs += 1
print(f"{runs} truncations and corruptions handled")
