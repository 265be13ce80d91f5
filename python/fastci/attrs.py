"""Names of the IR attributes and plan fields the Python side reads.

The C++ passes declare each attribute once, in include/fastci/<Area>/
<Area>Attrs.h, and docs/IR.md lists them (`fastci-opt --list-attributes`);
this module is the Python side's one spelling of those it reads, so that a
renamed attribute breaks in one place (test/python/driver checks every name
here against `fastci-opt --list-attributes`). emit-plan writes the plan's
per-test fields under the same names as the attributes they come from.
"""

from __future__ import annotations

# select-affected (include/fastci/Select/SelectAttrs.h), on tests.
SELECTED = "selected"
RULE = "rule"
REASON = "reason"
# prune-context-equiv (SelectAttrs.h), on tests.
PRUNED = "pruned"
PRUNED_BY = "pruned_by"
WITNESSES = "witnesses"
# merge-evidence (include/fastci/Evidence/EvidenceAttrs.h), on tests.
EVIDENCE = "evidence"

#: Every IR attribute name above, for the contract test.
IR_ATTRIBUTES = (SELECTED, RULE, REASON, PRUNED, PRUNED_BY, WITNESSES, EVIDENCE)

# Lists of a plan (passes/emit-plan, schema fastci-plan/1).
PLAN_TESTS = "tests"
PLAN_SKIPPED = "skipped"
PLAN_PRUNED = "pruned"
