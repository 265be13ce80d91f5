"""The baselines the replay scores FastCI against, and mapping plan ids onto
the tests pytest collected.

* `import_graph`: file-level static selection as the `tests_fetcher.py`
  scripts of large Python projects do it: a test file runs when its
  transitive import closure (plus the conftest.py files pytest loads for it)
  contains a changed Python file, or it changed itself; a change to
  `setup.py`, `setup.cfg`, `pyproject.toml` or a requirements file runs
  everything; other non-Python files select nothing.
* `file_runtime`: a test runs when its recorded execution (the line
  coverage of the last evidence refresh, every process) touched a changed
  Python file, when its test file changed, or when it has no record.
"""

import ast
import os

BUILD_FILES = ("setup.py", "setup.cfg", "pyproject.toml")


def test_file(test_id: str) -> str:
    return test_id.split("::", 1)[0]


def expand(names: "list[str]", collected: "list[str]") -> "tuple[set[str], list[str]]":
    """Maps plan names onto collected ids: a name stands for itself, or for
    the items it encloses (a file, a class, a parametrized function).
    Returns (set of collected ids, [names matching nothing])."""
    collected_set = set(collected)
    by_prefix = {}
    for test in collected:
        parts = test.split("::")
        for cut in range(1, len(parts)):
            by_prefix.setdefault("::".join(parts[:cut]), []).append(test)
        base = test.split("[", 1)[0]
        if base != test:
            by_prefix.setdefault(base, []).append(test)
    selected, unknown = set(), []
    for name in names:
        if name in collected_set:
            selected.add(name)
        elif name in by_prefix:
            selected.update(by_prefix[name])
        else:
            unknown.append(name)
    return selected, unknown


def _module_index(root):
    """{dotted module name: relative path} for every .py file under `root`
    (package directories are those holding __init__.py; a file's module name
    is relative to the first directory above its packages)."""
    index = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d not in ("build", "node_modules")]
        for name in filenames:
            if not name.endswith(".py"):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            parts = [name[:-3]] if name != "__init__.py" else []
            d = dirpath
            while os.path.isfile(os.path.join(d, "__init__.py")) and d != root:
                parts.insert(0, os.path.basename(d))
                d = os.path.dirname(d)
            if parts:
                index.setdefault(".".join(parts), rel)
    return index


def _imports(path, module, is_package):
    """Dotted names a file imports (absolute, relative ones resolved)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            tree = ast.parse(f.read())
    except (SyntaxError, ValueError, OSError):
        return []
    package = module if is_package else module.rpartition(".")[0]
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                parts = parts[:len(parts) - (node.level - 1)] if node.level > 1 else parts
                base = ".".join(parts + ([base] if base else []))
            names.append(base)
            names.extend("%s.%s" % (base, alias.name) if base else alias.name for alias in node.names)
    return [n for n in names if n]


class ImportGraph:
    """The static import graph of a checkout."""

    def __init__(self, root):
        self.root = root
        index = _module_index(root)
        self.edges = {}
        for module, rel in index.items():
            targets = set()
            for name in _imports(os.path.join(root, rel), module, rel.endswith("__init__.py")):
                parts = name.split(".")
                # `import a.b.c` loads a, a.b and a.b.c.
                for cut in range(1, len(parts) + 1):
                    target = index.get(".".join(parts[:cut]))
                    if target:
                        targets.add(target)
            self.edges[rel] = targets
        self._closures = {}

    def closure(self, rel):
        if rel in self._closures:
            return self._closures[rel]
        seen, todo = {rel}, [rel]
        # pytest loads every conftest.py from the rootdir down to the test's directory.
        d = os.path.dirname(rel)
        while True:
            conftest = (d + "/" if d else "") + "conftest.py"
            if os.path.isfile(os.path.join(self.root, conftest)) and conftest not in seen:
                seen.add(conftest)
                todo.append(conftest)
            if not d:
                break
            d = os.path.dirname(d)
        while todo:
            for target in self.edges.get(todo.pop(), ()):
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
        self._closures[rel] = seen
        return seen


def import_graph(root, collected, changed_paths):
    changed = set(changed_paths)
    if any(p.rsplit("/", 1)[-1] in BUILD_FILES or p.rsplit("/", 1)[-1].startswith("requirements")
           for p in changed):
        return set(collected)
    changed_py = {p for p in changed if p.endswith(".py")}
    graph = ImportGraph(root)
    selected = set()
    for test in collected:
        f = test_file(test)
        if f in changed or not changed_py.isdisjoint(graph.closure(f)):
            selected.add(test)
    return selected


def file_runtime(recorded_files, collected, changed_paths):
    """`recorded_files`: {test id: set(paths)} at the last refresh."""
    changed = set(changed_paths)
    selected = set()
    for test in collected:
        files = recorded_files.get(test)
        if files is None or test_file(test) in changed or not changed.isdisjoint(files):
            selected.add(test)
    return selected
