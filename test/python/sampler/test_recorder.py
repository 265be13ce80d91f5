"""The exact function recorder, import-time classification and file dependencies (format 2).

Drives real pytest sessions and `run`-wrapped children, reads the files back
with the package's reader, and merges them with fastci-opt end to end.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import (PYTHON, clean_env, other_pythons, read_evidence_file, recorded,
                      run_inner_pytest, write)
from fastci.trace import recorder as trace_recorder

ROOT = Path(__file__).resolve().parents[3]
FASTCI_OPT = Path(os.environ.get("FASTCI_BUILD_DIR", ROOT / "build")) / "bin" / "fastci-opt"

PACKAGE = {
    "pkg/__init__.py": "",
    "pkg/registry.py": """
        REGISTRY = {}

        def register(name):
            def deco(f):
                REGISTRY[name] = f
                return f
            return deco

        def env(name, default):
            return default
    """,
    "pkg/model.py": """
        import json
        import os

        from pkg.registry import env, register

        DEFAULTS = env("MODEL_DEFAULTS", 3)

        class Config:
            width = env("WIDTH", 8)

            def scaled(self, k):
                return self.width * k

        @register("linear")
        def linear(x):
            return x + 1

        def load(path):
            with open(path) as f:
                return json.load(f)

        def unused():
            return 0
    """,
    "pkg/lazy.py": """
        from pkg.registry import env

        LEVEL = env("LEVEL", 1)

        def level():
            return LEVEL
    """,
    "configs/train.yaml": "lr: 0.1\n",
    "configs/child.yaml": "k: 1\n",
    "data/golden.json": "[1, 2, 3]\n",
    "tests/test_model.py": """
        import os
        import subprocess
        import sys

        from pkg import model

        HERE = os.path.dirname(os.path.abspath(__file__))

        def test_reads_config():
            with open(os.path.join(HERE, "..", "configs", "train.yaml")) as f:
                assert f.read().startswith("lr")
            assert model.load(os.path.join(HERE, "..", "data", "golden.json")) == [1, 2, 3]
            # writing is not a dependency, nor reading Python sources
            with open(os.path.join(HERE, "..", "out.txt"), "w") as f:
                f.write("x")
            with open(__file__) as f:
                f.read()

        def test_pure():
            assert model.Config().scaled(2) == 16
            assert model.linear(1) == 2

        def test_lazy_import_and_child():
            import pkg.lazy
            assert pkg.lazy.level() == 1
            code = ("import pkg.model, os; print(open(os.path.join('configs', 'child.yaml')).read())")
            out = subprocess.run([sys.executable, "-c", code], check=True,
                                 stdout=subprocess.PIPE, universal_newlines=True)
            assert out.stdout.startswith("k")
    """,
}


@pytest.fixture
def repo(tmp_path):
    for name, text in PACKAGE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        write(tmp_path / name, text)
    subprocess.run(["git", "init", "-q", "."], cwd=str(tmp_path), check=True)
    subprocess.run(["git", "add", "-A"], cwd=str(tmp_path), check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"],
                   cwd=str(tmp_path), check=True)
    return tmp_path


def run_suite(repo, out, **env):
    proc = run_inner_pytest(repo, "--fastci-trace-out", str(out), "tests",
                            env=clean_env(PYTHONPATH=os.pathsep.join(
                                [clean_env()["PYTHONPATH"], str(repo)]), **env))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return recorded(out)


def test_scripts_a_test_runs_are_read(tmp_path):
    # bash reads the script, not Python: the spawn that names it records it
    (tmp_path / "scripts").mkdir()
    write(tmp_path / "scripts" / "run.sh", "echo run\n")
    write(tmp_path / "scripts" / "other.sh", "echo other\n")
    write(tmp_path / "scripts" / "cfg.yaml", "a: 1\n")
    (tmp_path / "tests").mkdir()
    write(tmp_path / "tests" / "test_s.py", """
        import os
        import subprocess
        import sys

        def test_spawns():
            subprocess.run(["sh", "scripts/run.sh", "--flag", "-x"], check=True)
            os.system("sh " + os.path.join("scripts", "other.sh") + " > /dev/null")
            subprocess.run("cat cfg.yaml > /dev/null", shell=True, check=True,
                           cwd="scripts")
            subprocess.run([sys.executable, "-c", "pass"], check=True)

        def test_none():
            pass
    """)
    found = run_suite(tmp_path, tmp_path / "ev")
    assert found["tests/test_s.py::test_spawns"]["reads"] == {
        "scripts/run.sh", "scripts/other.sh", "scripts/cfg.yaml"}
    assert found["tests/test_s.py::test_none"]["reads"] == set()


def test_reads_functions_and_import_time(repo):
    found = run_suite(repo, repo / "ev")
    reads = found["tests/test_model.py::test_reads_config"]
    assert reads["reads"] == {"configs/train.yaml", "data/golden.json"}
    assert {"test_reads_config", "load"} <= reads["functions"]
    pure = found["tests/test_model.py::test_pure"]
    assert pure["reads"] == set()
    assert pure["functions"] == {"test_pure", "Config.scaled", "linear"}
    assert pure["coverage"] == {"exact"}
    # module bodies, class bodies, decorators and what module bodies call run
    # at import time: during collection, not in any test
    collection = found["<collection>"]
    assert {"<module>", "Config", "env", "register", "register.<locals>.deco"} \
        <= collection["import_functions"]
    assert "unused" not in collection["import_functions"] | pure["functions"]
    lazy = found["tests/test_model.py::test_lazy_import_and_child"]
    # the lazy import in the test and the child's imports are import-time;
    # the child's read of a config and its imports are the test's
    assert {"<module>", "env"} <= lazy["import_functions"]
    assert "env" not in lazy["functions"]
    assert {"test_lazy_import_and_child", "level"} <= lazy["functions"]
    assert {"pkg/lazy.py", "pkg/model.py", "pkg/registry.py", "pkg/__init__.py"} <= lazy["imports"]
    assert "configs/child.yaml" in lazy["reads"]


def test_fork_child_reports_only_its_own_imports(repo):
    """A fork child (a DataLoader worker) inherits the parent's sys.modules, whose
    bodies it never runs: its file lists only what it imports after the fork,
    not the pytest process's modules (which made every import-time change reach
    the tests forking workers). Likewise it records the functions it runs
    beyond those the test already ran in the parent before the fork (it
    touches none of the parent's records, each touch a copied page): the
    test's union is every function either process ran."""
    write(repo / "pkg" / "forked.py", """
        def value():
            return 1
    """)
    write(repo / "tests" / "test_fork.py", """
        import multiprocessing

        from pkg import model

        def work(queue):
            import pkg.forked
            queue.put(pkg.forked.value() + model.linear(1) + model.Config().scaled(0))

        def test_fork_worker():
            import pkg.lazy  # imported by the test in the parent, before the fork
            assert model.Config().scaled(1) == 8  # run by the parent, then by the child
            ctx = multiprocessing.get_context("fork")
            queue = ctx.Queue()
            child = ctx.Process(target=work, args=(queue,))
            child.start()
            assert queue.get(timeout=60) == 3
            child.join(60)
            assert child.exitcode == 0
    """)
    out = repo / "ev"
    proc = run_inner_pytest(repo, "--fastci-trace-out", str(out), "tests/test_fork.py",
                            env=clean_env(PYTHONPATH=os.pathsep.join(
                                [clean_env()["PYTHONPATH"], str(repo)])))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    by_pid = {}
    for path in sorted(out.rglob("*.stacks")):
        evidence = read_evidence_file(path)
        if evidence.header["test-id"] == "tests/test_fork.py::test_fork_worker":
            entry = by_pid.setdefault(evidence.header["pid"], {"imports": set(), "functions": set()})
            entry["imports"].update(evidence.imports)
            entry["functions"].update(f.qualname for f in evidence.functions)
    parent = [e for e in by_pid.values() if "test_fork_worker" in e["functions"]]
    child = [e for e in by_pid.values() if "work" in e["functions"]]
    assert len(parent) == 1 and len(child) == 1, by_pid
    assert child[0]["imports"] == {"pkg/forked.py"}, child[0]
    assert "pkg/lazy.py" in parent[0]["imports"], parent[0]
    assert "pkg/forked.py" not in parent[0]["imports"], parent[0]
    # what the child ran beyond the parent is its own, inherited code included;
    # what the parent ran before the fork is the parent's record only
    assert {"work", "linear", "value"} <= child[0]["functions"], child[0]
    assert "Config.scaled" in parent[0]["functions"], parent[0]
    assert "Config.scaled" not in child[0]["functions"], child[0]
    assert "linear" not in parent[0]["functions"], parent[0]


def test_a_fork_child_with_nothing_to_report_writes_nothing(repo):
    """A fork child stays latent (no sampling thread, no file) until it has
    something to report: a DataLoader worker that runs only the library's
    loop writes nothing. Running repository code new to the test, importing
    a module or opening a repository file each end latency, and the child
    then writes its file as any other."""
    if trace_recorder.extension() is None:
        pytest.skip("latency needs the recorder's extension")
    write(repo / "data.json", '{"width": 8}')
    write(repo / "tests" / "test_latent.py", """
        import importlib
        import json
        import multiprocessing
        import os
        import time

        from pkg import model

        def test_children():
            ctx = multiprocessing.get_context("fork")
            pids = {}
            for name, target, args in (("idle", time.sleep, (0.05,)),
                                       ("runs", model.linear, (1,)),
                                       ("imports", importlib.import_module, ("pkg.lazy",)),
                                       ("opens", open, ("data.json",))):
                child = ctx.Process(target=target, args=args)
                child.start()
                child.join(60)
                assert child.exitcode == 0, name
                pids[name] = child.pid
            with open(os.environ["PIDS_FILE"], "w") as f:
                json.dump(pids, f)
    """)
    out, pids_file = repo / "ev", repo / "pids.json"
    env = clean_env(PYTHONPATH=os.pathsep.join([clean_env()["PYTHONPATH"], str(repo)]),
                    PIDS_FILE=str(pids_file))
    proc = run_inner_pytest(repo, "--fastci-trace-out", str(out), "tests/test_latent.py", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    pids = json.loads(pids_file.read_text())
    by_pid = {}
    for path in sorted(out.rglob("*.stacks")):
        evidence = read_evidence_file(path)
        if evidence.header["test-id"] == "tests/test_latent.py::test_children":
            by_pid[int(evidence.header["pid"])] = evidence
    assert pids["idle"] not in by_pid, sorted(by_pid)
    for name in ("runs", "imports", "opens"):
        assert pids[name] in by_pid, (name, sorted(by_pid))
        assert by_pid[pids[name]].header["complete"] == "true", name
    assert {f.qualname for f in by_pid[pids["runs"]].functions} == {"linear"}
    assert by_pid[pids["imports"]].imports == {"pkg/lazy.py"}
    assert by_pid[pids["opens"]].reads == {"data.json"}
    # the pytest process and the three children that had something to say
    assert len(by_pid) == 4, sorted(by_pid)


def test_identical_evidence_in_two_runs(repo):
    """Function sets do not depend on timing: two runs give the same entity lines."""
    first = run_suite(repo, repo / "a")
    second = run_suite(repo, repo / "b")
    strip = {t: {k: v for k, v in e.items()} for t, e in first.items()}
    assert strip == second


def test_recorder_off_says_sampled(repo):
    found = run_suite(repo, repo / "ev", FASTCI_TRACE_RECORDER="off")
    assert all(e["coverage"] == {"sampled"} for e in found.values()), found
    assert all(not e["functions"] for e in found.values())


@pytest.mark.skipif(not FASTCI_OPT.exists(), reason="fastci-opt not built")
def test_merge_evidence_end_to_end(repo):
    run_suite(repo, repo / "ev")
    module = repo / "repo.fir"
    subprocess.run([str(FASTCI_OPT), "--parse-python=root=%s" % repo, "-o", str(module)],
                   check=True)
    merged = subprocess.run([str(FASTCI_OPT), str(module),
                             "--pass-pipeline=merge-evidence{dir=%s}" % (repo / "ev")],
                            check=True, stdout=subprocess.PIPE, universal_newlines=True).stdout
    records = {line.split('"')[1]: line for line in merged.splitlines()
               if line.startswith("evidence ")}
    assert 'reads = ["configs/train.yaml", "data/golden.json"]' in \
        records["tests/test_model.py::test_reads_config"]
    assert "reads" not in records["tests/test_model.py::test_pure"]
    assert 'functions = [@"pkg.model.Config.scaled", @"pkg.model.linear", ' \
        '@"tests.test_model.test_pure"]' in records["tests/test_model.py::test_pure"]
    assert 'coverage = "exact"' in records["tests/test_model.py::test_pure"]
    header = merged.splitlines()[0]
    assert 'evidence_python = "%s"' % PYTHON in header
    # what a module body calls is attributed to that (innermost importing) module
    assert ('pkg.model = [@"pkg.model", @"pkg.model.Config", @"pkg.registry.env", '
            '@"pkg.registry.register", @"pkg.registry.register.<locals>.deco"]') in header
    assert 'pkg.lazy = [@"pkg.lazy", @"pkg.registry.env"]' in header


@pytest.mark.parametrize("python", other_pythons() or [pytest.param(None, marks=pytest.mark.skip(
    reason="no other CPython 3.9+ interpreters installed"))])
def test_children_on_other_versions(tmp_path, python):
    """3.12+ records with sys.monitoring; older ones without an extension built for
    them fall back to sampling and say so (the extension is built for the build's
    interpreter only, and another version never loads it)."""
    write(tmp_path / "job.py", """
        class Trainer:
            def step(self):
                return helper()

        def helper():
            return 1

        def gen():
            yield helper()

        Trainer().step()
        list(gen())
    """)
    cmd = [PYTHON, "-m", "fastci.trace", "run", "--test-id", "v", "--out", str(tmp_path / "o"),
           "--", python, "job.py"]
    subprocess.run(cmd, cwd=str(tmp_path), env=clean_env(), check=True)
    entry = recorded(tmp_path / "o")["v"]
    version = tuple(map(int, os.path.basename(python)[len("python"):].split(".")))
    if version >= (3, 12):
        assert entry["coverage"] == {"exact"}
        # the script's own body runs as __main__, at test time, not as an
        # import (merge-evidence files module code with import_functions);
        # the class body is import-time
        assert entry["functions"] == {"<module>", "Trainer.step", "helper", "gen"}, entry
        assert entry["import_functions"] == {"Trainer"}, entry
    else:
        assert entry["coverage"] == {"sampled"}
