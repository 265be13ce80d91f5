#!/usr/bin/python3
"""What nightly evidence collection costs on any pytest suite: plain runs
against runs under `--fastci-collect`, interleaved.

    collect_overhead.py [--pairs N] [--cwd DIR] [--peer-env KEY=VALUE ...] \\
        -- PYTHON -m pytest ARGS...

The command is run as given (plain) and with `-p fastci.trace.pytest_plugin
--fastci-collect=OUT` inserted after `-m pytest` (collect), in N rounds
ABBA..., after one unmeasured run of each kind; both sides cache their
bytecode (PYTHONPYCACHEPREFIX, PYTHONDONTWRITEBYTECODE unset), as an
installed package has it. `--peer-env KEY=VALUE` adds collect runs with
that setting to the same rounds (several settings: separated by spaces,
`"K1=V1 K2=V2"`), e.g. to tell the sampler's and the recorder's shares. Prints wall and CPU seconds (all the
processes of the run) per kind, median and range, and the per-round ratio
against the plain run beside it, and the fastest run of each kind against
the fastest plain one, with the load average before and after.
fastci.trace is imported from this checkout (python/ on PYTHONPATH), so a
suite that runs from its own virtual environment measures this tree's
sampler. Exit status 1 when a run fails (the suite's own exit status other
than 0 or 1, i.e. no test report).
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def collect_command(command, out):
    """`command` with the plugin and output directory inserted after `-m pytest`."""
    for i in range(len(command) - 1):
        if command[i] == "-m" and command[i + 1] == "pytest":
            return (command[:i + 2] + ["-p", "fastci.trace.pytest_plugin",
                                       "--fastci-collect=" + out] + command[i + 2:])
    raise SystemExit("collect_overhead: error: the command must run `-m pytest`")


def run(command, cwd, env):
    """(wall seconds, CPU seconds of the run's processes) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        sys.stderr.write(proc.stderr[-3000:])
        raise SystemExit("collect_overhead: error: %s exited %d" % (command[0], proc.returncode))
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def spread(values):
    return "median %.2fs (%.2f..%.2f)" % (statistics.median(values), min(values), max(values))


def ratio(values):
    values = sorted(values)
    return "median %+.1f%% (min %+.1f%%, max %+.1f%%)" % (
        statistics.median(values), values[0], values[-1])


def interleave(kinds, rounds, run_kind):
    """{kind: [run_kind(kind) per round]}: one unmeasured run of each kind
    (bytecode caches, page cache), then `rounds` rounds in ABBA order."""
    for kind in kinds:
        run_kind(kind)
    results = {k: [] for k in kinds}
    for i in range(rounds):
        for kind in (kinds if i % 2 == 0 else kinds[::-1]):
            results[kind].append(run_kind(kind))
    print("%d interleaved rounds after one warm-up run of each kind; load average now %.2f"
          % (rounds, os.getloadavg()[0]))
    return results


def parse_arguments(doc, rounds, default):
    """(args, command) of a benchmark that runs `-- COMMAND` in `--ROUNDS`
    interleaved rounds in `--cwd`, with `--peer-env KEY=VALUE` settings."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--" + rounds, type=int, default=default)
    parser.add_argument("--cwd", default=os.getcwd())
    parser.add_argument("--peer-env", metavar="KEY=VALUE", action="append", default=[])
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command after --")
    if getattr(args, rounds) < 1:
        parser.error("--%s must be at least 1" % rounds)
    for setting in args.peer_env:
        if not setting.split() or not all("=" in s for s in setting.split()):
            parser.error("--peer-env wants KEY=VALUE, got %r" % setting)
    return args, command


def main():
    args, command = parse_arguments(__doc__, "pairs", 5)

    work = tempfile.mkdtemp(prefix="collect-overhead-")
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = os.path.join(work, "pycache")
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(ROOT, "python")] + [p for p in [env.get("PYTHONPATH")] if p])
    kinds = {"plain": (None, None), "collect": (None, "collect")}
    for setting in args.peer_env:
        kinds["collect " + setting] = (setting, "collect")

    def run_kind(kind):
        setting, mode = kinds[kind]
        kind_env = dict(env)
        for item in (setting or "").split():
            key, value = item.split("=", 1)
            kind_env[key] = value
        out = os.path.join(work, "out")
        shutil.rmtree(out, ignore_errors=True)
        cmd = collect_command(command, out) if mode else command
        result = run(cmd, args.cwd, kind_env)
        if mode and not any(name.endswith(".stacks") for _, _, names in os.walk(out)
                            for name in names):
            raise SystemExit("collect_overhead: error: the %s run wrote no evidence "
                             "(can its Python import fastci.trace?)" % kind)
        return result

    print("suite: %s (in %s); load average before %.2f %.2f %.2f on %d CPUs"
          % (" ".join(command), args.cwd, *os.getloadavg(), os.cpu_count()), flush=True)
    order = list(kinds)
    results = interleave(order, args.pairs, run_kind)
    wall = {k: [w for w, _ in results[k]] for k in order}
    cpu = {k: [c for _, c in results[k]] for k in order}
    for kind in order:
        line = "  %-28s wall %s, CPU %s" % (kind + ":", spread(wall[kind]), spread(cpu[kind]))
        if kind != "plain":
            line += "; per round vs plain: wall %s, CPU %s" % (
                ratio([100.0 * (a / b - 1) for a, b in zip(wall[kind], wall["plain"])]),
                ratio([100.0 * (a / b - 1) for a, b in zip(cpu[kind], cpu["plain"])]))
            # Load only ever slows a run down: the fastest runs are the
            # least disturbed, a second view where rounds scatter widely.
            line += "; fastest vs fastest: wall %+.1f%%, CPU %+.1f%%" % (
                100.0 * (min(wall[kind]) / min(wall["plain"]) - 1),
                100.0 * (min(cpu[kind]) / min(cpu["plain"]) - 1))
        print(line)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
