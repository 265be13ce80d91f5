"""Single-line mutants of a commit's added lines.

The replay seeds up to `--mutants` faults per commit, each in one added,
executable line of a non-test Python file that a passing test executes, so
that every strategy can be judged on faults it should catch. Operators, as
in classic mutation testing (one is drawn per line, deterministically from
the commit id):

* `compare`: the first comparison operator swapped for its negation
  (`==`/`!=`, `<`/`>=`, `>`/`<=`, `in`/`not in`, `is`/`is not`);
* `negate`: the condition of an `if`/`elif`/`while`/`assert` or a
  conditional expression wrapped in `not (...)`;
* `constant`: an integer or float literal plus or minus 1;
* `return-none`: `return X` becomes `return None`;
* `drop`: a one-line simple statement becomes `pass`.

Only expressions and statements that begin and end on the line are
mutated, and a mutant must compile.
"""

import ast
import random

_SWAP = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.GtE, ast.GtE: ast.Lt,
         ast.Gt: ast.LtE, ast.LtE: ast.Gt, ast.In: ast.NotIn, ast.NotIn: ast.In,
         ast.Is: ast.IsNot, ast.IsNot: ast.Is}

OPERATORS = ("compare", "negate", "constant", "return-none", "drop")


def is_test_file(path: str) -> bool:
    """Files pytest collects or loads as test code (not mutated)."""
    name = path.rsplit("/", 1)[-1]
    return (name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
            or path.split("/", 1)[0] in ("tests", "test", "testing"))


def _on_line(node, line):
    return getattr(node, "lineno", None) == line and getattr(node, "end_lineno", None) == line


def _replace(lines, node, text):
    """Source lines with `node`'s (one-line) extent replaced by `text`; AST
    columns are UTF-8 byte offsets."""
    index = node.lineno - 1
    raw = lines[index].encode("utf-8")
    new = raw[:node.col_offset] + text.encode("utf-8") + raw[node.end_col_offset:]
    out = list(lines)
    out[index] = new.decode("utf-8")
    return out


def _candidates(tree, line):
    """(operator, node, replacement text) for every way to mutate `line`."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and _on_line(node, line) and type(node.ops[0]) in _SWAP:
            mutated = ast.Compare(left=node.left, ops=[_SWAP[type(node.ops[0])]()] + node.ops[1:],
                                  comparators=node.comparators)
            found.append(("compare", node, ast.unparse(mutated)))
        elif isinstance(node, (ast.If, ast.While, ast.Assert, ast.IfExp)) and _on_line(node.test, line):
            found.append(("negate", node.test, "not (%s)" % ast.unparse(node.test)))
        elif (isinstance(node, ast.Constant) and _on_line(node, line)
              and type(node.value) in (int, float)):
            found.append(("constant", node, repr(node.value + 1)))
        elif isinstance(node, ast.Return) and node.value is not None and _on_line(node, line):
            if not (isinstance(node.value, ast.Constant) and node.value.value is None):
                found.append(("return-none", node, "return None"))
        if (isinstance(node, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Raise,
                              ast.Delete)) and _on_line(node, line)
                and not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))):
            found.append(("drop", node, "pass"))
    return found


def mutate(source, line, rng):
    """(operator, mutated source, description) for one mutant of `line`, or
    None when no operator applies."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    lines = source.splitlines(True)
    if line > len(lines):
        return None
    candidates = _candidates(tree, line)
    rng.shuffle(candidates)
    for operator, node, text in candidates:
        mutated = "".join(_replace(lines, node, text))
        try:
            compile(mutated, "<mutant>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            continue
        return operator, mutated, "%s: %s" % (operator, mutated.splitlines()[line - 1].strip())
    return None


def pick(candidates, seed, limit):
    """Up to `limit` mutants from candidate (path, line, source) triples,
    drawn in an order fixed by `seed`: [(path, line, operator, mutated
    source, description)]."""
    rng = random.Random(seed)
    order = list(candidates)
    rng.shuffle(order)
    chosen = []
    for path, line, source in order:
        if len(chosen) >= limit:
            break
        made = mutate(source, line, rng)
        if made:
            chosen.append((path, line) + made)
    return chosen
