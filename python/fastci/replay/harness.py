"""`fastci replay`: scores FastCI and baselines on a repository's own history.

Given a git repository, its pytest command and a window of N first-parent
commits ending at `--head`, the replay checks out each commit in turn (in
the repository itself, which must have a clean work tree; the original
HEAD is restored at the end) and

1. builds ground truth: per-test line coverage in every process
   (fastci.replay.linetrace), fully at the window's base and then
   incrementally: only tests whose coverage touched a changed file, tests of
   changed test files and new tests are rerun (every `--validate-every`
   commits a full run checks that shortcut); the tests a commit *affects*
   (changes.Targets); up to `--mutants` single-line mutants of its added
   lines (mutants.py), each run against the passing tests that cover it;
2. plans every strategy: `fastci plan` with evidence from `fastci collect`
   (at the base, refreshed every `--refresh-every` commits, or with `day`
   after the last commit of each day, as a nightly job would), run-all,
   file-level runtime, import graph, the exact-line oracle;
3. records per commit, in STATE/commit-NNN.json, what each selected, what it
   cost and what it missed, then a checkpoint (STATE/ckpt-NNN.json) of the
   coverage; an interrupted replay resumes from the last checkpoint and
   figures only ever cover finished commits.

docs/Evaluation.md ("Replaying a real repository") defines every figure.
"""

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

from . import changes as changes_mod
from . import linetrace, mutants, strategies

EXIT_ERROR = 2
STATE_SCHEMA = "fastci-replay/1"
STRATEGIES = ("run-all", "fastci", "file-runtime", "import-graph", "oracle")


class ReplayError(Exception):
    """Reported as one `fastci replay: error:` line, exit 2."""


def package_root():
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def note(message):
    sys.stderr.write("fastci replay: %s\n" % message)
    sys.stderr.flush()


def write_json(path, value):
    with open(path + ".tmp", "w") as f:
        json.dump(value, f, sort_keys=True)
    os.replace(path + ".tmp", path)


def read_json(path):
    with open(path) as f:
        return json.load(f)


# ---------------------------------------------------------------------------
# Running the suite
# ---------------------------------------------------------------------------

class RunResult:
    """One suite run: `status` (None: timed out), `collected` (ids run or
    deselected by the replay), `collectable` (every id before -k/-m/
    --deselect), `results` {id: (outcome, seconds)}, `traced` ((lines,
    calls), each {test: {path: set(lines)}}, or None), `seconds`."""

    def __init__(self, status, collected=(), collectable=(), results=None, traced=None,
                 seconds=0.0):
        self.status, self.collected, self.collectable = status, list(collected), list(collectable)
        self.results, self.traced, self.seconds = results or {}, traced, seconds


class Suite:
    """The user's pytest command, run under the replay's plugin."""

    def __init__(self, repo, command, state, timeout, extra_env):
        from fastci.cli import pytest_arguments_start
        start = pytest_arguments_start(command)
        if start is None:
            raise ReplayError("the test command must run pytest ('pytest ...' or "
                              "'PYTHON -m pytest ...'), got: %s" % shlex.join(command))
        self.repo = repo
        self.command = command
        self.start = start
        self.state = state
        self.timeout = timeout
        self.extra_env = extra_env
        self.logs = os.path.join(state, "logs")
        os.makedirs(self.logs, exist_ok=True)

    def run(self, label, run_ids=None, known_ids=None, trace=False, timeout=None):
        """Runs the suite (or the `run_ids`, plus tests not in `known_ids`):
        a RunResult."""
        scratch = tempfile.mkdtemp(prefix="run-", dir=self.state)
        try:
            env = dict(os.environ)
            env.update(self.extra_env)
            env["PYTHONPATH"] = os.pathsep.join(
                [package_root()] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
            results_path = os.path.join(scratch, "results.json")
            env[linetrace.ENV_RESULTS] = results_path
            if run_ids is not None:
                spec = os.path.join(scratch, "run.json")
                write_json(spec, {"run": sorted(run_ids), "known": sorted(known_ids or ())})
                env[linetrace.ENV_RUN] = spec
            trace_dir = os.path.join(scratch, "trace")
            if trace:
                env[linetrace.ENV_OUT] = trace_dir
                env[linetrace.ENV_ROOT] = self.repo
            argv = (self.command[:self.start]
                    + ["-p", "fastci.replay.linetrace", "--continue-on-collection-errors"]
                    + self.command[self.start:])
            log_path = os.path.join(self.logs, label + ".log")
            began = time.monotonic()
            with open(log_path, "w") as log:
                try:
                    proc = subprocess.Popen(argv, cwd=self.repo, env=env, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True)
                except OSError as e:
                    raise ReplayError("the test command cannot start: %s: %s"
                                      % (argv[0], e.strerror))
                try:
                    status = proc.wait(timeout=timeout or self.timeout)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, 9)
                    proc.wait()
                    status = None
                except BaseException:
                    # Interrupted: the suite (its own session) goes with us.
                    os.killpg(proc.pid, 9)
                    proc.wait()
                    raise
            seconds = time.monotonic() - began
            if status is None:
                return RunResult(None, seconds=seconds)
            if not os.path.exists(results_path):
                raise ReplayError("the test command did not run pytest to its end (exit %d); "
                                  "see %s" % (status, log_path))
            data = read_json(results_path)
            results = {k: (v[0], float(v[1])) for k, v in data["results"].items()}
            traced = None
            if trace:
                calls = {}
                traced = (linetrace.read_line_traces(trace_dir, calls), calls)
            return RunResult(status, data["collected"], data.get("collectable", data["collected"]),
                             results, traced, seconds)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


# ---------------------------------------------------------------------------
# Coverage state
# ---------------------------------------------------------------------------

def _encode(files):
    return {path: sorted(lines) for path, lines in files.items()}


def _decode(files):
    return {path: set(lines) for path, lines in files.items()}


class Coverage:
    """Per-test coverage of every process (`own`), the lines of the 'call'
    events among it (`calls`), and the import-time lines of the main process
    (`imports`, the `<import>` pseudo test)."""

    def __init__(self, own=None, imports=None, calls=None):
        self.own = own or {}
        self.imports = imports or {}
        self.calls = calls or {}

    def of(self, test):
        """A test's coverage: its own lines plus the import-time lines of every
        file it executed (those ran once, at collection, for it too)."""
        own = self.own.get(test)
        if own is None:
            return None
        merged = {path: set(lines) for path, lines in own.items()}
        for path in own:
            if path in self.imports:
                merged[path] |= self.imports[path]
        return merged

    def hits(self, targets, test, parent):
        """`targets.hits` for `test`, this coverage at the commit, `parent`'s
        at its parent."""
        return targets.hits(parent.of(test), parent.calls.get(test), self.of(test),
                            self.calls.get(test))

    def update(self, traced, calls, rerun, collected):
        """Folds a (partial) traced run in: rerun tests take their new lines,
        tests no longer collected are dropped, import lines are replaced."""
        imports = traced.pop(linetrace.IMPORT_TEST_ID, {})
        calls.pop(linetrace.IMPORT_TEST_ID, None)
        own = {t: v for t, v in self.own.items() if t in collected and t not in rerun}
        entered = {t: v for t, v in self.calls.items() if t in own}
        for test in rerun:
            if test in collected:
                own[test] = traced.get(test, {})
                entered[test] = calls.get(test, {})
        return Coverage(own, imports, entered)

    def to_json(self):
        return {"own": {t: _encode(f) for t, f in self.own.items()}, "imports": _encode(self.imports),
                "calls": {t: _encode(f) for t, f in self.calls.items()}}

    @staticmethod
    def from_json(data):
        return Coverage({t: _decode(f) for t, f in data["own"].items()}, _decode(data["imports"]),
                        {t: _decode(f) for t, f in data.get("calls", {}).items()})


# ---------------------------------------------------------------------------
# The replay
# ---------------------------------------------------------------------------

class Replay:
    def __init__(self, args, command):
        self.args = args
        self.repo = os.path.abspath(args.repo)
        self.state = os.path.abspath(args.state)
        self.command = command

    # -- setup ---------------------------------------------------------------

    def check_repo(self):
        if not os.path.isdir(self.repo):
            raise ReplayError("'%s' is not a directory" % self.args.repo)
        proc = subprocess.run(["git", "-C", self.repo, "rev-parse", "--show-toplevel"],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise ReplayError("'%s' is not a git repository" % self.args.repo)
        if os.path.realpath(proc.stdout.strip()) != os.path.realpath(self.repo):
            raise ReplayError("'%s' is not the top of its git work tree (%s is)"
                              % (self.args.repo, proc.stdout.strip()))
        dirty = changes_mod.git(self.repo, "status", "--porcelain", "--untracked-files=no").strip()
        if dirty:
            raise ReplayError("'%s' has uncommitted changes to tracked files; the replay "
                              "checks out other commits there" % self.args.repo)

    def window(self):
        """[base, c1, ..., cN]: N first-parent commits ending at --head."""
        try:
            head = changes_mod.git(self.repo, "rev-parse", "--verify", self.args.head + "^{commit}").strip()
        except changes_mod.GitError:
            raise ReplayError("'%s' is not a commit of %s" % (self.args.head, self.args.repo))
        shas = changes_mod.git(self.repo, "rev-list", "--first-parent",
                               "--max-count=%d" % (self.args.commits + 1), head).split()
        if len(shas) < self.args.commits + 1:
            raise ReplayError("window of %d commits is larger than the history: %s has %d "
                              "first-parent commits before it" % (self.args.commits, self.args.head,
                                                                  len(shas) - 1))
        return list(reversed(shas))

    def checkout(self, sha):
        proc = subprocess.run(["git", "-C", self.repo, "-c", "advice.detachedHead=false",
                               "checkout", "-q", "--detach", sha], capture_output=True, text=True)
        if proc.returncode != 0:
            raise ReplayError("cannot check out %s: %s" % (
                sha[:12], (proc.stderr.strip().splitlines() or ["git exit %d" % proc.returncode])[-1]))

    def config(self, shas):
        return {"schema": STATE_SCHEMA, "repo": self.repo, "commits": shas,
                "command": self.command, "refresh_every": self.args.refresh_every,
                "mutants": self.args.mutants, "env": sorted(self.args.env),
                "truth": self.args.truth and os.path.abspath(self.args.truth),
                "trace_pr_runs": self.args.trace_pr_runs}

    # -- FastCI --------------------------------------------------------------

    def fastci_env(self):
        env = dict(os.environ)
        env.update(self.extra_env)
        env["PYTHONPATH"] = os.pathsep.join(
            [package_root()] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        env["FASTCI_OPT"] = self.fastci_opt
        return env

    def fastci(self, index, subcommand, *args, extra_env=None):
        """Runs `fastci SUBCOMMAND ARGS` in the checkout, logged; returns its
        wall time. Failing is a replay error naming the log."""
        argv = [sys.executable, "-m", "fastci.cli", subcommand, *args]
        began = time.monotonic()
        log_path = os.path.join(self.suite.logs, "%03d-%s.log" % (index, subcommand))
        with open(log_path, "w") as log:
            proc = subprocess.Popen(argv, cwd=self.repo, env=dict(self.fastci_env(), **(extra_env or {})), stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
            try:
                status = proc.wait()
            except BaseException:
                os.killpg(proc.pid, 9)
                proc.wait()
                raise
        if status != 0:
            raise ReplayError("fastci %s failed at %s (exit %d); see %s" % (
                subcommand, self.shas[index][:12], status, log_path))
        return time.monotonic() - began

    def collect(self, index, previous_dir, only=None, known=()):
        """`fastci collect` at the checked-out commit into a new evidence
        directory holding the previous nights too (the team's one folder).
        With `only`, just those tests run (a PR run under `--trace`): the
        replay's plugin deselects the others."""
        out = os.path.join(self.state, "evidence-%03d" % index)
        shutil.rmtree(out, ignore_errors=True)
        if previous_dir and os.path.isdir(os.path.join(self.state, previous_dir)):
            shutil.copytree(os.path.join(self.state, previous_dir), out)
        command, extra = self.command, {}
        if only is not None:
            spec = os.path.join(self.state, "pr-run.json")
            write_json(spec, {"run": sorted(only), "known": sorted(known)})
            extra[linetrace.ENV_RUN] = spec
            start = self.suite.start
            command = command[:start] + ["-p", "fastci.replay.linetrace"] + command[start:]
        seconds = self.fastci(index, "collect", "--out", out, "--repo", self.repo, "--keep-going",
                              *(["--nights", str(self.args.nights)] if self.args.nights else []),
                              "--", *command, extra_env=extra)
        return os.path.basename(out), seconds

    def refresh_after(self, index, refresh, record, timings):
        """The evidence the next commit plans with: a nightly collect every
        --refresh-every commits; with --trace-pr-runs, otherwise the
        evidence of this commit's FastCI plan run under the sampler."""
        last = index == len(self.shas) - 1
        if self.nightly_after(index) and not last:
            evidence, timings["collect"] = self.collect(index, refresh["evidence"])
            return {"index": index, "evidence": evidence}
        if self.args.trace_pr_runs and not last and record["selected"]["fastci"]:
            evidence, timings["pr_trace"] = self.collect(
                index, refresh["evidence"], only=record["selected"]["fastci"],
                known=record["durations"])
            return dict(refresh, evidence=evidence, pr_traced=index)
        return refresh

    def nightly_after(self, index):
        """Whether a nightly collect runs on commit `index`: every
        --refresh-every commits, or with `day` on the last commit of each
        (UTC) day, the tree a job scheduled at midnight finds."""
        every = self.args.refresh_every
        if every == REFRESH_DAILY:
            if index + 1 >= len(self.shas):
                return False
            return commit_day(self.repo, self.shas[index]) != \
                commit_day(self.repo, self.shas[index + 1])
        return bool(every) and index % every == 0

    def plan(self, index, evidence):
        plan_path = os.path.join(self.state, "plan-%03d.json" % index)
        seconds = self.fastci(index, "plan", "--repo", self.repo, "--base", self.shas[index - 1],
                              "--head", self.shas[index], "--evidence",
                              os.path.join(self.state, evidence), "-o", plan_path,
                              *self.args.plan_arg)
        plan = read_json(plan_path)
        os.remove(plan_path)
        return plan, seconds

    # -- one commit ----------------------------------------------------------

    def fastci_selection(self, index, refresh, collected, collectable, affected):
        """FastCI's plan for commit `index` (checked out) with the evidence of
        `refresh`, mapped onto the collected ids, with its reasons. Plan
        names outside the suite (files it does not collect, ids its -k/-m/
        --deselect leave out) are *out of scope*; a name in a file the suite
        collects that matches no collectable id is *not collectable*."""
        plan, seconds = self.plan(index, refresh["evidence"])
        plan_names = [t["name"] for t in plan.get("tests", [])]
        selected, unknown = strategies.expand(plan_names, collected)
        suite_files = {strategies.test_file(t) for t in collectable}
        _, unmatched = strategies.expand(unknown, collectable)
        uncollectable = [n for n in unmatched if strategies.test_file(n) in suite_files]
        out_of_scope = [n for n in unknown if n not in set(uncollectable)]
        why = {t["name"]: "%s: %s" % (t.get("rule", ""), t.get("reason", ""))
               for t in plan.get("tests", [])}
        skipped_why = {e.get("name"): "%s: %s" % (e.get("rule", ""), e.get("reason", ""))
                       for e in plan.get("skipped", [])}
        skipped_why.update({e.get("name"): "pruned by %s" % ", ".join(e.get("pruned_by", []))
                            for e in plan.get("pruned", [])})
        # What each planned name cost and why it ran (FastCI's diagnosis);
        # a test named twice (a class and its method) counts once, for the
        # first name.
        reason_cost, counted, rule_of = {}, set(), {}
        for name in plan_names:
            items, _ = strategies.expand([name], collected)
            items -= counted
            counted |= items
            for item in items:
                rule_of[item] = why.get(name, "").split(":", 1)[0]
            entry = reason_cost.setdefault(why.get(name, ""), [0, 0.0])
            entry[0] += len(items)
            entry[1] += sum(self.durations.get(t, 0.0) for t in items)
        return {
            "selected": sorted(selected), "fastci_unknown": uncollectable,
            "fastci_out_of_scope": len(out_of_scope),
            "fastci_reasons": reason_cost, "evidence_from": refresh["index"],
            "fastci_rule_of": rule_of,
            "fastci_skipped_why": {t: skipped_why.get(t) or skipped_why.get(t.split("[", 1)[0])
                                   or skipped_why.get(strategies.test_file(t)) or "not planned"
                                   for t in affected if t not in selected},
            "plan_seconds": seconds,
        }

    def run_mutant(self, index, number, path, mutated, covering):
        target = os.path.join(self.repo, path)
        with open(target, encoding="utf-8") as f:
            original = f.read()
        budget = self.args.mutant_timeout or max(60.0, 3 * sum(
            self.durations.get(t, 1.0) for t in covering) + 30)
        try:
            with open(target, "w", encoding="utf-8") as f:
                f.write(mutated)
            run = self.suite.run(
                "%03d-mutant-%d" % (index, number), run_ids=covering, known_ids=self.collected_all,
                timeout=budget)
            status, results, seconds = run.status, run.results, run.seconds
        finally:
            with open(target, "w", encoding="utf-8") as f:
                f.write(original)
        if status is None:
            # Timed out (an infinite loop): every covering test would fail.
            return sorted(covering), "timeout", seconds
        killers = sorted(t for t in covering if results.get(t, ("fail",))[0] == "fail"
                         or (t not in results and status != 0))
        return killers, "ran", seconds

    def replay_commit(self, index, coverage, refresh):
        args = self.args
        parent, sha = self.shas[index - 1], self.shas[index]
        timings = {}
        began = time.monotonic()
        self.checkout(sha)
        file_changes = changes_mod.diff(self.repo, parent, sha)
        changed = sorted(set().union(*[c.paths for c in file_changes])) if file_changes else []
        targets = changes_mod.Targets(self.repo, parent, sha, file_changes)
        changed_set = set(changed)

        # Ground truth, incrementally: tests whose run could differ.
        rerun = {t for t, files in coverage.own.items()
                 if not changed_set.isdisjoint(files) or strategies.test_file(t) in changed_set}
        run = self.suite.run("%03d-truth" % index, run_ids=rerun, known_ids=set(coverage.own),
                             trace=True)
        status, collected, results, traced, seconds = (run.status, run.collected, run.results,
                                                       run.traced, run.seconds)
        if status is None:
            raise ReplayError("the traced run of %s timed out" % sha[:12])
        timings["truth"] = seconds
        ran = set(results)
        new_cov = coverage.update(*traced, ran, set(collected))
        validation = None
        if args.validate_every and index % args.validate_every == 0:
            vrun = self.suite.run("%03d-validate" % index, trace=True)
            if vrun.status is None:
                raise ReplayError("the validation run of %s timed out" % sha[:12])
            vcollected, vresults, vtraced, vseconds = (vrun.collected, vrun.results, vrun.traced,
                                                       vrun.seconds)
            timings["validate"] = vseconds
            full = Coverage().update(*vtraced, set(vresults), set(vcollected))
            differing = sorted(t for t in vcollected
                               if (full.of(t) or {}) != (new_cov.of(t) or {}))
            verdict = sorted(t for t in vcollected
                             if bool(full.hits(targets, t, coverage))
                             != bool(new_cov.hits(targets, t, coverage)))
            validation = {"tests": len(vcollected), "coverage_differs": differing,
                          "affected_differs": verdict}
            # Go on from the full run's coverage.
            new_cov, results = full, {**results, **vresults}
        for test, (outcome, secs) in results.items():
            self.outcomes[test] = outcome
            self.durations[test] = secs
        self.collected_all = set(collected)
        hits = {t: new_cov.hits(targets, t, coverage) for t in collected}
        affected = sorted(t for t, found in hits.items() if found)

        # Mutants in added lines a passing test executes.
        passing = {t for t in collected if self.outcomes.get(t) == "pass"}
        covering_of = {}
        for test in passing:
            for path, lines in (new_cov.of(test) or {}).items():
                for line in lines & targets.new.get(path, set()):
                    covering_of.setdefault((path, line), set()).add(test)
        candidates = []
        for change in file_changes:
            path = change.new_path
            if not path or not path.endswith(".py") or mutants.is_test_file(path):
                continue
            source = changes_mod.show(self.repo, sha, path)
            executable = changes_mod.executable_lines(source) if source else None
            if not executable:
                continue
            for first, last in change.added:
                for line in range(first, last + 1):
                    covering = covering_of.get((path, line))
                    if line in executable and covering:
                        cost = sum(self.durations.get(t, 0.0) for t in covering)
                        if not args.mutant_budget or cost <= args.mutant_budget:
                            candidates.append((path, line, source))
        mutant_records = []
        mutant_seconds = 0.0
        for number, (path, line, operator, mutated, description) in enumerate(
                mutants.pick(candidates, sha, args.mutants)):
            covering = sorted(covering_of[(path, line)])
            killers, how, secs = self.run_mutant(index, number, path, mutated, covering)
            mutant_seconds += secs
            mutant_records.append({"path": path, "line": line, "operator": operator,
                                   "description": description, "covering": covering,
                                   "killers": killers, "how": how})
        timings["mutants"] = mutant_seconds

        # Strategies.
        fastci_fields = self.fastci_selection(index, refresh, collected, run.collectable, affected)
        timings["plan"] = fastci_fields.pop("plan_seconds")
        selections = {
            "run-all": sorted(collected),
            "file-runtime": sorted(strategies.file_runtime(
                {t: set(f) for t, f in refresh["files"].items()}, collected, changed)),
            "import-graph": sorted(strategies.import_graph(self.repo, collected, changed)),
            "oracle": affected,
        }
        durations = {t: self.durations.get(t, 0.0) for t in collected}
        record = {
            "index": index, "sha": sha, "parent": parent,
            "subject": changes_mod.git(self.repo, "log", "-1", "--format=%s", sha).strip(),
            "changed": changed, "collected": len(collected), "rerun": sorted(ran),
            "affected": affected, "mutants": mutant_records, "validation": validation,
            "durations": durations, "selected": selections, "timings": timings,
            # The targets each affected test hit (first five), for diagnosing misses.
            "hits": {t: hits[t][:5] for t in affected},
        }
        record["selected"]["fastci"] = fastci_fields.pop("selected")
        record.update(fastci_fields)
        record["wall_seconds"] = time.monotonic() - began
        return record, new_cov

    # -- driver --------------------------------------------------------------

    def run(self):
        args = self.args
        self.check_repo()
        from fastci.cli import DriverError, find_fastci_opt
        try:
            self.fastci_opt = os.path.abspath(find_fastci_opt(args.fastci_opt))
        except DriverError as e:
            raise ReplayError(str(e))
        self.extra_env = dict(kv.split("=", 1) for kv in args.env)
        shas = self.window()
        self.shas = shas
        os.makedirs(self.state, exist_ok=True)
        config_path = os.path.join(self.state, "config.json")
        config = self.config(shas)
        if os.path.exists(config_path):
            stored = read_json(config_path)
            # Options added since the state was written had their defaults.
            stored.setdefault("truth", None)
            stored.setdefault("trace_pr_runs", False)
            if stored != config:
                raise ReplayError("state directory '%s' belongs to another replay (repository, "
                                  "window, command or options differ); use a new --state" % args.state)
        else:
            write_json(config_path, config)
        if args.truth:
            truth_config, self.truth_records = load_records(os.path.abspath(args.truth))
            if truth_config["commits"] != shas or truth_config["command"] != self.command:
                raise ReplayError("--truth '%s' replayed another window or command" % args.truth)
            if not self.truth_records:
                raise ReplayError("--truth '%s' has no finished commit" % args.truth)
        self.suite = Suite(self.repo, self.command, self.state, args.timeout, self.extra_env)
        lock = self.lock_checkout()
        original = changes_mod.git(self.repo, "rev-parse", "--abbrev-ref", "HEAD").strip()
        if original == "HEAD":
            original = changes_mod.git(self.repo, "rev-parse", "HEAD").strip()
        try:
            if args.truth:
                self._rescore(shas)
            else:
                self._run(shas)
        finally:
            subprocess.run(["git", "-C", self.repo, "-c", "advice.detachedHead=false",
                            "checkout", "-q", original], capture_output=True)
            os.remove(lock)
        return 0

    def lock_checkout(self):
        """One replay per checkout: a second one would check out commits
        under the first. The lock names the holder's pid; a stale one (its
        process gone) is taken over."""
        git_dir = changes_mod.git(self.repo, "rev-parse", "--absolute-git-dir").strip()
        path = os.path.join(git_dir, "fastci-replay.lock")
        for _ in range(2):
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                try:
                    with open(path) as f:
                        holder = int(f.read().strip() or 0)
                    os.kill(holder, 0)
                except (OSError, ValueError):
                    os.remove(path)  # stale
                    continue
                raise ReplayError("another replay (pid %d) is using the checkout '%s'"
                                  % (holder, self.args.repo))
            with os.fdopen(fd, "w") as f:
                f.write(str(os.getpid()))
            return path
        raise ReplayError("cannot lock the checkout '%s' (%s)" % (self.args.repo, path))

    def _run(self, shas):
        args = self.args
        done = sorted(int(n[5:8]) for n in os.listdir(self.state)
                      if n.startswith("ckpt-") and n.endswith(".json"))
        started = time.monotonic()
        if done:
            ckpt = read_json(os.path.join(self.state, "ckpt-%03d.json" % done[-1]))
            note("resuming after commit %d of %d" % (done[-1], len(shas) - 1))
        else:
            note("base %s: full traced run" % shas[0][:12])
            self.checkout(shas[0])
            run = self.suite.run("000-truth", trace=True)
            status, collected, results, traced, seconds = (run.status, run.collected, run.results,
                                                           run.traced, run.seconds)
            if status is None:
                raise ReplayError("the traced base run timed out")
            if not collected:
                raise ReplayError("the test command collected no tests at %s; see %s"
                                  % (shas[0][:12], os.path.join(self.suite.logs, "000-truth.log")))
            coverage = Coverage().update(*traced, set(results), set(collected))
            self.durations = {t: r[1] for t, r in results.items()}
            self.outcomes = {t: r[0] for t, r in results.items()}
            self.collected_all = set(collected)
            note("base: %d tests in %.0fs traced; fastci collect" % (len(collected), seconds))
            evidence, collect_seconds = self.collect(0, None)
            ckpt = self.checkpoint(0, coverage, {"index": 0, "evidence": evidence,
                                                 "files": {t: sorted(f) for t, f in coverage.own.items()}},
                                   {"base_truth": seconds, "collect": collect_seconds})
        coverage = Coverage.from_json(ckpt["coverage"])
        self.durations, self.outcomes = ckpt["durations"], ckpt["outcomes"]
        self.collected_all = set(coverage.own)
        refresh = ckpt["refresh"]
        for index in range(ckpt["index"] + 1, len(shas)):
            record, coverage = self.replay_commit(index, coverage, refresh)
            write_json(os.path.join(self.state, "commit-%03d.json" % index), record)
            timings = {}
            new_refresh = self.refresh_after(index, refresh, record, timings)
            if new_refresh["index"] != refresh["index"]:
                new_refresh["files"] = {t: sorted(f) for t, f in coverage.own.items()}
            else:
                new_refresh["files"] = refresh["files"]
            refresh = new_refresh
            self.checkpoint(index, coverage, refresh, timings)
            sel = record["selected"]
            note("commit %d/%d %s: %d changed, %d rerun, %d affected, %d mutants; fastci %d, "
                 "oracle %d tests (%.0fs)" % (index, len(shas) - 1, record["sha"][:10],
                                              len(record["changed"]), len(record["rerun"]),
                                              len(record["affected"]), len(record["mutants"]),
                                              len(sel["fastci"]), len(sel["oracle"]),
                                              record["wall_seconds"]))
        note("replay finished in %.0fs" % (time.monotonic() - started))

    def _rescore(self, shas):
        """FastCI only, on the ground truth and baselines of a finished
        replay (--truth): they do not depend on FastCI, so a new FastCI
        build is scored by re-collecting its evidence at the same commits and
        re-planning each commit."""
        args = self.args
        done = sorted(int(n[5:8]) for n in os.listdir(self.state)
                      if n.startswith("ckpt-") and n.endswith(".json"))
        started = time.monotonic()
        self.outcomes = {}
        if done:
            ckpt = read_json(os.path.join(self.state, "ckpt-%03d.json" % done[-1]))
            note("resuming after commit %d of %d" % (done[-1], len(shas) - 1))
        else:
            self.checkout(shas[0])
            self.durations = {}
            note("base %s: fastci collect" % shas[0][:12])
            evidence, seconds = self.collect(0, None)
            ckpt = self.checkpoint(0, None, {"index": 0, "evidence": evidence, "files": {}},
                                   {"collect": seconds})
        refresh = ckpt["refresh"]
        for truth in self.truth_records:
            index = truth["index"]
            if index <= ckpt["index"]:
                continue
            began = time.monotonic()
            self.checkout(shas[index])
            self.durations = truth["durations"]
            collected = list(truth["durations"])
            # Collection only (every id is known and none is to run): the ids
            # the plan may name at this commit.
            ids = self.suite.run("%03d-collect-ids" % index, run_ids=set(), known_ids=set(collected))
            if ids.status is None:
                raise ReplayError("collecting the tests of %s timed out" % shas[index][:12])
            fields = self.fastci_selection(index, refresh, collected, ids.collectable,
                                           truth["affected"])
            record = dict(truth, timings=dict(truth["timings"], plan=fields.pop("plan_seconds")))
            record["selected"] = dict(truth["selected"], fastci=fields.pop("selected"))
            record.update(fields)
            record["rescored"] = True
            write_json(os.path.join(self.state, "commit-%03d.json" % index), record)
            timings = {}
            refresh = dict(self.refresh_after(index, refresh, record, timings), files={})
            ckpt = self.checkpoint(index, None, refresh, timings)
            note("commit %d/%d %s: fastci %d tests, oracle %d (%.0fs)" % (
                index, len(shas) - 1, truth["sha"][:10], len(record["selected"]["fastci"]),
                len(truth["affected"]), time.monotonic() - began))
        note("rescore finished in %.0fs" % (time.monotonic() - started))

    def checkpoint(self, index, coverage, refresh, timings):
        ckpt = {"index": index, "coverage": coverage and coverage.to_json(), "durations": self.durations,
                "outcomes": self.outcomes, "refresh": refresh, "timings": timings}
        write_json(os.path.join(self.state, "ckpt-%03d.json" % index), ckpt)
        for name in os.listdir(self.state):
            if name.startswith("ckpt-") and name != "ckpt-%03d.json" % index:
                os.remove(os.path.join(self.state, name))
            elif name.startswith("evidence-") and name != refresh["evidence"]:
                shutil.rmtree(os.path.join(self.state, name), ignore_errors=True)
        return ckpt


# ---------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------

def load_records(state: str) -> "tuple[dict, list[dict]]":
    """Config and the records of finished commits (those with a checkpoint
    at or after them), in order."""
    config = read_json(os.path.join(state, "config.json"))
    done = [int(n[5:8]) for n in os.listdir(state) if n.startswith("ckpt-") and n.endswith(".json")]
    last = max(done) if done else 0
    records = []
    for index in range(1, last + 1):
        path = os.path.join(state, "commit-%03d.json" % index)
        if os.path.exists(path):
            records.append(read_json(path))
    return config, records


def score(records: "list[dict]") -> "dict[str, dict]":
    """{strategy: figures} over the records."""
    figures = {}
    for name in STRATEGIES:
        cost = total = 0.0
        affected = hit = 0
        killable = caught = 0
        missed_commits = []
        for r in records:
            sel = set(r["selected"][name])
            d = r["durations"]
            cost += sum(d.get(t, 0.0) for t in sel)
            total += sum(d.values())
            aff = set(r["affected"])
            affected += len(aff)
            hit += len(aff & sel)
            miss = bool(aff - sel)
            for m in r["mutants"]:
                if m["killers"]:
                    killable += 1
                    if sel.intersection(m["killers"]):
                        caught += 1
                    else:
                        miss = True
            if miss:
                missed_commits.append(r["index"])
        unknown = out_of_scope = 0
        if name == "fastci":
            for r in records:
                if "fastci_out_of_scope" in r:
                    unknown += len(r["fastci_unknown"])
                    out_of_scope += r["fastci_out_of_scope"]
                else:
                    # Records of replays before the distinction: names in files
                    # the suite does not collect are out of scope.
                    files = {strategies.test_file(t) for t in r["durations"]}
                    inside = sum(strategies.test_file(n) in files for n in r["fastci_unknown"])
                    unknown += inside
                    out_of_scope += len(r["fastci_unknown"]) - inside
        figures[name] = {"cost": cost, "total": total, "affected": affected, "hit": hit,
                         "killable": killable, "caught": caught, "missed": missed_commits,
                         "unknown": unknown, "out_of_scope": out_of_scope}
    return figures


def format_table(config: dict, records: "list[dict]") -> str:
    figures = score(records)
    oracle = figures["oracle"]["cost"]
    shas = config["commits"]
    lines = ["%s: %d of %d commits %s..%s (base %s)" % (
        os.path.basename(config["repo"]), len(records), len(shas) - 1, shas[1][:10], shas[-1][:10],
        shas[0][:10])]
    if config.get("truth"):
        lines.append("  fastci re-scored (collect + plan) on the ground truth and baselines of %s"
                     % config["truth"])
    mutants_total = sum(len(r["mutants"]) for r in records)
    every = config.get("refresh_every")
    lines.append("  tests per commit %.0f (mean), affected %d, mutants %d (%d killable), "
                 "evidence refreshed %s" % (
                     sum(r["collected"] for r in records) / max(1, len(records)),
                     figures["oracle"]["affected"], mutants_total, figures["oracle"]["killable"],
                     "after each day's last commit" if every == REFRESH_DAILY
                     else "every %d commits" % every if every else "never"))
    head = "  %-13s %10s %10s %16s %15s %16s %11s %12s" % (
        "strategy", "cost", "x oracle", "affected recall", "mutants caught", "commits w/ miss",
        "ids uncoll.", "out of scope")
    lines.append(head)
    for name in STRATEGIES:
        f = figures[name]
        share = f["cost"] / f["total"] if f["total"] else 0.0
        ratio = ("%.2f" % (f["cost"] / oracle)) if oracle else "-"
        recall = ("%.1f %%" % (100.0 * f["hit"] / f["affected"])) if f["affected"] else "-"
        lines.append("  %-13s %8.1f %% %10s %16s %15s %16s %11d %12d" % (
            name, 100 * share, ratio, recall, "%d/%d" % (f["caught"], f["killable"]),
            "%d/%d" % (len(f["missed"]), len(records)), f["unknown"], f["out_of_scope"]))
    imports = import_only_misses(config, records)
    if imports:
        lines.append("  fastci commits whose every miss is an affected test hitting only "
                     "module-level import lines: %s (%d of %d with a miss)" % (
                         ", ".join(str(i) for i in imports), len(imports),
                         len(figures["fastci"]["missed"])))
    return "\n".join(lines)


def import_only_misses(config, records):
    """Commits where FastCI missed no mutant and every affected test it
    missed hits only module-level import lines: the line truth counts such a
    line for every test executing the file, which FastCI's module-import
    rule follows; a FastCI without it selects only the readers of the bound
    names (docs/Evaluation.md)."""
    found, cache = [], {}
    for r in records:
        sel = set(r["selected"]["fastci"])
        missed = set(r["affected"]) - sel
        if not missed or any(m["killers"] and not sel.intersection(m["killers"])
                             for m in r["mutants"]):
            continue
        try:
            if all(changes_mod.import_only_hits(config["repo"], r["parent"], r["sha"],
                                                r.get("hits", {}).get(t), cache)
                   for t in missed):
                found.append(r["index"])
        except (OSError, changes_mod.GitError):
            return []
    return found


def format_rule_summary(records):
    """FastCI's cost over the window by selection rule: the share of the
    window's total cost each rule's tests took, and on how many commits."""
    total = sum(sum(r["durations"].values()) for r in records) or 1.0
    rules = {}
    for r in records:
        for reason, (count, secs) in r["fastci_reasons"].items():
            rule = reason.split(":", 1)[0] or "(no rule)"
            entry = rules.setdefault(rule, [0.0, 0, set()])
            entry[0] += secs
            entry[1] += count
            if count:
                entry[2].add(r["index"])
    out = ["  fastci cost by rule (share of the window's run-all cost, tests, commits):"]
    for rule, (secs, count, commits) in sorted(rules.items(), key=lambda kv: -kv[1][0]):
        out.append("    %-18s %6.1f %% %6d %4d" % (rule, 100 * secs / total, count, len(commits)))
    return "\n".join(out)


def format_diagnosis(records):
    """Per commit: FastCI's cost by rule/reason and every miss with why."""
    out = [format_rule_summary(records)]
    for r in records:
        sel = set(r["selected"]["fastci"])
        d = r["durations"]
        total = sum(d.values()) or 1.0
        cost = sum(d.get(t, 0.0) for t in sel)
        oracle = sum(d.get(t, 0.0) for t in r["selected"]["oracle"])
        out.append("commit %d %s %s" % (r["index"], r["sha"][:10], r["subject"][:70]))
        out.append("  changed: %s" % ", ".join(r["changed"][:8]) + (" ..." if len(r["changed"]) > 8 else ""))
        out.append("  fastci %.1f %% (%d tests), oracle %.1f %% (%d tests), evidence from commit %d"
                   % (100 * cost / total, len(sel), 100 * oracle / total,
                      len(r["selected"]["oracle"]), r["evidence_from"]))
        for reason, (count, secs) in sorted(r["fastci_reasons"].items(), key=lambda kv: -kv[1][1]):
            out.append("    %5.1f %% %4d tests  %s" % (100 * secs / total, count, reason))
        for test, why in sorted(r["fastci_skipped_why"].items()):
            out.append("  MISSED affected %s (%s)%s" % (
                test, why, " hits %s" % ", ".join(r["hits"][test]) if r.get("hits") else ""))
        for m in r["mutants"]:
            if m["killers"] and not sel.intersection(m["killers"]):
                out.append("  MISSED mutant %s:%d %s (killed by %s)" % (
                    m["path"], m["line"], m["description"], ", ".join(m["killers"][:3])))
        if r["fastci_unknown"]:
            out.append("  NOT COLLECTABLE: %s" % ", ".join(r["fastci_unknown"][:5]))
        if r["validation"]:
            v = r["validation"]
            out.append("  validation (full run, %d tests): coverage differs for %d, affected "
                       "verdict differs for %d" % (v["tests"], len(v["coverage_differs"]),
                                                    len(v["affected_differs"])))
    return "\n".join(out)


def format_walls(state, records):
    truth = sum(r["timings"].get("truth", 0) for r in records)
    mutant = sum(r["timings"].get("mutants", 0) for r in records)
    plan = sum(r["timings"].get("plan", 0) for r in records)
    validate = sum(r["timings"].get("validate", 0) for r in records)
    wall = sum(r["wall_seconds"] for r in records)
    return ("  wall: commits %.0fs (truth reruns %.0fs, validation runs %.0fs, mutants %.0fs, "
            "fastci plan %.0fs)" % (wall, truth, validate, mutant, plan))


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------

REFRESH_DAILY = "day"


def refresh_every(text: str):
    """--refresh-every: a count of commits (0: never) or `day`."""
    if text == REFRESH_DAILY:
        return text
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError("expected a number of commits or 'day', got %r" % text)
    return value


def commit_day(repo: str, sha: str) -> int:
    """The UTC day (days since the epoch) `sha` was committed on."""
    return int(changes_mod.git(repo, "log", "-1", "--format=%ct", sha).strip()) // 86400


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", default=".", help="git repository (its work tree is used)")
    parser.add_argument("--commits", type=int, default=30,
                        help="window: first-parent commits ending at --head (default 30)")
    parser.add_argument("--head", default="HEAD", help="last commit of the window (default HEAD)")
    parser.add_argument("--state", help="state directory (resumable; default "
                                        "REPO/../<repo>-replay)")
    parser.add_argument("--refresh-every", type=refresh_every, default=10, metavar="K|day",
                        help="re-collect FastCI's evidence every K commits, or after the last "
                             "commit of each day (`day`, by committer date in UTC), as a "
                             "nightly job (default 10; 0: only at the base)")
    parser.add_argument("--trace-pr-runs", action="store_true",
                        help="between nightly refreshes, add the evidence of each commit's "
                             "FastCI plan run under the sampler (fastci run --trace in CI)")
    parser.add_argument("--nights", type=int, default=0,
                        help="--nights passed to fastci collect (default: its own)")
    parser.add_argument("--mutants", type=int, default=3, help="mutants per commit (default 3)")
    parser.add_argument("--mutant-budget", type=float, default=0.0,
                        help="skip mutant lines whose covering tests cost more seconds than this")
    parser.add_argument("--mutant-timeout", type=float, default=0.0,
                        help="seconds before a mutant run counts as killed (default 3x its "
                             "tests' time + 30, at least 60)")
    parser.add_argument("--validate-every", type=int, default=10,
                        help="check incremental ground truth against a full run every V commits "
                             "(default 10; 0: never)")
    parser.add_argument("--timeout", type=float, default=3600.0,
                        help="seconds one suite run may take (default 3600)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="environment for the test command (repeatable)")
    parser.add_argument("--plan-arg", action="append", default=[],
                        help="extra argument of fastci plan (repeatable)")
    parser.add_argument("--fastci-opt", help="fastci-opt to run")
    parser.add_argument("--truth", metavar="STATE",
                        help="score only FastCI (collect + plan at the same commits) on the "
                             "ground truth and baselines of this finished replay")
    parser.add_argument("--report", nargs="+", metavar="STATE",
                        help="print the tables of finished replays and exit")
    parser.add_argument("--diagnose", action="store_true",
                        help="also print FastCI's per-commit cost by reason and its misses")
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="-- followed by the pytest command of the suite")


def report(states: "list[str]", diagnose: bool) -> int:
    for index, state in enumerate(states):
        if not os.path.exists(os.path.join(state, "config.json")):
            raise ReplayError("'%s' holds no replay" % state)
        config, records = load_records(state)
        if index:
            print()
        print(format_table(config, records))
        if records:
            print(format_walls(state, records))
        if diagnose:
            print(format_diagnosis(records))
    return 0


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def run_args(args: argparse.Namespace) -> int:
    # SIGTERM (and SIGINT, which shells ignore in background jobs) stop the
    # replay the same way: the suite is killed, the checkout restored.
    import signal
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    try:
        if args.report:
            return report(args.report, args.diagnose)
        command = args.command[1:] if args.command[:1] == ["--"] else args.command
        if not command:
            raise ReplayError("give the suite's pytest command after --")
        if args.commits < 1:
            raise ReplayError("--commits must be at least 1")
        for kv in args.env:
            if "=" not in kv:
                raise ReplayError("--env wants NAME=VALUE, got '%s'" % kv)
        if not args.state:
            args.state = os.path.abspath(args.repo).rstrip(os.sep) + "-replay"
        Replay(args, command).run()
        return report([args.state], args.diagnose)
    except (ReplayError, changes_mod.GitError) as e:
        sys.stderr.write("fastci replay: error: %s\n" % e)
        return EXIT_ERROR
    except KeyboardInterrupt:
        sys.stderr.write("fastci replay: interrupted; rerun the same command to resume\n")
        return 130


def main(argv: "list[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(prog="fastci replay", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run_args(parser.parse_args(argv))
