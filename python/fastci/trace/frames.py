"""Turning code objects into the (path, qualified name) of an evidence frame.

The sampler's hot path only records `(id(code), f_lasti)` pairs; this module
turns them into frames off the hot path: each code object is described once,
and each bytecode offset is mapped to its source line through the code's
line table (what `f_lineno` would compute on every sample), with caching.
The path is made relative to the repository root when the file lies under
it. The qualified name is `co_qualname` on CPython 3.11+. Older versions
lack it, so we reconstruct it statically from the source file's syntax tree
(the same `Outer.<locals>.inner` rules CPython applies), keyed by the code's
first line (qualnames.py). We deliberately do not read `self`/`cls` from a
sampled frame's f_locals: on 3.9/3.10 that snapshots every local into a dict
the frame keeps, which extends object lifetimes (e.g. large tensors) in the
code under test.
"""

import bisect
import os
import sys

from . import forks
from .evidence import encode_frame_prefix

_HAS_QUALNAME = sys.version_info >= (3, 11)


# Marks the innermost frame of a stack recorded at a function's entry (the
# call burst): its line is the function's first body line, not the line the
# code object starts on, which for a decorated function is the decorator's and
# would map to the enclosing scope.
ENTRY = -2


class FrameDescriber:
    """Describes code objects as encoded `path:qualname:line` frames, with caching.

    `root` is the directory paths are made relative to; `cwd` resolves
    relative `co_filename`s (captured at interpreter start, before the code
    under test can chdir); `exclude_dir` marks code whose frames are the
    sampler's own and must not appear in evidence.

    Code objects are keyed by id(): hashing a code object hashes its
    bytecode, constants and names every time (microseconds on 3.12+). The
    caller must keep every described code object alive (the sampler's code
    registry does), so an id is never reused for another code object.
    """

    def __init__(self, root, cwd, exclude_dir):
        self._root = os.path.realpath(root) + os.sep
        self._cwd = cwd
        self._exclude = os.path.realpath(exclude_dir) + os.sep
        self.root = self._root        # real repository root, with a trailing separator
        self.exclude = self._exclude  # the sampler's own directory, likewise
        self._codes = {}   # id(code) -> encoded "path:qualname:" or None (own frame)
        self._repo = {}    # id(code) -> whether the code lies in the repository
        self._paths = {}   # co_filename -> real path, or None for our own files
        self._lines = {}   # id(code) -> (sorted start offsets, their lines)
        self._frames = {}  # (id(code), lasti) -> encoded frame or None
        self._indexes = {}  # absolute path -> {(line, name): qualname}
        self._real_dirs = {}  # directory -> its real path
        # absolute directory -> (its files inside the repository?, the names
        # of its links, or None if it cannot be listed)
        self._dir_verdicts = {}
        # The absolute directories outside the repository without links:
        # every file in them lies outside, and the recorder's audit hook
        # drops their exec events in C, before any Python runs.
        self.outside = set()

    def forget_codes(self):
        """Drop what is cached per code object (a fork child's fresh start); paths stay.

        The parent's tables are kept, not freed (forks.py)."""
        forks.keep(self._codes, self._repo, self._lines, self._frames)
        self._codes, self._repo, self._lines, self._frames = {}, {}, {}, {}

    def frame(self, code, lasti):
        """Return the encoded `path:qualname:line` of `code` at bytecode offset `lasti`.

        `lasti` is a frame's f_lasti, or ENTRY for a function's entry.
        Returns None for the sampler's own frames.
        """
        key = (id(code), lasti)
        try:
            return self._frames[key]
        except KeyError:
            pass
        prefix = self.prefix(code)
        result = None if prefix is None else "%s%d" % (prefix, self.line(code, lasti))
        self._frames[key] = result
        return result

    def line(self, code, lasti):
        """The source line of bytecode offset `lasti` in `code` (what f_lineno reports), 0 if none."""
        if lasti == ENTRY:
            return _entry_line_of(code)
        table = self._lines.get(id(code))
        if table is None:
            table = self._lines[id(code)] = _line_table(code)
        starts, lines = table
        if lasti < 0:  # not started yet
            return code.co_firstlineno
        i = bisect.bisect_right(starts, lasti) - 1
        return (lines[i] or 0) if i >= 0 else code.co_firstlineno

    def prefix(self, code):
        """Return the encoded `path:qualname:` for `code`, or None for sampler frames."""
        try:
            return self._codes[id(code)]
        except KeyError:
            pass
        path = self._path(code.co_filename)
        if path is None:
            result = None
        else:
            result = encode_frame_prefix(self._relative(path), self._qualname(code, path))
        self._codes[id(code)] = result
        return result

    def in_repository(self, code):
        """Whether `code` comes from a real file under the root (and is not the sampler's).

        Cached by id: only for code objects kept alive (recorded or sampled).
        """
        try:
            return self._repo[id(code)]
        except KeyError:
            pass
        result = self.in_repository_file(code.co_filename)
        self._repo[id(code)] = result
        return result

    def in_repository_file(self, filename):
        """in_repository() by a code object's co_filename, for code that may die.

        Asked for every module body a process executes (a thousand with
        torch), from the exec audit hook, and for every module it imported
        when it writes: a file is judged by its directory, resolved and
        listed once for its links, and only a link is resolved on its own.
        A link made in a directory after it was listed is judged as the
        directory's other files (listing again, or an lstat per file,
        would cost each judgement a system call)."""
        directory, _, name = filename.rpartition(os.sep)
        verdict = self._dir_verdicts.get(directory)
        if verdict is None and directory and filename.startswith(os.sep):
            real = os.path.join(self._real_directory(directory), "")
            inside = real.startswith(self._root) and not real.startswith(self._exclude)
            links = _links(directory)
            verdict = self._dir_verdicts[directory] = (inside, links)
            if not inside and links is not None and not links:
                self.outside.add(directory)
        if verdict is not None and verdict[1] is not None and name not in verdict[1]:
            return verdict[0]
        path = self._path(filename)
        return path is not None and not path.startswith("<") and path.startswith(self._root)

    @property
    def judged(self):
        """How many directories have been resolved and judged so far (a pair)."""
        return len(self._real_dirs), len(self._dir_verdicts)

    def verdicts_text(self):
        """What this describer has judged of directories, for a child process
        to start from (load_verdicts).

        A child that imports what its parent imported (torch, the
        repository's packages) would judge the same directories again:
        resolving and listing them, 8-10 ms of each interpreter a test
        starts (docs/Evidence.md). The text names the root and the excluded
        directory the verdicts hold for; then one line per resolved
        directory (`R`, the directory, its real path) and per judged one
        (`J`, the directory, 1 if inside, the names of its links),
        tab-separated. Names with a tab or a newline are left out: the child
        judges them itself."""
        lines = [VERDICTS_HEADER, self._root, self._exclude]
        for directory, real in self._real_dirs.items():
            if not _has_separators(directory, real):
                lines.append("R\t%s\t%s" % (directory, real))
        for directory, (inside, links) in self._dir_verdicts.items():
            if links is not None and not _has_separators(directory, *links):
                lines.append("\t".join(["J", directory, "1" if inside else "0"] + sorted(links)))
        return "\n".join(lines) + "\n"

    def load_verdicts(self, text):
        """Take in a parent's verdicts_text() (at start, before any judging);
        returns how many directories it judged, 0 if the text was made for
        another root or excluded directory, or is not a verdicts text.

        A directory judged in the parent is judged as it was then: a link
        made in it since is missed, as within one process (in_repository_file)."""
        lines = text.split("\n")
        if lines[:3] != [VERDICTS_HEADER, self._root, self._exclude]:
            return 0
        judged = 0
        for line in lines[3:]:
            fields = line.split("\t")
            if fields[0] == "R" and len(fields) == 3:
                self._real_dirs.setdefault(fields[1], fields[2])
            elif fields[0] == "J" and len(fields) >= 3 and fields[2] in ("0", "1"):
                directory, inside, links = fields[1], fields[2] == "1", frozenset(fields[3:])
                if directory not in self._dir_verdicts:
                    self._dir_verdicts[directory] = (inside, links)
                    if not inside and not links:
                        self.outside.add(directory)
                    judged += 1
        return judged

    def repository_file(self, filename):
        """The root-relative real path of `filename` if in_repository_file(), else None."""
        if not self.in_repository_file(filename):
            return None
        return self._path(filename)[len(self._root):]

    def _path(self, filename):
        try:
            return self._paths[filename]
        except KeyError:
            pass
        if is_pseudo_file(filename):
            path = filename
        else:
            path = self.real_path(os.path.join(self._cwd, filename))
            if path.startswith(self._exclude):
                path = None
        self._paths[filename] = path
        return path

    def real_path(self, path):
        """os.path.realpath(path), resolving each directory once.

        A process describes the files of every module it imported (a
        thousand with torch), most in a few directories; realpath would
        lstat each component of each of them. Each directory is resolved
        once, through its parent's, and a name is a link or not by its
        directory's listing where in_repository_file() listed it, by one
        lstat otherwise: the ancestors of those directories (/usr,
        site-packages) cost an lstat each, not a listing."""
        directory, name = os.path.split(path)
        if not name or name in (os.curdir, os.pardir):
            return os.path.realpath(path)
        real = self._real_directory(directory)
        verdict = self._dir_verdicts.get(directory)
        if verdict is not None and verdict[1] is not None:
            is_link = name in verdict[1]
        else:
            is_link = os.path.islink(path)
        return os.path.realpath(path) if is_link else os.path.join(real, name)

    def _real_directory(self, directory):
        """real_path(directory), resolved once."""
        real = self._real_dirs.get(directory)
        if real is None:
            real = self._real_dirs[directory] = self.real_path(directory)
        return real

    def _relative(self, path):
        if path.startswith(self._root):
            return path[len(self._root):]
        return path

    def _qualname(self, code, path):
        if _HAS_QUALNAME:
            return code.co_qualname
        if code.co_name == "<module>":
            return "<module>"
        index = self._indexes.get(path)
        if index is None:
            from .qualnames import index_file  # before 3.11 only: ast costs 3 ms to import
            index = self._indexes[path] = index_file(path)
        return index.get((code.co_firstlineno, code.co_name), code.co_name)


# First line of a verdicts file (FrameDescriber.verdicts_text): the format.
VERDICTS_HEADER = "fastci-verdicts 1"


def is_pseudo_file(filename):
    """Whether a co_filename names no file: `<string>`, `<frozen ...>` (code compiled from a string)."""
    return filename.startswith("<") and filename.endswith(">")


def _has_separators(*fields):
    return any("\t" in field or "\n" in field for field in fields)


def _scan_links(directory):
    """The extension's links() in Python: the names of the links in `directory`."""
    with os.scandir(directory) as entries:
        return frozenset(entry.name for entry in entries if entry.is_symlink())


_links_of = None  # links(directory): the extension's, else _scan_links; chosen at first use


def _links(directory):
    """The names of the symbolic links in `directory` (a frozenset), None if
    it cannot be listed."""
    global _links_of
    if _links_of is None:
        from .recorder import extension  # recorder imports this module
        _links_of = getattr(extension(), "links", None) or _scan_links
    try:
        return _links_of(directory)
    except OSError:
        return None


def _python_entry_line(code):
    return _entry_line(code, _line_table(code)[1])


def _entry_line_of(code):
    """_entry_line() of `code`: the extension's, which reads the line table
    in place (at a fork child's final write, each Python object made from
    the parent's code objects costs copied pages), else in Python."""
    global _entry_line_of
    from .recorder import extension  # recorder imports this module
    _entry_line_of = getattr(extension(), "entry_line", None) or _python_entry_line
    return _entry_line_of(code)


def _entry_line(code, lines):
    """A line that merge-evidence maps to `code`'s own entity, for a stack recorded at its entry.

    co_firstlineno will not do: for a decorated function it is the first
    decorator's line, which lies in the enclosing scope. We take the first
    line of the code's own instructions past co_firstlineno that lies outside
    every nested function, class, lambda or comprehension (whose lines,
    including a nested `def` line, map to the nested entity), else
    co_firstlineno. Module code gets line 0, which maps to the module itself.

    A nested code's last line takes a walk over its line table, so it is
    computed only when a candidate line lies past the nested code's first
    line and no nested code starting closer to it contains it: a class of
    undecorated methods needs none (each candidate is a `def` line, the
    first line of its method), a class body with a docstring or attribute
    before its methods needs none either.
    """
    if code.co_name == "<module>":
        return 0
    nested = sorted((const.co_firstlineno, i) for i, const in enumerate(code.co_consts)
                    if isinstance(const, type(code)))
    firsts = [first for first, _ in nested]
    lasts = {}

    def last(i):
        found = lasts.get(i)
        if found is None:
            const = code.co_consts[i]
            found = lasts[i] = max([n for n in _line_table(const)[1] if n]
                                   + [const.co_firstlineno])
        return found

    for line in sorted({n for n in lines if n and n > code.co_firstlineno}):
        # Nested codes starting at or before `line`, the closest first.
        for k in range(bisect.bisect_right(firsts, line) - 1, -1, -1):
            first, i = nested[k]
            if first == line or line <= last(i):
                break  # inside a nested code
        else:
            return line
    return code.co_firstlineno


def _line_table(code):
    """(start offsets, lines) of `code`'s instructions, sorted by offset, for bisection."""
    # Both come in offset order (PEP 626; the 3.9 line number table is read
    # front to back), so no sort is needed.
    if hasattr(code, "co_lines"):  # 3.10+: (start, end, line or None) ranges
        ranges = list(code.co_lines())
        return [r[0] for r in ranges], [r[2] for r in ranges]
    import dis  # 3.9: a line holds from its start offset up to the next one
    ranges = list(dis.findlinestarts(code))
    return [r[0] for r in ranges], [r[1] for r in ranges]
