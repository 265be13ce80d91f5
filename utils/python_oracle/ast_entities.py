#!/usr/bin/env python3
"""Dump the classes and functions of Python files as CPython itself sees them.

This is the oracle that parse-python is checked against: entity symbols come
from the `co_qualname` of the code objects CPython's compiler produces, and
line/column ranges from the `ast` module. The only rules applied on top are
the two that docs/ParsePython.md adds to Python's own naming:

  * a name bound twice in the same scope (conditional definitions,
    @overload, property setters) keeps its qualname the first time and gets
    `#2`, `#3`, ... after that, descendants inheriting the suffixed name;
  * `name = lambda ...` (one plain-name target, possibly annotated) is a
    function named `name`, as if it were `def name`.

Usage: ast_entities.py ROOT PATH:MODULE... -> JSON lines on stdout, one per
entity ({"file", "symbol", "kind", "lineno", "end_lineno", "col_offset",
"end_col_offset"}), plus {"file", "skipped": reason} for files `ast` rejects.
"""
import ast
import json
import sys
import warnings

_ANONYMOUS = {"<lambda>", "<listcomp>", "<genexpr>", "<setcomp>",
              "<dictcomp>", "<module>"}


def _code_qualnames(code, table):
    """Maps (first line, name) of every named code object to its qualname."""
    for const in code.co_consts:
        if hasattr(const, "co_qualname"):
            if const.co_name not in _ANONYMOUS:
                table.setdefault((const.co_firstlineno, const.co_name),
                                 const.co_qualname)
            _code_qualnames(const, table)
    return table


def _globals_of(body):
    """Names declared `global` directly in a scope body (not nested scopes)."""
    names = set()
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Global):
            names.update(node.names)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                             ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return names


class _Collector:
    def __init__(self, module, qualnames):
        self.module = module
        self.qualnames = qualnames
        self.counts = {}
        self.entities = []

    def _name(self, parent, raw_cpython, name):
        # parent: (kind, raw qualname, final qualname, globals) or None.
        if parent is None or name in parent[3]:
            base = name
        elif raw_cpython is not None:
            base = raw_cpython
            prefix = parent[1] + "."
            if base.startswith(prefix):
                base = parent[2] + "." + base[len(prefix):]
        elif parent[0] == "class":
            base = parent[2] + "." + name
        else:
            base = parent[2] + ".<locals>." + name
        raw = raw_cpython if raw_cpython is not None else base
        count = self.counts.get(base, 0) + 1
        self.counts[base] = count
        final = base if count == 1 else f"{base}#{count}"
        return raw, final

    def _emit(self, kind, final, node):
        symbol = f"{self.module}.{final}" if self.module else final
        self.entities.append({
            "symbol": symbol, "kind": kind, "lineno": node.lineno,
            "end_lineno": node.end_lineno, "col_offset": node.col_offset,
            "end_col_offset": node.end_col_offset})

    def visit(self, node, parent):
        for child in ast.iter_child_nodes(node):
            self.visit_node(child, parent)

    def visit_node(self, node, parent):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                             ast.ClassDef)):
            first = node.decorator_list[0].lineno if node.decorator_list \
                else node.lineno
            cpython = self.qualnames.get((first, node.name))
            raw, final = self._name(parent, cpython, node.name)
            kind = "class" if isinstance(node, ast.ClassDef) else "function"
            self._emit(kind, final, node)
            # Decorators, defaults and bases run in the enclosing scope.
            for field in ("decorator_list", "bases", "keywords", "args",
                          "returns"):
                value = getattr(node, field, None)
                for sub in value if isinstance(value, list) else [value]:
                    if isinstance(sub, ast.AST):
                        self.visit_node(sub, parent)
            scope = (kind, raw, final, _globals_of(node.body))
            for stmt in node.body:
                self.visit_node(stmt, scope)
            return
        target = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        elif isinstance(node, ast.AnnAssign):
            target = node.target
        if (isinstance(target, ast.Name) and
                isinstance(node.value, ast.Lambda)):
            raw, final = self._name(parent, None, target.id)
            self._emit("function", final, node.value)
            scope = ("function", raw, final, set())
            self.visit(node.value, scope)
            return
        self.visit(node, parent)


def dump_file(path, module):
    with open(path, "rb") as f:
        source = f.read()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            tree = ast.parse(source, path)
        except (SyntaxError, ValueError) as error:
            return None, f"{type(error).__name__}: {error}"
        try:
            qualnames = _code_qualnames(compile(tree, path, "exec",
                                                dont_inherit=True), {})
        except (SyntaxError, ValueError):
            qualnames = {}
    collector = _Collector(module, qualnames)
    collector.visit(tree, None)
    return collector.entities, None


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    root = argv[1]
    out = sys.stdout
    for spec in argv[2:]:
        path, _, module = spec.rpartition(":")
        entities, error = dump_file(f"{root}/{path}", module)
        if error is not None:
            out.write(json.dumps({"file": path, "skipped": error}) + "\n")
            continue
        for entity in entities:
            entity["file"] = path
            out.write(json.dumps(entity) + "\n")


if __name__ == "__main__":
    main(sys.argv)
