"""Which installed packages a process imported, or tried to: `@x` evidence.

A change to a dependency pin (`requirements-dev.txt`: `visdom==0.2.3` →
`visdom`) changes what a test runs only if one of its processes imports the
distribution's modules, or tries to and behaves differently when it cannot
(`pytest.importorskip`, `try: import horovod`). This module tracks, per
process, the top-level modules outside the repository and the standard
library that the process has loaded, and the top-level names whose import
failed (a finder at the end of `sys.meta_path` sees only the names no other
finder found). A test's evidence lists the union as `@x name` lines: what its
process had imported or tried to import by the end of the test, including
collection, so that a test that uses a module another test imported first
still names it. A fork child lists what it imports itself; its parent's file
for the same test lists the rest.

Mapping the modules back to distributions (`sklearn` → `scikit-learn`) reads
installed metadata, tens of milliseconds: pytest's process does it once at
exit for every name seen (`distributions()`), and its collection file lists
them as `@p dist module` and `@q dist required-dist` lines, and every
installed distribution as `@v dist version`.
"""

from __future__ import annotations

import os
import sys

from . import forks


def normalize(name):
    """A distribution name as PEP 503 compares it (`Foo_Bar` → `foo-bar`)."""
    import re  # pytest's process only (distributions)
    return re.sub(r"[-_.]+", "-", name).lower()


def _stdlib_dirs():
    # Where `os` lives is the standard library (lib-dynload is below it);
    # sysconfig would say the same at a cost every traced interpreter pays.
    return (os.path.join(os.path.realpath(os.path.dirname(os.__file__)), ""),)


class ExternalImports:
    """The top-level modules a process loaded from outside `excluded` roots, and failed imports.

    `excluded` are directory prefixes (ending in a separator) whose modules
    are not packages: the repository, FastCI itself. update() looks only at
    the entries sys.modules gained since its last call (a fork child touches
    none of its parent's), so it costs nothing in steady state.
    """

    def __init__(self, excluded, modules_mark, modules_since):
        self._excluded = tuple(excluded)
        self._stdlib = getattr(sys, "stdlib_module_names", None)
        self._stdlib_dirs = _stdlib_dirs()
        self._mark_fn, self._since_fn = modules_mark, modules_since
        self._mark = None
        self.loaded = set()
        self.failed = set()
        self._names = (None, [])  # names() and the set sizes it was made at
        self.update()

    def install(self):
        """Append the failed-import finder to sys.meta_path (once per interpreter; a
        later ExternalImports takes the finder over)."""
        for finder in sys.meta_path:
            if isinstance(finder, _FailedImportFinder):
                finder.owner = self
                return
        sys.meta_path.append(_FailedImportFinder(self, self._stdlib or ()))

    def forked(self, mark=None):
        """In a fork child: start from nothing, from now on (or from `mark`,
        a modules_mark() taken at the fork).

        What the parent had imported is the parent's to report (its file
        for the same test lists it), and reading the parent's sets back in
        the child would copy the page of every name in them."""
        forks.keep(self.loaded, self.failed)  # not freed (forks.py)
        self.loaded, self.failed = set(), set()
        self._names = (None, [])
        self._mark = self._mark_fn() if mark is None else mark

    def update(self):
        """Take in the modules imported since the last update."""
        for name, module in self._since_fn(self._mark):
            if "." in name or name in self.loaded or name.startswith("__"):
                continue  # submodules; __main__, __mp_main__, editable-install finders
            if self._is_external(name, module):
                self.loaded.add(name)
        self._mark = self._mark_fn()

    def names(self):
        """Every top-level name imported or tried so far, sorted; the same
        list object while nothing was added (every test's file lists them,
        and the sets only grow)."""
        self.update()
        sizes = (len(self.loaded), len(self.failed))
        if self._names[0] != sizes:
            self._names = (sizes, sorted(self.loaded | self.failed))
        return self._names[1]

    def _is_external(self, name, module):
        if self._stdlib is not None and name in self._stdlib:
            return False
        path = getattr(module, "__file__", None)
        if not isinstance(path, str):
            locations = getattr(module, "__path__", None)  # a namespace package
            try:
                path = next(iter(locations), None) if locations is not None else None
            except TypeError:
                path = None
            if not isinstance(path, str):
                return False  # built in, frozen, or made up at run time
        path = os.path.realpath(path)
        installed = "-packages" + os.sep in path  # site-packages, dist-packages
        if path.startswith(self._excluded) and not installed:
            return False  # the repository's own code (a venv inside it is not)
        if path.startswith(self._stdlib_dirs) and not installed:
            return False  # the standard library's own extras (_sysconfigdata_*)
        return True


class _FailedImportFinder:
    """Last on sys.meta_path: records each top-level name no finder before it found."""

    def __init__(self, owner, stdlib):
        self.owner = owner  # the ExternalImports whose `failed` set this adds to
        self._stdlib = stdlib  # other platforms' modules (`nt`, `_winapi`) install nowhere

    def find_spec(self, name, path=None, target=None):
        if path is None and "." not in name and name not in self._stdlib:
            self.owner.failed.add(name)
        return None

    def invalidate_caches(self):
        pass


def distributions(names):
    """([(dist, module)], [(dist, required dist)], [(dist, version)]).

    The first two for the installed distributions that provide `names`, the
    last for every installed distribution; `dist` names are normalized.
    Requirements are followed transitively through installed distributions:
    pinning a distribution may move what it requires. Returns empty lists
    when importlib.metadata is unavailable.
    """
    import re  # pytest's process only: children never import it for us
    try:
        from importlib import metadata
    except ImportError:
        return [], [], []
    wanted = set(names)
    by_name = {}
    provides = set()
    for dist in metadata.distributions():
        try:
            headers = core_metadata(dist)
        except Exception:
            continue
        dist_name = first(headers, "name")
        if not dist_name:
            continue
        key = normalize(dist_name)
        if key in by_name:
            continue  # shadowed by the one found first on sys.path
        by_name[key] = (dist, headers)
        for module in _top_level(dist):
            if module in wanted:
                provides.add((key, module))
    requires = set()
    todo = sorted({d for d, _ in provides})
    seen = set(todo)
    while todo:
        key = todo.pop()
        for requirement in _requirements(*by_name[key]):
            if ";" in requirement and "extra" in requirement.split(";", 1)[1]:
                continue  # an extra nobody asked for installs nothing
            match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
            if not match:
                continue
            required = normalize(match.group(1))
            requires.add((key, required))
            if required in by_name and required not in seen:
                seen.add(required)
                todo.append(required)
    versions = sorted((key, str(first(headers, "version") or "-").replace(" ", ""))
                      for key, (_, headers) in by_name.items())
    return sorted(provides), sorted(requires), versions


def core_metadata(dist):
    """{field: [values]} of the Name, Version and Requires-Dist fields of
    `dist`'s core metadata, field names lower-cased, values in file order.

    importlib.metadata parses the whole file with the email package, long
    description included: 20 ms of every collect run in a venv of torch's
    size, for three fields of the header. This reads the header only, as
    that parser does with its compat32 policy: the text is METADATA,
    PKG-INFO or an egg-info file itself (Distribution.metadata); lines end
    at CR, LF or CRLF; the header ends at the first line that is empty or
    not a field; a line that starts with a space or a tab continues the
    field above it; a value is what follows the first colon, leading blanks
    and the final line break dropped, and a folded one is dedented as
    importlib's adapter (3.10+) does. test/python/sampler/test_packages.py
    holds it to importlib's answers for every distribution installed.
    """
    import re  # pytest's process only (distributions)
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or dist.read_text("") or ""
    fields = {}
    name, value = None, []

    def close():
        if name in _CORE_FIELDS:
            joined = "".join(value).rstrip("\r\n")
            if "\n" in joined:  # folded: importlib (3.10+) dedents it
                import textwrap
                joined = textwrap.dedent(" " * 8 + joined)
            fields.setdefault(name, []).append(joined)

    # email.feedparser's field name and colon: printable ASCII but the colon.
    field_name = re.compile(r"[\041-\071\073-\176]*:")
    for number, line in enumerate(re.findall(r"[^\r\n]*(?:\r\n|\r|\n)", text + "\n")):
        if line[:1] in (" ", "\t"):
            if name is not None:
                value.append(line)
            continue  # a continuation with no field above: the parser drops it
        close()
        name = None
        if number == 0 and line.startswith("From "):
            continue  # an mbox "From " line
        match = field_name.match(line)
        if match is None:
            break  # an empty line or the body
        if match.end() > 1:  # a line that starts with a colon is dropped
            name, value = line[:match.end() - 1].lower(), [line[match.end():].lstrip(" \t")]
    close()
    return fields


# The core-metadata fields distributions() reads, lower-cased.
_CORE_FIELDS = frozenset(("name", "version", "requires-dist"))


def first(fields, name):
    """The first value of `name` in core_metadata()'s `fields`, or None (as
    importlib's metadata[name])."""
    values = fields.get(name)
    return values[0] if values else None


def _requirements(dist, headers):
    """Distribution.requires from `headers` (core_metadata), reading the
    metadata again only for an egg-info distribution's requires.txt."""
    listed = headers.get("requires-dist")
    if listed:
        return listed
    try:
        if dist.read_text("requires.txt") is None:
            return ()
        return dist.requires or ()
    except Exception:
        return ()


def _top_level(dist):
    """The top-level import names a distribution installs."""
    text = None
    try:
        text = dist.read_text("top_level.txt")
    except Exception:
        pass
    if text:
        return {line.strip() for line in text.splitlines() if line.strip()}
    modules = set()
    try:
        files = dist.files or ()
    except Exception:
        files = ()
    for file in files:
        parts = str(file).replace("\\", "/").split("/")
        head = parts[0]
        if head.endswith((".dist-info", ".egg-info", ".data")) or head in ("..", ""):
            continue
        if len(parts) == 1:
            if head.endswith((".py", ".so", ".pyd")):
                modules.add(head.split(".", 1)[0])
        elif head != "__pycache__":
            modules.add(head)
    return modules
