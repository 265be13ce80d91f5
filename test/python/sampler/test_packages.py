"""Package evidence (`@x`, `@p`, `@q`, `@v`): what a test's processes imported from outside.

A changed dependency pin selects the tests whose processes imported, or
tried to import, the distribution's modules (docs/Evidence.md, "Packages").
These drive a real pytest session and a child interpreter and read the
files back.
"""

import importlib.metadata
import importlib.util
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from conftest import PACKAGE_ROOT, clean_env, run_inner_pytest, write
from fastci.trace import packages, sampler
from fastci.trace.evidence import read_evidence_file

numpy = pytest.importorskip("numpy")


@pytest.fixture
def repo(tmp_path):
    write(tmp_path / "mylib.py", """
        def helper():
            return 1
    """)
    (tmp_path / "tests").mkdir()
    write(tmp_path / "tests" / "test_pkgs.py", """
        import subprocess
        import sys

        import mylib

        def test_1_before():
            assert mylib.helper() == 1

        def test_2_numpy():
            import numpy
            assert numpy.zeros(1).shape == (1,)

        def test_3_after():
            pass

        def test_4_missing():
            try:
                import fastci_no_such_package  # noqa: F401
            except ImportError:
                pass

        def test_5_child():
            subprocess.run([sys.executable, "-c", "import json, mylib"], check=True)
    """)
    return tmp_path


def run(repo):
    out = repo / "ev"
    env = clean_env(PYTHONPATH=os.pathsep.join([str(PACKAGE_ROOT), str(repo)]))
    proc = run_inner_pytest(repo, "--fastci-trace-out", str(out), "tests", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    files = [read_evidence_file(p) for p in sorted(out.rglob("*.stacks"))]
    by_test = {}
    for evidence in files:
        by_test.setdefault(evidence.header["test-id"], []).append(evidence)
    return by_test


def test_tests_list_what_their_process_imported_or_tried(repo):
    found = run(repo)
    names = {test.rsplit("::", 1)[-1]: [set(e.packages) for e in files]
             for test, files in found.items()}
    before, = names["test_1_before"]
    assert "pytest" in before and "numpy" not in before
    # the repository's own modules and the standard library are not packages
    assert not {"mylib", "tests", "test_pkgs", "json", "os", "fastci"} & before
    numpy_test, = names["test_2_numpy"]
    assert "numpy" in numpy_test
    # what the process imported stays imported: a later test may use it
    after, = names["test_3_after"]
    assert "numpy" in after
    missing, = names["test_4_missing"]
    assert "fastci_no_such_package" in missing
    # a child interpreter lists its own imports (what site imports at start
    # up, a sitecustomize or a .pth file's module), not its parent's
    child, = [n for n in names["test_5_child"] if "pytest" not in n]
    assert "numpy" not in child
    for files in found.values():
        for evidence in files:
            assert int(evidence.header["packages"]) == len(evidence.packages)


def test_collection_file_maps_packages_to_distributions(repo):
    collection, = run(repo)["<collection>"]
    assert ("numpy", "numpy") in collection.provides
    assert ("pytest", "pytest") in collection.provides
    versions = dict(collection.versions)
    assert versions["numpy"] == numpy.__version__
    # pytest's own requirements, followed through installed metadata
    assert any(dist == "pytest" for dist, _ in collection.requires)


class _TextDistribution(importlib.metadata.Distribution):
    """A distribution whose files are the strings in `files`."""

    def __init__(self, files):
        self._files = files

    def read_text(self, filename):
        return self._files.get(filename)

    def locate_file(self, path):
        return path


def _agree_with_importlib(dist):
    """core_metadata(dist) holds importlib's parse of the same file."""
    fields = packages.core_metadata(dist)
    parsed = dist.metadata
    assert packages.first(fields, "name") == parsed.get("Name")
    assert packages.first(fields, "version") == parsed.get("Version")
    assert (fields.get("requires-dist") or None) == parsed.get_all("Requires-Dist")
    return fields


_BODY = "\n\nA long description.\nName: not-a-field\nRequires-Dist: nor-this\n"


@pytest.mark.parametrize("files", [
    {"METADATA": "Metadata-Version: 2.1\nName: Foo_Bar\nVersion: 1.0\n"
                 "Requires-Dist: numpy (>=1.0)\nRequires-Dist: rich ; extra == 'cli'\n" + _BODY},
    # folded values (importlib dedents them since 3.10), CRLF and lone-CR
    # line ends, a second Name (the first counts)
    pytest.param({"METADATA": "Name: a\r\nVersion: 2\r\n  .0\r\nName: b\rRequires-Dist: x\n\t>=1\n"
                              + _BODY},
                 marks=pytest.mark.skipif(sys.version_info < (3, 10), reason="3.9 keeps folds")),
    # the body begins without an empty line: the first line that is no field
    {"METADATA": "Name: a\nVersion: 1\nthis line is no field\nRequires-Dist: y\n"},
    # a line that starts with a colon is dropped; an mbox From line; a
    # continuation before any field
    {"METADATA": "From someone\n  stray\nName: a\n: no name\nVersion:   3\n"},
    # no METADATA: PKG-INFO, then the egg-info file itself
    {"PKG-INFO": "Name: old\nVersion: 0.1\n"},
    {"": "Name: egg\nVersion: 9\n"},
    {"METADATA": "Summary: no name or version\n"},
    {},
])
def test_core_metadata_reads_the_header_as_importlib_does(files):
    _agree_with_importlib(_TextDistribution(files))


def test_core_metadata_agrees_with_importlib_for_every_installed_distribution():
    dists = list(importlib.metadata.distributions())
    assert len(dists) > 5
    for dist in dists:
        _agree_with_importlib(dist)


def test_requirements_of_an_egg_info_come_from_requires_txt():
    egg = _TextDistribution({"PKG-INFO": "Name: egg\nVersion: 1\n",
                             "requires.txt": "six\n\n[extra]\nrich\n"})
    assert packages._requirements(egg, packages.core_metadata(egg)) == egg.requires
    bare = _TextDistribution({"METADATA": "Name: bare\nVersion: 1\n"})
    assert list(packages._requirements(bare, packages.core_metadata(bare))) == []


def test_external_imports_classification(tmp_path):
    write(tmp_path / "inrepo_mod.py", "X = 1\n")
    sys.path.insert(0, str(tmp_path))
    try:
        tracker = packages.ExternalImports([os.path.join(str(tmp_path), "")],
                                           sampler.modules_mark, sampler.modules_since)
        import inrepo_mod  # noqa: F401
        import numpy  # noqa: F401  (already imported: not new, but listed)
        import colorsys  # noqa: F401
        tracker.update()
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("inrepo_mod", None)
    assert "inrepo_mod" not in tracker.loaded
    assert "numpy" in tracker.loaded and "colorsys" not in tracker.loaded


def test_failed_import_finder_records_top_level_names_only():
    owner = types.SimpleNamespace(failed=set())
    finder = packages._FailedImportFinder(owner, {"nt"})
    assert finder.find_spec("some_missing") is None
    finder.find_spec("pkg.sub", ["/x"])
    finder.find_spec("nt")
    assert owner.failed == {"some_missing"}


def test_fork_child_lists_only_its_own_imports(tmp_path, monkeypatch):
    """The parent's file for the same test lists what the parent had; the
    child starts from nothing, and the finder records into the child's set."""
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    for finder in sys.meta_path:  # one an in-process Sampler installed
        if isinstance(finder, packages._FailedImportFinder):
            monkeypatch.setattr(finder, "owner", finder.owner)
    imports = packages.ExternalImports([str(tmp_path) + os.sep], sampler.modules_mark,
                                       sampler.modules_since)
    imports.install()
    imports.loaded.add("inherited")
    imports.forked()
    assert imports.names() == []
    assert importlib.util.find_spec("fastci_no_such_module_after_fork") is None
    assert imports.names() == ["fastci_no_such_module_after_fork"]


def test_names_are_kept_until_an_import_adds_one(tmp_path, monkeypatch):
    """Every test's file lists names(): one list while nothing was added,
    a new sorted one as soon as the process imports another package."""
    (tmp_path / "site").mkdir()
    write(tmp_path / "site" / "fastci_names_probe.py", "X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "fastci_names_probe", raising=False)
    imports = packages.ExternalImports([str(tmp_path / "repo") + os.sep], sampler.modules_mark,
                                       sampler.modules_since)
    first = imports.names()
    assert imports.names() is first
    importlib.import_module("fastci_names_probe")
    names = imports.names()
    assert "fastci_names_probe" in names and "fastci_names_probe" not in first
    assert names == sorted(names) and imports.names() is names
    sys.modules.pop("fastci_names_probe", None)


@pytest.mark.parametrize("name, normalized", [
    ("Scikit_Learn", "scikit-learn"), ("zope.interface", "zope-interface"),
    ("a--b__c", "a-b-c"), ("numpy", "numpy")])
def test_normalize(name, normalized):
    assert packages.normalize(name) == normalized
