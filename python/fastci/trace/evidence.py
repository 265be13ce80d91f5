"""The evidence file format: writing, reading and py-spy interoperability.

An evidence file records, for one (test id, process) pair, how often each
distinct Python stack was seen by the sampler. This module is the single
definition of that format on the Python side (docs/Evidence.md is the
normative description the C++ reader follows): the percent-encoding of frame
fields, the `# key: value` header, the `frame;frame;... count` body, the
atomic write, and a strict reader that reports bad input as `file:line:`.
It also reads py-spy's `raw` collapsed-stack output so tooling can accept
either source.

Version 2 (written since sampler 2.0) adds entity lines before the stacks:
`@f frame` (a function first executed at test time), `@i module frame`
(executed while `module`'s body ran), `@m path` (a repository module the
process imported), `@r path` (a repository file it opened for reading).
Sampler 2.1 adds `@x name` (a top-level module outside the repository and
the standard library the process imported or tried to import) and, in
collection files, `@p dist module` (an installed distribution provides the
module), `@q dist required` (it requires another distribution) and
`@v dist version` (every distribution installed).
Version 1 files (stacks only) are still read.
"""

from __future__ import annotations

import os
import threading
from collections import namedtuple

FORMAT_VERSION = 2
READ_VERSIONS = (1, 2)
MAGIC_KEY = "fastci-evidence"

# Header keys every writer emits, in this order (after the magic line).
HEADER_KEYS = (
    "test-id", "pid", "rank", "local-rank", "rate", "wall-seconds",
    "cpu-seconds", "python", "sampler", "revision", "root", "samples",
    "complete",
)

Frame = namedtuple("Frame", "path qualname line")
Frame.__doc__ = "One stack frame: source path, qualified name, current line."

# `;` separates frames, the last space separates the count, newlines separate
# records and `%` is the escape itself; CR is added so no line splitter can
# ever cut a record. `:` is only escaped inside qualnames (see encode_frame).
# `@` starts an entity line (version 2), so no field may begin with one.
# Tables for str.translate, not regular expressions: every traced process
# writes evidence, and one that never imports `re` itself would pay 8 ms
# for it (enum and the compiler with it).
_ESCAPES = str.maketrans({c: "%%%02X" % ord(c) for c in "%; \n\r@"})
_QUALNAME_ESCAPES = str.maketrans({c: "%%%02X" % ord(c) for c in "%; \n\r@:"})

Evidence = namedtuple("Evidence", "header stacks functions import_functions imports reads "
                      "packages provides requires versions", defaults=(frozenset(),) * 4)
Evidence.__doc__ = ("A parsed evidence file: header dict, {stack: count}, and (version 2) "
                    "sets of Frame (functions), of (module path, Frame) (import_functions), "
                    "of paths (imports, reads), of top-level module names (packages), "
                    "of (distribution, module) (provides), of (distribution, "
                    "required distribution) (requires) and of (distribution, version) "
                    "(versions).")

# Entity line tags of version 2, in the order writers emit them.
TAG_FUNCTION, TAG_IMPORT, TAG_MODULE, TAG_READ = "@f", "@i", "@m", "@r"
TAG_PACKAGE, TAG_PROVIDES, TAG_REQUIRES, TAG_VERSION = "@x", "@p", "@q", "@v"


class EvidenceError(ValueError):
    """Malformed evidence; the message is located as `file:line: what`."""


def encode(text):
    """Percent-encode `%`, `;`, space, LF, CR and `@` in a field."""
    return text.translate(_ESCAPES)


def encode_qualname(text):
    """Like encode(), but also escapes `:` so a frame splits on its last two colons."""
    return text.translate(_QUALNAME_ESCAPES)


def decode(text):
    """Invert encode()/encode_qualname(): every `%XX` becomes that code point."""
    if "%" not in text:
        return text
    import re  # readers only: writers never import it (see _ESCAPES)
    return re.sub("%([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), text)


def encode_frame_prefix(path, qualname):
    """Render the line-independent part of a frame, `path:qualname:`, encoded."""
    return "%s:%s:" % (encode(path), encode_qualname(qualname))


def encode_frame(path, qualname, line):
    """Render one frame as `path:qualname:line` with fields encoded."""
    return "%s%d" % (encode_frame_prefix(path, qualname), line)


def _parse_frame(text):
    path, sep1, rest = text.rpartition(":")
    path, sep2, qualname = path.rpartition(":")
    if not (sep1 and sep2) or not path or not qualname:
        raise ValueError("frame %r is not path:qualname:line" % text)
    if not rest.isdigit():
        raise ValueError("frame %r has a non-numeric line %r" % (text, rest))
    return Frame(decode(path), decode(qualname), int(rest))


def _split_count(line):
    body, sep, count = line.rpartition(" ")
    if not sep or not body:
        raise ValueError("expected 'stack count', got %r" % line)
    if not count.isdigit():
        raise ValueError("count %r is not a non-negative integer" % count)
    return body, int(count)


def render(header, stacks, functions=(), import_functions=(), imports=(), reads=(),
           packages=(), provides=(), requires=(), versions=()):
    """Return the full text of an evidence file.

    `header` maps keys to values (rendered with str(); the magic line is
    added here); `stacks` maps encoded stack lines (frames joined by `;`,
    outermost first) to counts. `functions` are encoded frames,
    `import_functions` (encoded module path, encoded frame) pairs, `imports`
    and `reads` encoded paths, `packages` encoded module names, `provides`,
    `requires` and `versions` pairs of encoded names. Lines are sorted for determinism.
    """
    out = ["# %s: %d\n" % (MAGIC_KEY, FORMAT_VERSION)]
    for key, value in header.items():
        out.append("# %s: %s\n" % (key, encode(str(value))))
    for frame in sorted(set(functions)):
        out.append("%s %s\n" % (TAG_FUNCTION, frame))
    for module, frame in sorted(set(import_functions)):
        out.append("%s %s %s\n" % (TAG_IMPORT, module, frame))
    for path in sorted(set(imports)):
        out.append("%s %s\n" % (TAG_MODULE, path))
    for path in sorted(set(reads)):
        out.append("%s %s\n" % (TAG_READ, path))
    for name in sorted(set(packages)):
        out.append("%s %s\n" % (TAG_PACKAGE, name))
    for tag, pairs in ((TAG_PROVIDES, provides), (TAG_REQUIRES, requires),
                       (TAG_VERSION, versions)):
        for first, second in sorted(set(pairs)):
            out.append("%s %s %s\n" % (tag, first, second))
    for stack in sorted(stacks):
        out.append("%s %d\n" % (stack, stacks[stack]))
    return "".join(out)


_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)


def write_atomic(path, text):
    """Write `text` to `path` via a temp file in the same directory and os.replace.

    Readers therefore see either the previous complete file or the new one,
    never a torn write, even if this process dies mid-write. A missing
    directory is created (only then: os.makedirs costs a fork child, which
    writes into its parent's directory, dozens of copied pages).
    """
    # Per-thread temp name: a final flush may race the sampler's periodic one.
    tmp = "%s.%d-%d.tmp" % (path, os.getpid(), threading.get_ident())
    data = text.encode("utf-8")
    try:
        # os-level calls, not open(): every traced process writes at exit,
        # and the io stack's objects cost a fork child copied pages.
        try:
            fd = os.open(tmp, _WRITE_FLAGS, 0o666)
        except FileNotFoundError:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd = os.open(tmp, _WRITE_FLAGS, 0o666)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def parse_evidence(text: str, filename: str = "<evidence>"
                   ) -> tuple[dict[str, str], dict[tuple[Frame, ...], int]]:
    """Parse evidence text into (header dict, {tuple of Frame: count}).

    Header values are decoded strings. Stacks are tuples of Frame,
    outermost first. Raises EvidenceError located as `filename:line:`.
    """
    evidence = parse_evidence_file(text, filename)
    return evidence.header, evidence.stacks


def parse_evidence_file(text: str, filename: str = "<evidence>") -> Evidence:
    """Parse evidence text (version 1 or 2) into an Evidence; see parse_evidence()."""
    header = {}
    stacks = {}
    functions, import_functions, imports, reads = set(), set(), set(), set()
    packages, provides, requires, versions = set(), set(), set(), set()
    body_started = False
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for lineno, line in enumerate(lines, 1):
        try:
            if lineno == 1:
                magic, _, version = line.partition(": ")
                if magic != "# " + MAGIC_KEY or not version.isdigit() \
                        or int(version) not in READ_VERSIONS:
                    raise ValueError("first line must be '# %s: %d', got %r"
                                     % (MAGIC_KEY, FORMAT_VERSION, line))
                header[MAGIC_KEY] = version
            elif line.startswith("@") and header[MAGIC_KEY] != "1":
                body_started = True
                tag, _, rest = line.partition(" ")
                if tag == TAG_FUNCTION:
                    functions.add(_parse_frame(rest))
                elif tag == TAG_IMPORT:
                    module, sep, frame = rest.partition(" ")
                    if not sep:
                        raise ValueError("expected '@i module frame', got %r" % line)
                    import_functions.add((decode(module), _parse_frame(frame)))
                elif tag in (TAG_MODULE, TAG_READ):
                    if not rest:
                        raise ValueError("%s without a path" % tag)
                    (imports if tag == TAG_MODULE else reads).add(decode(rest))
                elif tag == TAG_PACKAGE:
                    if not rest or " " in rest:
                        raise ValueError("expected '@x name', got %r" % line)
                    packages.add(decode(rest))
                elif tag in (TAG_PROVIDES, TAG_REQUIRES, TAG_VERSION):
                    first, sep, second = rest.partition(" ")
                    if not sep or not first or not second or " " in second:
                        raise ValueError("expected '%s name name', got %r" % (tag, line))
                    {TAG_PROVIDES: provides, TAG_REQUIRES: requires,
                     TAG_VERSION: versions}[tag].add((decode(first), decode(second)))
                else:
                    raise ValueError("unknown entity line %r" % tag)
            elif line.startswith("#"):
                if stacks or body_started:
                    raise ValueError("header line after stack lines")
                key, sep, value = line[1:].lstrip(" ").partition(": ")
                if not sep or not key:
                    raise ValueError("header line %r is not '# key: value'" % line)
                header[key] = decode(value)
            else:
                body, count = _split_count(line)
                frames = tuple(_parse_frame(f) for f in body.split(";"))
                stacks[frames] = stacks.get(frames, 0) + count
        except ValueError as e:
            raise EvidenceError("%s:%d: %s" % (filename, lineno, e)) from None
    if not lines:
        raise EvidenceError("%s:1: empty file" % filename)
    return Evidence(header, stacks, functions, import_functions, imports, reads,
                    packages, provides, requires, versions)


def read_evidence(path: str | os.PathLike[str]
                  ) -> tuple[dict[str, str], dict[tuple[Frame, ...], int]]:
    """Read and parse an evidence file; see parse_evidence()."""
    evidence = read_evidence_file(path)
    return evidence.header, evidence.stacks


def read_evidence_file(path: str | os.PathLike[str]) -> Evidence:
    """Read and parse an evidence file into an Evidence; see parse_evidence_file()."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        raise EvidenceError("%s:1: not UTF-8 (%s)" % (path, e)) from None
    return parse_evidence_file(text, str(path))


def parse_pyspy_raw(text: str, filename: str = "<py-spy>") -> dict[tuple[Frame, ...], int]:
    """Parse py-spy `record --format raw` output into {tuple of Frame: count}.

    Frames are `name (file:line)` or `name (file)` (line 0). Pseudo-frames
    py-spy adds with --threads/--subprocesses (`thread (0x..)`,
    `process 12:"cmd"`) are dropped, as they carry no source location.
    """
    import re  # readers only: writers never import it (see _ESCAPES)
    frame_re = re.compile(r"^(?P<name>.*) \((?P<file>.*?)(?::(?P<line>\d+))?\)$")
    stacks = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            body, count = _split_count(line.rstrip())
            frames = []
            for part in body.split(";"):
                if part.startswith("process ") or part.startswith("thread ("):
                    continue
                m = frame_re.match(part)
                if not m:
                    raise ValueError("frame %r is not 'name (file:line)'" % part)
                frames.append(Frame(m.group("file"), m.group("name"),
                                    int(m.group("line") or 0)))
        except ValueError as e:
            raise EvidenceError("%s:%d: %s" % (filename, lineno, e)) from None
        key = tuple(frames)
        stacks[key] = stacks.get(key, 0) + count
    return stacks
