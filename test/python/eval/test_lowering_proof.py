"""The lowering proof's pure pieces: which MRs and e2e tests it checks, how a
lowered run is judged, and the tables it prints."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "utils"))

from eval import lowering_proof  # noqa: E402


def test_targets_are_regressions_caught_by_e2e_tests():
    index = [
        {"id": "mr01", "regression": False, "caught_by": []},
        {"id": "mr03", "regression": True, "caught_by": ["tests/unit/test_x.py::t"]},
        {"id": "mr08", "regression": True, "caught_by": ["gpt_tp2", "tests/unit/a.py::b", "gpt_gqa"]},
        {"id": "mr10", "regression": True, "caught_by": ["gpt_resume"]},
        {"id": "mr16", "regression": True, "caught_by": []},
    ]
    e2e = {"gpt_tp2", "gpt_gqa", "gpt_resume"}
    assert lowering_proof.regression_targets(index, e2e) == [
        ("mr08", ["gpt_tp2", "gpt_gqa"]), ("mr10", ["gpt_resume"])]
    assert lowering_proof.regression_targets(index, e2e, only=["mr10"]) == [
        ("mr10", ["gpt_resume"])]


def test_lowered_runs_are_judged_as_ci_would(monkeypatch):
    calls = []
    monkeypatch.setattr(lowering_proof.suite, "run_e2e",
                        lambda tree, test_id, work, **kw: calls.append(kw) or {"passed": True})
    steps_only = {"lowered": True, "golden_invalidated": False, "golden_steps": 4,
                  "overrides": [("--train-iters", "4")]}
    shrunk = {"lowered": True, "golden_invalidated": True, "golden_steps": 4,
              "overrides": [("--hidden-size", "32")]}
    kept = {"lowered": False}
    lowering_proof.run_lowered("t", "a", steps_only, "w", record="r.json")
    lowering_proof.run_lowered("t", "b", shrunk, "w", record="r.json")
    lowering_proof.run_lowered("t", "c", shrunk, "w", reference="r.json")
    lowering_proof.run_lowered("t", "d", kept, "w")
    # Goldens still valid: truncated golden comparison, no reference.
    assert calls[0] == {"overrides": [("--train-iters", "4")], "steps": 4}
    # Model shrunk: recorded on the base tree, compared with it on the MR.
    assert calls[1] == {"overrides": [("--hidden-size", "32")], "record": "r.json",
                        "reference": None}
    assert calls[2]["reference"] == "r.json"
    # Not lowered: the full-size run against goldens.
    assert calls[3] == {}


def test_render_totals_and_flags_misses():
    result = {
        "tests": {
            "gpt_tp2": {"overrides": [("--hidden-size", "32")], "reason": None,
                        "floors": {"--hidden-size": "tp-width: wide; compared-steps: long"},
                        "full_wall_s": 10.0, "lowered_wall_s": 4.0, "base_passed": True},
            "gpt_resume": {"overrides": [], "reason": "every dimension pinned", "floors": {},
                           "full_wall_s": 10.0, "lowered_wall_s": 10.0, "base_passed": True},
        },
        "caught": {"mr08": {"gpt_tp2": {"caught": True}},
                   "mr10": {"gpt_resume": {"caught": False}}},
        "load_before": (1.0, 2.0, 3.0), "load_after": (1.0, 2.0, 3.0),
    }
    text, ok = lowering_proof.render(result)
    assert not ok
    assert "| gpt_tp2 | --hidden-size 32 | compared-steps, tp-width | 10.0 | 4.0 | 0.40 |" in text
    assert "(not lowered: every dimension pinned)" in text
    assert "| total | | | 20.0 | 14.0 | 0.70 |" in text
    assert "| mr10 | gpt_resume | yes (index.json) | NO |" in text
    assert "Regressions missed when lowered: mr10/gpt_resume." in text
