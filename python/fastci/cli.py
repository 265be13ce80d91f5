"""fastci: the CI driver of FastCI.

A thin layer over `fastci-opt`: `plan` assembles the standard pass pipeline
from the inputs a CI job has (repository, base revision, evidence, history,
manifest) and prints the exact command it runs, so users can take it over;
`run` executes a JSON plan locally with its overrides and environment and
writes JUnit XML; `collect` records runtime evidence of a full suite under
the sampler; `audit` checks an observation-mode run for failures the plan
would have missed. docs/CI-Integration.md describes the subcommands, their
exit codes and how they fit GitHub Actions and GitLab pipelines.

Exit codes: 0 success; 1 tests failed (`run`) or the plan would have missed
a failure (`audit`) or a tool it ran failed; 2 bad usage or bad input; 3 the
plan names tests pytest cannot collect (`run`, when no test failed).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from typing import Any, Dict, List, NoReturn, Optional, Tuple

from fastci import attrs as attr

PLAN_SCHEMA = "fastci-plan/1"
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_PLAN = 3


class DriverError(Exception):
    """A problem with the user's input: reported as `fastci: error:`."""


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    sys.stderr.write("fastci: error: %s\n" % message)
    sys.exit(code)


def note(message: str) -> None:
    sys.stderr.write("fastci: %s\n" % message)
    sys.stderr.flush()


def package_root() -> str:
    """The directory holding the `fastci` package, put on the PYTHONPATH of
    traced children so that they import the same sampler as this driver."""
    return os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def find_fastci_opt(explicit: Optional[str]) -> str:
    """fastci-opt: --fastci-opt, $FASTCI_OPT, next to the `fastci` command
    that was run, or PATH."""
    for candidate in (explicit, os.environ.get("FASTCI_OPT"),
                      os.path.join(os.path.dirname(os.path.realpath(sys.argv[0])),
                                   "fastci-opt")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("fastci-opt")
    if not found:
        raise DriverError("cannot find fastci-opt (use --fastci-opt or "
                          "FASTCI_OPT)")
    return found


# ---------------------------------------------------------------------------
# plan
# ---------------------------------------------------------------------------

def pipeline_value(value: object) -> str:
    """A pass option value, quoted when the pipeline parser needs it."""
    text = str(value)
    if text and not any(c in text for c in ',{}"\'= \t\n\\'):
        return text
    return '"%s"' % text.replace("\\", "\\\\").replace('"', '\\"')


def pass_spec(name: str, **options: object) -> str:
    """`name{key=value,...}`; list values become braced lists."""
    if not options:
        return name
    body = []
    for key, value in options.items():
        if isinstance(value, (list, tuple)):
            value_text = "{%s}" % ",".join(pipeline_value(v) for v in value)
        else:
            value_text = pipeline_value(value)
        body.append("%s=%s" % (key.replace("_", "-"), value_text))
    return "%s{%s}" % (name, ",".join(body))


def build_pipeline(args: argparse.Namespace, plan_out: str) -> str:
    """`fastci-default` (passes/pipelines, the one definition of the standard
    pipeline) with the options of `fastci plan`; stages whose input is absent
    are left out by the pipeline itself.

    Absent evidence or history is not an error: select-affected then keeps
    every test, each with its fail-safe rule as the reason.
    """
    repo = os.path.abspath(args.repo)
    options = {"root": repo, "base": args.base, "head": args.head}
    if args.parse_cache:
        options["parse_cache"] = os.path.abspath(args.parse_cache)
    manifests = []
    for manifest in args.manifest:
        if not os.path.isfile(manifest):
            raise DriverError("manifest '%s' does not exist" % manifest)
        manifests.append(os.path.abspath(manifest))
    if manifests:
        options["manifest"] = manifests
    if args.history:
        if os.path.isdir(args.history):
            options["junit"] = [os.path.abspath(args.history)]
        else:
            note("warning: history directory '%s' does not exist; planning "
                 "without history" % args.history)
    if args.evidence:
        if os.path.isdir(args.evidence):
            options["evidence"] = os.path.abspath(args.evidence)
        else:
            note("warning: evidence directory '%s' does not exist; every test "
                 "is selected as missing evidence" % args.evidence)
    if args.change_policy:
        if not os.path.isfile(args.change_policy):
            raise DriverError("change policy '%s' does not exist"
                              % args.change_policy)
        options["change_policy"] = os.path.abspath(args.change_policy)
    options["runners"] = args.runners
    if args.gpus_per_runner is not None:
        options["gpus_per_runner"] = args.gpus_per_runner
    if args.policy is not None:
        options["schedule_policy"] = args.policy
    options["plan_out"] = plan_out
    options["plan_format"] = args.format
    if args.python is not None:
        options["python"] = args.python
    if args.observe:
        options["observe"] = "true"
    return pass_spec("fastci-default", **options)


def cmd_plan(args: argparse.Namespace) -> int:
    fastci_opt = find_fastci_opt(args.fastci_opt)
    with tempfile.TemporaryDirectory(prefix="fastci-plan-") as scratch:
        # --explain reads the annotated module back, as JSON; --ir-out keeps
        # it in the format its name asks for.
        module_json = os.path.join(scratch, "module.json") if args.explain else None
        command = [fastci_opt, "--pass-pipeline=" + build_pipeline(
            args, os.path.abspath(args.output)),
            "-o", module_json or args.ir_out or os.devnull]
        if module_json:
            command.append("--emit=json")
        note("running: " + shlex.join(command))
        if args.dry_run:
            return 0
        status = subprocess.call(command)
        if status != 0:
            note("fastci-opt failed (exit %d)" % status)
            return EXIT_FAILED
        note("wrote %s" % args.output)
        if not module_json:
            return 0
        if args.ir_out and subprocess.call(
                [fastci_opt, module_json, "-o", args.ir_out]) != 0:
            note("could not write %s" % args.ir_out)
            return EXIT_FAILED
        module = read_module_json(module_json)
        for name in args.explain:
            print(explain_test(module, name))
        return 0


# ---------------------------------------------------------------------------
# plan --explain
# ---------------------------------------------------------------------------

def read_module_json(path: str) -> Dict[str, Any]:
    """The module fastci-opt wrote with --emit=json."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise DriverError("cannot read the module '%s': %s" % (path, e))


def attribute_text(value: object) -> str:
    """An attribute value of the module's JSON form, as a user reads it."""
    if isinstance(value, dict):
        if set(value) == {"$symbol"}:
            return value["$symbol"]
        if set(value) == {"$float"}:
            return value["$float"]
        return ", ".join("%s -> %s" % (k, attribute_text(v))
                         for k, v in sorted(value.items()))
    if isinstance(value, list):
        return ", ".join(attribute_text(v) for v in value)
    return str(value)


def explain_test(module: Dict[str, Any], name: str) -> str:
    """Why the module's test `name` runs, was pruned or was not selected,
    from the attributes select-affected and prune-context-equiv left."""
    tests = {t.get("name"): t for t in module.get("tests", [])}
    test = tests.get(name)
    if test is None:
        close = sorted(n for n in tests if name in n or n in name)[:3]
        hint = " (did you mean %s?)" % ", ".join(close) if close else ""
        raise DriverError("--explain: no test '%s' in the module%s" % (name, hint))
    attrs = test.get("attributes", {})
    rule = attrs.get(attr.RULE, "?")
    reason = attrs.get(attr.REASON, "no reason recorded")
    lines = []
    if attrs.get(attr.PRUNED) is True:
        lines.append("%s: pruned (selected by rule %s: %s)" % (name, rule, reason))
        lines.append("  covered by: %s" % attribute_text(attrs.get(attr.PRUNED_BY, [])))
        for entity, kept in sorted(attrs.get(attr.WITNESSES, {}).items()):
            lines.append("  witness: %s is run by %s" % (entity, attribute_text(kept)))
    elif attrs.get(attr.SELECTED) is True:
        lines.append("%s: selected (rule %s): %s" % (name, rule, reason))
    elif attrs.get(attr.SELECTED) is False:
        lines.append("%s: not selected (rule %s): %s" % (name, rule, reason))
    else:
        lines.append("%s: selection did not run" % name)
    if attr.EVIDENCE in attrs:
        lines.append("  evidence: %s" % attrs[attr.EVIDENCE])
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Reading plans and JUnit reports
# ---------------------------------------------------------------------------

def load_plan(path: str) -> Dict[str, Any]:
    """The plan at `path`, checked against the parts of the schema we use."""
    try:
        with open(path, encoding="utf-8") as f:
            plan = json.load(f)
    except OSError as e:
        raise DriverError("cannot read plan '%s': %s" % (path, e.strerror))
    except json.JSONDecodeError as e:
        raise DriverError("%s:%d:%d: malformed plan JSON: %s"
                          % (path, e.lineno, e.colno, e.msg))
    except (ValueError, UnicodeDecodeError) as e:
        raise DriverError("%s: malformed plan JSON: %s" % (path, e))
    if not isinstance(plan, dict) or plan.get("schema") != PLAN_SCHEMA:
        raise DriverError("%s: not a FastCI plan (expected \"schema\": \"%s\")"
                          % (path, PLAN_SCHEMA))
    tests = plan.get(attr.PLAN_TESTS)
    if not isinstance(tests, list):
        raise DriverError("%s: plan has no \"tests\" list" % path)
    for index, test in enumerate(tests):
        where = "%s: tests[%d]" % (path, index)
        if not isinstance(test, dict) or not isinstance(test.get("name"), str):
            raise DriverError("%s: test without a \"name\"" % where)
        argv = test.get("argv")
        if (not isinstance(argv, list) or not argv
                or not all(isinstance(a, str) for a in argv)):
            raise DriverError("%s ('%s'): \"argv\" must be a non-empty list of "
                              "strings" % (where, test["name"]))
        env = test.get("env", {})
        if not isinstance(env, dict) or not all(
                isinstance(v, str) for v in env.values()):
            raise DriverError("%s ('%s'): \"env\" must map names to strings"
                              % (where, test["name"]))
    for key in (attr.PLAN_SKIPPED, attr.PLAN_PRUNED):
        if not isinstance(plan.get(key, []), list):
            raise DriverError("%s: \"%s\" must be a list" % (path, key))
    return plan


def junit_outcomes(path: str) -> List[Tuple[str, str, str]]:
    """(name, classname, outcome) per testcase; outcome is pass/fail/skip."""
    try:
        root = ElementTree.parse(path).getroot()
    except OSError as e:
        raise DriverError("cannot read JUnit report '%s': %s" % (path, e.strerror))
    except ElementTree.ParseError as e:
        line, column = e.position
        raise DriverError("%s:%d:%d: malformed JUnit XML: %s"
                          % (path, line, column + 1, str(e).split(":")[0]))
    cases = []
    for case in root.iter("testcase"):
        name = case.get("name")
        if name is None:
            raise DriverError("%s: <testcase> without a name" % path)
        outcome = "pass"
        if case.find("failure") is not None or case.find("error") is not None:
            outcome = "fail"
        elif case.find("skipped") is not None:
            outcome = "skip"
        cases.append((name, case.get("classname", ""), outcome))
    return cases


def pytest_junit_key(node_id: str) -> Tuple[str, str]:
    """The (classname, name) pytest's --junitxml writes for `node_id`."""
    parts = node_id.split("::")
    module = parts[0][:-3] if parts[0].endswith(".py") else parts[0]
    classname = ".".join([module.replace("/", ".")] + parts[1:-1])
    return classname, parts[-1]


def write_junit(path: str, results: List[Tuple[str, str, float, str]],
                plan_name: str) -> None:
    suite = ElementTree.Element("testsuite", name=plan_name)
    counts = {"tests": 0, "failures": 0, "skipped": 0}
    total_time = 0.0
    for name, outcome, seconds, message in results:
        case = ElementTree.SubElement(suite, "testcase", classname="fastci",
                                      name=name, time="%.3f" % seconds)
        counts["tests"] += 1
        total_time += seconds
        if outcome == "fail":
            counts["failures"] += 1
            ElementTree.SubElement(case, "failure", message=message)
        elif outcome == "skip":
            counts["skipped"] += 1
            ElementTree.SubElement(case, "skipped", message=message)
    for key, value in counts.items():
        suite.set(key, str(value))
    suite.set("time", "%.3f" % total_time)
    ElementTree.ElementTree(suite).write(path, encoding="utf-8",
                                         xml_declaration=True)


# ---------------------------------------------------------------------------
# run
# ---------------------------------------------------------------------------

# pytest's exit statuses for "nothing to run": 4 is a usage error (an id or
# file that does not exist: "ERROR: not found: ..."), 5 collected no test.
PYTEST_NOT_COLLECTED = {4: "usage error", 5: "no tests collected"}
# Output lines pytest prints when it cannot collect what it was asked for.
PYTEST_NOT_COLLECTED_MARKERS = ("not found", "no tests ran", "no match",
                                "file or directory not found")


def run_test_command(argv: List[str], env: Dict[str, str],
                     cwd: str) -> Tuple[int, str, List[str]]:
    """Runs one test's command, echoing its output as it comes; returns
    (status, message, tail), `tail` being its last output lines."""
    tail = []
    try:
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
    except OSError as e:
        message = "cannot run %s: %s" % (argv[0], e.strerror)
        note(message)
        return 127, message, tail
    for raw in proc.stdout:
        sys.stdout.buffer.write(raw)
        sys.stdout.flush()
        tail.append(raw.decode("utf-8", "replace").rstrip("\n"))
        del tail[:-40]
    status = proc.wait()
    return status, "exit status %d" % status, tail


def not_collected_reason(argv: List[str], status: int,
                         tail: List[str]) -> Optional[str]:
    """Why pytest ran none of the test `argv` names, or None when it ran
    (passed or failed): the plan named an id pytest cannot collect."""
    if pytest_arguments_start(argv) is None or status not in PYTEST_NOT_COLLECTED:
        return None
    evidence = [line.strip() for line in tail
                if any(m in line.lower() for m in PYTEST_NOT_COLLECTED_MARKERS)]
    # pytest's own `ERROR: not found: ...` says more than its summary line.
    evidence.sort(key=lambda line: not line.startswith("ERROR"))
    why = "pytest exit %d, %s" % (status, PYTEST_NOT_COLLECTED[status])
    return why + (": " + evidence[0] if evidence else "")


def cmd_run(args: argparse.Namespace) -> int:
    plan = load_plan(args.plan)
    tests = plan[attr.PLAN_TESTS]
    if args.runner is not None:
        tests = [t for t in tests if t.get("runner") == args.runner]
    if args.test:
        names = {t["name"] for t in tests}
        for name in args.test:
            if name not in names:
                raise DriverError("%s: no test '%s' in the plan" % (args.plan, name))
        tests = [t for t in tests if t["name"] in args.test]
    trace_env = {}
    if args.trace:
        trace_env = {"PYTHONPATH": os.pathsep.join(
            [package_root()] + ([os.environ["PYTHONPATH"]]
                             if os.environ.get("PYTHONPATH") else []))}
    predicted = sum(float(t.get("seconds") or 0) for t in tests)
    results = []
    not_collected = []
    started = time.monotonic()
    failed = 0
    for index, test in enumerate(tests, 1):
        elapsed = time.monotonic() - started
        print("fastci: [%d/%d] %s (elapsed %.0fs / predicted %.0fs)"
              % (index, len(tests), test["name"], elapsed, predicted), flush=True)
        env = dict(os.environ)
        env.update(test.get("env", {}))
        argv = test["argv"]
        if args.trace:
            env.update(trace_env)
            argv = traced_command(argv, os.path.abspath(args.trace), test["name"])
        begin = time.monotonic()
        status, message, tail = run_test_command(argv, env, args.cwd)
        seconds = time.monotonic() - begin
        if status == 0:
            results.append((test["name"], "pass", seconds, ""))
            continue
        reason = not_collected_reason(test["argv"], status, tail)
        if reason is not None:
            # Not the test's failure: the plan asked for something pytest
            # does not have. Reported once, below, as a plan error.
            not_collected.append((test["name"], reason))
            results.append((test["name"], "skip", seconds,
                            "not collected: " + reason))
            continue
        failed += 1
        results.append((test["name"], "fail", seconds, message))
        print("fastci: FAILED %s (%s)" % (test["name"], message), flush=True)
        if args.fail_fast:
            for rest in tests[index:]:
                results.append((rest["name"], "skip", 0.0,
                                "not run: --fail-fast after a failure"))
            break
    if args.junit:
        write_junit(args.junit, results, os.path.basename(args.plan))
    print("fastci: %d passed, %d failed, %d not run in %.0fs (predicted %.0fs)"
          % (sum(r[1] == "pass" for r in results), failed,
             sum(r[1] == "skip" for r in results),
             time.monotonic() - started, predicted), flush=True)
    if not_collected:
        sys.stderr.write(
            "fastci: error: plan error: %d planned tests cannot be collected "
            "by pytest (the plan is wrong, not the tests):\n%s" % (
                len(not_collected),
                "".join("  %s (%s)\n" % item for item in not_collected)))
        sys.stderr.flush()
    if failed:
        return EXIT_FAILED
    return EXIT_PLAN if not_collected else 0


# ---------------------------------------------------------------------------
# audit
# ---------------------------------------------------------------------------

def cmd_audit(args: argparse.Namespace) -> int:
    plan = load_plan(args.plan)
    dropped = {}
    for entry in plan.get(attr.PLAN_SKIPPED, []):
        dropped[entry.get("name")] = "skipped (%s: %s)" % (
            entry.get(attr.RULE, ""), entry.get(attr.REASON, ""))
    for entry in plan.get(attr.PLAN_PRUNED, []):
        dropped[entry.get("name")] = "pruned (covered by %s)" % ", ".join(
            entry.get(attr.PRUNED_BY, []))
    names = {t["name"] for t in plan[attr.PLAN_TESTS]} | set(dropped)
    by_junit_key = {pytest_junit_key(name): name for name in names}

    missed, caught, unknown = [], 0, []
    for name, classname, outcome in junit_outcomes(args.junit):
        test = name if name in names else by_junit_key.get((classname, name))
        if test is None:
            unknown.append(name if not classname or classname == "fastci"
                           else "%s::%s" % (classname, name))
            continue
        if outcome != "fail":
            continue
        if test in dropped:
            missed.append((test, dropped[test]))
        else:
            caught += 1
    if unknown and not args.allow_unknown:
        raise DriverError("%s: %d tests are not in the plan, e.g. '%s' (was "
                          "the plan made for this revision? --allow-unknown "
                          "ignores them)" % (args.junit, len(unknown), unknown[0]))
    for test, why in missed:
        print("fastci: MISSED %s: the plan %s" % (test, why))
    print("fastci: audit: %d failures caught by the plan, %d missed"
          % (caught, len(missed)))
    return EXIT_FAILED if missed else 0


# ---------------------------------------------------------------------------
# collect
# ---------------------------------------------------------------------------

def git_revision(repo: str) -> str:
    try:
        return subprocess.check_output(
            ["git", "-C", repo, "rev-parse", "HEAD"], text=True,
            stderr=subprocess.DEVNULL).strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def pytest_arguments_start(command: List[str]) -> Optional[int]:
    """Where pytest's own arguments start in `command`, or None if it does
    not launch pytest (`pytest ...` or `python -m pytest ...`)."""
    if os.path.basename(command[0]) in ("pytest", "py.test"):
        return 1
    if command[1:3] == ["-m", "pytest"]:
        return 3
    return None


def traced_command(command: List[str], out_dir: str,
                   test_id: str) -> List[str]:
    """`command` running under the sampler, writing evidence to out_dir:
    pytest through its plugin (one test id per item), anything else through
    `python -m fastci.trace run` as the single test `test_id`."""
    start = pytest_arguments_start(command)
    if start is not None:
        # One word, `--fastci-collect=DIR`: pytest scans its arguments for
        # paths before the plugin that defines the option is loaded, and a
        # separate DIR would move the rootdir (and so every test id) to the
        # common ancestor of DIR and the tests.
        return (command[:start] + ["-p", "fastci.trace.pytest_plugin",
                                   "--fastci-collect=" + out_dir]
                + command[start:])
    return [sys.executable, "-m", "fastci.trace", "run", "--test-id", test_id,
            "--out", out_dir, "--"] + command


def cmd_collect(args: argparse.Namespace) -> int:
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if bool(command) == bool(args.plan):
        raise DriverError("collect: give the suite command after --, or --plan "
                          "(not both)")
    if args.nights < 1:
        raise DriverError("collect: --nights must be at least 1")
    repo = os.path.abspath(args.repo)
    revision = git_revision(repo)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S")
    night_dir = os.path.join(os.path.abspath(args.out),
                             "night-%s-%s" % (stamp, revision[:12]))
    os.makedirs(night_dir, exist_ok=True)

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [package_root()] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["FASTCI_TRACE_ROOT"] = repo
    if revision != "unknown":
        env["FASTCI_TRACE_REVISION"] = revision
    if args.plan:
        # CI jobs of a plan (a fail-safe one runs all of them), each traced
        # as its own test id.
        status = cmd_run(argparse.Namespace(
            plan=args.plan, runner=None, test=[], trace=night_dir, cwd=repo,
            fail_fast=False, junit=None))
    else:
        traced = traced_command(command, night_dir,
                                args.test_id or shlex.join(command))
        note("running: " + shlex.join(traced))
        status = subprocess.call(traced, env=env, cwd=repo)
    if status != 0:
        note("warning: the suite exited %d; keeping the evidence it recorded"
             % status)

    # merge-evidence maps frames of old nights through the snapshot of the
    # revision they ran at, so each revision's snapshot is kept beside them.
    snapshot = os.path.join(os.path.abspath(args.out),
                            "snapshot-%s.fir" % revision)
    parse = [find_fastci_opt(args.fastci_opt),
             "--pass-pipeline=" + pass_spec("parse-python", root=repo),
             "-o", snapshot]
    note("running: " + shlex.join(parse))
    if subprocess.call(parse) != 0:
        note("could not write the snapshot")
        return EXIT_FAILED

    nights = sorted(d for d in os.listdir(args.out) if d.startswith("night-"))
    for old in nights[:-args.nights]:
        note("dropping evidence of %s (keeping %d nights)" % (old, args.nights))
        shutil.rmtree(os.path.join(args.out, old))
    kept = {d.rsplit("-", 1)[-1] for d in nights[-args.nights:]}
    for name in os.listdir(args.out):
        if (name.startswith("snapshot-") and name.endswith(".fir")
                and name[len("snapshot-"):-len(".fir")][:12] not in kept):
            os.remove(os.path.join(args.out, name))
    note("evidence in %s" % night_dir)
    return 0 if status == 0 or args.keep_going else EXIT_FAILED


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------

def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fastci", description="FastCI: plan, run and audit CI test runs.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="exit codes:\n"
               "  0  success\n"
               "  1  tests failed (run), the plan would have missed a failure "
               "(audit),\n     or a tool failed\n"
               "  2  bad usage or bad input (missing or malformed plan, "
               "unknown test)\n"
               "  3  plan error: planned tests pytest cannot collect (run, "
               "when no test failed)")
    sub = parser.add_subparsers(dest="subcommand", required=True)

    plan = sub.add_parser(
        "plan", help="compute the test plan of a change",
        description="Runs the standard fastci-opt pipeline and writes the "
                    "plan. Missing evidence or history still yields a "
                    "fail-safe plan that runs everything.")
    plan.add_argument("--repo", default=".", help="repository root (default .)")
    plan.add_argument("--base", required=True, help="base revision of the change")
    plan.add_argument("--head", default="HEAD", help="head revision (default HEAD)")
    plan.add_argument("--evidence", help="evidence directory (fastci collect)")
    plan.add_argument("--history", help="directory of JUnit XML reports")
    plan.add_argument("--parse-cache", metavar="DIR",
                      help="parse-python's cache (kept between CI runs, e.g. in "
                           "the runner's cache): only files changed since are reparsed")
    plan.add_argument("--manifest", action="append", default=[],
                      help="CI job manifest (repeatable)")
    plan.add_argument("-o", "--output", default="plan.json",
                      help="plan file (default plan.json)")
    plan.add_argument("--format", default="json",
                      choices=["json", "pytest", "github-matrix", "gitlab", "shell"])
    plan.add_argument("--runners", type=int, default=1,
                      help="runners the schedule spreads tests over (default 1)")
    plan.add_argument("--gpus-per-runner", type=int,
                      help="GPUs per runner (default: the schedule pass's)")
    plan.add_argument("--policy",
                      help="schedule policy (default: the schedule pass's; "
                           "see docs/Scheduling.md)")
    plan.add_argument("--python",
                      help="interpreter the plan's commands use (default: the "
                           "one that recorded the evidence, else python3)")
    plan.add_argument("--change-policy", metavar="FILE",
                      help="change policy YAML (docs/Changes.md) instead of "
                           "the built-in one")
    plan.add_argument("--explain", metavar="TEST", action="append", default=[],
                      help="print why TEST was selected, pruned (with its "
                           "witnesses) or not selected (repeatable)")
    plan.add_argument("--observe", action="store_true",
                      help="observation mode: run everything, audit later")
    plan.add_argument("--ir-out", help="also keep the annotated module here")
    plan.add_argument("--fastci-opt", help="fastci-opt to run")
    plan.add_argument("--dry-run", action="store_true",
                      help="print the fastci-opt command without running it")
    plan.set_defaults(func=cmd_plan)

    run = sub.add_parser("run", help="run a JSON plan locally",
                         description="Runs the plan's tests in order with "
                                     "their overrides and environment.")
    run.add_argument("plan", help="plan.json written by fastci plan")
    run.add_argument("--fail-fast", action="store_true",
                     help="stop at the first failure")
    run.add_argument("--junit", help="write a JUnit XML report here")
    run.add_argument("--runner", type=int,
                     help="run only the tests scheduled on this runner")
    run.add_argument("--test", action="append", default=[],
                     help="run only this test (repeatable)")
    run.add_argument("--trace", metavar="DIR",
                     help="record evidence of each test into DIR (sampler)")
    run.add_argument("--cwd", default=".",
                     help="directory to run in: the repository root (default .)")
    run.set_defaults(func=cmd_run)

    collect = sub.add_parser(
        "collect", help="record evidence of a full suite under the sampler",
        description="Runs the suite under the sampler into OUT/night-<time>-"
                    "<rev>/, writes OUT/snapshot-<rev>.fir and keeps the "
                    "evidence of the K most recent nights.")
    collect.add_argument("--out", required=True, help="evidence directory")
    collect.add_argument("--nights", type=int, default=7,
                         help="nights of evidence to keep (default 7)")
    collect.add_argument("--repo", default=".", help="repository root (default .)")
    collect.add_argument("--test-id",
                         help="test id of a non-pytest command (default: "
                              "the command line)")
    collect.add_argument("--plan",
                         help="instead of a command, run this JSON plan's "
                              "tests, each traced under its own id")
    collect.add_argument("--keep-going", action="store_true",
                         help="exit 0 even when the suite fails")
    collect.add_argument("--fastci-opt", help="fastci-opt to run")
    collect.add_argument("command", nargs=argparse.REMAINDER,
                         help="-- followed by the suite command")
    collect.set_defaults(func=cmd_collect)

    audit = sub.add_parser(
        "audit", help="report failures an observe-mode plan would have missed",
        description="Exits 1 when a test the plan skipped or pruned failed.")
    audit.add_argument("--plan", required=True, help="plan.json (--observe)")
    audit.add_argument("--junit", required=True, help="JUnit XML results")
    audit.add_argument("--allow-unknown", action="store_true",
                       help="ignore results of tests the plan does not name")
    audit.set_defaults(func=cmd_audit)

    # `fastci replay` belongs to fastci.replay (docs/Evaluation.md); this
    # block only hands its arguments over.
    from fastci.replay import harness as replay_harness
    replay = sub.add_parser(
        "replay", help="score FastCI and baselines on a repository's history",
        description=replay_harness.__doc__.split("\n\n")[0])
    replay_harness.add_arguments(replay)
    replay.set_defaults(func=replay_harness.run_args)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except DriverError as e:
        fail(str(e))


if __name__ == "__main__":
    sys.exit(main())
