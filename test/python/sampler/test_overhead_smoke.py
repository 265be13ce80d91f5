"""utils/bench/sampler_overhead.py runs end to end and reports every mode (not a timing test)."""

import re
import subprocess
from pathlib import Path

from conftest import PYTHON, clean_env

BENCH = Path(__file__).resolve().parents[3] / "utils" / "bench" / "sampler_overhead.py"


def run_bench(*args):
    """Run the benchmark on the pure-Python workload; its output, once it succeeded."""
    proc = subprocess.run([PYTHON, str(BENCH), "--workload", "pure-python"] + list(args),
                          env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=300)
    assert proc.returncode == 0, proc.stdout
    return proc


def test_overhead_benchmark_smoke():
    proc = run_bench("--runs", "3", "--seconds", "0.3")
    for mode in ("traced", "sampling"):
        assert re.search(r"%s +workload [+-]\d+\.\d+%% .*IQR" % mode, proc.stdout), proc.stdout
        assert re.search(r"%s +workload CPU \(all threads\) [+-]\d+\.\d+%%" % mode, proc.stdout), \
            proc.stdout
        tick = re.search(r"%s +sampling (\d+\.\d) us CPU per tick" % mode, proc.stdout)
        assert tick and float(tick.group(1)) > 0, proc.stdout
    # The default records functions exactly (the extension is built by the
    # project's CMake); with the recorder off there is neither it nor a burst.
    assert re.search(r"traced +.*call burst 0\.000s CPU per process; coverage exact "
                     r"\((armed-code|eval-frame|sys\.monitoring)\)", proc.stdout), proc.stdout
    assert re.search(r"sampling +.*call burst 0\.000s CPU per process; coverage sampled \(none\)",
                     proc.stdout), proc.stdout
    assert "load average" in proc.stdout


def test_paired_overhead_benchmark_smoke():
    proc = run_bench("--paired", "4", "--chunk", "0.05")
    line = re.search(r"pure-python: 4 pairs of \d+\.\d+s chunks in one interpreter, 50 Hz: "
                     r"sampling [+-]\d+\.\d+% \(median; 95% CI [+-]\d+\.\d+\.\.[+-]\d+\.\d+%.*"
                     r"sampling (\d+\.\d) us CPU per tick, (\d+\.\d+) ticks/s", proc.stdout)
    assert line, proc.stdout
    # The sampler really ran during the timed chunks.
    assert float(line.group(1)) > 0 and float(line.group(2)) > 0, proc.stdout
    assert re.search(r"pure-python: fastest 1 chunks of each: \d+\.\d+s without, "
                     r"\d+\.\d+s with sampling: [+-]\d+\.\d+%; at the full 50 ticks/s: median "
                     r"[+-]\d+\.\d+%, fastest [+-]\d+\.\d+%", proc.stdout), proc.stdout


COLLECT_BENCH = BENCH.parent / "collect_overhead.py"


def test_collect_overhead_benchmark_smoke(tmp_path):
    """collect_overhead.py times a suite plain and under --fastci-collect,
    and refuses commands it cannot instrument."""
    (tmp_path / "test_a.py").write_text("def test_a():\n    assert sum(range(10)) == 45\n")
    proc = subprocess.run(
        [PYTHON, str(COLLECT_BENCH), "--pairs", "1", "--cwd", str(tmp_path),
         "--peer-env", "FASTCI_TRACE_RECORDER=off", "--",
         PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_a.py"],
        env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        universal_newlines=True, timeout=300)
    assert proc.returncode == 0, proc.stdout
    for kind in ("plain", "collect", "collect FASTCI_TRACE_RECORDER=off"):
        assert re.search(r"  %s: +wall median \d+\.\d+s \(\d+\.\d+\.\.\d+\.\d+\), CPU median"
                         % re.escape(kind), proc.stdout), proc.stdout
    assert re.search(r"collect: .*per round vs plain: wall median [+-]\d+\.\d+%.*"
                     r"; fastest vs fastest: wall [+-]\d+\.\d+%, CPU [+-]\d+\.\d+%$",
                     proc.stdout, re.MULTILINE), proc.stdout
    bad = subprocess.run([PYTHON, str(COLLECT_BENCH), "--", PYTHON, "test_a.py"],
                         env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True, timeout=60, cwd=str(tmp_path))
    assert bad.returncode != 0 and "must run `-m pytest`" in bad.stdout, bad.stdout


PROCESS_BENCH = BENCH.parent / "process_overhead.py"


def test_process_overhead_benchmark_smoke(tmp_path):
    """process_overhead.py runs a program plain and as a traced child, and
    splits the traced cost by thread and phase (the shim's import, start and
    final stop; the exec hook with its judging of files and arming; the writes); a
    program that fails is an error, not a figure."""
    (tmp_path / "helper.py").write_text("def total(n):\n    return sum(range(n))\n")
    # A multiprocessing fork worker leaves by os._exit: its figures count too.
    (tmp_path / "child.py").write_text(
        "import json, multiprocessing, helper\n"
        "worker = multiprocessing.get_context('fork').Process(target=helper.total, args=(10,))\n"
        "worker.start()\nworker.join()\n"
        "print(json.dumps(helper.total(10)))\n")
    proc = subprocess.run(
        [PYTHON, str(PROCESS_BENCH), "--rounds", "1", "--cwd", str(tmp_path),
         "--peer-env", "FASTCI_TRACE_RATE=0.01", "--", PYTHON, "child.py"],
        env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        universal_newlines=True, timeout=300)
    assert proc.returncode == 0, proc.stdout
    number = r"-?\d+\.\d"
    plain = re.search(r"  plain: +wall %s ms \(min %s\); cpu .*; main %s ms" % ((number,) * 3),
                      proc.stdout)
    assert plain and "import" not in plain.group(0), proc.stdout
    assert re.search(r"  plain: .*; processes 2\.0 \(min 2\.0\);", proc.stdout), proc.stdout
    for kind in ("traced", "traced FASTCI_TRACE_RATE=0.01"):
        line = re.search(r"  %s: +wall .*" % re.escape(kind), proc.stdout)
        assert line, proc.stdout
        assert "; processes 2.0 (min 2.0) +0.0 / min +0.0;" in line.group(0), line.group(0)
        for phase in ("main", "other", "import", "start", "stop", "exec", "judging", "arming",
                      "write"):
            assert re.search(r"%s %s ms \(min %s\) [+-]" % (phase, number, number)
                             if phase in ("main", "other") else
                             r"%s %s ms \(min %s\)" % (phase, number, number),
                             line.group(0)), (phase, line.group(0))
    (tmp_path / "fails.py").write_text("raise SystemExit(3)\n")
    bad = subprocess.run([PYTHON, str(PROCESS_BENCH), "--rounds", "1", "--cwd", str(tmp_path),
                          "--", PYTHON, "fails.py"],
                         env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True, timeout=120)
    assert bad.returncode != 0 and "exited 3" in bad.stdout, bad.stdout
