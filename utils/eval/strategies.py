"""The CI strategies under evaluation; each turns one MR into a Plan.

A Plan is the ordered list of tests a strategy runs for an MR and what each
costs on the production fleet. Baselines (run-all, path filters, file-level
static RTS) are computed here from the MR's files and the parsed module;
FastCI's plans are read from the modules its ablation pipelines produce
(evaluate.fastci_plans).
"""

import json
import re
from dataclasses import dataclass, field

from .fastci import attr, number

UNIT_PREFIX = "tests/"
# Unit tests have no declared fleet cost: count each as a 1-GPU, 1-minute job.
UNIT_GPUS, UNIT_SECONDS = 1, 60.0


@dataclass
class Plan:
    """The tests one strategy runs for one MR, in order, with their fleet costs."""

    strategy: str
    tests: list                      # test names, in run order
    cost: dict                       # name -> (gpus, seconds)
    lowered: bool = False
    notes: list = field(default_factory=list)

    def gpu_seconds(self, name):
        gpus, seconds = self.cost[name]
        return gpus * seconds


def is_unit(name):
    """Unit tests are pytest node ids; e2e jobs are manifest ids."""
    return name.startswith(UNIT_PREFIX)


def declared_costs(module):
    """name -> (gpus, seconds) on the fleet: the manifest's, 1 GPU-minute for unit tests."""
    costs = {}
    for test in module["tests"]:
        if is_unit(test["name"]):
            costs[test["name"]] = (UNIT_GPUS, UNIT_SECONDS)
        else:
            cost = test.get("cost", {})
            costs[test["name"]] = (number(cost.get("gpus", 0)) or 1,
                                   number(cost.get("seconds", 0.0)))
    return costs


def all_tests(module):
    """Every test in suite order: unit tests as collected, then the manifest."""
    return [t["name"] for t in module["tests"]]


def run_all(module):
    """Every test, the baseline every other plan is a subset of."""
    return Plan("run-all", all_tests(module), declared_costs(module))


# -- path filters (GitHub Actions `paths:`) -----------------------------------

def _glob_regex(pattern):
    """A GitHub Actions path glob: `**` crosses directories, `*` does not."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def _included(path, patterns):
    included = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        if _glob_regex(pattern.lstrip("!")).match(path):
            included = not negated
    return included


def load_path_filters(path):
    """The workflows of a path-filter file (see path_filters.json's comment)."""
    with open(path) as f:
        return json.load(f)["workflows"]


def path_based(module, changed_files, workflows):
    """The jobs of every workflow whose `paths` include a changed file."""
    names, by_scope = all_tests(module), {}
    for test in module["tests"]:
        for scope in test.get("scope", []):
            by_scope.setdefault(scope, set()).add(test["name"])
    chosen = set()
    for workflow in workflows:
        if not any(_included(f, workflow["paths"]) for f in changed_files):
            continue
        for job in workflow["jobs"]:
            if job.startswith("e2e:"):
                chosen |= by_scope.get(job[4:], set())
            else:
                glob = _glob_regex(job)
                chosen |= {n for n in names if is_unit(n) and glob.match(n.split("::")[0])}
    return Plan("path-filters", [n for n in names if n in chosen], declared_costs(module))


# -- file-level static RTS ----------------------------------------------------

def _module_files(module):
    """Python module symbol -> its file."""
    return {e["symbol"]: e["parent"] for e in module["entities"] if e["kind"] == "module"}


def _owning_module(symbol, modules):
    """The longest prefix of a dotted symbol that is a module (None: external)."""
    while symbol:
        if symbol in modules:
            return symbol
        symbol = symbol.rpartition(".")[0]
    return None


def import_closures(module, roots):
    """name -> set of files its entry module transitively imports (itself included)."""
    modules = _module_files(module)
    imports = {}
    for edge in module["edges"]:
        if edge["kind"] != "import":
            continue
        src, dst = _owning_module(edge["from"], modules), _owning_module(edge["to"], modules)
        if src and dst:
            imports.setdefault(src, set()).add(dst)
            # Importing pkg.sub.mod runs pkg/__init__ and pkg/sub/__init__ first.
            parent = dst.rpartition(".")[0]
            while parent:
                if parent in modules:
                    imports[src].add(parent)
                parent = parent.rpartition(".")[0]
    closures = {}
    for name, entry_modules in roots.items():
        seen, stack = set(), [m for m in entry_modules if m in modules]
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            stack.extend(imports.get(current, ()))
        closures[name] = {modules[m] for m in seen}
    return closures


def test_roots(module):
    """Entry modules: a unit test's own module; an e2e job's launcher and runner."""
    modules = _module_files(module)
    roots = {}
    for test in module["tests"]:
        if is_unit(test["name"]):
            roots[test["name"]] = [_owning_module(test.get("entry", ""), modules)]
        else:
            command = attr(test, "command", "")
            launched = re.findall(r"-m\s+([\w.]+)", command)
            # The launcher starts `minitron.train` ranks; run_e2e drives them.
            roots[test["name"]] = launched + ["minitron.train", "ci.run_e2e", "ci.manifest"]
    return roots


def static_rts(module, changed_files):
    """Tests whose import closure contains a changed file (file-level static RTS)."""
    closures = import_closures(module, test_roots(module))
    changed = set(changed_files)
    chosen = [n for n in all_tests(module) if closures.get(n, set()) & changed]
    return Plan("static-rts", chosen, declared_costs(module))


# -- FastCI -------------------------------------------------------------------

def fastci_plan(strategy, module, costs, lowered=False):
    """The tests a FastCI module runs: selected, not pruned, in rank order if scheduled."""
    tests = [t for t in module["tests"]
             if attr(t, "selected", True) and not attr(t, "pruned", False)]
    if any(attr(t, "rank") is not None for t in tests):
        tests.sort(key=lambda t: attr(t, "rank", 1 << 30))
    cost = dict(costs)
    if lowered:
        for t in tests:
            if not is_unit(t["name"]) and attr(t, "lowered", False):
                cost[t["name"]] = (cost[t["name"]][0], number(t["cost"]["seconds"]))
    plan = Plan(strategy, [t["name"] for t in tests], cost, lowered=lowered)
    unreached = module.get("attributes", {}).get("unreached_changes")
    if unreached:
        plan.notes.append("unreached changes: %s" % unreached)
    return plan
