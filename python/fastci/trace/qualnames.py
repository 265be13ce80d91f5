"""Qualified names of a source file's functions and classes, for CPython < 3.11.

Code objects carry `co_qualname` from 3.11 on. Before, the describer
(frames.py) reconstructs it from the file's syntax tree, applying the same
`Outer.<locals>.inner` rules CPython does, keyed by (first line, name).
A module of its own so that traced processes on 3.11+ never import `ast`.
"""

import ast


class QualnameIndex(ast.NodeVisitor):
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


def index_file(path):
    """Build the qualname index of a source file; empty when it cannot be parsed."""
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError):
        return {}
    visitor = QualnameIndex()
    visitor.visit(tree)
    return visitor.by_line
