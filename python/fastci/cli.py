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
a failure (`audit`) or a tool it ran failed; 2 bad usage or bad input.
"""

import argparse
import datetime
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree

PLAN_SCHEMA = "fastci-plan/1"
EXIT_FAILED = 1
EXIT_USAGE = 2


class DriverError(Exception):
    """A problem with the user's input: reported as `fastci: error:`."""


def fail(message, code=EXIT_USAGE):
    sys.stderr.write("fastci: error: %s\n" % message)
    sys.exit(code)


def note(message):
    sys.stderr.write("fastci: %s\n" % message)
    sys.stderr.flush()


def package_root():
    """The directory holding the `fastci` package, put on the PYTHONPATH of
    traced children so that they import the same sampler as this driver."""
    return os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def find_fastci_opt(explicit):
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

def pipeline_value(value):
    """A pass option value, quoted when the pipeline parser needs it."""
    text = str(value)
    if text and not any(c in text for c in ',{}"\'= \t\n\\'):
        return text
    return '"%s"' % text.replace("\\", "\\\\").replace('"', '\\"')


def pass_spec(name, **options):
    if not options:
        return name
    body = ",".join("%s=%s" % (key.replace("_", "-"), pipeline_value(value))
                    for key, value in options.items())
    return "%s{%s}" % (name, body)


def build_pipeline(args):
    """The passes of `fastci plan`, leaving out those whose input is absent.

    Absent evidence or history is not an error: select-affected then keeps
    every test, each with its fail-safe rule as the reason.
    """
    repo = os.path.abspath(args.repo)
    passes = [pass_spec("parse-python", root=repo)]
    for manifest in args.manifest:
        if not os.path.isfile(manifest):
            raise DriverError("manifest '%s' does not exist" % manifest)
        passes.append(pass_spec("load-manifest", file=os.path.abspath(manifest)))
    if args.history:
        if os.path.isdir(args.history):
            passes.append(pass_spec("load-history",
                                    junit=os.path.abspath(args.history)))
        else:
            note("warning: history directory '%s' does not exist; planning "
                 "without history" % args.history)
    if args.evidence:
        if os.path.isdir(args.evidence):
            passes.append(pass_spec("merge-evidence",
                                    dir=os.path.abspath(args.evidence)))
        else:
            note("warning: evidence directory '%s' does not exist; every test "
                 "is selected as missing evidence" % args.evidence)
    passes.append(pass_spec("mark-changed", repo=repo, base=args.base,
                            head=args.head))
    passes += ["select-affected", "prune-context-equiv", "lower-workload",
               "score-risk"]
    schedule = {"runners": args.runners}
    if args.gpus_per_runner is not None:
        schedule["gpus_per_runner"] = args.gpus_per_runner
    if args.policy is not None:
        schedule["policy"] = args.policy
    passes.append(pass_spec("schedule", **schedule))
    emit = {"format": args.format, "out": os.path.abspath(args.output),
            "python": args.python}
    if args.observe:
        emit["observe"] = "true"
    passes.append(pass_spec("emit-plan", **emit))
    return ",".join(passes)


def cmd_plan(args):
    fastci_opt = find_fastci_opt(args.fastci_opt)
    command = [fastci_opt, "--pass-pipeline=" + build_pipeline(args),
               "-o", args.ir_out or os.devnull]
    note("running: " + shlex.join(command))
    if args.dry_run:
        return 0
    status = subprocess.call(command)
    if status != 0:
        note("fastci-opt failed (exit %d)" % status)
        return EXIT_FAILED
    note("wrote %s" % args.output)
    return 0


# ---------------------------------------------------------------------------
# Reading plans and JUnit reports
# ---------------------------------------------------------------------------

def load_plan(path):
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
    tests = plan.get("tests")
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
    for key in ("skipped", "pruned"):
        if not isinstance(plan.get(key, []), list):
            raise DriverError("%s: \"%s\" must be a list" % (path, key))
    return plan


def junit_outcomes(path):
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


def pytest_junit_key(node_id):
    """The (classname, name) pytest's --junitxml writes for `node_id`."""
    parts = node_id.split("::")
    module = parts[0][:-3] if parts[0].endswith(".py") else parts[0]
    classname = ".".join([module.replace("/", ".")] + parts[1:-1])
    return classname, parts[-1]


def write_junit(path, results, plan_name):
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

def cmd_run(args):
    plan = load_plan(args.plan)
    tests = plan["tests"]
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
        try:
            status = subprocess.call(argv, env=env, cwd=args.cwd)
            message = "exit status %d" % status
        except OSError as e:
            status, message = 127, "cannot run %s: %s" % (test["argv"][0],
                                                          e.strerror)
            note(message)
        seconds = time.monotonic() - begin
        if status == 0:
            results.append((test["name"], "pass", seconds, ""))
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
    return EXIT_FAILED if failed else 0


# ---------------------------------------------------------------------------
# audit
# ---------------------------------------------------------------------------

def cmd_audit(args):
    plan = load_plan(args.plan)
    dropped = {}
    for entry in plan.get("skipped", []):
        dropped[entry.get("name")] = "skipped (%s: %s)" % (
            entry.get("rule", ""), entry.get("reason", ""))
    for entry in plan.get("pruned", []):
        dropped[entry.get("name")] = "pruned (covered by %s)" % ", ".join(
            entry.get("pruned_by", []))
    names = {t["name"] for t in plan["tests"]} | set(dropped)
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

def git_revision(repo):
    try:
        return subprocess.check_output(
            ["git", "-C", repo, "rev-parse", "HEAD"], text=True,
            stderr=subprocess.DEVNULL).strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def pytest_arguments_start(command):
    """Where pytest's own arguments start in `command`, or None if it does
    not launch pytest (`pytest ...` or `python -m pytest ...`)."""
    if os.path.basename(command[0]) in ("pytest", "py.test"):
        return 1
    if command[1:3] == ["-m", "pytest"]:
        return 3
    return None


def traced_command(command, out_dir, test_id):
    """`command` running under the sampler, writing evidence to out_dir:
    pytest through its plugin (one test id per item), anything else through
    `python -m fastci.trace run` as the single test `test_id`."""
    start = pytest_arguments_start(command)
    if start is not None:
        return (command[:start] + ["-p", "fastci.trace.pytest_plugin",
                                   "--fastci-trace-out", out_dir]
                + command[start:])
    return [sys.executable, "-m", "fastci.trace", "run", "--test-id", test_id,
            "--out", out_dir, "--"] + command


def cmd_collect(args):
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

def make_parser():
    parser = argparse.ArgumentParser(
        prog="fastci", description="FastCI: plan, run and audit CI test runs.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="exit codes:\n"
               "  0  success\n"
               "  1  tests failed (run), the plan would have missed a failure "
               "(audit),\n     or a tool failed\n"
               "  2  bad usage or bad input (missing or malformed plan, "
               "unknown test)")
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
    plan.add_argument("--python", default="python3",
                      help="interpreter the plan's commands use")
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


def main(argv=None):
    parser = make_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except DriverError as e:
        fail(str(e))


if __name__ == "__main__":
    sys.exit(main())
