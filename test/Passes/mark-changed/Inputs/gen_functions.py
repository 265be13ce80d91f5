"""Writes N small functions named <prefix><i> to a file, for
renames-edited-limit.test: `gen_functions.py PATH PREFIX N EDIT` (EDIT shifts one
constant in every body, so that renamed versions differ from the old)."""
import sys

path, prefix, count, edit = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
lines = []
for i in range(count):
    lines += [f"def {prefix}{i}(a, b):", f"    x = a * {i} + b",
              f"    y = x - {i + edit}", "    return [x, y, 'z']", "", ""]
with open(path, "w") as out:
    out.write("\n".join(lines) + "\n")
