//===- Plan.h - The final test plan of a CI run -----------------*- C++ -*-===//
//
// A Plan is what CI acts on once the analysis passes have decided: the tests
// to run, in order, each with its runner, start time, the exact command and
// environment (workload overrides applied) and why it was selected; the tests
// that were skipped or pruned and why; and what the plan is predicted to cost
// against running everything. buildPlan() reads it off a Module annotated by
// select-affected, prune-context-equiv, lower-workload, score-risk and
// schedule (each optional); the writers in PlanWriters.h spell it for CI
// engines. docs/Plan.md documents the fields and the JSON schema.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_PLAN_PLAN_H
#define FASTCI_PLAN_PLAN_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fastci {

class DiagnosticEngine;
class Module;
struct Test;

/// The version tag of the JSON plan; bump on any incompatible change.
inline constexpr llvm::StringLiteral kPlanSchema = "fastci-plan/1";

/// How a test is launched.
enum class TestKind : uint8_t {
  /// A pytest item: run as `python -m pytest <node id>`.
  Pytest,
  /// A CI job from the manifest: run its rendered `command` template.
  Job,
};

/// One test the plan runs.
struct PlannedTest {
  /// The pytest node id or CI job name.
  std::string name;
  /// How it is launched.
  TestKind kind = TestKind::Pytest;
  /// 1-based position in the order the plan runs tests.
  unsigned position = 0;
  /// The runner (0-based) the schedule placed it on, if scheduled.
  std::optional<int64_t> runner;
  /// Its start, in seconds from the pipeline's start, if scheduled.
  std::optional<double> start;
  /// Predicted seconds (after lowering).
  double seconds = 0;
  /// Seconds before lower-workload shrank it.
  double originalSeconds = 0;
  /// GPUs it occupies.
  int64_t gpus = 0;
  /// Its risk score, when score-risk ran.
  std::optional<double> risk;
  /// The command line as an argument vector, run without a shell.
  std::vector<std::string> argv;
  /// Variables to set on top of the runner's environment.
  std::map<std::string, std::string> env;
  /// The workload flags lower-workload changed (flag → new value).
  std::map<std::string, std::string> overrides;
  /// When lowering shortened a test with goldens: compare only its first
  /// this-many steps, on these metrics (lower-workload's golden_steps and
  /// golden_metrics).
  std::optional<int64_t> goldenSteps;
  std::vector<std::string> goldenMetrics;
  /// The select-affected rule that keeps it (`affected`, `missing-evidence`).
  std::string rule;
  /// That rule's explanation for this test.
  std::string reason;
  /// In observation mode, what the plan would have done instead of running
  /// it (`skipped` or `pruned`); empty when the plan runs it anyway.
  std::string observedAs;
};

/// A test the plan does not run.
struct DroppedTest {
  /// The pytest node id or CI job name.
  std::string name;
  /// True when prune-context-equiv dropped it, false when select-affected did.
  bool pruned = false;
  /// The select-affected rule that dropped it (skipped tests).
  std::string rule;
  /// That rule's explanation for this test (skipped tests).
  std::string reason;
  /// The retained tests that cover its contexts (for pruned tests).
  std::vector<std::string> prunedBy;
  /// Changed symbol → the retained test that covers it (for pruned tests).
  std::map<std::string, std::string> witnesses;
  /// Predicted seconds of the run it saves.
  double seconds = 0;
  /// GPUs that run would have occupied.
  int64_t gpus = 0;
};

/// What the plan is predicted to cost, and what running everything would.
struct PlanSummary {
  /// Tests in the module.
  unsigned totalTests = 0;
  /// Tests the plan runs (observe-mode extras not counted).
  unsigned plannedTests = 0;
  /// Tests select-affected skipped.
  unsigned skippedTests = 0;
  /// Tests prune-context-equiv pruned.
  unsigned prunedTests = 0;
  /// Predicted wall-clock latency of the plan: the schedule's makespan, or
  /// the serial sum of its tests' seconds when nothing was scheduled.
  double makespanSeconds = 0;
  /// GPU-seconds of the planned tests at their predicted cost.
  double plannedGpuSeconds = 0;
  /// GPU-seconds of every test at its original (unlowered) cost.
  double fullGpuSeconds = 0;
  /// Serial wall-clock seconds of every test at its original cost.
  double fullSerialSeconds = 0;
  /// Runners the schedule assumed (0 when not scheduled).
  int64_t runners = 0;
  /// GPUs per runner the schedule assumed (0 when not scheduled).
  int64_t gpusPerRunner = 0;
  /// True when the order and runners come from the schedule pass.
  bool scheduled = false;
  /// True when the plan runs skipped and pruned tests too (observe mode).
  bool observe = false;
};

/// The final plan.
struct Plan {
  /// Tests to run, in order.
  std::vector<PlannedTest> tests;
  /// Tests not run, in name order.
  std::vector<DroppedTest> dropped;
  /// Predicted costs.
  PlanSummary summary;
  /// The interpreter `{python}` expands to.
  std::string python;
};

/// How buildPlan() renders commands and what it includes.
struct PlanOptions {
  /// What `{python}` in a command template, and the pytest launcher, expand
  /// to. A plain name, so the plan is portable across machines.
  std::string python = "python3";
  /// Observation mode: run skipped and pruned tests too (after the planned
  /// ones), marking what the plan would have done with them.
  bool observe = false;
};

/// True unless select-affected or prune-context-equiv dropped \p test.
bool isPlanned(const Test &test);

/// Reads the plan off \p module. Tests run in schedule order (`rank`), then
/// by descending `risk`, then by name. A job whose command cannot be rendered
/// is reported at its location through \p diag, and yields std::nullopt.
std::optional<Plan> buildPlan(const Module &module, const PlanOptions &options,
                              DiagnosticEngine &diag);

/// The argument vector of a job whose manifest `command` template is
/// \p commandTemplate, with `{python}`, `{nproc}`, `{args}` and `{config}`
/// (the Megatron configuration a test was imported from, \p config)
/// expanded; \p args are already rendered flags. Templates are split like a
/// POSIX shell splits words (quotes, backslashes), without expansions. Returns
/// an error message on an unterminated quote or an unknown placeholder.
std::optional<std::string>
renderCommand(llvm::StringRef commandTemplate, llvm::StringRef python,
              llvm::StringRef nproc, llvm::ArrayRef<std::string> args,
              std::vector<std::string> &argv, llvm::StringRef config = {});

} // namespace fastci

#endif // FASTCI_PLAN_PLAN_H
