"""The `fastci` Python package installs offline and works as users run it.

A fresh `--system-site-packages` venv gets `pip install python/` (no index:
the in-tree build backend uses Debian's setuptools); pytest then loads the
plugin through its `pytest11` entry point, `pytest --fastci-collect DIR`
records evidence of a tiny project, and the `fastci` console script (finding
fastci-opt through FASTCI_OPT) plans a change from it, to run on the venv's
interpreter that recorded the evidence. Also: the plugin stays
off unless asked, a C part that cannot compile never breaks the install, and
`--break-system-packages` installs into a plain interpreter's prefix.
"""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BUILD = Path(os.environ.get("FASTCI_BUILD_DIR", ROOT / "build")).resolve()
FASTCI_OPT = BUILD / "bin" / "fastci-opt"
SYSTEM_PYTHON = "/usr/bin/python3"

pytestmark = pytest.mark.skipif(
    not FASTCI_OPT.exists() or not os.path.exists(SYSTEM_PYTHON),
    reason="needs a built fastci-opt and Debian's /usr/bin/python3")


def run(*args, cwd=None, env=None, expect=0):
    proc = subprocess.run([str(a) for a in args], cwd=cwd, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=300)
    assert proc.returncode == expect, proc.stdout
    return proc.stdout


def clean_env(**extra):
    """The environment of a CI job: no PYTHONPATH pointing into the checkout."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "FASTCI_OPT", "FASTCI_TRACE_OUT")}
    env["PIP_NO_INDEX"] = "1"  # offline: nothing may come from an index
    env.update(extra)
    return env


def package_copy(tmp_path, extra_files=()):
    """python/ copied without build leftovers, plus `extra_files`."""
    src = tmp_path / "src"
    shutil.copytree(ROOT / "python", src, ignore=shutil.ignore_patterns(
        "build", "*.egg-info", "__pycache__"))
    for relative, text in extra_files:
        (src / relative).write_text(text)
    return src


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A --system-site-packages venv with the package installed offline."""
    tmp = tmp_path_factory.mktemp("venv")
    env_dir = tmp / "venv"
    run(SYSTEM_PYTHON, "-m", "venv", "--system-site-packages", env_dir)
    run(env_dir / "bin" / "pip", "install", package_copy(tmp), env=clean_env())
    return env_dir


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def git(repo, *args):
    run("git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.com",
        *args)


@pytest.fixture
def project(tmp_path):
    repo = tmp_path / "project"
    write(repo / "pkg" / "__init__.py", "")
    write(repo / "pkg" / "calc.py", """
        def add(a, b):
            return a + b


        def mul(a, b):
            return a * b
    """)
    for name, call in (("add", "add(1, 2) == 3"), ("mul", "mul(2, 3) == 6")):
        write(repo / "tests" / ("test_%s.py" % name), """
            import time

            from pkg.calc import %s


            def test_%s():
                end = time.monotonic() + 0.2
                while time.monotonic() < end:
                    assert %s
        """ % (name, name, call))
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    return repo


def test_collect_with_entry_point_plugin_then_plan(venv, project, tmp_path):
    python = venv / "bin" / "python"
    evidence = tmp_path / "evidence"
    out = run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider",
              "--fastci-collect", evidence, cwd=project, env=clean_env())
    assert "2 passed" in out
    recorded = sorted(evidence.rglob("*.stacks"))
    assert recorded, "the entry-point plugin recorded no evidence"
    if sys.version_info[:2] == (3, 11) and os.path.exists(
            os.path.join(sysconfig.get_paths()["include"], "Python.h")):
        # The installed extension, its shared native sources compiled in,
        # arms code: the exact recorder of 3.11.
        recorders = {line for p in recorded for line in p.read_text().splitlines()
                     if line.startswith("# recorder: ")}
        assert recorders == {"# recorder: armed-code"}, recorders

    calc = project / "pkg" / "calc.py"
    calc.write_text(calc.read_text().replace("a * b", "b * a"))
    git(project, "commit", "-qam", "mul")
    plan = tmp_path / "plan.json"
    # The console script, not the checkout: fastci-opt only through FASTCI_OPT.
    run(venv / "bin" / "fastci", "plan", "--base", "HEAD~1", "--evidence",
        evidence, "-o", plan, cwd=project,
        env=clean_env(FASTCI_OPT=str(FASTCI_OPT)))
    planned = json.loads(plan.read_text())
    assert [t["name"] for t in planned["tests"]] == ["tests/test_mul.py::test_mul"]
    assert [t["name"] for t in planned["skipped"]] == ["tests/test_add.py::test_add"]
    assert planned["skipped"][0]["rule"] == "unaffected"
    # The plan's commands run on the interpreter that recorded the evidence
    # (the evidence's `python`, merge-evidence's evidence_python), not on the
    # first python3 on PATH, which may lack pytest.
    assert planned["python"] == str(python)
    assert planned["tests"][0]["argv"][:3] == [str(python), "-m", "pytest"]


def test_plugin_is_off_unless_asked(venv, project, tmp_path):
    out = run(venv / "bin" / "python", "-m", "pytest", "-q", "-p",
              "no:cacheprovider", "--trace-config", cwd=project,
              env=clean_env())
    assert "fastci.trace.pytest_plugin" in out  # loaded through pytest11
    assert "2 passed" in out
    assert not list(project.rglob("*.stacks"))
    # The plugin registered once even when a command line also names it.
    out = run(venv / "bin" / "python", "-m", "pytest", "-q", "-p",
              "no:cacheprovider", "-p", "fastci.trace.pytest_plugin",
              "--fastci-trace-out", tmp_path / "ev", cwd=project,
              env=clean_env())
    assert "2 passed" in out
    assert list((tmp_path / "ev").rglob("*.stacks"))


def test_console_script_without_fastci_opt_says_so(venv, tmp_path):
    env = clean_env(PATH=str(venv / "bin") + os.pathsep + "/usr/bin:/bin")
    out = run(venv / "bin" / "fastci", "plan", "--base", "HEAD", cwd=tmp_path,
              env=env, expect=2)
    assert "cannot find fastci-opt" in out


def test_broken_c_part_does_not_break_install(tmp_path):
    have_headers = os.path.exists(
        os.path.join(sysconfig.get_paths()["include"], "Python.h"))
    ok = textwrap.dedent("""
        #include <Python.h>
        static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "_okprobe",
                                         NULL, -1, NULL};
        PyMODINIT_FUNC PyInit__okprobe(void) { return PyModule_Create(&def); }
    """)
    src = package_copy(tmp_path, [
        ("fastci/trace/_brokenprobe.c", "this is not C\n"),
        ("fastci/trace/_okprobe.c", ok)])
    env_dir = tmp_path / "venv"
    run(SYSTEM_PYTHON, "-m", "venv", "--system-site-packages", env_dir)
    run(env_dir / "bin" / "pip", "install", src, env=clean_env())
    probe = ("import importlib.util as u; "
             "print(u.find_spec('fastci.trace._brokenprobe') is None, "
             "u.find_spec('fastci.trace._okprobe') is not None)")
    out = run(env_dir / "bin" / "python", "-c", probe, cwd=tmp_path,
              env=clean_env())
    assert out.split() == ["True", str(have_headers)]


def test_break_system_packages_into_a_prefix(tmp_path):
    prefix = tmp_path / "prefix"
    run(SYSTEM_PYTHON, "-m", "pip", "install", "--break-system-packages",
        "--prefix", prefix, package_copy(tmp_path), env=clean_env())
    # Debian's scheme puts it under PREFIX/local.
    assert list(prefix.rglob("bin/fastci"))
    site = next(prefix.rglob("fastci/trace/pytest_plugin.py"))
    assert (site.parent / "_hook" / "sitecustomize.py").exists()
