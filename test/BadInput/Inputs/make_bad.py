"""Writes the hostile inputs of the bad-input corpus, so that no test commits
megabytes or unprintable bytes.

  make_bad.py gen OUT PIECE...     concatenates PIECEs: `text` or `text*N`
                                   (text repeated N times); text takes Python
                                   escapes, so `\\xff` is one invalid byte
  make_bad.py binary OUT           4 KiB of seeded pseudo-random bytes
  make_bad.py truncate IN OUT N    the first N bytes of IN
  make_bad.py crlf IN OUT          IN with every line ending made CRLF
"""

import codecs
import random
import re
import sys


def piece(spec):
    match = re.fullmatch(r"(.*)\*(\d+)", spec, re.DOTALL)
    text, count = (match.group(1), int(match.group(2))) if match else (spec, 1)
    return codecs.escape_decode(text.encode())[0] * count


def main(argv):
    kind, args = argv[1], argv[2:]
    if kind == "gen":
        out, data = args[0], b"".join(piece(p) for p in args[1:])
    elif kind == "binary":
        out, data = args[0], random.Random(1).randbytes(4096)
    elif kind == "truncate":
        out, data = args[1], open(args[0], "rb").read()[: int(args[2])]
    elif kind == "crlf":
        text = open(args[0], "rb").read().replace(b"\r\n", b"\n")
        out, data = args[1], text.replace(b"\n", b"\r\n")
    else:
        sys.exit(f"make_bad.py: unknown kind '{kind}'")
    with open(out, "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main(sys.argv)
