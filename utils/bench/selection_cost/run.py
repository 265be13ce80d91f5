#!/usr/bin/python3
"""Selection cost before and after the module-level rules, side by side.

Builds a small repository shaped like a PyTorch training library
(huggingface/accelerate's layout: a package whose `__init__.py` holds
`__version__` and re-exports, a launcher whose multi-process tests spawn
ranks that import the whole package, cheap unit tests, configs read by
tests, a CircleCI file), commits one merge request per scenario on top of
it, and runs `mark-changed` + `select-affected` on each with two builds of
`fastci-opt`:

  before  the named peer (e.g. main), given the evidence today's sampler
          records: samples only, where spawned ranks' import of the package
          lands module bodies in the test that started them;
  after   this branch, given the evidence the exact recorder writes
          (`coverage`, `functions`, `imports`, `reads`; docs/Evidence.md),
          and the `names` parse-python writes on entities (computed here
          with CPython's `ast` as the contract in docs/ParsePython.md says,
          or by the parse-python of `--parser`);
  after/old  this branch on the old evidence (what a user upgrading
          FastCI before re-recording gets: the fallbacks).

It prints, per scenario, the cost share of the tests the change can affect
(the oracle: what each test runs is known here), of the tests each side
selects (sum of their seconds / all), the affected tests each side misses
and the rules that selected; then the means and the ratio after/before.
It exits 1 when this branch misses an affected test. Selection is deterministic, so one run gives the figures
(no timing is measured). Usage:

  run.py --before /path/to/main/build/bin/fastci-opt \\
         --after build/bin/fastci-opt [--parser <fastci-opt with names>]
"""
import argparse
import ast
import os
import re
import subprocess
import sys
import tempfile

# --------------------------------------------------------------------------
# The repository
# --------------------------------------------------------------------------

BASE = {
    "setup.py": "from setuptools import setup\nsetup(name='pkg')\n",
    ".circleci/config.yml": "version: 2.1\njobs: {}\n",
    "docs/index.md": "# pkg\n",
    "configs/base.yaml": "layers: 2\n",
    "pkg/__init__.py": (
        "__version__ = \"0.1.0\"\n"
        "from .core import train, step\n"
        "from .launch import spawn_workers\n"
        "from .config import DEFAULTS\n"),
    "pkg/config.py": (
        "import os\n"
        "DEFAULTS = {\"lr\": 0.1, \"steps\": 3}\n"
        "SEED = 0\n"),
    "pkg/core.py": (
        "from .config import DEFAULTS\n"
        "\n"
        "\n"
        "def step(x):\n"
        "    return x + 1\n"
        "\n"
        "\n"
        "def train(n):\n"
        "    x = 0\n"
        "    for _ in range(n or DEFAULTS[\"steps\"]):\n"
        "        x = step(x)\n"
        "    return x\n"
        + "".join(f"\n\ndef op{i}(x):\n    return x * {i}\n" for i in range(30))),
    "pkg/launch.py": (
        "from .core import train\n"
        "\n"
        "\n"
        "def spawn_workers(n):\n"
        "    return [train(3) for _ in range(n)]\n"),
    "pkg/commands/__init__.py": "",
    "pkg/commands/env.py": (
        "import pkg\n"
        "\n"
        "\n"
        "def report():\n"
        "    return {\"version\": pkg.__version__}\n"),
    "tests/__init__.py": "",
    "tests/test_core.py": "from pkg import core\n" + "".join(
        f"\n\ndef test_op{i}():\n    assert core.op{i}(1) == {i}\n"
        for i in range(30)),
    "tests/test_multi.py": "from pkg.launch import spawn_workers\n" + "".join(
        f"\n\ndef test_spawn_{i}():\n    assert spawn_workers({i + 2})\n"
        for i in range(8)),
    "tests/test_config.py": (
        "import yaml\n"
        "\n"
        "\n"
        "def test_load():\n"
        "    assert yaml.safe_load(open(\"configs/base.yaml\"))\n"),
    "tests/test_env.py": (
        "from pkg.commands.env import report\n"
        "\n"
        "\n"
        "def test_report():\n"
        "    assert report()[\"version\"]\n"),
}

# Each scenario: (name, {path: new text or None to delete}, the tests the
# change can affect: ground truth from what each test runs, below).
IMPORTERS_OF_PKG = [f"tests/test_core.py::test_op{i}" for i in range(30)] + [
    f"tests/test_multi.py::test_spawn_{i}" for i in range(8)] + [
    "tests/test_env.py::test_report"]
SCENARIOS = [
    ("__version__ bump", {
        "pkg/__init__.py": BASE["pkg/__init__.py"].replace("0.1.0", "0.1.1")},
     ["tests/test_env.py::test_report"]),
    ("comment-only + .circleci", {
        "pkg/core.py": BASE["pkg/core.py"].replace(
            "def step(x):\n", "def step(x):  # one step\n"),
        ".circleci/config.yml": "version: 2.1\njobs: {lint: {}}\n"}, []),
    ("new unreached function", {
        "pkg/core.py": BASE["pkg/core.py"] + "\n\ndef fresh(x):\n    return -x\n"}, []),
    ("config read by one test", {
        "configs/base.yaml": "layers: 4\n"}, ["tests/test_config.py::test_load"]),
    ("unused module constant", {
        "pkg/config.py": BASE["pkg/config.py"].replace("SEED = 0", "SEED = 1")}, []),
    ("docs + readthedocs", {
        "docs/index.md": "# pkg\n\nMore.\n",
        ".readthedocs.yaml": "version: 2\n"}, []),
    ("function body (op3)", {
        "pkg/core.py": BASE["pkg/core.py"].replace("return x * 3\n", "return x * 3 + 0\n")},
     ["tests/test_core.py::test_op3"]),
    ("module-level call (effect)", {
        "pkg/config.py": BASE["pkg/config.py"] + "os.environ.setdefault(\"PKG\", \"1\")\n"},
     IMPORTERS_OF_PKG),
]

# --------------------------------------------------------------------------
# What each test runs (the ground truth both evidence formats describe)
# --------------------------------------------------------------------------

MODULES = ["pkg", "pkg.config", "pkg.core", "pkg.launch"]


def tests():
    """(node id, seconds, test-time functions, spawns ranks, files read)."""
    out = []
    for i in range(30):
        out.append((f"tests/test_core.py::test_op{i}", 0.5,
                    [f"tests.test_core.test_op{i}", f"pkg.core.op{i}"], False, []))
    for i in range(8):
        out.append((f"tests/test_multi.py::test_spawn_{i}", 60.0,
                    [f"tests.test_multi.test_spawn_{i}", "pkg.launch.spawn_workers",
                     "pkg.core.train", "pkg.core.step"], True, []))
    out.append(("tests/test_config.py::test_load", 2.0,
                ["tests.test_config.test_load"], False, ["configs/base.yaml"]))
    out.append(("tests/test_env.py::test_report", 1.0,
                ["tests.test_env.test_report", "pkg.commands.env.report"], False, []))
    return out


def evidence(new_format):
    """Evidence records in .fir text."""
    lines = []
    for pid, (name, _, functions, spawns, reads) in enumerate(tests(), 1):
        # Today's sampler: 50 Hz stacks. Short functions are often missed;
        # spawned ranks import the package inside the test, so module
        # bodies are sampled as if the test ran them.
        samples = []
        for depth in range(1, len(functions) + 1):
            if depth > 2 and not spawns:
                break
            samples.append("  3: " + " ".join(f'@"{f}"' for f in functions[:depth]))
        if spawns:
            samples += [f'  2: @"{m}"' for m in MODULES]
        attrs = ""
        if new_format:
            parts = ['coverage = "exact"',
                     "functions = [" + ", ".join(f'@"{f}"' for f in sorted(functions)) + "]"]
            if spawns:
                parts.append("imports = [" + ", ".join(f'@"{m}"' for m in MODULES) + "]")
            if reads:
                parts.append("reads = [" + ", ".join(f'"{r}"' for r in reads) + "]")
            attrs = " {" + ", ".join(parts) + "}"
            # The exact recorder's samples are test-time only.
            samples = [s for s in samples if not re.fullmatch(r'  2: @"pkg[.a-z]*"', s)]
        lines.append(f'evidence "{name}" pid {pid} rank 0 rev "base" rate 50.0{attrs} {{')
        lines += samples
        lines.append("}")
    return "\n".join(lines) + "\n"

# --------------------------------------------------------------------------
# `names`, as parse-python writes them (docs/ParsePython.md)
# --------------------------------------------------------------------------


def module_name(path):
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def names_by_symbol(root):
    """symbol -> sorted module-level names its own code loads, resolved
    through the file's imports (a global of the module as module.name)."""
    result = {}
    for dirpath, _, files in os.walk(root):
        if ".git" in dirpath:
            continue
        for file in files:
            if not file.endswith(".py"):
                continue
            path = os.path.relpath(os.path.join(dirpath, file), root)
            mod = module_name(path)
            tree = ast.parse(open(os.path.join(root, path)).read())
            package = mod if file == "__init__.py" else mod.rpartition(".")[0]
            bindings = {}
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom):
                    base = node.module or ""
                    if node.level:
                        pkg = package
                        for _ in range(node.level - 1):
                            pkg = pkg.rpartition(".")[0]
                        base = pkg + ("." + base if base else "")
                    for alias in node.names:
                        bindings[alias.asname or alias.name] = base + "." + alias.name
                elif isinstance(node, ast.Import):
                    for alias in node.names:
                        head = alias.name.split(".")[0]
                        bindings[alias.asname or head] = alias.name if alias.asname else head

            def loads(body_nodes):
                found = set()
                for stmt in body_nodes:
                    for node in ast.walk(stmt):
                        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node not in body_nodes:
                            continue
                        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                            chain, at = [], node
                            while isinstance(at, ast.Attribute):
                                chain.append(at.attr)
                                at = at.value
                            if isinstance(at, ast.Name) and at.id in bindings:
                                found.add(".".join([bindings[at.id]] + chain[::-1]))
                        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                            found.add(bindings.get(node.id, mod + "." + node.id))
                return sorted(n for n in found if not n.split(".")[-1] in dir(__builtins__))

            top = [s for s in tree.body if not isinstance(s, (ast.FunctionDef, ast.ClassDef))]
            result[mod] = loads(top)
            for node in tree.body:
                if isinstance(node, ast.FunctionDef):
                    result[mod + "." + node.name] = loads(node.body)
    return result


def add_names(fir, names):
    out = []
    for line in fir.splitlines():
        m = re.match(r'(module|function|class) @"([^"]+)"', line)
        if m and m.group(2) in names:
            value = "names = [" + ", ".join(f'"{n}"' for n in names[m.group(2)]) + "]"
            line = line[:-1] + ", " + value + "}" if line.endswith("}") else line + " {" + value + "}"
        out.append(line)
    return "\n".join(out) + "\n"

# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------


def git(repo, *args):
    subprocess.run(["git", "-C", repo, "-c", "user.name=b", "-c", "user.email=b@b", *args],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def write(repo, files):
    for path, text in files.items():
        full = os.path.join(repo, path)
        if text is None:
            os.remove(full)
            continue
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)


def select(opt, fir_path, repo):
    out = subprocess.run(
        [opt, fir_path, "--pass-pipeline=mark-changed{repo=%s,base=HEAD~1,head=HEAD},select-affected" % repo],
        check=True, capture_output=True, text=True).stdout
    selected = {}
    for line in out.splitlines():
        m = re.match(r'test "([^"]+)".*rule = "([^"]+)", selected = (true|false)', line)
        if m and m.group(3) == "true":
            selected[m.group(1)] = m.group(2)
    return selected


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", required=True, help="fastci-opt of the peer (main)")
    parser.add_argument("--after", required=True, help="fastci-opt of this branch")
    parser.add_argument("--parser",
                        help="fastci-opt whose parse-python writes `names` "
                             "(default: compute them here with ast)")
    args = parser.parse_args()
    cost = {name: seconds for name, seconds, *_ in tests()}
    total = sum(cost.values())
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name, edits, affected in SCENARIOS:
            repo = os.path.join(work, re.sub(r"\W+", "_", name))
            os.makedirs(repo)
            subprocess.run(["git", "init", "-q", repo], check=True)
            write(repo, BASE)
            git(repo, "add", "-A")
            git(repo, "commit", "-qm", "base")
            write(repo, edits)
            git(repo, "add", "-A")
            git(repo, "commit", "-qm", name)
            def parse(opt):
                return subprocess.run(
                    [opt, "--pass-pipeline=parse-python{root=%s}" % repo],
                    check=True, capture_output=True, text=True).stdout
            parsed = parse(args.after)
            named = (parse(args.parser) if args.parser
                     else add_names(parsed, names_by_symbol(repo)))
            result = {}
            for label, opt, new_format, with_names in [
                    ("before", args.before, False, False),
                    ("after", args.after, True, True),
                    ("after/old", args.after, False, True)]:
                fir = named if with_names else parsed
                fir += evidence(new_format)
                path = os.path.join(repo, label.replace("/", "_") + ".fir")
                with open(path, "w") as f:
                    f.write(fir)
                result[label] = select(opt, path, repo)
            rows.append((name, result, affected))

    def share(selected):
        return sum(cost[t] for t in selected) / total

    print(f"{len(cost)} tests, {total:.0f} s for the whole suite; cost share = "
          "seconds of selected tests / all; missed = affected tests not selected")
    print(f"{'scenario':28} {'affected':>8} {'before':>8} {'after':>8} {'after/old':>9} "
          f"{'after/before':>12} {'missed b/a/o':>12}  rules (after)")
    misses = {"before": 0, "after": 0, "after/old": 0}
    for name, result, affected in rows:
        b, a, o = (share(result[k]) for k in ("before", "after", "after/old"))
        missed = [len(set(affected) - set(result[k])) for k in ("before", "after", "after/old")]
        for key, count in zip(("before", "after", "after/old"), missed):
            misses[key] += count
        ratio = f"{a / b:.3f}" if b else "-"
        rules = {}
        for rule in result["after"].values():
            rules[rule] = rules.get(rule, 0) + 1
        text = ", ".join(f"{k} {v}" for k, v in sorted(rules.items())) or "none"
        print(f"{name:28} {share(affected):8.1%} {b:8.1%} {a:8.1%} {o:9.1%} {ratio:>12} "
              f"{'/'.join(map(str, missed)):>12}  {text}")
    means = [sum(share(r[k]) for _, r, _ in rows) / len(rows)
             for k in ("before", "after", "after/old")]
    oracle = sum(share(a) for _, _, a in rows) / len(rows)
    print(f"{'mean':28} {oracle:8.1%} {means[0]:8.1%} {means[1]:8.1%} {means[2]:9.1%} "
          f"{(means[1] / means[0]) if means[0] else 0:12.3f} "
          f"{misses['before']}/{misses['after']}/{misses['after/old']:>1}")
    return 1 if misses["after"] or misses["after/old"] else 0


if __name__ == "__main__":
    sys.exit(main())
