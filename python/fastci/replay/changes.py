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

Blocks of blank, comment-only and docstring lines target nothing: they
cannot change behaviour. Neither does the `def`/`class` line of a definition added or
deleted whole: executing it at import only binds a new name (its body
lines, decorators and class-body statements stay targets). A change to a
function's def line or signature targets *calls* of the function: tests
whose trace entered it ('call' events), not every test that imported it. Files that do not compile (or are not Python) have no targets;
the change still reaches the strategies.
"""

import io
import re
import subprocess
import tokenize

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class GitError(Exception):
    """A git command failed; the message is git's own."""


def git(repo: str, *args: str, check: bool = True) -> str:
    proc = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True,
                          errors="replace")
    if check and proc.returncode != 0:
        raise GitError("git %s: %s" % (" ".join(args[:2]),
                                       (proc.stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1]))
    return proc.stdout


def show(repo: str, revision: str, path: str) -> "str | None":
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


def diff(repo: str, old: str, new: str) -> "list[FileChange]":
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


def executable_lines(source: str) -> "set[int] | None":
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


def _docstring_lines(source):
    """Lines of module, class and function docstrings."""
    import ast
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                lines.update(range(body[0].lineno, body[0].end_lineno + 1))
    return lines


def function_def_lines(source: str) -> "set[int]":
    """The `def` lines of every function of `source` (empty if it does not
    parse)."""
    import ast
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    return {node.lineno for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def code_lines(source: str) -> "set[int] | None":
    """Lines holding a token other than comments and whitespace; docstrings
    are documentation, not code."""
    lines = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                            tokenize.DEDENT, tokenize.ENDMARKER):
                continue
            lines.update(range(tok.start[0], tok.end[0] + 1))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    return lines - _docstring_lines(source)


class _Definition:
    """A def or class statement: `call_line` is its code object's first line
    (the first decorator's, else the def's), which a 'call' event reports
    when the function is entered; `header` the def line through the end of
    the signature; `first`..`last` its whole extent."""

    def __init__(self, node):
        import ast
        self.is_function = not isinstance(node, ast.ClassDef)
        self.def_line = node.lineno
        self.call_line = min([node.lineno] + [d.lineno for d in node.decorator_list])
        end = node.lineno
        if self.is_function:
            a = node.args
            parts = (a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] + a.defaults
                     + a.kw_defaults + [node.returns])
            end = max([end] + [p.end_lineno for p in parts if p is not None])
        self.header = set(range(node.lineno, end + 1))
        self.first, self.last = self.call_line, node.end_lineno


def _definitions(source):
    import ast
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    return [_Definition(node) for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def _targets(blocks, source):
    """(plain targets, call targets) of line blocks of one side of a diff.

    Plain targets are lines a test's coverage must hit. A change to a
    function's def line or signature changes what calling it does, not what
    executing the `def` at import does, so it targets the function's *call*
    (its first line as reported by 'call' events), hit only by tests that
    enter the function (module doc)."""
    if source is None:
        return set(), set()
    executable = executable_lines(source)
    code = code_lines(source)
    if executable is None or code is None:
        return set(), set()
    ordered = sorted(executable)
    definitions = _definitions(source)
    signature_of = {}
    for d in definitions:
        if d.is_function:
            for line in d.header:
                signature_of[line] = d
    plain, calls = set(), set()

    def route(line):
        if line in signature_of:
            calls.add(signature_of[line].call_line)
        else:
            plain.add(line)

    for first, last in blocks:
        block = set(range(first, last + 1))
        whole = [d for d in definitions if first <= d.first and d.last <= last]
        # The def/class line of a definition added or deleted whole only binds
        # a new name; its body, decorators and class-body statements count.
        binding = {d.def_line for d in whole}
        inner = [d for d in definitions if d not in whole and d.is_function]
        rest = set(block)
        for d in inner:
            if block & d.header:
                calls.add(d.call_line)
                rest -= d.header
        hit = (rest & executable) - binding
        if hit:
            plain.update(hit)
        elif rest & code - binding and not (rest & executable):
            before = [line for line in ordered if line < first]
            after = [line for line in ordered if line > last]
            for line in ([before[-1]] if before else []) + ([after[0]] if after else []):
                route(line)
    return plain, calls


def import_block_lines(source: str) -> "set[int]":
    """Lines of module-level statements that only import: `import`/`from ...
    import` statements, and `if`/`try` blocks made of them (and `pass`),
    headers included. Executing such a line only binds names (unless the
    import fails): the report flags misses whose every hit is one of them
    (docs/Evaluation.md, "Ground-truth caveats"). None when unparsable."""
    import ast
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None

    def imports_only(statements):
        for node in statements:
            if isinstance(node, (ast.Import, ast.ImportFrom, ast.Pass)):
                continue
            if isinstance(node, ast.If) and imports_only(node.body) and imports_only(node.orelse):
                continue
            if isinstance(node, ast.Try) and imports_only(node.body) and imports_only(node.orelse) \
                    and imports_only(node.finalbody) \
                    and all(imports_only(h.body) for h in node.handlers):
                continue
            return False
        return True

    lines = set()
    for node in tree.body:
        if imports_only([node]):
            lines.update(range(node.lineno, node.end_lineno + 1))
    return lines


def import_only_hits(repo: str, parent: str, sha: str, hits: "list[str]",
                     cache: "dict | None" = None) -> bool:
    """True when every hit ("-path:line" at `parent`, "+path:line" at `sha`)
    is on a module-level import line (import_block_lines)."""
    cache = {} if cache is None else cache
    if not hits:
        return False
    for hit in hits:
        sign, rest = hit[0], hit[1:]
        if rest.endswith("(call)"):
            return False
        path, _, line = rest.rpartition(":")
        revision = parent if sign == "-" else sha
        key = (revision, path)
        if key not in cache:
            text = show(repo, revision, path)
            cache[key] = import_block_lines(text) if text is not None else None
        lines = cache[key]
        if lines is None or not line.isdigit() or int(line) not in lines:
            return False
    return True


class Targets:
    """Per file: old-file targets (deletions) and new-file ones (additions),
    plain lines and function calls (see _targets)."""

    def __init__(self, repo, old, new, changes):
        self.old, self.old_calls = {}, {}  # old path -> set(lines)
        self.new, self.new_calls = {}, {}  # new path -> set(lines)
        for change in changes:
            if change.old_path and change.old_path.endswith(".py") and change.deleted:
                self.old[change.old_path], self.old_calls[change.old_path] = _targets(
                    change.deleted, show(repo, old, change.old_path))
            if change.new_path and change.new_path.endswith(".py") and change.added:
                self.new[change.new_path], self.new_calls[change.new_path] = _targets(
                    change.added, show(repo, new, change.new_path))

    def hits(self, old_cover, old_calls, new_cover, new_calls):
        """The targets a test hits: "-path:line" for deletion targets at the
        parent (`old_cover`, {path: lines}; `old_calls`, the lines of its
        'call' events), "+path:line" for addition targets at the commit, with
        "(call)" for call targets. Non-empty: the test is affected."""
        found = []
        for sign, targets, cover, suffix in (
                ("-", self.old, old_cover, ""), ("-", self.old_calls, old_calls, "(call)"),
                ("+", self.new, new_cover, ""), ("+", self.new_calls, new_calls, "(call)")):
            for path, lines in sorted(targets.items()):
                if lines and cover:
                    found.extend("%s%s:%d%s" % (sign, path, line, suffix)
                                 for line in sorted(lines.intersection(cover.get(path, ()))))
        return found
