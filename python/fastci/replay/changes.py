"""What a commit changed, in the terms the replay's ground truth uses.

A commit is compared with its first parent through `git diff -U0
--no-renames` (a rename is a deletion plus an addition). Per file, the
*targets* are the lines a test's coverage must hit for the test to be
affected (docs/Evaluation.md, "Ground truth"):

* added lines of the new file that are executable (a line-table entry of
  some code object of the compiled file); an added block holding code but
  no executable line (an `else:`, a continuation line of a signature) targets
  the nearest executable lines before and after it;
* deleted lines of the old file that were executable, or, for a deleted
  block holding code but no executable line, the nearest executable lines
  around it in the old file.

Blocks of blank and comment-only lines target nothing: they cannot change
behaviour. Neither does the `def`/`class` line of a definition added or
deleted whole: executing it at import only binds a new name (its body
lines, decorators and class-body statements stay targets). Files that do not compile (or are not Python) have no targets;
the change still reaches the strategies.
"""

import io
import re
import subprocess
import tokenize

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class GitError(Exception):
    """A git command failed; the message is git's own."""


def git(repo, *args, check=True):
    proc = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True,
                          errors="replace")
    if check and proc.returncode != 0:
        raise GitError("git %s: %s" % (" ".join(args[:2]),
                                       (proc.stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1]))
    return proc.stdout


def show(repo, revision, path):
    """The text of `path` at `revision`, or None when absent or binary."""
    proc = subprocess.run(["git", "-C", repo, "show", "%s:%s" % (revision, path)],
                          capture_output=True)
    if proc.returncode != 0 or b"\0" in proc.stdout[:8192]:
        return None
    return proc.stdout.decode("utf-8", "replace")


class FileChange:
    """One file of a diff: paths (None when added/deleted) and line blocks."""

    def __init__(self, old_path, new_path):
        self.old_path = old_path
        self.new_path = new_path
        self.deleted = []  # [(first, last)] old-file line ranges
        self.added = []  # [(first, last)] new-file line ranges

    @property
    def paths(self):
        return {p for p in (self.old_path, self.new_path) if p}


def diff(repo, old, new):
    """[FileChange] between two revisions (no renames, zero context)."""
    text = git(repo, "diff", "-U0", "--no-renames", "--no-color", "--no-ext-diff", old, new)
    changes, current = [], None
    old_path = None
    for line in text.splitlines():
        if line.startswith("diff --git "):
            current, old_path = None, None
        elif line.startswith("--- "):
            old_path = None if line[4:] == "/dev/null" else line[4:][2:]
        elif line.startswith("+++ "):
            new_path = None if line[4:] == "/dev/null" else line[4:][2:]
            current = FileChange(old_path, new_path)
            changes.append(current)
        elif line.startswith("Binary files ") and current is None:
            m = re.match(r"Binary files (a/(.*)|/dev/null) and (b/(.*)|/dev/null) differ", line)
            if m:
                changes.append(FileChange(m.group(2), m.group(4)))
        elif current is not None:
            m = _HUNK.match(line)
            if m:
                o, oc = int(m.group(1)), int(m.group(2) if m.group(2) is not None else 1)
                n, nc = int(m.group(3)), int(m.group(4) if m.group(4) is not None else 1)
                if oc:
                    current.deleted.append((o, o + oc - 1))
                if nc:
                    current.added.append((n, n + nc - 1))
    return changes


def executable_lines(source):
    """Lines of `source` that some code object's line table names, or None
    when it does not compile."""
    try:
        code = compile(source, "<replay>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None
    lines, todo = set(), [code]
    while todo:
        c = todo.pop()
        if hasattr(c, "co_lines"):
            lines.update(line for _, _, line in c.co_lines() if line is not None)
        else:  # CPython 3.9
            import dis
            lines.update(line for _, line in dis.findlinestarts(c))
        todo.extend(k for k in c.co_consts if hasattr(k, "co_code"))
    lines.discard(0)
    return lines


def code_lines(source):
    """Lines holding a token other than comments and whitespace (strings and
    docstrings count as code)."""
    lines = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                            tokenize.DEDENT, tokenize.ENDMARKER):
                continue
            lines.update(range(tok.start[0], tok.end[0] + 1))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    return lines


def _definition_headers(source):
    """(def/class line, first line, last line) of every definition: the
    header of a definition added or deleted whole only binds a name at
    import, so it is no target (its body lines and decorators are)."""
    import ast
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    return [(node.lineno, min([node.lineno] + [d.lineno for d in node.decorator_list]),
             node.end_lineno)
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def _targets(blocks, source):
    """Target lines of line blocks of one side of a diff (module doc)."""
    if source is None:
        return set()
    executable = executable_lines(source)
    code = code_lines(source)
    if executable is None or code is None:
        return set()
    ordered = sorted(executable)
    headers = _definition_headers(source)
    targets = set()
    for first, last in blocks:
        block = set(range(first, last + 1))
        hit = (block & executable) - {line for line, begin, end in headers
                                      if first <= begin and end <= last}
        if hit:
            targets |= hit
        elif block & code:
            before = [line for line in ordered if line < first]
            after = [line for line in ordered if line > last]
            targets.update(([before[-1]] if before else []) + ([after[0]] if after else []))
    return targets


class Targets:
    """Per file: old-file target lines (deletions) and new-file ones (additions)."""

    def __init__(self, repo, old, new, changes):
        self.old = {}  # old path -> set(lines)
        self.new = {}  # new path -> set(lines)
        for change in changes:
            if change.old_path and change.old_path.endswith(".py") and change.deleted:
                self.old[change.old_path] = _targets(change.deleted, show(repo, old, change.old_path))
            if change.new_path and change.new_path.endswith(".py") and change.added:
                self.new[change.new_path] = _targets(change.added, show(repo, new, change.new_path))

    def affected(self, old_cover, new_cover):
        """Whether coverage at the parent (`old_cover`, {path: lines}) hits a
        deletion target or coverage at the commit hits an addition target."""
        for path, lines in self.old.items():
            if lines and old_cover and not lines.isdisjoint(old_cover.get(path, ())):
                return True
        for path, lines in self.new.items():
            if lines and new_cover and not lines.isdisjoint(new_cover.get(path, ())):
                return True
        return False
