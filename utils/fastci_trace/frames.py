"""Turning code objects into the (path, qualified name) of an evidence frame.

The sampler's hot path only records `(code object, line)` pairs; this module
describes each code object once, off the hot path, and caches the result.
The path is made relative to the repository root when the file lies under
it. The qualified name is `co_qualname` on CPython 3.11+. Older versions
lack it, so we reconstruct it statically from the source file's syntax tree
(the same `Outer.<locals>.inner` rules CPython applies), keyed by the code's
first line. We deliberately do not read `self`/`cls` from a sampled frame's
f_locals: on 3.9/3.10 that snapshots every local into a dict the frame keeps,
which extends object lifetimes (e.g. large tensors) in the code under test.
"""

import ast
import os
import sys

from .evidence import encode_frame_prefix

_HAS_QUALNAME = sys.version_info >= (3, 11)


class _QualnameIndex(ast.NodeVisitor):
    """Maps (first line, name) of each function/class/lambda in a module to its qualname."""

    def __init__(self):
        self.by_line = {}
        self._scope = []  # qualname parts, `<locals>` inserted below functions

    def _record(self, node, name):
        qualname = ".".join(self._scope + [name])
        lines = [node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())]
        for line in lines:  # co_firstlineno is the first decorator's line
            self.by_line.setdefault((line, name), qualname)
        return qualname

    def _visit_scope(self, node, name, is_function):
        self._record(node, name)
        self._scope.append(name)
        if is_function:
            self._scope.append("<locals>")
        self.generic_visit(node)
        if is_function:
            self._scope.pop()
        self._scope.pop()

    def visit_FunctionDef(self, node):
        self._visit_scope(node, node.name, True)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self._visit_scope(node, node.name, False)

    def visit_Lambda(self, node):
        self._visit_scope(node, "<lambda>", True)

    def _visit_comprehension(self, node, name):
        self._visit_scope(node, name, True)

    def visit_ListComp(self, node):
        self._visit_comprehension(node, "<listcomp>")

    def visit_SetComp(self, node):
        self._visit_comprehension(node, "<setcomp>")

    def visit_DictComp(self, node):
        self._visit_comprehension(node, "<dictcomp>")

    def visit_GeneratorExp(self, node):
        self._visit_comprehension(node, "<genexpr>")


class FrameDescriber:
    """Describes code objects as encoded `path:qualname:` prefixes, with caching.

    `root` is the directory paths are made relative to; `cwd` resolves
    relative `co_filename`s (captured at interpreter start, before the code
    under test can chdir); `exclude_dir` marks code whose frames are the
    sampler's own and must not appear in evidence.
    """

    def __init__(self, root, cwd, exclude_dir):
        self._root = os.path.realpath(root) + os.sep
        self._cwd = cwd
        self._exclude = os.path.realpath(exclude_dir) + os.sep
        self._codes = {}   # code -> encoded "path:qualname:" or None (own frame)
        self._indexes = {}  # absolute path -> {(line, name): qualname}

    def prefix(self, code):
        """Return the encoded `path:qualname:` for `code`, or None for sampler frames."""
        try:
            return self._codes[code]
        except KeyError:
            pass
        path = self._path(code.co_filename)
        if path is None:
            result = None
        else:
            result = encode_frame_prefix(self._relative(path), self._qualname(code, path))
        self._codes[code] = result
        return result

    def _path(self, filename):
        if filename.startswith("<") and filename.endswith(">"):
            return filename  # <string>, <frozen ...>: not a file
        path = os.path.realpath(os.path.join(self._cwd, filename))
        return None if path.startswith(self._exclude) else path

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
            index = self._indexes[path] = _index_file(path)
        return index.get((code.co_firstlineno, code.co_name), code.co_name)


def _index_file(path):
    """Build the qualname index of a source file; empty when it cannot be parsed."""
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError):
        return {}
    visitor = _QualnameIndex()
    visitor.visit(tree)
    return visitor.by_line
